// The queueing rules of the pure state machine (statemachine.h, "Queueing"), one test per rule:
// a Job that names a LocalQueue waits in the Queued state until Admitted=True is persisted from a
// fresh read of its admitted Workload; evictions before and after that point; cancel and start
// timeout in the queue; the Workload actions (create, read, clear, PodsReady, finish); and the
// label ignored exactly as before while the controller has queueing disabled.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/conditions.h"
#include "statemachine/invariants.h"
#include "statemachine/statemachine.h"
#include "test/statemachine/sim.h"

namespace ayatori::statemachine::testing {
namespace {

using api::ConditionStatus;
using std::chrono::seconds;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const Time kNow = At(1'700'000'000);

std::string ConditionOf(const api::JobStatus& s, const char* type) {
  const api::Condition* c = api::FindCondition(s.conditions, type);
  return c == nullptr ? "<absent>" : api::ToString(c->status) + "/" + c->reason;
}

std::string MessageOf(const api::JobStatus& s, const char* type) {
  const api::Condition* c = api::FindCondition(s.conditions, type);
  return c == nullptr ? "<absent>" : c->message;
}

Resolution Resolved() {
  return Resolution::Resolved(
      api::ResolvedJobClass{"standard", "c1", "execution.ayatori.ddupan.top/docker", {}, {}}, {},
      "docker");
}

// A new Job with the finalizer, labelled for LocalQueue "team-a" unless `queue` is empty.
api::Job NewJob(const std::string& queue = "team-a") {
  api::Job j;
  j.metadata.name = "j";
  j.metadata.uid = "uid-1";
  j.metadata.generation = 1;
  j.metadata.finalizers = {api::kFinalizer};
  if (!queue.empty()) j.metadata.labels[kQueueNameLabel] = queue;
  j.spec = BasicSpec();
  return j;
}

Facts Round(bool queueing, std::optional<WorkloadFacts> workload = std::nullopt) {
  Facts f;
  f.now = kNow;
  f.queue.enabled = queueing;
  f.queue.workload = std::move(workload);
  return f;
}

WorkloadFacts Pending(std::string reason = "Pending", std::string message = "") {
  WorkloadFacts w;
  w.reason = std::move(reason);
  w.message = std::move(message);
  return w;
}

WorkloadFacts Admitted(bool fresh = true) {
  WorkloadFacts w;
  w.fresh = fresh;
  w.quotaReserved = true;
  w.admitted = true;
  w.reason = "Admitted";
  w.message = "The workload is admitted";
  return w;
}

WorkloadFacts Evicted(const std::string& reason, bool reserved = true) {
  WorkloadFacts w = Admitted();
  w.quotaReserved = reserved;
  w.admitted = reserved;
  w.evicted = true;
  w.evictedReason = reason;
  w.evictedMessage = "Preempted to accommodate a workload (UID: x) due to prioritization";
  return w;
}

// Applies a plan's status as if the controller wrote it, checking every rule on the way.
void Apply(api::Job& j, const Plan& p) {
  EXPECT_THAT(p.invariantViolations, IsEmpty());
  EXPECT_THAT(CheckPlan(j, p), IsEmpty());
  if (p.status) {
    EXPECT_THAT(CheckInvariants(j.status, *p.status), IsEmpty());
    j.status = *p.status;
  }
}

// Accepted while queueing is enabled: Queued, Admitted=False.
api::Job QueuedJob() {
  api::Job j = NewJob();
  Facts f = Round(true);
  f.resolution = Resolved();
  Apply(j, Decide(j, f));
  return j;
}

// Admitted=True persisted from a fresh read; Ensure answered with a running execution.
api::Job RunningQueuedJob() {
  api::Job j = QueuedJob();
  Apply(j, Decide(j, Round(true, Admitted())));
  Observation running;
  running.phase = ExecutionPhase::kRunning;
  running.references = {{"Container", "abc"}};
  running.startedAt = kNow;
  Facts f = Round(true, Admitted());
  f.result = CallResult{AdapterCall::kEnsure, running};
  Apply(j, Decide(j, f));
  return j;
}

Facts WithResult(Facts f, AdapterCall call, ExecutionPhase phase) {
  Observation o;
  o.phase = phase;
  f.result = CallResult{call, o};
  return f;
}

// ---------------------------------------------------------------------------------------------

TEST(Queue, WithQueueingDisabledTheLabelIsIgnoredExactlyAsBefore) {
  for (bool labelled : {false, true}) {
    api::Job j = NewJob(labelled ? "team-a" : "");
    Facts f = Round(false);
    f.resolution = Resolved();
    const Plan plain = Decide(NewJob(""), f);
    const Plan p = Decide(j, f);
    ASSERT_TRUE(p.status);
    EXPECT_EQ(*p.status, *plain.status);  // the very status an unlabelled Job gets
    EXPECT_EQ(ConditionOf(*p.status, kConditionAdmitted), "<absent>");
    EXPECT_EQ(p.workload, WorkloadAction::kNone);
    Apply(j, p);
    EXPECT_EQ(DeriveState(j), State::kScheduling);
    EXPECT_EQ(Decide(j, Round(false)).call, AdapterCall::kEnsure);
  }
}

TEST(Queue, AQueuedJobWaitsWithoutACallAndAsksForItsWorkload) {
  api::Job j = QueuedJob();
  EXPECT_EQ(ConditionOf(j.status, api::kConditionAccepted), "True/Valid");
  EXPECT_EQ(ConditionOf(j.status, kConditionAdmitted), "False/Pending");
  EXPECT_EQ(ConditionOf(j.status, api::kConditionSucceeded), "Unknown/Pending");
  EXPECT_EQ(DeriveState(j), State::kQueued);
  EXPECT_FALSE(ExecutionMayExist(j.status));
  const Plan p = Decide(j, Round(true));
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_EQ(p.workload, WorkloadAction::kCreate);
  EXPECT_FALSE(p.status);
}

// The class's default LocalQueue (Resolution::queueName) queues a Job without the label.
TEST(Queue, AJobWithoutTheLabelIsQueuedInTheQueueItsResolutionNames) {
  api::Job j = NewJob("");
  Facts f = Round(true);
  f.resolution = Resolved();
  f.resolution->queueName = "class-default";
  const Plan p = Decide(j, f);
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, kConditionAdmitted), "False/Pending");
  EXPECT_NE(MessageOf(*p.status, kConditionAdmitted).find("class-default"), std::string::npos);
  Apply(j, p);
  EXPECT_EQ(DeriveState(j), State::kQueued);
  EXPECT_EQ(Decide(j, Round(true)).workload, WorkloadAction::kCreate);
}

TEST(Queue, TheAdmittedConditionCarriesKueuesWordsWhileItWaits) {
  api::Job j = QueuedJob();
  const Plan p = Decide(
      j, Round(true, Pending("Inadmissible", "LocalQueue team-a doesn't exist (position 0)")));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, kConditionAdmitted), "False/Inadmissible");
  EXPECT_EQ(MessageOf(*p.status, kConditionAdmitted),
            "LocalQueue team-a doesn't exist (position 0)");
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_EQ(p.workload, WorkloadAction::kNone);
  // A reason Kubernetes would refuse is not passed through.
  EXPECT_EQ(
      ConditionOf(*Decide(j, Round(true, Pending("not a reason!"))).status, kConditionAdmitted),
      "False/Pending");
}

