// The JSON codec of OpenSandboxExecutionParameters (src/adapters/opensandbox/parameters.h): every
// field round-trips, absent fields take their defaults, and a wrong value is reported with its
// path.
#include "adapters/opensandbox/parameters.h"

#include <gtest/gtest.h>

#include "api/json.h"

namespace ayatori::adapters::opensandbox {
namespace {

using nlohmann::json;

TEST(ParametersTest, OpenSandboxExecutionParametersRoundTrip) {
  OpenSandboxExecutionParameters p;
  p.metadata.name = "sb";
  p.metadata.uid = "uid-1";
  p.metadata.labels = {{"app", "demo"}};
  p.endpoint = "http://127.0.0.1:8080/v1";
  p.apiKeySecretRef = api::SecretKeyReference{"ayatori-system", "opensandbox", "api-key"};
  p.sandboxTimeoutSeconds = 3600;
  p.sandboxTimeoutMarginSeconds = 120;
  p.pollIntervalSeconds = 5;
  p.useServerProxy = true;
  p.extraMetadata = {{"owner", "ci"}};
  p.insecure = true;
  p.securityProfile.runAsUser = 1000;
  const json j = ToJson(p);
  EXPECT_EQ(j["kind"], "OpenSandboxExecutionParameters");
  EXPECT_EQ(j["spec"], json::parse(R"({
    "endpoint": "http://127.0.0.1:8080/v1",
    "apiKeySecretRef": {"namespace": "ayatori-system", "name": "opensandbox", "key": "api-key"},
    "sandboxTimeoutSeconds": 3600, "sandboxTimeoutMarginSeconds": 120, "pollIntervalSeconds": 5,
    "useServerProxy": true, "extraMetadata": {"owner": "ci"}, "insecure": true,
    "securityProfile": {"runAsUser": 1000, "runAsGroup": 65534, "runAsRoot": false}})"));
  StatusOr<OpenSandboxExecutionParameters> back = OpenSandboxExecutionParametersFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, p);

  StatusOr<OpenSandboxExecutionParameters> defaults = OpenSandboxExecutionParametersFromJson(
      json::parse(R"({"metadata": {"name": "d"}, "spec": {"endpoint": "http://127.0.0.1:1"}})"));
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->sandboxTimeoutSeconds, 0);
  EXPECT_EQ(defaults->sandboxTimeoutMarginSeconds, 300);
  EXPECT_EQ(defaults->pollIntervalSeconds, 2);
  EXPECT_FALSE(defaults->useServerProxy);
  EXPECT_FALSE(defaults->apiKeySecretRef.has_value());
}

}  // namespace
}  // namespace ayatori::adapters::opensandbox
