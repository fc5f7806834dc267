// The controller's Workload reads and writes (controller/workloads.h) over FakeKubeClient, and
// what it tells the state machine of a Workload.
#include "controller/workloads.h"

#include <gtest/gtest.h>

#include "controller/kinds.h"
#include "kube/testing/fake_clock.h"
#include "kube/testing/fake_kube_client.h"

namespace ayatori::controller {
namespace {

using nlohmann::json;

api::Job QueuedJob() {
  api::Job job;
  job.metadata.name = "train";
  job.metadata.namespace_ = "team-a";
  job.metadata.uid = "u-1";
  job.metadata.labels[kueue::kQueueNameLabel] = "ayatori";
  return job;
}

kueue::WorkloadState StateOf(const json& conditions) {
  auto s = kueue::ReadWorkload({{"apiVersion", kueue::kApiVersion},
                                {"kind", "Workload"},
                                {"metadata", {{"name", "ajob-u-1"}}},
                                {"status", {{"conditions", conditions}}}});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : kueue::WorkloadState{};
}

json Condition(const std::string& type, const std::string& status, const std::string& reason,
               const std::string& message) {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"lastTransitionTime", "2026-04-02T10:00:00Z"}};
}

TEST(WorkloadFactsOfTest, APendingWorkloadSaysWhatItWaitsFor) {
  auto facts = WorkloadFactsOf(StateOf(json::array({Condition("QuotaReserved", "False", "Pending",
                                                              "insufficient quota for pods")})),
                               false);
  EXPECT_FALSE(facts.fresh);
  EXPECT_FALSE(facts.quotaReserved || facts.admitted || facts.evicted || facts.finished);
  EXPECT_EQ(facts.reason, "Pending");
  EXPECT_EQ(facts.message, "insufficient quota for pods");
}

TEST(WorkloadFactsOfTest, AnAdmittedThenEvictedWorkloadCarriesTheEviction) {
  auto facts = WorkloadFactsOf(
      StateOf(
          json::array({Condition("QuotaReserved", "True", "QuotaReserved", "reserved"),
                       Condition("Admitted", "True", "Admitted", "The workload is admitted"),
                       Condition("Evicted", "True", "Preempted", "Preempted by a higher priority"),
                       Condition("PodsReady", "True", "Started", ""),
                       Condition("Finished", "True", "Failed", "Evicted")})),
      true);
  EXPECT_TRUE(facts.fresh && facts.quotaReserved && facts.admitted && facts.podsReady);
  EXPECT_EQ(facts.reason, "Admitted");
  EXPECT_EQ(facts.message, "The workload is admitted");
  EXPECT_TRUE(facts.evicted);
  EXPECT_EQ(facts.evictedReason, "Preempted");
  EXPECT_EQ(facts.evictedMessage, "Preempted by a higher priority");
  EXPECT_TRUE(facts.finished);
}

class WorkloadClientTest : public ::testing::Test {
 protected:
  kube::testing::FakeKubeClient fake_;
  kube::testing::FakeClock clock_;
  WorkloadClient client_{fake_, clock_};
};

TEST_F(WorkloadClientTest, CreatesTheJobsWorkloadWithTheResolvedPriority) {
  ASSERT_TRUE(fake_
                  .Create(kWorkloadPriorityClasses, "",
                          {{"apiVersion", kueue::kApiVersion},
                           {"kind", "WorkloadPriorityClass"},
                           {"metadata", {{"name", "high"}}},
                           {"value", 1000}},
                          {})
                  .ok());
  api::Job job = QueuedJob();
  job.metadata.labels[kueue::kPriorityClassLabel] = "high";
  ASSERT_TRUE(client_.Create(job, "ayatori").ok());
  auto created = fake_.Get(kWorkloads, "team-a", "ajob-u-1");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ((*created)["spec"]["priority"], 1000);
  EXPECT_EQ((*created)["spec"]["priorityClassRef"]["name"], "high");
  EXPECT_EQ((*created)["spec"]["queueName"], "ayatori");
  // Again (a lost answer, a restart): the Workload that exists is the Job's.
  EXPECT_TRUE(client_.Create(job, "ayatori").ok());
}

TEST_F(WorkloadClientTest, AMissingPriorityClassIsAnError) {
  api::Job job = QueuedJob();
  job.metadata.labels[kueue::kPriorityClassLabel] = "missing";
  EXPECT_EQ(client_.Create(job, "ayatori").code(), StatusCode::kNotFound);
  EXPECT_FALSE(fake_.Get(kWorkloads, "team-a", "ajob-u-1").ok());
}

TEST_F(WorkloadClientTest, AWorkloadFinishedBeforeAdmissionIsDeletedForANewOne) {
  auto built = kueue::BuildWorkload(QueuedJob(), {});
  ASSERT_TRUE(built.ok());
  auto created = fake_.Create(kWorkloads, "team-a", *built, {});
  ASSERT_TRUE(created.ok());
  (*created)["status"] = {
      {"conditions", json::array({Condition("Finished", "True", "Failed", "by hand")})}};
  ASSERT_TRUE(fake_.UpdateStatus(kWorkloads, "team-a", *created, {}).ok());
  EXPECT_EQ(client_.Create(QueuedJob(), "ayatori").code(), StatusCode::kUnavailable);
  EXPECT_FALSE(fake_.Get(kWorkloads, "team-a", "ajob-u-1").ok()) << "the Finished one stayed";
  EXPECT_TRUE(client_.Create(QueuedJob(), "ayatori").ok());
  EXPECT_TRUE(fake_.Get(kWorkloads, "team-a", "ajob-u-1").ok());
}

