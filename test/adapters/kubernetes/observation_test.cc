#include "adapters/kubernetes/observation.h"

#include <gtest/gtest.h>

#include "api/json.h"

namespace ayatori::adapters::kubernetes {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr const char* kBatchUid = "b0000000-0000-4000-8000-000000000001";
const seconds kPullTimeout{60};

api::Time T(const char* s) { return *api::ParseTime(s); }
const api::Time kNow = T("2026-11-29T08:10:00Z");

json BatchJob(json status = json::object()) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", "ayj-u1"}, {"namespace", "ci"}, {"uid", kBatchUid}}},
          {"status", std::move(status)}};
}

// A pod of the batch Job with the given main-container state (null = no container status yet).
json Pod(const char* phase, json state, const char* created = "2026-11-29T08:00:00Z") {
  json pod = {{"metadata",
               {{"name", "ayj-u1-abcde"},
                {"namespace", "ci"},
                {"creationTimestamp", created},
                {"labels", {{"execution.ayatori.ddupan.top/job-uid", "u1"}}},
                {"ownerReferences",
                 {{{"apiVersion", "batch/v1"},
                   {"kind", "Job"},
                   {"name", "ayj-u1"},
                   {"uid", kBatchUid},
                   {"controller", true}}}}}},
              {"status", {{"phase", phase}}}};
  if (!state.is_null()) {
    pod["status"]["containerStatuses"] = {{{"name", "main"}, {"state", std::move(state)}}};
  }
  return pod;
}

json Running(const char* startedAt = "2026-11-29T08:01:00Z") {
  return {{"running", {{"startedAt", startedAt}}}};
}

json Terminated(int code, const char* reason, const char* finishedAt = "2026-11-29T08:05:00Z") {
  return {{"terminated",
           {{"exitCode", code},
            {"reason", reason},
            {"startedAt", "2026-11-29T08:01:00Z"},
            {"finishedAt", finishedAt}}}};
}

json Waiting(const char* reason, const char* message = "") {
  return {{"waiting", {{"reason", reason}, {"message", message}}}};
}

Observation Observe(const std::optional<json>& job, const std::vector<json>& pods) {
  return ObserveExecutionFromJson(job, pods, kNow, kPullTimeout);
}

TEST(ObserveExecution, NoBatchJobIsAbsent) {
  Observation o = Observe(std::nullopt, {});
  EXPECT_EQ(o.phase, ExecutionPhase::kAbsent);
  EXPECT_TRUE(o.references.empty());
}

TEST(ObserveExecution, ReferencesTheBatchJobByUid) {
  Observation o = Observe(BatchJob(), {});
  ASSERT_EQ(o.references.size(), 1u);
  EXPECT_EQ(o.references[0].type, "Job");
  EXPECT_EQ(o.references[0].id, kBatchUid);
}

TEST(ObserveExecution, NoPodYetIsPending) {
  Observation o = Observe(BatchJob(), {});
  EXPECT_EQ(o.phase, ExecutionPhase::kPending);
  EXPECT_FALSE(o.startedAt);
}

TEST(ObserveExecution, PodWithoutContainerStatusIsPending) {
  EXPECT_EQ(Observe(BatchJob(), {Pod("Pending", nullptr)}).phase, ExecutionPhase::kPending);
}

TEST(ObserveExecution, UnschedulablePodIsPendingAndSaysWhy) {
  json pod = Pod("Pending", nullptr);
  pod["status"]["conditions"] = {{{"type", "PodScheduled"},
                                  {"status", "False"},
                                  {"reason", "Unschedulable"},
                                  {"message", "0/1 nodes are available"}}};
  Observation o = Observe(BatchJob(), {pod});
  EXPECT_EQ(o.phase, ExecutionPhase::kPending);
  EXPECT_EQ(o.reason, "Unschedulable");
  EXPECT_EQ(o.message, "pod ayj-u1-abcde cannot be scheduled: 0/1 nodes are available");
}

