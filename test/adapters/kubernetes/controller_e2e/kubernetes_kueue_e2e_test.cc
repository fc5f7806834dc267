// A Kubernetes-backend Job queued through a real Kueue v0.17.0 (fixture "kueue_e2e": Kueue beside
// the kubee2e control plane, whose kwok node testenv-node-0 runs the pods): the ResourceFlavor
// Kueue admits the Job on names that node by its labels and carries a toleration, and both go
// into the pod template of the Job's batch Job, as Kueue's own integrations do.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/e2e/controller_e2e.h"
#include "test/e2e/kueue_objects.h"

namespace ayatori::e2e {
namespace {

constexpr const char* kNode = "testenv-node-0";
constexpr const char* kHostnameLabel = "kubernetes.io/hostname";
constexpr const char* kClass = "e2e-kubernetes-kueue";

class KubernetesKueueE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(InstallCrds());
    ASSERT_TRUE(ApplyKubernetesClass(kClass, json::object()));
    ASSERT_NO_FATAL_FAILURE(StartControllerAndNamespace("e2e-k8s-kueue", {"--kueue"}));
    queue_ = ns_;
    const json toleration = {
        {"key", "ayatori.test/flavor"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
    ASSERT_TRUE(
        Apply(KueueResourceFlavor(queue_, {{kHostnameLabel, kNode}}, json::array({toleration}))));
    ASSERT_TRUE(Apply(KueueClusterQueue(queue_, json::array({KueueFlavorQuotas(queue_, 2)}))));
    ASSERT_TRUE(Apply(KueueLocalQueue(queue_, ns_, queue_)));
  }

  void TearDown() override {
    ControllerTest::TearDown();
    Kubectl({"delete", "clusterqueue", queue_, "--ignore-not-found", "--wait=false"});
    Kubectl({"delete", "resourceflavor", queue_, "--ignore-not-found", "--wait=false"});
  }

  // The batch Jobs of an Ayatori Job (label execution.ayatori.ddupan.top/job-uid).
  std::vector<json> BatchJobsOf(const std::string& uid) {
    auto r = Kubectl({"get", "jobs.batch", "-n", ns_, "-l", std::string(kJobUidLabel) + "=" + uid,
                      "-o", "json"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    json list = json::parse(r.out, nullptr, false);
    if (!list.is_object() || !list.contains("items")) return {};
    return list["items"].get<std::vector<json>>();
  }

  std::string queue_;
};

TEST_F(KubernetesKueueE2ETest, TheAdmittedFlavorPlacesThePodOnItsNode) {
  json manifest =
      JobManifest(ns_, "placed", kClass,
                  {{"image", "busybox:1.36"},
                   {"command", {"/bin/sh", "-c", "true"}},
                   {"env", json::array({{{"name", "TESTENV_RUN_FOR"}, {"value", "1s"}}})}});
  manifest["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", queue_}};
  auto created = Create(manifest);
  ASSERT_TRUE(created);
  const std::string uid = created->value("/metadata/uid"_json_pointer, "");
  json job = WaitForFinished(ns_, "placed", 120s);
  EXPECT_EQ(ConditionSummary(job, "Admitted"), "True/Admitted") << Describe(job);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);

  auto batch = BatchJobsOf(uid);
  ASSERT_EQ(batch.size(), 1u);
  const json podSpec = batch[0].value("/spec/template/spec"_json_pointer, json::object());
  EXPECT_EQ(podSpec.value("/nodeSelector/kubernetes.io~1hostname"_json_pointer, ""), kNode)
      << podSpec.dump();
  bool tolerated = false;
  for (const json& t : podSpec.value("tolerations", json::array())) {
    tolerated = tolerated || t.value("key", "") == "ayatori.test/flavor";
  }
  EXPECT_TRUE(tolerated) << "the flavor's toleration is not in the pod template: "
                         << podSpec.dump();
}

}  // namespace
}  // namespace ayatori::e2e