TEST(Queue, AdmittedOnlyFromAFreshReadAndPersistedBeforeTheEnsure) {
  api::Job j = QueuedJob();
  Plan p = Decide(j, Round(true, Admitted(/*fresh=*/false)));
  EXPECT_EQ(p.workload, WorkloadAction::kRead);  // the cache's copy may predate an eviction
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_FALSE(p.status);

  p = Decide(j, Round(true, Admitted()));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, kConditionAdmitted), "True/Admitted");
  EXPECT_EQ(ConditionOf(*p.status, api::kConditionSucceeded), "Unknown/Scheduling");
  // The Ensure follows the write that persists Admitted=True (the protocol writes first).
  EXPECT_EQ(p.call, AdapterCall::kEnsure);
  Apply(j, p);
  EXPECT_EQ(DeriveState(j), State::kScheduling);
}

TEST(Queue, CheckPlanRefusesAnEnsureBeforeAdmittedIsPersisted) {
  api::Job j = QueuedJob();
  Plan p;
  p.call = AdapterCall::kEnsure;
  EXPECT_THAT(CheckPlan(j, p), Contains("Ensure before Admitted=True is persisted"));
  j.spec.desiredState = api::DesiredState::kCancelled;
  EXPECT_THAT(CheckPlan(j, p), Contains("Ensure of a cancelled or deleted Job"));
}

