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
  p.allowHostNetwork = true;
  p.init = false;
  p.securityProfile.runAsUser = 1000;
  p.securityProfile.addCapabilities = {"NET_BIND_SERVICE"};
  p.securityProfile.seccompProfile = SeccompProfile::kUnconfined;
  p.securityProfile.pidsLimit = 64;
  const json j = ToJson(p);
  EXPECT_EQ(j["kind"], "DockerExecutionParameters");
  EXPECT_EQ(j["spec"], json::parse(R"({
    "endpoint": "tcp://127.0.0.1:2376",
    "tlsSecretRef": {"namespace": "ayatori-system", "name": "docker-tls"},
    "networkMode": "host", "runtime": "runsc", "pullPolicy": "Never",
    "extraLabels": {"team": "a"}, "stopGracePeriodSeconds": 3, "allowHostNetwork": true,
    "init": false,
    "securityProfile": {"runAsUser": 1000, "runAsGroup": 65534, "runAsRoot": false,
      "addCapabilities": ["NET_BIND_SERVICE"], "allowPrivilegeEscalation": false,
      "seccompProfile": "Unconfined", "pidsLimit": 64, "readOnlyRootFilesystem": true,
      "tmpSizeMiB": 64, "openFilesLimit": 1024, "logMaxBytes": 10485760}})"));
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
  // Restricted by default (docs/security.md).
  EXPECT_FALSE(defaults->allowHostNetwork);
  EXPECT_TRUE(defaults->init);
  const SecurityProfile& sp = defaults->securityProfile;
  EXPECT_EQ(sp.runAsUser, 65534);
  EXPECT_EQ(sp.runAsGroup, 65534);
  EXPECT_FALSE(sp.runAsRoot);
  EXPECT_TRUE(sp.addCapabilities.empty());
  EXPECT_EQ(sp.allowPrivilegeEscalation, false);
  EXPECT_EQ(sp.seccompProfile, SeccompProfile::kRuntimeDefault);
  EXPECT_EQ(sp.pidsLimit, 256);
  EXPECT_EQ(sp.readOnlyRootFilesystem, true);
  EXPECT_EQ(sp.tmpSizeMiB, 64);
  EXPECT_EQ(sp.openFilesLimit, 1024);
  EXPECT_EQ(sp.logMaxBytes, 10 * 1024 * 1024);

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

TEST(ParametersTest, SecurityProfileFieldsLeftOutKeepTheirDefaultsAndBadValuesNameTheirPath) {
  auto d = DockerExecutionParametersFromJson(json::parse(
      R"({"metadata": {"name": "d"}, "spec": {"securityProfile": {"runAsUser": 0,
          "runAsRoot": true, "readOnlyRootFilesystem": false}}})"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->securityProfile.runAsUser, 0);
  EXPECT_TRUE(d->securityProfile.runAsRoot);
  EXPECT_EQ(d->securityProfile.readOnlyRootFilesystem, false);
  EXPECT_EQ(d->securityProfile.runAsGroup, 65534);
  EXPECT_EQ(d->securityProfile.pidsLimit, 256);

  auto bad = DockerExecutionParametersFromJson(json::parse(
      R"({"metadata": {"name": "d"}, "spec": {"securityProfile": {"seccompProfile": "Off"}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "cannot decode DockerExecutionParameters d: spec.securityProfile.seccompProfile: "
            "expected one of \"RuntimeDefault\", \"Unconfined\", got \"Off\"");
  auto caps = DockerExecutionParametersFromJson(json::parse(
      R"({"metadata": {"name": "d"}, "spec": {"securityProfile": {"addCapabilities": "ALL"}}})"));
  ASSERT_FALSE(caps.ok());
  EXPECT_NE(caps.status().message().find("spec.securityProfile.addCapabilities"), std::string::npos)
      << caps.status().message();
}

TEST(ParametersTest, PullPolicyAdlHooks) {
  EXPECT_EQ(json(PullPolicy::kAlways), "Always");
  EXPECT_EQ(json("Never").get<PullPolicy>(), PullPolicy::kNever);
  EXPECT_THROW((void)json("Sometimes").get<PullPolicy>(), json::type_error);
}

}  // namespace
}  // namespace ayatori::adapters::docker