TEST(ObserveExecution, PodOnItsWayHasNoWaitingReason) {
  // The happy path: nothing to explain, so nothing for the Job's status to say.
  for (const char* reason : {"ContainerCreating", "PodInitializing"}) {
    Observation o = Observe(BatchJob(), {Pod("Pending", Waiting(reason))});
    EXPECT_EQ(o.phase, ExecutionPhase::kPending);
    EXPECT_EQ(o.reason, "") << reason;
  }
  EXPECT_EQ(Observe(BatchJob(), {Pod("Pending", nullptr)}).reason, "");
  EXPECT_EQ(Observe(BatchJob(), {}).reason, "");
}

TEST(ObserveExecution, ImagePullBackOffSaysWhenItFails) {
  Observation o = Observe(
      BatchJob(),
      {Pod("Pending", Waiting("ImagePullBackOff", "Back-off pulling"), "2026-11-29T08:09:30Z")});
  EXPECT_EQ(o.phase, ExecutionPhase::kPending);
  EXPECT_EQ(o.reason, "ImagePullBackOff");
  EXPECT_EQ(o.message,
            "pod ayj-u1-abcde: Back-off pulling; the Job fails with ImagePullFailed at "
            "2026-11-29T08:10:30Z if the image cannot be pulled by then "
            "(imagePullFailureTimeoutSeconds 60)");
}

TEST(ExplainMissingPod, FailedCreateExplainsAPendingJobWithoutPod) {
  Observation pending = Observe(BatchJob(), {});
  Observation o = ExplainMissingPod(
      pending, "ayj-u1",
      "Error creating: pods \"ayj-u1-x\" is forbidden: no PriorityClass with name gold was found");
  EXPECT_EQ(o.phase, ExecutionPhase::kPending);
  EXPECT_EQ(o.reason, "FailedCreate");
  EXPECT_EQ(o.message,
            "the pod of batch/v1 Job ayj-u1 could not be created: Error creating: pods "
            "\"ayj-u1-x\" is forbidden: no PriorityClass with name gold was found");
  EXPECT_EQ(o.references, pending.references);
  // Nothing to explain: unchanged.
  EXPECT_EQ(ExplainMissingPod(pending, "ayj-u1", "").reason, "");
  Observation running = Observe(BatchJob({{"active", 1}}), {Pod("Running", Running())});
  EXPECT_EQ(ExplainMissingPod(running, "ayj-u1", "quota").phase, ExecutionPhase::kRunning);
  EXPECT_EQ(ExplainMissingPod(running, "ayj-u1", "quota").reason, "");
}

TEST(FailedCreateFactsFromJson, ReadsTheEvent) {
  json event = {{"involvedObject", {{"kind", "Job"}, {"name", "ayj-u1"}, {"uid", kBatchUid}}},
                {"reason", "FailedCreate"},
                {"message", "Error creating: quota"},
                {"firstTimestamp", "2026-11-29T08:00:00Z"},
                {"lastTimestamp", "2026-11-29T08:05:00Z"}};
  FailedCreateFacts f = FailedCreateFactsFromJson(event);
  EXPECT_EQ(f.jobName, "ayj-u1");
  EXPECT_EQ(f.jobUid, kBatchUid);
  EXPECT_EQ(f.message, "Error creating: quota");
  EXPECT_EQ(f.lastSeen, T("2026-11-29T08:05:00Z"));
  EXPECT_EQ(FailedCreateFactsFromJson(json::array()).jobUid, "");  // malformed: empty facts
}

TEST(ObserveExecution, RunningContainerHasStarted) {
  Observation o = Observe(BatchJob({{"active", 1}}), {Pod("Running", Running())});
  EXPECT_EQ(o.phase, ExecutionPhase::kRunning);
  ASSERT_TRUE(o.startedAt);
  EXPECT_EQ(*o.startedAt, T("2026-11-29T08:01:00Z"));
  EXPECT_FALSE(o.exitCode);
}