TEST(Queue, AdmittedNeverReverts) {
  api::Job j = RunningQueuedJob();
  ASSERT_EQ(ConditionOf(j.status, kConditionAdmitted), "True/Admitted");
  for (const Facts& f : {Round(true), Round(true, Pending()), Round(false)}) {
    const Plan p = Decide(j, f);
    const api::JobStatus& after = p.status ? *p.status : j.status;
    EXPECT_EQ(ConditionOf(after, kConditionAdmitted), "True/Admitted");
    EXPECT_EQ(p.call, AdapterCall::kObserve);
  }
  api::JobStatus reverted = j.status;
  api::RemoveCondition(reverted.conditions, kConditionAdmitted);
  EXPECT_THAT(CheckInvariants(j.status, reverted), Contains("Admitted=True reverted"));
}

TEST(Queue, AnEvictionBeforeTheAdmissionWasPersistedClearsItAndWaitsAgain) {
  api::Job j = QueuedJob();
  Plan p = Decide(j, Round(true, Evicted("Preempted")));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, kConditionAdmitted), "False/Requeued");
  EXPECT_THAT(MessageOf(*p.status, kConditionAdmitted), HasSubstr("(Preempted)"));
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_EQ(p.workload, WorkloadAction::kClearReservation);
  EXPECT_EQ(p.workloadReason, "Pending");
  Apply(j, p);
  EXPECT_EQ(DeriveState(j), State::kQueued);
  // Cleared (Kueue keeps Evicted=True until the next reservation): nothing more to clear.
  p = Decide(j, Round(true, Evicted("Preempted", /*reserved=*/false)));
  EXPECT_EQ(p.workload, WorkloadAction::kNone);
  EXPECT_EQ(p.call, AdapterCall::kNone);
  // Admitted again later: it runs, once.
  p = Decide(j, Round(true, Admitted()));
  EXPECT_EQ(p.call, AdapterCall::kEnsure);
}

TEST(Queue, AWorkloadFinishedBeforeTheJobRanIsReplaced) {
  api::Job j = QueuedJob();
  WorkloadFacts finished = Pending();
  finished.finished = true;
  const Plan p = Decide(j, Round(true, finished));
  EXPECT_EQ(p.workload, WorkloadAction::kCreate);
  EXPECT_EQ(p.call, AdapterCall::kNone);
}

