// CompactJobForCache and CachedJob: what the Job cache keeps, and that it stays within the
// per-Job budget.
#include <gtest/gtest.h>
#include <malloc.h>

#include <memory>
#include <string>
#include <vector>

#include "api/conditions.h"
#include "controller/cached_job.h"
#include "controller/controller.h"
#include "controller/resolver.h"
#include "statemachine/statemachine.h"

namespace ayatori::controller {
namespace {

api::Job TypicalAcceptedJob(int i) {
  api::Job job;
  job.metadata.name = "build-7f9c2-" + std::to_string(i);
  job.metadata.namespace_ = "team-a";
  job.metadata.uid = "5cb0e2a4-8f1d-4c6b-9d2e-0a1b2c3d4e" + std::to_string(10 + i % 90);
  job.metadata.resourceVersion = std::to_string(100000 + i);
  job.metadata.generation = 1;
  job.metadata.labels = {{"app", "ci"}, {"pipeline", "nightly-build"}};
  job.metadata.annotations = {{"example.com/owner", "team-a"}};
  job.metadata.finalizers = {api::kFinalizer};
  job.spec.jobClassName = "default";
  job.spec.task.image = "registry.example.com/ci/builder:2026.11";
  job.spec.task.command = {"/bin/sh", "-c"};
  job.spec.task.args = {"make -j4 test && make package"};
  for (int e = 0; e < 4; ++e) {
    job.spec.task.env.push_back(
        {"BUILD_VAR_" + std::to_string(e), "value-" + std::to_string(e), {}});
  }
  job.spec.resources = api::ResourceRequirements{
      {api::Quantity::MustParse("100m"), api::Quantity::MustParse("128Mi")},
      {api::Quantity::MustParse("1"), api::Quantity::MustParse("512Mi")}};
  job.spec.activeDeadlineSeconds = 600;
  job.spec.ttlSecondsAfterFinished = 3600;
  api::Time now{std::chrono::seconds(1790000000)};
  api::SetCondition(job.status.conditions,
                    {api::kConditionAccepted,
                     api::ConditionStatus::kTrue,
                     "Valid",
                     "Resolved JobClass default",
                     1,
                     {}},
                    now);
  api::SetCondition(job.status.conditions,
                    {api::kConditionScheduled,
                     api::ConditionStatus::kTrue,
                     "BackendCreated",
                     "The backend execution exists",
                     1,
                     {}},
                    now);
  api::SetCondition(job.status.conditions,
                    {api::kConditionSucceeded,
                     api::ConditionStatus::kUnknown,
                     "Running",
                     "The task started",
                     1,
                     {}},
                    now);
  job.status.observedGeneration = 1;
  job.status.resolvedJobClass = api::ResolvedJobClass{
      "default", "8aa4e2a4-8f1d-4c6b-9d2e-0a1b2c3d4e5f", "execution.ayatori.ddupan.top/docker",
      api::ParametersRef{api::kGroup, "DockerExecutionParameters", "default",
                         "c413e2a4-8f1d-4c6b-9d2e-0a1b2c3d4e5f"},
      "ayatori-backend-5f0c2a9e41b7d3c8"};
  job.status.effectiveResources = job.spec.resources;
  job.status.execution = api::ExecutionStatus{
      "docker",
      {{"Container", "70ce86d60bd8d9be823cacbd05a0ca716cfcf3a853b477c3954f367d124d92e3"}}};
  job.status.startTime = now;
  return job;
}

TEST(CacheProjectionTest, AcceptedJobKeepsWhatReconcilingNeedsAndDropsTheTask) {
  api::Job full = TypicalAcceptedJob(1);
  full.metadata.annotations[api::kConfirmBackendLostAnnotation] = "alice: host gone";
  api::Job compact = CompactJobForCache(full);
  EXPECT_EQ(compact.metadata.uid, full.metadata.uid);
  EXPECT_EQ(compact.metadata.resourceVersion, full.metadata.resourceVersion);
  EXPECT_EQ(compact.metadata.finalizers, full.metadata.finalizers);
  EXPECT_EQ(compact.status, full.status);
  EXPECT_EQ(compact.spec.desiredState, full.spec.desiredState);
  EXPECT_EQ(compact.spec.activeDeadlineSeconds, full.spec.activeDeadlineSeconds);
  EXPECT_EQ(compact.spec.ttlSecondsAfterFinished, full.spec.ttlSecondsAfterFinished);
  EXPECT_EQ(compact.metadata.annotations.size(), 1u);
  EXPECT_EQ(compact.metadata.annotations.at(api::kConfirmBackendLostAnnotation),
            "alice: host gone");
  EXPECT_TRUE(compact.metadata.labels.empty());
  EXPECT_TRUE(compact.spec.task.env.empty());
  EXPECT_TRUE(compact.spec.task.args.empty());
  EXPECT_FALSE(compact.spec.resources.has_value());
}

TEST(CacheProjectionTest, JobThatNeedsResolutionKeepsItsTaskAndResources) {
  api::Job waiting = TypicalAcceptedJob(2);
  waiting.status = {};
  api::Job compact = CompactJobForCache(waiting);
  EXPECT_EQ(compact.spec.task, waiting.spec.task);
  EXPECT_EQ(compact.spec.resources, waiting.spec.resources);
}

api::Job FinishedJobBeingDeleted(int i) {
  api::Job job = CompactJobForCache(TypicalAcceptedJob(i));
  api::Time later{std::chrono::seconds(1790000060)};
  job.metadata.deletionTimestamp = later;
  job.metadata.annotations[api::kConfirmBackendLostAnnotation] = "alice: host gone";
  api::SetCondition(job.status.conditions,
                    {api::kConditionSucceeded,
                     api::ConditionStatus::kFalse,
                     "ProcessFailed",
                     "The task exited with code 3",
                     1,
                     {}},
                    later);
  job.status.completionTime = later;
  job.status.result = api::JobResult{3, "ProcessFailed"};
  return job;
}

api::Job WaitingJobWithSecret(int i) {
  api::Job job = TypicalAcceptedJob(i);
  job.status = {};
  job.spec.task.env.push_back(
      {"TOKEN", std::nullopt, api::EnvVarSource{api::KeySelector{"creds", "token", false}, {}}});
  return job;
}

TEST(CachedJobTest, DecodesToTheProjectionItWasMadeFrom) {
  for (const api::Job& job : {CompactJobForCache(TypicalAcceptedJob(3)), TypicalAcceptedJob(4),
                              FinishedJobBeingDeleted(5), api::Job{}, WaitingJobWithSecret(7)}) {
    auto entry = CachedJob::Encode(job);
    ASSERT_TRUE(entry.ok()) << entry.status().ToString();
    auto decoded = entry->Decode();
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, job) << job.metadata.name;
    EXPECT_EQ(entry->state(), statemachine::DeriveState(job));
    EXPECT_EQ(entry->needsResolution(), statemachine::NeedsResolution(job));
    EXPECT_EQ(entry->waitsOn(), WaitTargets(job));
  }
  auto deleting = CachedJob::Encode(FinishedJobBeingDeleted(6));
  ASSERT_TRUE(deleting.ok());
  EXPECT_EQ(deleting->state(), statemachine::State::kDeleting);
  EXPECT_TRUE(deleting->waitsOn().empty());
  auto waiting = CachedJob::Encode(WaitingJobWithSecret(8));
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->waitsOn(),
            (std::vector<std::string>{"JobClass/default", "Secret/team-a/creds"}));
}