TEST(ObserveExecution, ExitZeroSucceeds) {
  Observation o = Observe(BatchJob(), {Pod("Succeeded", Terminated(0, "Completed"))});
  EXPECT_EQ(o.phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(o.exitCode, 0);
  EXPECT_EQ(o.startedAt, T("2026-11-29T08:01:00Z"));
  EXPECT_EQ(o.finishedAt, T("2026-11-29T08:05:00Z"));
  // The same words on every adapter (src/adapters/task_messages.h).
  EXPECT_EQ(o.message, "The task exited with code 0");
}

TEST(ObserveExecution, NonZeroExitIsProcessFailedWithTheCode) {
  Observation o = Observe(BatchJob(), {Pod("Failed", Terminated(3, "Error"))});
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(o.reason, "ProcessFailed");
  EXPECT_EQ(o.exitCode, 3);
  EXPECT_TRUE(o.startedAt);
  EXPECT_TRUE(o.finishedAt);
  EXPECT_EQ(o.message, "The task exited with code 3");
}

TEST(ObserveExecution, OomKilledIsItsOwnReason) {
  Observation o = Observe(BatchJob(), {Pod("Failed", Terminated(137, "OOMKilled"))});
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(o.reason, "OOMKilled");
  EXPECT_EQ(o.exitCode, 137);
  EXPECT_EQ(o.message, "The task exceeded its memory limit and was killed (exit code 137)");
}

TEST(ObserveExecution, TerminatedStateWinsOverAStalePodPhase) {
  // The kubelet writes the container state and the phase together, but a cache may be read
  // between two patches; the container's own record is the fact.
  Observation o = Observe(BatchJob(), {Pod("Running", Terminated(0, "Completed"))});
  EXPECT_EQ(o.phase, ExecutionPhase::kSucceeded);
}

TEST(ObserveExecution, LostContainerIsUnknownNotFailed) {
  Observation o = Observe(BatchJob(), {Pod("Failed", Terminated(137, "ContainerStatusUnknown"))});
  EXPECT_EQ(o.phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(o.reason, "ContainerStatusUnknown");
  EXPECT_FALSE(o.exitCode);
}

TEST(ObserveExecution, ImagePullErrorBeforeTheTimeoutIsPending) {
  for (const char* reason : {"ErrImagePull", "ImagePullBackOff", "InvalidImageName"}) {
    Observation o =
        Observe(BatchJob(),
                {Pod("Pending", Waiting(reason, "pull access denied"), "2026-11-29T08:09:30Z")});
    EXPECT_EQ(o.phase, ExecutionPhase::kPending) << reason;
    EXPECT_EQ(o.reason, reason);
    EXPECT_NE(o.message.find("pull access denied"), std::string::npos) << o.message;
  }
}

TEST(ObserveExecution, ImagePullErrorPastTheTimeoutFailsWithoutStart) {
  for (const char* reason : {"ErrImagePull", "ImagePullBackOff", "InvalidImageName"}) {
    // Created exactly one timeout before now.
    Observation o =
        Observe(BatchJob(),
                {Pod("Pending", Waiting(reason, "pull access denied"), "2026-11-29T08:09:00Z")});
    EXPECT_EQ(o.phase, ExecutionPhase::kFailed) << reason;
    EXPECT_EQ(o.reason, "ImagePullFailed");
    EXPECT_FALSE(o.startedAt);
    EXPECT_FALSE(o.exitCode);
    EXPECT_NE(o.message.find("pull access denied"), std::string::npos) << o.message;
  }
}

TEST(ObserveExecution, OtherWaitingReasonsStayPendingPastTheTimeout) {
  // A missing Secret or ConfigMap: the kubelet retries until it appears (spec: the Job stays
  // not started and says why).
  Observation o = Observe(
      BatchJob(),
      {Pod("Pending", Waiting("CreateContainerConfigError", "secret \"token\" not found"))});
  EXPECT_EQ(o.phase, ExecutionPhase::kPending);
  EXPECT_EQ(o.reason, "CreateContainerConfigError");
  EXPECT_EQ(o.message, "pod ayj-u1-abcde: secret \"token\" not found");
}

TEST(ObserveExecution, PodRejectedBeforeStartIsBackendRejected) {
  json pod = Pod("Failed", nullptr);
  pod["status"]["reason"] = "OutOfcpu";
  pod["status"]["message"] = "Node didn't have enough resource: cpu";
  Observation o = Observe(BatchJob(), {pod});
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(o.reason, "BackendRejected");
  EXPECT_NE(o.message.find("OutOfcpu"), std::string::npos);
  EXPECT_FALSE(o.startedAt);
}

TEST(ObserveExecution, PodGoneWhileActiveIsUnknown) {
  Observation o = Observe(BatchJob({{"active", 1}}), {});
  EXPECT_EQ(o.phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(o.reason, "PodLost");
}

TEST(ObserveExecution, PodGoneAfterTheJobFailedIsUnknownNotFailed) {
  json status = {{"failed", 1},
                 {"conditions",
                  {{{"type", "Failed"}, {"status", "True"}, {"reason", "BackoffLimitExceeded"}}}}};
  Observation o = Observe(BatchJob(status), {});
  EXPECT_EQ(o.phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(o.reason, "PodLost");
  EXPECT_NE(o.message.find("BackoffLimitExceeded"), std::string::npos);
}

// Issue 25: the batch Job's activeDeadlineSeconds backstop stops the execution; its kill is not
// the task's failure, and the pod being gone is not a lost result.
TEST(ObserveExecution, TheDeadlineBackstopIsAStopNotAFailure) {
  json status = {
      {"failed", 1},
      {"conditions", {{{"type", "Failed"}, {"status", "True"}, {"reason", "DeadlineExceeded"}}}}};
  Observation killed = Observe(BatchJob(status), {Pod("Failed", Terminated(137, "Error"))});
  EXPECT_EQ(killed.phase, ExecutionPhase::kCancelled);
  EXPECT_EQ(killed.exitCode, 137);
  EXPECT_TRUE(killed.startedAt);
  EXPECT_NE(killed.message.find("activeDeadlineSeconds"), std::string::npos) << killed.message;
  EXPECT_EQ(Observe(BatchJob(status), {}).phase, ExecutionPhase::kCancelled);
  // An exit 0 before the kill is the task's success.
  EXPECT_EQ(Observe(BatchJob(status), {Pod("Succeeded", Terminated(0, "Completed"))}).phase,
            ExecutionPhase::kSucceeded);
}

TEST(ObserveExecution, PodGoneAfterTheJobCompletedIsSucceeded) {
  json status = {{"succeeded", 1},
                 {"completionTime", "2026-11-29T08:05:00Z"},
                 {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}};
  Observation o = Observe(BatchJob(status), {});
  EXPECT_EQ(o.phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(o.exitCode, 0);
  EXPECT_EQ(o.finishedAt, T("2026-11-29T08:05:00Z"));
}

TEST(ObserveExecution, IgnoresPodsOfAnotherBatchJob) {
  json stale = Pod("Failed", Terminated(1, "Error"));
  stale["metadata"]["ownerReferences"][0]["uid"] = "another-batch-job";
  Observation o = Observe(BatchJob(), {stale});
  EXPECT_EQ(o.phase, ExecutionPhase::kPending);
}

// kubectl delete job --cascade=orphan: the garbage collector strips the ownerReference and the
// pod runs on; the Job controller's label still names the batch Job.
TEST(IsOrphanOfBatchJob, NeedsNoOwnerAndTheKnownBatchJobsLabel) {
  json orphan = Pod("Running", Running());
  orphan["metadata"].erase("ownerReferences");
  orphan["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = kBatchUid;
  EXPECT_TRUE(IsOrphanOfBatchJob(PodFactsFromJson(orphan), "u1", kBatchUid));
  EXPECT_FALSE(IsOrphanOfBatchJob(PodFactsFromJson(orphan), "u1", ""));  // nothing to compare
  EXPECT_FALSE(IsOrphanOfBatchJob(PodFactsFromJson(orphan), "u2", kBatchUid));
  EXPECT_FALSE(IsPodOfBatchJob(PodFactsFromJson(orphan), "u1", kBatchUid));

  json legacy = orphan;
  legacy["metadata"]["labels"].erase("batch.kubernetes.io/controller-uid");
  legacy["metadata"]["labels"]["controller-uid"] = kBatchUid;
  EXPECT_TRUE(IsOrphanOfBatchJob(PodFactsFromJson(legacy), "u1", kBatchUid));

  json otherBatchJob = orphan;
  otherBatchJob["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = "another";
  EXPECT_FALSE(IsOrphanOfBatchJob(PodFactsFromJson(otherBatchJob), "u1", kBatchUid));

  json owned = Pod("Running", Running());  // still owned: not an orphan
  owned["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = kBatchUid;
  EXPECT_FALSE(IsOrphanOfBatchJob(PodFactsFromJson(owned), "u1", kBatchUid));
}

TEST(IsPodOfBatchJob, TheLabelAloneProvesNothing) {
  json ours = Pod("Running", Running());
  EXPECT_TRUE(IsPodOfBatchJob(PodFactsFromJson(ours), "u1", kBatchUid));
  EXPECT_TRUE(IsPodOfBatchJob(PodFactsFromJson(ours), "u1", ""));  // batch Job gone, unrecorded
  EXPECT_FALSE(IsPodOfBatchJob(PodFactsFromJson(ours), "u2", ""));

  json unowned = ours;
  unowned["metadata"].erase("ownerReferences");
  EXPECT_FALSE(IsPodOfBatchJob(PodFactsFromJson(unowned), "u1", ""));

  json forgedUid = ours;
  forgedUid["metadata"]["ownerReferences"][0]["uid"] = "forged";
  EXPECT_FALSE(IsPodOfBatchJob(PodFactsFromJson(forgedUid), "u1", kBatchUid));

  json otherJob = ours;
  otherJob["metadata"]["ownerReferences"][0]["name"] = "someone-elses-job";
  EXPECT_FALSE(IsPodOfBatchJob(PodFactsFromJson(otherJob), "u1", kBatchUid));

  json notAController = ours;
  notAController["metadata"]["ownerReferences"][0]["controller"] = false;
  EXPECT_FALSE(IsPodOfBatchJob(PodFactsFromJson(notAController), "u1", kBatchUid));

  for (const auto& [field, value] : {std::pair{"kind", "ReplicaSet"}, {"apiVersion", "apps/v1"}}) {
    json otherKind = ours;
    otherKind["metadata"]["ownerReferences"][0][field] = value;
    EXPECT_FALSE(IsPodOfBatchJob(PodFactsFromJson(otherKind), "u1", kBatchUid)) << field;
  }
}

TEST(ObserveExecution, PrefersAResultOverAWaitingPod) {
  Observation o = Observe(BatchJob(), {Pod("Pending", Waiting("ContainerCreating")),
                                       Pod("Failed", Terminated(2, "Error"))});
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(o.exitCode, 2);
}

TEST(ObserveExecution, ReadsTheMainContainer) {
  json pod = Pod("Running", nullptr);
  pod["status"]["containerStatuses"] = {{{"name", "sidecar"}, {"state", Terminated(9, "Error")}},
                                        {{"name", "main"}, {"state", Running()}}};
  EXPECT_EQ(Observe(BatchJob(), {pod}).phase, ExecutionPhase::kRunning);
}

TEST(ObserveExecution, BatchJobWithAnotherUidThanRecordedIsAMismatch) {
  Observation o = ObserveExecutionFromJson(BatchJob(), {Pod("Running", Running())}, kNow,
                                           kPullTimeout, "recorded-uid");
  EXPECT_EQ(o.phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(o.reason, "ExecutionMismatch");
  EXPECT_EQ(ObserveExecutionFromJson(BatchJob(), {Pod("Running", Running())}, kNow, kPullTimeout,
                                     kBatchUid)
                .phase,
            ExecutionPhase::kRunning);
}

TEST(ObserveExecution, PodsLeftAfterTheBatchJobWasDeletedStillReport) {
  EXPECT_EQ(Observe(std::nullopt, {Pod("Running", Running())}).phase, ExecutionPhase::kRunning);
  Observation o = Observe(std::nullopt, {Pod("Succeeded", Terminated(0, "Completed"))});
  EXPECT_EQ(o.phase, ExecutionPhase::kSucceeded);
  EXPECT_TRUE(o.references.empty());
}

TEST(ObserveExecution, MalformedObjectsDoNotCrash) {
  json pod = {{"metadata", 5}, {"status", {{"containerStatuses", "nope"}}}};
  Observation o =
      ObserveExecutionFromJson(json::array(), {pod, json(), json::object()}, kNow, kPullTimeout);
  EXPECT_NE(o.phase, ExecutionPhase::kSucceeded);
}

// Cancellation.

json Deleted(json pod, const char* at, int grace = 0) {
  pod["metadata"]["deletionTimestamp"] = at;
  pod["metadata"]["deletionGracePeriodSeconds"] = grace;
  return pod;
}

TEST(ObserveCancellation, NothingLeftIsCancelled) {
  Observation o = ObserveCancellationFromJson({}, kNow);
  EXPECT_EQ(o.phase, ExecutionPhase::kCancelled);
  EXPECT_EQ(o.reason, "Cancelled");
  EXPECT_FALSE(o.startedAt);
}

TEST(ObserveCancellation, RunningPodIsStillStopping) {
  Observation o = ObserveCancellationFromJson(
      {Deleted(Pod("Running", Running()), "2026-11-29T08:10:30Z", 30)}, kNow);
  EXPECT_EQ(o.phase, ExecutionPhase::kRunning);
}

TEST(ObserveCancellation, PendingPodIsStillStoppingButNeverStarted) {
  Observation o = ObserveCancellationFromJson({Pod("Pending", Waiting("ImagePullBackOff"))}, kNow);
  EXPECT_EQ(o.phase, ExecutionPhase::kPending);
  EXPECT_FALSE(o.startedAt);
}

TEST(ObserveCancellation, KilledPodIsCancelled) {
  // Deletion requested at 08:09:30 (deletionTimestamp 08:10:00 minus 30 s of grace); killed at
  // 08:09:31 with 137.
  json pod = Deleted(Pod("Failed", Terminated(137, "Error", "2026-11-29T08:09:31Z")),
                     "2026-11-29T08:10:00Z", 30);
  Observation o = ObserveCancellationFromJson({pod}, kNow);
  EXPECT_EQ(o.phase, ExecutionPhase::kCancelled);
  EXPECT_EQ(o.startedAt, T("2026-11-29T08:01:00Z"));
  EXPECT_EQ(o.finishedAt, T("2026-11-29T08:09:31Z"));
  EXPECT_FALSE(o.exitCode);
}

// Success wins on every adapter (the Docker adapter reports exit 0 as Succeeded whatever stopped
// it): an exit 0 in the second the stop was requested, or while the pod was being stopped, is the
// task's own result, not a cancellation.
TEST(ObserveCancellation, AnExitZeroRacingTheRequestIsSucceeded) {
  // Deletion requested at 08:09:30 (deletionTimestamp 08:10:00 minus 30 s of grace).
  for (const char* finished : {"2026-11-29T08:09:30Z", "2026-11-29T08:09:45Z"}) {
    json pod =
        Deleted(Pod("Succeeded", Terminated(0, "Completed", finished)), "2026-11-29T08:10:00Z", 30);
    Observation o = ObserveCancellationFromJson({pod}, kNow);
    EXPECT_EQ(o.phase, ExecutionPhase::kSucceeded) << finished;
    EXPECT_EQ(o.exitCode, 0) << finished;
    EXPECT_EQ(o.finishedAt, T(finished));
  }
  // A failure after the request is the stop's doing.
  json killed = Deleted(Pod("Failed", Terminated(143, "Error", "2026-11-29T08:09:30Z")),
                        "2026-11-29T08:10:00Z", 30);
  EXPECT_EQ(ObserveCancellationFromJson({killed}, kNow).phase, ExecutionPhase::kCancelled);
}

TEST(ObserveCancellation, SuccessBeforeTheRequestWins) {
  json pod = Deleted(Pod("Succeeded", Terminated(0, "Completed", "2026-11-29T08:05:00Z")),
                     "2026-11-29T08:09:00Z");
  Observation o = ObserveCancellationFromJson({pod}, kNow);
  EXPECT_EQ(o.phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(o.exitCode, 0);
  // Not yet deleted at all: finished on its own.
  EXPECT_EQ(ObserveCancellationFromJson({Pod("Succeeded", Terminated(0, "Completed"))}, kNow).phase,
            ExecutionPhase::kSucceeded);
}

// The kubelet (kwok too) ends a deletion with grace 0 once the container is dead; while a finalizer
// (batch.kubernetes.io/job-tracking) keeps the pod, deletionTimestamp is then that moment, not the
// request's. Killed by our stop at 08:09:31 (requested 08:09:30), finalized at 08:09:33: still
// the stop's doing, never a failure of the task (found by the chaos e2e test).
TEST(ObserveCancellation, AKillFinalizedWithGraceZeroIsCancelled) {
  json pod = Deleted(Pod("Failed", Terminated(137, "Error", "2026-11-29T08:09:31Z")),
                     "2026-11-29T08:09:33Z", 0);
  Observation o = ObserveCancellationFromJson({pod}, kNow);
  EXPECT_EQ(o.phase, ExecutionPhase::kCancelled) << ExecutionPhaseName(o.phase) << o.reason;
}

TEST(ObserveCancellation, FailureBeforeTheRequestKeepsItsResult) {
  Observation o = ObserveCancellationFromJson({Pod("Failed", Terminated(3, "Error"))}, kNow);
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(o.reason, "ProcessFailed");
  EXPECT_EQ(o.exitCode, 3);
}

TEST(ObserveCancellation, PodDeletedBeforeItStartedIsCancelled) {
  json pod = Deleted(Pod("Failed", json{{"terminated",
                                         {{"exitCode", 137},
                                          {"reason", "ContainerStatusUnknown"},
                                          {"finishedAt", "2026-11-29T08:09:01Z"}}}}),
                     "2026-11-29T08:09:31Z", 30);
  Observation o = ObserveCancellationFromJson({pod}, kNow);
  EXPECT_EQ(o.phase, ExecutionPhase::kCancelled);
  EXPECT_FALSE(o.startedAt);
}

TEST(PodFactsFromJson, KeepsOnlyWhatTheMappingReads) {
  json pod = Deleted(Pod("Failed", Terminated(3, "Error")), "2026-11-29T08:09:30Z", 30);
  pod["metadata"]["annotations"] = {{"execution.ayatori.ddupan.top/job-name", "hello"}};
  PodFacts f = PodFactsFromJson(pod);
  EXPECT_EQ(f.name, "ayj-u1-abcde");
  EXPECT_EQ(f.jobUid, "u1");
  EXPECT_EQ(f.jobName, "hello");
  EXPECT_EQ(f.controllerUid, kBatchUid);
  EXPECT_EQ(f.created, T("2026-11-29T08:00:00Z"));
  EXPECT_EQ(f.deleted, T("2026-11-29T08:09:30Z"));
  EXPECT_EQ(f.deletionGracePeriodSeconds, 30);
  EXPECT_EQ(f.phase, "Failed");
  EXPECT_EQ(f.state, ContainerState::kTerminated);
  EXPECT_EQ(f.exitCode, 3);
  EXPECT_EQ(f.reason, "Error");
  EXPECT_EQ(f.startedAt, T("2026-11-29T08:01:00Z"));
  EXPECT_EQ(f.finishedAt, T("2026-11-29T08:05:00Z"));
  EXPECT_TRUE(IsPodTerminal(f));
  EXPECT_FALSE(IsPodTerminal(PodFactsFromJson(Pod("Running", Running()))));
}

TEST(BatchJobFactsFromJson, ReadsIdentityConditionsAndCounts) {
  json job = BatchJob({{"active", 1}});
  job["metadata"]["labels"] = {{"execution.ayatori.ddupan.top/job-uid", "u1"},
                               {"execution.ayatori.ddupan.top/job-name", "hello"}};
  job["metadata"]["ownerReferences"] = {{{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                                         {"kind", "Job"},
                                         {"name", "hello"},
                                         {"uid", "u1"},
                                         {"controller", true}}};
  BatchJobFacts f = BatchJobFactsFromJson(job);
  EXPECT_EQ(f.uid, kBatchUid);
  EXPECT_EQ(f.jobUid, "u1");
  EXPECT_EQ(f.jobName, "hello");
  EXPECT_TRUE(f.owned);
  EXPECT_TRUE(f.hadPods);
  EXPECT_FALSE(f.complete);
  EXPECT_FALSE(BatchJobFactsFromJson(BatchJob()).hadPods);
  EXPECT_FALSE(BatchJobFactsFromJson(BatchJob()).owned);
  EXPECT_TRUE(
      BatchJobFactsFromJson(BatchJob({{"uncountedTerminatedPods", {{"failed", {"pod-uid"}}}}}))
          .hadPods);
}

TEST(ReferencedBatchJobUid, FindsTheJobReference) {
  EXPECT_EQ(ReferencedBatchJobUid({{"Pod", "p"}, {"Job", "j"}}), "j");
  EXPECT_EQ(ReferencedBatchJobUid({}), "");
}

}  // namespace
}  // namespace ayatori::adapters::kubernetes