TEST(Queue, AnEvictionAfterAdmissionStopsTheTaskThenEndsPreemptedNeverRerun) {
  api::Job j = RunningQueuedJob();
  Plan p = Decide(j, Round(true, Evicted("Preempted")));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, kConditionEvicted), "True/Preempted");
  EXPECT_EQ(p.call, AdapterCall::kCancel);  // after the write that records why
  EXPECT_EQ(p.workload, WorkloadAction::kNone);
  Apply(j, p);

  // Not stopped yet: keep asking, the Workload is not finished.
  Observation stopping;
  stopping.phase = ExecutionPhase::kRunning;
  stopping.references = {{"Container", "abc"}};
  Facts f = Round(true, Evicted("Preempted"));
  f.result = CallResult{AdapterCall::kCancel, stopping};
  p = Decide(j, f);
  EXPECT_TRUE(p.backoff);
  EXPECT_EQ(p.workload, WorkloadAction::kNone);
  EXPECT_FALSE(p.status && IsTerminal(*p.status));

  // A restarted controller that cannot read the Workload still stops it, for the same reason.
  EXPECT_EQ(Decide(j, Round(true)).call, AdapterCall::kCancel);
  EXPECT_EQ(Decide(j, Round(false)).call, AdapterCall::kCancel);

  p = Decide(j, WithResult(Round(true), AdapterCall::kCancel, ExecutionPhase::kCancelled));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, api::kConditionSucceeded), "False/Preempted");
  EXPECT_EQ(p.status->result->reason, "Preempted");
  // Kueue is not needed for the result; with the Workload known, it is finished after it.
  EXPECT_EQ(p.workload, WorkloadAction::kNone);
  p = Decide(j, WithResult(Round(true, Evicted("Preempted")), AdapterCall::kCancel,
                           ExecutionPhase::kCancelled));
  EXPECT_EQ(p.workload, WorkloadAction::kFinish);
  EXPECT_EQ(p.workloadReason, "Failed");
  EXPECT_THAT(p.workloadMessage, HasSubstr("Preempted"));
  Apply(j, p);
  EXPECT_EQ(DeriveState(j), State::kFailed);
  EXPECT_EQ(Decide(j, Round(true, Admitted())).call, AdapterCall::kNone);  // never rerun
}

TEST(Queue, AnotherEvictionReasonEndsEvictedNamingKueuesReason) {
  api::Job j = RunningQueuedJob();
  Apply(j, Decide(j, Round(true, Evicted("ClusterQueueStopped"))));
  EXPECT_EQ(ConditionOf(j.status, kConditionEvicted), "True/ClusterQueueStopped");
  Observation failed;
  failed.phase = ExecutionPhase::kFailed;
  failed.exitCode = 143;  // SIGTERM from our Cancel
  Facts f = Round(true, Evicted("ClusterQueueStopped"));
  f.result = CallResult{AdapterCall::kCancel, failed};
  const Plan p = Decide(j, f);
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, api::kConditionSucceeded), "False/Evicted");
  EXPECT_THAT(MessageOf(*p.status, api::kConditionSucceeded), HasSubstr("ClusterQueueStopped"));
  EXPECT_EQ(p.workload, WorkloadAction::kFinish);
}

TEST(Queue, ASuccessBeforeTheStopWinsOverTheEviction) {
  api::Job j = RunningQueuedJob();
  Apply(j, Decide(j, Round(true, Evicted("Preempted"))));
  const Plan p = Decide(j, WithResult(Round(true, Evicted("Preempted")), AdapterCall::kCancel,
                                      ExecutionPhase::kSucceeded));
  EXPECT_EQ(ConditionOf(*p.status, api::kConditionSucceeded), "True/Completed");
  EXPECT_EQ(p.workloadReason, "Succeeded");
}

TEST(Queue, CancelWhileQueuedEndsWithoutACallAndReleasesTheQuota) {
  api::Job j = QueuedJob();
  j.spec.desiredState = api::DesiredState::kCancelled;
  EXPECT_EQ(DeriveState(j), State::kCancelling);
  const Plan p = Decide(j, Round(true, Pending()));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, api::kConditionSucceeded), "False/Cancelled");
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_EQ(p.workload, WorkloadAction::kFinish);
  EXPECT_EQ(p.workloadReason, "Failed");
}

