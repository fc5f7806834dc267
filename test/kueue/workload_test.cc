#include "kueue/workload.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ayatori::kueue {
namespace {

using nlohmann::json;

constexpr const char* kUid = "5b6c1e0a-8f0e-4a53-9d3e-1c2b3a4d5e6f";

api::Job QueuedJob() {
  api::Job job;
  job.metadata.name = "train-1";
  job.metadata.namespace_ = "team-a";
  job.metadata.uid = kUid;
  job.metadata.labels[kQueueNameLabel] = "ayatori";
  job.status.effectiveResources = api::ResourceRequirements{
      {api::Quantity::MustParse("500m"), api::Quantity::MustParse("256Mi")},
      {api::Quantity::MustParse("1"), api::Quantity::MustParse("512Mi")}};
  return job;
}

json Build(const api::Job& job, const WorkloadOptions& options = {}) {
  auto wl = BuildWorkload(job, options);
  EXPECT_TRUE(wl.ok()) << wl.status().ToString();
  return wl.ok() ? *wl : json();
}

TEST(BuildWorkloadTest, FollowsTheContract) {
  WorkloadOptions options;
  options.nodeSelector = {{"ayatori.ddupan.top/host", "docker-a"}};
  const json wl = Build(QueuedJob(), options);
  EXPECT_EQ(wl["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(wl["kind"], "Workload");
  EXPECT_EQ(wl["metadata"]["name"], std::string("ajob-") + kUid);
  EXPECT_EQ(wl["metadata"]["namespace"], "team-a");
  EXPECT_EQ(wl["metadata"]["labels"], json({{"kueue.x-k8s.io/job-uid", kUid}}));
  EXPECT_EQ(wl["metadata"]["finalizers"], json::array({"kueue.x-k8s.io/resource-in-use"}));
  EXPECT_EQ(wl["metadata"]["ownerReferences"],
            json::parse(R"([{"apiVersion": "execution.ayatori.ddupan.top/v1alpha1", "kind": "Job",
                             "name": "train-1", "uid": "5b6c1e0a-8f0e-4a53-9d3e-1c2b3a4d5e6f",
                             "controller": true, "blockOwnerDeletion": true}])"));
  EXPECT_EQ(wl["spec"], json::parse(R"({
    "queueName": "ayatori",
    "priority": 0,
    "podSets": [{"name": "main", "count": 1, "template": {"spec": {
      "containers": [{"name": "task", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}],
      "nodeSelector": {"ayatori.ddupan.top/host": "docker-a"}}}}]})"));
}

TEST(BuildWorkloadTest, TheSameJobAlwaysGetsTheSameWorkload) {
  EXPECT_EQ(Build(QueuedJob()), Build(QueuedJob()));
  EXPECT_EQ(WorkloadName(kUid), Build(QueuedJob())["metadata"]["name"]);
}

TEST(BuildWorkloadTest, NeverRequestsPodsOrLimitsAndLeavesOutWhatTheJobDoesNotRequest) {
  api::Job job = QueuedJob();
  job.status.effectiveResources->requests.memory.reset();
  json container = Build(job)["spec"]["podSets"][0]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["resources"], json({{"requests", {{"cpu", "500m"}}}}));

  job.status.effectiveResources.reset();
  container = Build(job)["spec"]["podSets"][0]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["resources"], json::object());
  EXPECT_FALSE(Build(job)["spec"]["podSets"][0]["template"]["spec"].contains("nodeSelector"));
}

TEST(BuildWorkloadTest, OptionsQueueNameWinsOverTheLabel) {
  WorkloadOptions options;
  options.queueName = "default-queue";
  EXPECT_EQ(Build(QueuedJob(), options)["spec"]["queueName"], "default-queue");
  api::Job unlabelled = QueuedJob();
  unlabelled.metadata.labels.clear();
  EXPECT_EQ(Build(unlabelled, options)["spec"]["queueName"], "default-queue");
}

TEST(BuildWorkloadTest, PriorityClassOfTheLabelIsReferencedWithItsResolvedValue) {
  api::Job job = QueuedJob();
  job.metadata.labels[kPriorityClassLabel] = "high";
  WorkloadOptions options;
  options.priority = ResolvedPriority{"high", 1000};
  const json spec = Build(job, options)["spec"];
  EXPECT_EQ(spec["priority"], 1000);
  EXPECT_EQ(
      spec["priorityClassRef"],
      json({{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "high"}}));
}

TEST(BuildWorkloadTest, PriorityWithoutClassIsWrittenWithoutReference) {
  WorkloadOptions options;
  options.priority = ResolvedPriority{"", -5};
  const json spec = Build(QueuedJob(), options)["spec"];
  EXPECT_EQ(spec["priority"], -5);
  EXPECT_FALSE(spec.contains("priorityClassRef"));
}

TEST(BuildWorkloadTest, RefusesAnUnresolvedPriorityClass) {
  api::Job job = QueuedJob();
  job.metadata.labels[kPriorityClassLabel] = "high";
  auto missing = BuildWorkload(job, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("\"high\""), std::string::npos)
      << missing.status().ToString();

  WorkloadOptions other;
  other.priority = ResolvedPriority{"low", 10};
  EXPECT_FALSE(BuildWorkload(job, other).ok());
}