// Someone allowed to create Workloads in the namespace makes the Job's Workload first (another
// LocalQueue, no owner): it is not taken for the Job's, and stays as it was.
TEST_F(WorkloadClientTest, AWorkloadOfTheJobsNameMadeBySomeoneElseIsRefused) {
  auto built = kueue::BuildWorkload(QueuedJob(), {});
  ASSERT_TRUE(built.ok());
  json forged = *built;
  forged["metadata"].erase("ownerReferences");
  forged["spec"]["queueName"] = "elsewhere";
  ASSERT_TRUE(fake_.Create(kWorkloads, "team-a", forged, {}).ok());
  const Status s = client_.Create(QueuedJob(), "ayatori");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("not controlled by this Job"), std::string::npos) << s.message();
  auto kept = fake_.Get(kWorkloads, "team-a", "ajob-u-1");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ((*kept)["spec"]["queueName"], "elsewhere");

  auto state = kueue::ReadWorkload(*kept);
  ASSERT_TRUE(state.ok());
  EXPECT_FALSE(ControlledByJob(*state, "u-1"));
  json otherOwner = *built;
  otherOwner["metadata"]["ownerReferences"][0]["uid"] = "u-2";
  EXPECT_FALSE(ControlledByJob(*kueue::ReadWorkload(otherOwner), "u-1"));
  EXPECT_TRUE(ControlledByJob(*kueue::ReadWorkload(*built), "u-1"));
}

TEST_F(WorkloadClientTest, ReadSaysNoneWhenThereIsNone) {
  auto read = client_.Read("team-a", "u-1");
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->has_value());
}

TEST(PlacementTest, FlavorLabelsWinOverTheParametersAndTolerationsAreAdded) {
  FlavorPlacement placement;
  placement.nodeLabels = {{"pool", "gpu"}, {"zone", "b"}};
  placement.tolerations = json::array({{{"key", "gpu"}, {"operator", "Exists"}}});
  const json placed =
      WithPlacement({{"spec",
                      {{"nodeSelector", {{"zone", "a"}, {"os", "linux"}}},
                       {"tolerations", json::array({{{"key", "spot"}, {"operator", "Exists"}}})}}}},
                    placement);
  EXPECT_EQ(placed["spec"]["nodeSelector"],
            json({{"os", "linux"}, {"pool", "gpu"}, {"zone", "b"}}));
  EXPECT_EQ(placed["spec"]["tolerations"].size(), 2u);
  EXPECT_EQ(WithPlacement(json::object(), {})["spec"], json::object());
}

TEST(PlacementTest, QueueNodeSelectorReadsTheParametersQueueingSelector) {
  EXPECT_EQ(QueueNodeSelector(
                {{"spec", {{"queueing", {{"nodeSelector", {{"ayatori.ddupan.top/host", "a"}}}}}}}}),
            (std::map<std::string, std::string>{{"ayatori.ddupan.top/host", "a"}}));
  EXPECT_TRUE(QueueNodeSelector(json::object()).empty());
  EXPECT_TRUE(QueueNodeSelector({{"spec", {{"queueing", "wrong"}}}}).empty());
}

TEST_F(WorkloadClientTest, AdmittedPlacementReadsEveryFlavorOfThePodSet) {
  for (const auto& [name, label] : {std::pair{"cpu-flavor", "a"}, std::pair{"mem-flavor", "b"}}) {
    ASSERT_TRUE(fake_
                    .Create(kResourceFlavors, "",
                            {{"apiVersion", kueue::kApiVersion},
                             {"kind", "ResourceFlavor"},
                             {"metadata", {{"name", name}}},
                             {"spec",
                              {{"nodeLabels", {{std::string("pool-") + label, label}}},
                               {"tolerations", json::array({{{"key", label}}})}}}},
                            {})
                    .ok());
  }
  ASSERT_TRUE(client_.Create(QueuedJob(), "ayatori").ok());
  EXPECT_EQ(client_.AdmittedPlacement("team-a", "u-1").status().code(),
            StatusCode::kFailedPrecondition)
      << "not admitted yet";
  auto workload = fake_.Get(kWorkloads, "team-a", "ajob-u-1");
  ASSERT_TRUE(workload.ok());
  (*workload)["status"] = {
      {"admission",
       {{"clusterQueue", "cq"},
        {"podSetAssignments",
         json::array({{{"name", "main"},
                       {"flavors", {{"cpu", "cpu-flavor"}, {"memory", "mem-flavor"}}}}})}}},
      {"conditions", json::array({Condition("Admitted", "True", "Admitted", "")})}};
  ASSERT_TRUE(fake_.UpdateStatus(kWorkloads, "team-a", *workload, {}).ok());
  auto placement = client_.AdmittedPlacement("team-a", "u-1");
  ASSERT_TRUE(placement.ok()) << placement.status().ToString();
  EXPECT_EQ(placement->nodeLabels,
            (std::map<std::string, std::string>{{"pool-a", "a"}, {"pool-b", "b"}}));
  EXPECT_EQ(placement->tolerations.size(), 2u);
}

}  // namespace
}  // namespace ayatori::controller