TEST(Queue, AStartTimeoutInTheQueueEndsWithoutACall) {
  api::Job j = NewJob();
  Facts f = Round(true);
  f.resolution = Resolved();
  f.resolution->jobClass.startTimeoutSeconds = 60;
  Apply(j, Decide(j, f));
  Plan p = Decide(j, Round(true, Pending("Pending", "insufficient unused quota for pods")));
  EXPECT_EQ(p.requeueAfter, seconds(60));
  Apply(j, p);
  Facts later = Round(true, Pending("Pending", "insufficient unused quota for pods"));
  later.now = kNow + seconds(61);
  p = Decide(j, later);
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, api::kConditionSucceeded), "False/StartTimeout");
  EXPECT_THAT(MessageOf(*p.status, api::kConditionSucceeded),
              HasSubstr("queued: insufficient unused quota"));
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_EQ(p.workload, WorkloadAction::kFinish);
}

TEST(Queue, PodsReadyIsWrittenOnceTheTaskStarted) {
  api::Job j = QueuedJob();
  Apply(j, Decide(j, Round(true, Admitted())));
  Observation pending;
  pending.phase = ExecutionPhase::kPending;
  pending.references = {{"Container", "abc"}};
  Facts f = Round(true, Admitted());
  f.result = CallResult{AdapterCall::kEnsure, pending};
  Plan p = Decide(j, f);
  EXPECT_EQ(p.workload, WorkloadAction::kNone);  // created, not started
  Apply(j, p);
  Observation running = pending;
  running.phase = ExecutionPhase::kRunning;
  f.result = CallResult{AdapterCall::kObserve, running};
  p = Decide(j, f);
  ASSERT_TRUE(p.status && p.status->startTime);
  EXPECT_EQ(p.workload, WorkloadAction::kMarkPodsReady);
  EXPECT_EQ(p.workloadReason, "Started");
  Apply(j, p);
  WorkloadFacts ready = Admitted();
  ready.podsReady = true;
  EXPECT_EQ(Decide(j, Round(true, ready)).workload, WorkloadAction::kNone);
}

TEST(Queue, AFinishedJobFinishesItsWorkloadWithoutWaitingForIt) {
  api::Job j = RunningQueuedJob();
  Plan p = Decide(
      j, WithResult(Round(true, Admitted()), AdapterCall::kObserve, ExecutionPhase::kSucceeded));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, api::kConditionSucceeded), "True/Completed");
  EXPECT_EQ(p.workload, WorkloadAction::kFinish);
  EXPECT_EQ(p.workloadReason, "Succeeded");
  Apply(j, p);
  // The Workload write failed: the next round asks again; the Job's result does not change.
  p = Decide(j, Round(true, Admitted()));
  EXPECT_FALSE(p.status);
  EXPECT_EQ(p.workload, WorkloadAction::kFinish);
  WorkloadFacts finished = Admitted();
  finished.finished = true;
  EXPECT_EQ(Decide(j, Round(true, finished)).workload, WorkloadAction::kNone);
}

TEST(Queue, DeletingAQueuedJobNeedsNoCallAndFinishesTheWorkload) {
  api::Job j = QueuedJob();
  j.metadata.deletionTimestamp = kNow;
  const Plan p = Decide(j, Round(true, Pending()));
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_EQ(p.finalizer, FinalizerChange::kRemove);
  EXPECT_EQ(p.workload, WorkloadAction::kFinish);
}

TEST(Queue, DeletingAnAdmittedJobFinishesTheWorkloadOnlyOnceTheCleanupIsConfirmed) {
  api::Job j = RunningQueuedJob();
  j.metadata.deletionTimestamp = kNow;
  Plan p = Decide(j, Round(true, Admitted()));
  EXPECT_EQ(p.call, AdapterCall::kCancel);
  EXPECT_EQ(p.workload, WorkloadAction::kNone);
  p = Decide(j,
             WithResult(Round(true, Admitted()), AdapterCall::kCancel, ExecutionPhase::kRunning));
  EXPECT_EQ(p.workload, WorkloadAction::kNone);
  Facts deleted = Round(true, Admitted());
  deleted.result = CallResult{AdapterCall::kDelete, DeleteObservation(Status::Ok())};
  p = Decide(j, deleted);
  EXPECT_EQ(p.finalizer, FinalizerChange::kRemove);
  EXPECT_EQ(p.workload, WorkloadAction::kFinish);
}