TEST(BuildWorkloadTest, RefusesAJobWithoutQueueOrIdentity) {
  api::Job unlabelled = QueuedJob();
  unlabelled.metadata.labels.clear();
  auto noQueue = BuildWorkload(unlabelled, {});
  ASSERT_FALSE(noQueue.ok());
  EXPECT_NE(noQueue.status().message().find("kueue.x-k8s.io/queue-name"), std::string::npos);

  api::Job noUid = QueuedJob();
  noUid.metadata.uid.clear();
  EXPECT_EQ(BuildWorkload(noUid, {}).status().code(), StatusCode::kInvalidArgument);
}

// The Workload Kueue left pending: QuotaReserved=False/Pending with the quota it lacks
// (the message as Kueue v0.17.0's scheduler writes it).
constexpr const char* kPending = R"({
  "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
  "metadata": {"name": "ajob-2", "namespace": "default", "uid": "u-2", "resourceVersion": "812",
               "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
  "spec": {"queueName": "ayatori", "priority": 0, "active": true,
           "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "task"}]}}}]},
  "status": {
    "conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                    "message": "couldn't assign flavors to pod set main: insufficient unused quota for pods in flavor docker-a, 1 more needed",
                    "observedGeneration": 1, "lastTransitionTime": "2026-04-02T10:00:01Z"}],
    "resourceRequests": [{"name": "main", "resources": {"cpu": "100m"}}]}})";

TEST(ReadWorkloadTest, PendingCarriesKueuesMessage) {
  auto s = ReadWorkload(json::parse(kPending));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->metadata.name, "ajob-2");
  EXPECT_EQ(s->metadata.resourceVersion, "812");
  EXPECT_EQ(s->queueName, "ayatori");
  EXPECT_FALSE(s->quotaReserved);
  EXPECT_FALSE(s->admitted);
  EXPECT_EQ(s->pendingReason, "Pending");
  EXPECT_EQ(s->pendingMessage,
            "couldn't assign flavors to pod set main: insufficient unused quota for pods in "
            "flavor docker-a, 1 more needed");
  EXPECT_TRUE(s->clusterQueue.empty());
  EXPECT_TRUE(s->flavors.empty());
  EXPECT_FALSE(s->evicted || s->preempted || s->finished || s->requeued);
  EXPECT_EQ(s->conditions.size(), 1u);
}

// Reserved and admitted in the same write of the scheduler, one podSet assigned.
constexpr const char* kAdmitted = R"({
  "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
  "metadata": {"name": "ajob-1", "namespace": "default"},
  "spec": {"queueName": "ayatori", "priority": 0},
  "status": {
    "admission": {"clusterQueue": "ayatori", "podSetAssignments": [
      {"name": "other", "flavors": {"cpu": "wrong"}, "count": 1},
      {"name": "main", "flavors": {"cpu": "docker-a", "memory": "docker-a", "pods": "docker-a"},
       "resourceUsage": {"cpu": "100m", "pods": "1"}, "count": 1}]},
    "conditions": [
      {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
       "message": "Quota reserved in ClusterQueue ayatori", "lastTransitionTime": "2026-04-02T10:00:00Z"},
      {"type": "Admitted", "status": "True", "reason": "Admitted",
       "message": "The workload is admitted", "lastTransitionTime": "2026-04-02T10:00:00Z"},
      {"type": "PodsReady", "status": "True", "reason": "Started", "message": "",
       "lastTransitionTime": "2026-04-02T10:00:02Z"}]}})";

TEST(ReadWorkloadTest, AdmittedWithTheFlavorOfEachResource) {
  auto s = ReadWorkload(json::parse(kAdmitted));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->quotaReserved);
  EXPECT_TRUE(s->admitted);
  EXPECT_TRUE(s->podsReady);
  EXPECT_EQ(s->clusterQueue, "ayatori");
  EXPECT_EQ(s->flavors, (std::map<std::string, std::string>{
                            {"cpu", "docker-a"}, {"memory", "docker-a"}, {"pods", "docker-a"}}));
  EXPECT_TRUE(s->pendingReason.empty());
  EXPECT_TRUE(s->pendingMessage.empty());
}

// Preempted after admission: Evicted=True/Preempted with Preempted=True/InClusterQueue, the
// reservation kept.
constexpr const char* kPreempted = R"({
  "metadata": {"name": "ajob-3", "namespace": "default"},
  "spec": {"queueName": "ayatori", "priority": 0},
  "status": {
    "admission": {"clusterQueue": "ayatori", "podSetAssignments": [
      {"name": "main", "flavors": {"pods": "docker-a"}, "count": 1}]},
    "conditions": [
      {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "",
       "lastTransitionTime": "2026-04-02T10:00:00Z"},
      {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "",
       "lastTransitionTime": "2026-04-02T10:00:00Z"},
      {"type": "Evicted", "status": "True", "reason": "Preempted",
       "message": "Preempted to accommodate a workload (UID: u-9, JobUID: j-9) due to prioritization in the ClusterQueue",
       "lastTransitionTime": "2026-04-02T10:01:00Z"},
      {"type": "Preempted", "status": "True", "reason": "InClusterQueue",
       "message": "Preempted to accommodate a workload (UID: u-9, JobUID: j-9) due to prioritization in the ClusterQueue",
       "lastTransitionTime": "2026-04-02T10:01:00Z"},
      {"type": "Requeued", "status": "False", "reason": "Preempted", "message": "",
       "lastTransitionTime": "2026-04-02T10:01:00Z"}]}})";