// The design budget is 3 KiB per cached Job (docs/design.md § Targets) for everything the
// controller keeps: the Job entry, the informer's bookkeeping (~200 B) and, with the Kubernetes
// backend, the facts of its batch Job and pod. The entry itself gets 1 KiB of it; measured on the
// heap.
TEST(CachedJobTest, RunningAndFinishedJobsStayWithinOneKiB) {
  constexpr int kJobs = 5000;
  for (bool finished : {false, true}) {
    std::vector<api::Job> inputs;
    inputs.reserve(kJobs);
    for (int i = 0; i < kJobs; ++i) {
      inputs.push_back(finished ? FinishedJobBeingDeleted(i)
                                : CompactJobForCache(TypicalAcceptedJob(i)));
    }
    std::vector<std::shared_ptr<const CachedJob>> cache;
    cache.reserve(kJobs);
    size_t before = mallinfo2().uordblks;
    for (int i = 0; i < kJobs; ++i) {
      auto entry = CachedJob::Encode(inputs[i]);
      ASSERT_TRUE(entry.ok());
      cache.push_back(std::make_shared<const CachedJob>(std::move(*entry)));
    }
    size_t after = mallinfo2().uordblks;
    double perJob = static_cast<double>(after - before) / kJobs;
    std::printf(
        "cached %s Job: %.0f bytes on the heap (%zu deflated; api::Job would be %zu + its "
        "strings)\n",
        finished ? "finished" : "running", perJob, cache.front()->encodedBytes(), sizeof(api::Job));
    RecordProperty(finished ? "bytes_per_cached_finished_job" : "bytes_per_cached_running_job",
                   static_cast<int>(perJob));
    EXPECT_LE(perJob, 1024.0);
  }
}

}  // namespace
}  // namespace ayatori::controller