TEST(Queue, AQueuedJobRunsUnqueuedOnceTheControllerHasQueueingDisabled) {
  api::Job j = QueuedJob();
  const Plan p = Decide(j, Round(false));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(ConditionOf(*p.status, kConditionAdmitted), "<absent>");
  EXPECT_EQ(p.call, AdapterCall::kEnsure);  // after the write that drops the gate
  EXPECT_EQ(p.workload, WorkloadAction::kNone);
  bool warned = false;
  for (const Event& e : p.events) warned = warned || e.reason == "QueueIgnored";
  EXPECT_TRUE(warned);
  Apply(j, p);
  EXPECT_EQ(DeriveState(j), State::kScheduling);
}

TEST(Queue, AJobAcceptedUnqueuedIsNeverGatedLater) {
  api::Job j = NewJob("");
  Facts f = Round(true);
  f.resolution = Resolved();
  Apply(j, Decide(j, f));
  j.metadata.labels[kQueueNameLabel] = "team-a";  // labelled after its acceptance
  const Plan p = Decide(j, Round(true));
  EXPECT_EQ(p.call, AdapterCall::kEnsure);
  EXPECT_EQ(p.workload, WorkloadAction::kNone);
  api::JobStatus gated = j.status;
  api::SetCondition(
      gated.conditions,
      api::Condition{kConditionAdmitted, ConditionStatus::kFalse, "Pending", "", 1, {}}, kNow);
  EXPECT_THAT(CheckInvariants(j.status, gated),
              Contains("an Admitted condition appeared on a Job accepted unqueued"));
}

TEST(Queue, DeriveStatePutsQueuedBetweenStartingAndScheduling) {
  api::Job j = QueuedJob();
  EXPECT_EQ(DeriveState(j), State::kQueued);
  EXPECT_STREQ(StateName(State::kQueued), "Queued");
  j.spec.desiredState = api::DesiredState::kCancelled;
  EXPECT_EQ(DeriveState(j), State::kCancelling);
  j.metadata.deletionTimestamp = kNow;
  EXPECT_EQ(DeriveState(j), State::kDeleting);
}

TEST(Queue, CheckInvariantsReportsEachQueueViolation) {
  const api::Job queued = QueuedJob();
  api::JobStatus ran = queued.status;
  ran.startTime = kNow;
  EXPECT_THAT(CheckInvariants(queued.status, ran),
              Contains("an execution exists although Admitted is not True"));
  api::JobStatus evicted = queued.status;
  api::SetCondition(
      evicted.conditions,
      api::Condition{kConditionEvicted, ConditionStatus::kTrue, "Preempted", "", 1, {}}, kNow);
  EXPECT_THAT(CheckInvariants(queued.status, evicted),
              Contains("Evicted=True without Admitted=True"));
  api::Job running = RunningQueuedJob();
  api::JobStatus preempted = running.status;
  preempted.completionTime = kNow;
  api::SetCondition(
      preempted.conditions,
      api::Condition{api::kConditionSucceeded, ConditionStatus::kFalse, "Preempted", "", 1, {}},
      kNow);
  EXPECT_THAT(CheckInvariants(running.status, preempted),
              Contains("Succeeded=False/Preempted without Evicted=True"));
  Plan finish;
  finish.workload = WorkloadAction::kFinish;
  EXPECT_THAT(CheckPlan(running, finish),
              Contains("Workload Finished before the stop is confirmed"));
  Plan clear;
  clear.workload = WorkloadAction::kClearReservation;
  EXPECT_THAT(CheckPlan(running, clear),
              Contains("reservation cleared after Admitted=True was persisted"));
}

}  // namespace
}  // namespace ayatori::statemachine::testing