TEST(ReadWorkloadTest, EvictionAndPreemptionWithReasons) {
  auto s = ReadWorkload(json::parse(kPreempted));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->admitted);
  ASSERT_TRUE(s->evicted);
  EXPECT_EQ(s->evicted->reason, "Preempted");
  EXPECT_NE(s->evicted->message.find("JobUID: j-9"), std::string::npos);
  ASSERT_TRUE(s->preempted);
  EXPECT_EQ(s->preempted->reason, "InClusterQueue");
  ASSERT_TRUE(s->requeued);
  EXPECT_EQ(s->requeued->status, api::ConditionStatus::kFalse);
  EXPECT_EQ(s->requeued->reason, "Preempted");
  EXPECT_FALSE(s->finished);
  EXPECT_EQ(s->flavors, (std::map<std::string, std::string>{{"pods", "docker-a"}}));
}

// After Kueue's next reservation Evicted goes back to False: no longer an eviction.
TEST(ReadWorkloadTest, EvictedFalseIsNoEviction) {
  json wl = json::parse(kPreempted);
  wl["status"]["conditions"][2]["status"] = "False";
  wl["status"]["conditions"][2]["reason"] = "QuotaReserved";
  wl["status"]["conditions"][3]["status"] = "False";
  auto s = ReadWorkload(wl);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->evicted);
  EXPECT_FALSE(s->preempted);
}

// Ayatori's acknowledgement of an eviction: Finished=True/Failed naming it.
TEST(ReadWorkloadTest, Finished) {
  json wl = json::parse(kPreempted);
  wl["status"]["conditions"].push_back(
      {{"type", "Finished"},
       {"status", "True"},
       {"reason", "Failed"},
       {"message", "Evicted (Preempted): Preempted to accommodate a workload"},
       {"lastTransitionTime", "2026-04-02T10:01:05Z"}});
  auto s = ReadWorkload(wl);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(s->finished);
  EXPECT_EQ(s->finished->reason, "Failed");
  EXPECT_EQ(s->finished->message, "Evicted (Preempted): Preempted to accommodate a workload");
  EXPECT_EQ(s->conditions.size(), 6u);
}

// Inadmissible: the LocalQueue does not exist.
TEST(ReadWorkloadTest, InadmissibleIsPendingWithItsReason) {
  json wl = json::parse(kPending);
  wl["status"]["conditions"][0]["reason"] = "Inadmissible";
  wl["status"]["conditions"][0]["message"] = "LocalQueue ayatori doesn't exist";
  auto s = ReadWorkload(wl);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->pendingReason, "Inadmissible");
  EXPECT_EQ(s->pendingMessage, "LocalQueue ayatori doesn't exist");
}

TEST(ReadWorkloadTest, ABuiltWorkloadReadsBackAsNotYetSeenByKueue) {
  auto s = ReadWorkload(Build(QueuedJob()));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->metadata.name, std::string("ajob-") + kUid);
  EXPECT_EQ(s->metadata.finalizers, std::vector<std::string>{kResourceInUseFinalizer});
  ASSERT_EQ(s->metadata.ownerReferences.size(), 1u);
  EXPECT_TRUE(s->metadata.ownerReferences[0].controller);
  EXPECT_EQ(s->queueName, "ayatori");
  EXPECT_FALSE(s->quotaReserved || s->admitted);
  EXPECT_TRUE(s->pendingReason.empty());
  EXPECT_TRUE(s->conditions.empty());
}

TEST(ReadWorkloadTest, RejectsAnotherKindOrVersionWithThePath) {
  json wl = json::parse(kPending);
  wl["apiVersion"] = "kueue.x-k8s.io/v1beta1";
  auto old = ReadWorkload(wl);
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(old.status().message().find("apiVersion"), std::string::npos)
      << old.status().ToString();

  wl = json::parse(kPending);
  wl["kind"] = "ClusterQueue";
  EXPECT_FALSE(ReadWorkload(wl).ok());
}

TEST(ReadWorkloadTest, RejectsAWrongTypeWithThePath) {
  json wl = json::parse(kAdmitted);
  wl["status"]["admission"]["podSetAssignments"][1]["flavors"]["cpu"] = 7;
  auto s = ReadWorkload(wl);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("status.admission.podSetAssignments[1].flavors"),
            std::string::npos)
      << s.status().ToString();
  EXPECT_FALSE(ReadWorkload(json::array()).ok());
}

}  // namespace
}  // namespace ayatori::kueue
