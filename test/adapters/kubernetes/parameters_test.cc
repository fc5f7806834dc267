// The JSON codec of KubernetesExecutionParameters (src/adapters/kubernetes/parameters.h): every
// field round-trips, absent fields take their defaults, and a wrong value is reported with its
// path.
#include "adapters/kubernetes/parameters.h"

#include <gtest/gtest.h>

#include "api/json.h"

namespace ayatori::adapters::kubernetes {
namespace {

using nlohmann::json;

TEST(ParametersTest, KubernetesExecutionParametersRoundTrip) {
  KubernetesExecutionParameters p;
  p.metadata.name = "k8s";
  p.metadata.uid = "uid-1";
  p.metadata.labels = {{"app", "demo"}};
  p.serviceAccountName = "runner";
  p.nodeSelector = {{"kubernetes.io/os", "linux"}};
  p.tolerations = {{"dedicated", "Equal", "ci", "NoSchedule", std::nullopt},
                   {"", "Exists", "", "NoExecute", 30}};
  p.runtimeClassName = "gvisor";
  p.priorityClassName = "batch";
  p.extraLabels = {{"team", "a"}};
  p.extraAnnotations = {{"note", "b"}};
  p.imagePullFailureTimeoutSeconds = 120;
  p.automountServiceAccountToken = true;
  p.securityProfile.runAsUser = 1000;
  p.securityProfile.runAsGroup = 1001;
  p.securityProfile.addCapabilities = {"NET_BIND_SERVICE"};
  p.securityProfile.seccompProfile = SeccompProfile::kUnconfined;
  p.securityProfile.pidsLimit = 64;
  p.securityProfile.readOnlyRootFilesystem = false;
  p.securityProfile.tmpSizeMiB = 16;
  const json j = ToJson(p);
  EXPECT_EQ(j["spec"]["automountServiceAccountToken"], true);
  EXPECT_EQ(j["spec"]["securityProfile"], json::parse(R"({"runAsUser": 1000, "runAsGroup": 1001,
    "runAsRoot": false, "addCapabilities": ["NET_BIND_SERVICE"],
    "allowPrivilegeEscalation": false, "seccompProfile": "Unconfined", "pidsLimit": 64,
    "readOnlyRootFilesystem": false, "tmpSizeMiB": 16})"));
  EXPECT_EQ(j["kind"], "KubernetesExecutionParameters");
  EXPECT_EQ(j["spec"]["tolerations"][0],
            json::parse(R"({"key": "dedicated", "operator": "Equal", "value": "ci",
                            "effect": "NoSchedule"})"));
  EXPECT_EQ(j["spec"]["tolerations"][1],
            json::parse(R"({"operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": 30})"));
  EXPECT_EQ(j["spec"]["nodeSelector"]["kubernetes.io/os"], "linux");
  EXPECT_EQ(j["spec"]["imagePullFailureTimeoutSeconds"], 120);
  StatusOr<KubernetesExecutionParameters> back = KubernetesExecutionParametersFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, p);

  StatusOr<KubernetesExecutionParameters> defaults =
      KubernetesExecutionParametersFromJson(json::parse(R"({"metadata": {"name": "d"}})"));
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->imagePullFailureTimeoutSeconds, 300);
  EXPECT_FALSE(defaults->automountServiceAccountToken);
  EXPECT_EQ(defaults->securityProfile, RestrictedSecurityProfile());
  EXPECT_EQ(defaults->securityProfile.runAsUser, 65534);
  EXPECT_EQ(defaults->securityProfile.readOnlyRootFilesystem, true);
}

TEST(ParametersTest, KubernetesExecutionParametersWrongValueNamesItsPath) {
  StatusOr<KubernetesExecutionParameters> bad = KubernetesExecutionParametersFromJson(
      json::parse(R"({"metadata": {"name": "k"}, "spec": {"tolerations": [{"key": 1}]}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "cannot decode KubernetesExecutionParameters k: spec.tolerations[0].key: expected a "
            "string, got number");
  EXPECT_FALSE(KubernetesExecutionParametersFromJson(json::parse(R"({"kind": "JobClass"})")).ok());
}

}  // namespace
}  // namespace ayatori::adapters::kubernetes
