// The Job log API for a Job of the Kubernetes backend, on the e2e tier of the test control plane
// (fixture kubee2e: kube-controller-manager runs the batch Job, kwok plays its pod). The output
// of such a Job comes from pods/log, which kube-apiserver fetches from the pod's kubelet; kwok
// serves no kubelet API, so on this control plane the answer is the apiserver's error for that
// pod, which names the kubelet's address: the log API answers with the category of the failure
// and logs the details (naming the pod) for the operator. What this shows: the request reaches
// the Kubernetes adapter through the aggregated API with the user's RBAC, the adapter finds the
// pod of the Job's batch Job, and the failure is a clear error rather than an empty log, without
// the backend's address.
#include "test/e2e/logs_api_e2e.h"

namespace ayatori::e2e::logs {
namespace {

constexpr const char* kClass = "e2e-logs-kubernetes";

class KubernetesLogsApiE2ETest : public LogsApiE2ETest {
 protected:
  void SetUpBackend(std::vector<std::string>* /*flags*/) override {
    ASSERT_TRUE(ApplyKubernetesClass(kClass, json::object()));
  }
};

TEST_F(KubernetesLogsApiE2ETest, AKwokPodHasNoKubeletSoTheReaderGetsTheCategoryNotTheAddress) {
  std::string uid = CreateJob("kube", kClass, Task("echo from a pod"));
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "kube");
  ASSERT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  ProcessResult pods =
      Kubectl({"get", "pods", "-n", ns_, "-l", std::string(kJobUidLabel) + "=" + uid, "-o",
               "jsonpath={.items[0].metadata.name}"});
  ASSERT_EQ(pods.exitCode, 0) << pods.err;
  ASSERT_FALSE(pods.out.empty()) << "no pod of the Job's batch Job";

  // The apiserver's error names the kubelet's address (and its resolver's); the reader is told
  // the category only, the operator finds the details in the controller's log.
  ProcessResult r = RawAs(kReader, LogPath("kube"));
  EXPECT_NE(r.exitCode, 0) << r.out;
  EXPECT_NE(r.err.find("the kubernetes backend could not be reached for the log of job \"kube\""),
            std::string::npos)
      << r.err;
  for (const char* address : {":10250", "testenv-node", "dial tcp", "lookup"}) {
    EXPECT_EQ(r.err.find(address), std::string::npos) << address << " in: " << r.err;
  }
  r = Plugin({"logs", "-n", ns_, "kube"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("could not be reached"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(":10250"), std::string::npos) << r.err;
  const std::string log = controller_.Log();
  EXPECT_NE(log.find("pod " + ns_ + "/" + pods.out + ": "), std::string::npos)
      << "the controller's log should name the pod and the apiserver's error";
  // Still RBAC first: a user without the rule is refused before any backend is asked.
  r = RawAs(kStranger, LogPath("kube"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("Forbidden"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ayatori::e2e::logs
