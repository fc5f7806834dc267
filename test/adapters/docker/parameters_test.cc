// The JSON codec of DockerExecutionParameters (src/adapters/docker/parameters.h): every field
// round-trips, absent fields take their defaults, and a wrong value is reported with its path.
#include "adapters/docker/parameters.h"

#include <gtest/gtest.h>

#include "api/json.h"

namespace ayatori::adapters::docker {
namespace {

using nlohmann::json;

TEST(ParametersTest, DockerExecutionParametersRoundTrip) {
  DockerExecutionParameters p;
  p.metadata.name = "docker";
  p.metadata.uid = "uid-1";
  p.metadata.labels = {{"app", "demo"}};
  p.endpoint = "tcp://127.0.0.1:2376";
  p.tlsSecretRef = api::SecretKeyReference{"ayatori-system", "docker-tls", ""};
  p.networkMode = "host";
  p.runtime = "runsc";
  p.pullPolicy = PullPolicy::kNever;
  p.extraLabels = {{"team", "a"}};
  p.stopGracePeriodSeconds = 3;
  const json j = ToJson(p);
  EXPECT_EQ(j["kind"], "DockerExecutionParameters");
  EXPECT_EQ(j["spec"], json::parse(R"({
    "endpoint": "tcp://127.0.0.1:2376",
    "tlsSecretRef": {"namespace": "ayatori-system", "name": "docker-tls"},
    "networkMode": "host", "runtime": "runsc", "pullPolicy": "Never",
    "extraLabels": {"team": "a"}, "stopGracePeriodSeconds": 3})"));
  StatusOr<DockerExecutionParameters> back = DockerExecutionParametersFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, p);

  StatusOr<DockerExecutionParameters> defaults =
      DockerExecutionParametersFromJson(json::parse(R"({"metadata": {"name": "d"}, "spec": {}})"));
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  DockerExecutionParameters want;
  want.metadata.name = "d";
  EXPECT_EQ(*defaults, want);
  EXPECT_EQ(defaults->endpoint, "unix:///var/run/docker.sock");
  EXPECT_EQ(defaults->networkMode, "none");
  EXPECT_EQ(defaults->pullPolicy, PullPolicy::kIfNotPresent);
  EXPECT_EQ(defaults->stopGracePeriodSeconds, 10);

  for (const char* policy : {"IfNotPresent", "Always", "Never"}) {
    json k = j;
    k["spec"]["pullPolicy"] = policy;
    StatusOr<DockerExecutionParameters> d = DockerExecutionParametersFromJson(k);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(ToJson(*d)["spec"]["pullPolicy"], policy);
  }
  json bad = j;
  bad["spec"]["stopGracePeriodSeconds"] = "10s";
  StatusOr<DockerExecutionParameters> d = DockerExecutionParametersFromJson(bad);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(),
            "cannot decode DockerExecutionParameters docker: spec.stopGracePeriodSeconds: "
            "expected an integer, got string");
}

TEST(ParametersTest, PullPolicyAdlHooks) {
  EXPECT_EQ(json(PullPolicy::kAlways), "Always");
  EXPECT_EQ(json("Never").get<PullPolicy>(), PullPolicy::kNever);
  EXPECT_THROW((void)json("Sometimes").get<PullPolicy>(), json::type_error);
}

}  // namespace
}  // namespace ayatori::adapters::docker
