#include "kueue/workload_writes.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/json.h"

namespace ayatori::kueue {
namespace {

using nlohmann::json;

const api::Time kNow = api::Time(std::chrono::seconds(1780000000));

// Reserved and admitted, then evicted before the Job's admission was persisted.
constexpr const char* kEvicted = R"({
  "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
  "metadata": {"name": "ajob-1", "namespace": "team-a", "uid": "w-1", "resourceVersion": "900",
               "finalizers": ["example.com/other", "kueue.x-k8s.io/resource-in-use"]},
  "spec": {"queueName": "ayatori", "priority": 0},
  "status": {
    "admission": {"clusterQueue": "ayatori", "podSetAssignments": [
      {"name": "main", "flavors": {"cpu": "docker-a"}, "count": 1}]},
    "conditions": [
      {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
       "message": "Quota reserved in ClusterQueue ayatori", "lastTransitionTime": "2026-04-02T10:00:00Z"},
      {"type": "Admitted", "status": "True", "reason": "Admitted",
       "message": "The workload is admitted", "lastTransitionTime": "2026-04-02T10:00:00Z"},
      {"type": "Evicted", "status": "True", "reason": "ClusterQueueStopped",
       "message": "The ClusterQueue is stopped", "lastTransitionTime": "2026-04-02T10:00:05Z"}]}})";

WorkloadState Read(const json& workload) {
  auto s = ReadWorkload(workload);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : WorkloadState{};
}

const json* ConditionOf(const json& workload, const std::string& type) {
  for (const json& c : workload["status"]["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

TEST(ConditionApplyTest, NamesTheWorkloadAndHoldsOnlyTheOneCondition) {
  const json body = ConditionApply(Read(json::parse(kEvicted)), api::ConditionStatus::kTrue,
                                   kConditionPodsReady, "Started", "The task started", kNow);
  EXPECT_EQ(body["apiVersion"], kApiVersion);
  EXPECT_EQ(body["kind"], "Workload");
  EXPECT_EQ(body["metadata"], json({{"name", "ajob-1"}, {"namespace", "team-a"}}));
  ASSERT_EQ(body["status"]["conditions"].size(), 1u);
  const json& c = body["status"]["conditions"][0];
  EXPECT_EQ(c["type"], "PodsReady");
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "Started");
  EXPECT_EQ(c["message"], "The task started");
  EXPECT_EQ(c["lastTransitionTime"], api::FormatTime(kNow));
  EXPECT_FALSE(body.contains("spec")) << "an apply of status must not claim spec fields";
  EXPECT_EQ(ConditionFieldManager("PodsReady"), "ayatori-PodsReady");
}

TEST(ConditionApplyTest, KeepsTheTransitionTimeOfAnUnchangedStatusAndCapsTheMessage) {
  const json body =
      ConditionApply(Read(json::parse(kEvicted)), api::ConditionStatus::kTrue, kConditionAdmitted,
                     "Admitted", std::string(kMaxConditionMessageBytes + 10, 'x'), kNow);
  const json& c = body["status"]["conditions"][0];
  EXPECT_EQ(c["lastTransitionTime"], "2026-04-02T10:00:00Z");
  EXPECT_EQ(c["message"].get<std::string>().size(), kMaxConditionMessageBytes);
}

TEST(ReservationClearedTest, RemovesTheAdmissionAndQueuesAgainOnTheReadsVersion) {
  const json cleared = ReservationCleared(json::parse(kEvicted), "ClusterQueueStopped",
                                          "evicted before the Job started", kNow);
  EXPECT_EQ(cleared["metadata"]["resourceVersion"], "900");
  EXPECT_FALSE(cleared["status"].contains("admission"));
  const WorkloadState s = Read(cleared);
  EXPECT_FALSE(s.quotaReserved);
  EXPECT_FALSE(s.admitted);
  EXPECT_EQ(s.pendingReason, "Pending");
  EXPECT_EQ(s.pendingMessage, "evicted before the Job started");
  const json* admitted = ConditionOf(cleared, "Admitted");
  ASSERT_NE(admitted, nullptr);
  EXPECT_EQ((*admitted)["reason"], "NoReservation");
  // Not a preemption: Kueue requeues it when the cause is gone (it flips Requeued).
  ASSERT_TRUE(s.requeued);
  EXPECT_EQ(s.requeued->status, api::ConditionStatus::kFalse);
  EXPECT_EQ(s.requeued->reason, "ClusterQueueStopped");
  // Kueue's own conditions are kept (the write is a PUT of the whole status).
  ASSERT_TRUE(s.evicted);
  EXPECT_EQ(s.evicted->reason, "ClusterQueueStopped");
}

TEST(ReservationClearedTest, APreemptedWorkloadIsRequeuedAtOnce) {
  const WorkloadState s =
      Read(ReservationCleared(json::parse(kEvicted), "Preempted", "preempted", kNow));
  ASSERT_TRUE(s.requeued);
  EXPECT_EQ(s.requeued->status, api::ConditionStatus::kTrue);
  EXPECT_EQ(s.requeued->reason, "Preempted");
}

TEST(ResourceInUseRemovalTest, TestsAndRemovesTheFinalizerAtItsIndex) {
  auto patch = ResourceInUseRemoval(Read(json::parse(kEvicted)));
  ASSERT_TRUE(patch);
  EXPECT_EQ(*patch, json::parse(R"([
    {"op": "test", "path": "/metadata/finalizers/1", "value": "kueue.x-k8s.io/resource-in-use"},
    {"op": "remove", "path": "/metadata/finalizers/1"}])"));
}

TEST(ResourceInUseRemovalTest, NothingToRemoveWithoutTheFinalizer) {
  json workload = json::parse(kEvicted);
  workload["metadata"]["finalizers"] = json::array({"example.com/other"});
  EXPECT_FALSE(ResourceInUseRemoval(Read(workload)));
}

}  // namespace
}  // namespace ayatori::kueue
