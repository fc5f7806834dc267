// Direct tests of the pure functions: DeriveState's priority, the call protocol, time fields,
// reason handling, TTL helpers and CheckInvariants.
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

void Set(api::Job& j, const char* type, ConditionStatus s, const std::string& reason) {
  api::SetCondition(j.status.conditions, api::Condition{type, s, reason, "", 1, {}}, kNow);
}

std::string SucceededOf(const api::JobStatus& s) {
  const api::Condition* c = api::FindCondition(s.conditions, api::kConditionSucceeded);
  return c == nullptr ? "<absent>" : api::ToString(c->status) + "/" + c->reason;
}

api::Job NewJob() {
  api::Job j;
  j.metadata.name = "j";
  j.metadata.uid = "uid-1";
  j.metadata.generation = 1;
  j.spec = BasicSpec();
  return j;
}

// A Job persisted as Starting: accepted, finalizer, references, Scheduled=True.
api::Job Starting() {
  api::Job j = NewJob();
  j.metadata.finalizers = {api::kFinalizer};
  Set(j, api::kConditionAccepted, ConditionStatus::kTrue, kReasonValid);
  Set(j, api::kConditionScheduled, ConditionStatus::kTrue, kReasonBackendCreated);
  Set(j, api::kConditionSucceeded, ConditionStatus::kUnknown, kReasonScheduling);
  j.status.resolvedJobClass =
      api::ResolvedJobClass{"standard", "c1", "execution.ayatori.ddupan.top/docker", {}, {}};
  j.status.effectiveResources = api::ResourceRequirements{};
  j.status.execution = api::ExecutionStatus{"docker", {{"Container", "abc"}}};
  j.status.observedGeneration = 1;
  return j;
}

api::Job Running(Time started) {
  api::Job j = Starting();
  j.status.startTime = started;
  Set(j, api::kConditionSucceeded, ConditionStatus::kUnknown, kReasonRunning);
  return j;
}

// A round that has learned nothing yet.
Facts NowOnly(Time now = kNow) {
  Facts f;
  f.now = now;
  return f;
}

// The fixture as Decide itself would have written it (messages, order, generations).
api::Job Settled(api::Job j) {
  Plan p = Decide(j, NowOnly());
  if (p.status) j.status = *p.status;
  EXPECT_FALSE(Decide(j, NowOnly()).status);
  return j;
}

Facts With(AdapterCall call, Observation o, Time now = kNow) {
  Facts f;
  f.now = now;
  f.result = CallResult{call, std::move(o)};
  return f;
}

Observation Obs(ExecutionPhase phase) {
  Observation o;
  o.phase = phase;
  return o;
}

// ---------------------------------------------------------------------------------------------

TEST(DeriveState, FollowsTheSpecPriority) {
  api::Job j = NewJob();
  EXPECT_EQ(DeriveState(j), State::kResolving);
  Set(j, api::kConditionAccepted, ConditionStatus::kTrue, kReasonValid);
  EXPECT_EQ(DeriveState(j), State::kScheduling);
  Set(j, api::kConditionScheduled, ConditionStatus::kTrue, kReasonBackendCreated);
  EXPECT_EQ(DeriveState(j), State::kStarting);
  j.status.startTime = kNow;
  Set(j, api::kConditionSucceeded, ConditionStatus::kUnknown, kReasonRunning);
  EXPECT_EQ(DeriveState(j), State::kRunning);
  Set(j, api::kConditionSucceeded, ConditionStatus::kUnknown, kReasonResultUnknown);
  EXPECT_EQ(DeriveState(j), State::kResultUnknown);  // ResultUnknown beats Running
  j.spec.desiredState = api::DesiredState::kCancelled;
  EXPECT_EQ(DeriveState(j), State::kCancelling);  // Cancelling beats ResultUnknown
  Set(j, api::kConditionSucceeded, ConditionStatus::kFalse, kReasonCancelled);
  EXPECT_EQ(DeriveState(j), State::kCancelled);  // terminal beats Cancelling
  Set(j, api::kConditionSucceeded, ConditionStatus::kFalse, kReasonDeadlineExceeded);
  EXPECT_EQ(DeriveState(j), State::kFailed);
  Set(j, api::kConditionSucceeded, ConditionStatus::kTrue, kReasonCompleted);
  EXPECT_EQ(DeriveState(j), State::kSucceeded);
  j.metadata.deletionTimestamp = kNow;
  EXPECT_EQ(DeriveState(j), State::kDeleting);  // Deleting beats everything
  EXPECT_STREQ(StateName(State::kResultUnknown), "ResultUnknown");
}

TEST(DeriveState, DeadlineStoppingStaysRunning) {
  api::Job j = Running(kNow - seconds(100));
  j.spec.activeDeadlineSeconds = 10;
  EXPECT_EQ(DeriveState(j), State::kRunning);
  EXPECT_TRUE(DeadlineExpired(j, kNow));
  EXPECT_EQ(DeadlineAt(j), kNow - seconds(90));
  EXPECT_EQ(Decide(j, NowOnly()).call, AdapterCall::kCancel);
}

TEST(Decide, HeaderExampleSequence) {
  api::Job j = NewJob();
  Facts facts;
  facts.now = kNow;
  facts.resolution = Resolution::Resolved(
      api::ResolvedJobClass{"standard", "c1", "execution.ayatori.ddupan.top/docker", {}, {}}, {},
      "docker");

  Plan p = Decide(j, facts);
  EXPECT_EQ(p.finalizer, FinalizerChange::kAdd);
  EXPECT_EQ(p.call, AdapterCall::kNone);  // no adapter call before the finalizer is there
  ASSERT_TRUE(p.status);
  EXPECT_TRUE(api::IsConditionTrue(p.status->conditions, api::kConditionAccepted));
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/Scheduling");
  ASSERT_TRUE(p.status->resolvedJobClass);
  EXPECT_EQ(p.status->execution->adapter, "docker");
  j.metadata.finalizers = {api::kFinalizer};
  j.status = *p.status;

  p = Decide(j, facts);
  EXPECT_EQ(p.call, AdapterCall::kEnsure);
  EXPECT_FALSE(p.status);

  Observation running = Obs(ExecutionPhase::kRunning);
  running.references = {{"Container", "abc"}};
  running.startedAt = kNow - seconds(1);
  facts.result = CallResult{AdapterCall::kEnsure, running};
  p = Decide(j, facts);
  EXPECT_EQ(p.call, AdapterCall::kNone);
  ASSERT_TRUE(p.status);
  EXPECT_TRUE(api::IsConditionTrue(p.status->conditions, api::kConditionScheduled));
  EXPECT_EQ(p.status->startTime, kNow - seconds(1));
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/Running");
  EXPECT_EQ(p.status->execution->references, running.references);
  j.status = *p.status;

  p = Decide(j, NowOnly());
  EXPECT_EQ(p.call, AdapterCall::kObserve);
  Observation done = Obs(ExecutionPhase::kSucceeded);
  done.exitCode = 0;
  done.finishedAt = kNow;
  j.spec.ttlSecondsAfterFinished = 60;
  p = Decide(j, With(AdapterCall::kObserve, done));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(SucceededOf(*p.status), "True/Completed");
  EXPECT_EQ(p.requeueAfter, seconds(60));
  j.status = *p.status;

  j.metadata.deletionTimestamp = kNow;
  p = Decide(j, NowOnly());
  EXPECT_EQ(p.call, AdapterCall::kDelete);
  p = Decide(j, With(AdapterCall::kDelete, DeleteObservation(Status::Ok())));
  EXPECT_EQ(p.finalizer, FinalizerChange::kRemove);
  EXPECT_EQ(p.call, AdapterCall::kNone);
}

TEST(Decide, NeverRepeatsACallWithinARound) {
  const std::vector<api::Job> jobs = [] {
    std::vector<api::Job> v = {NewJob(), Starting(), Running(kNow - seconds(5))};
    api::Job cancelling = Running(kNow - seconds(5));
    cancelling.spec.desiredState = api::DesiredState::kCancelled;
    v.push_back(cancelling);
    api::Job deleting = Running(kNow - seconds(5));
    deleting.metadata.deletionTimestamp = kNow;
    v.push_back(deleting);
    return v;
  }();
  for (const api::Job& j : jobs) {
    for (AdapterCall call : {AdapterCall::kEnsure, AdapterCall::kObserve, AdapterCall::kCancel,
                             AdapterCall::kDelete}) {
      for (ExecutionPhase phase :
           {ExecutionPhase::kAbsent, ExecutionPhase::kPending, ExecutionPhase::kRunning,
            ExecutionPhase::kSucceeded, ExecutionPhase::kFailed, ExecutionPhase::kCancelled,
            ExecutionPhase::kUnknown}) {
        Plan p = Decide(j, With(call, Obs(phase)));
        EXPECT_THAT(p.invariantViolations, IsEmpty());
        if (call == AdapterCall::kEnsure || call == AdapterCall::kObserve) {
          EXPECT_NE(p.call, AdapterCall::kEnsure);
          EXPECT_NE(p.call, AdapterCall::kObserve);
        }
        if (call == AdapterCall::kCancel) {
          EXPECT_TRUE(p.call == AdapterCall::kNone || p.call == AdapterCall::kDelete);
        }
        if (call == AdapterCall::kDelete) {
          EXPECT_EQ(p.call, AdapterCall::kNone);
        }
      }
    }
  }
}

TEST(Decide, StartTimeNeverInTheFutureAndCompletionNeverBeforeStart) {
  api::Job j = Starting();
  Observation o = Obs(ExecutionPhase::kRunning);
  o.startedAt = kNow + seconds(30);  // the backend's clock runs ahead
  Plan p = Decide(j, With(AdapterCall::kObserve, o));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(p.status->startTime, kNow);
  j.status = *p.status;
  Observation done = Obs(ExecutionPhase::kFailed);
  done.exitCode = 1;
  done.finishedAt = kNow - seconds(100);  // ...or behind
  p = Decide(j, With(AdapterCall::kObserve, done, kNow + seconds(5)));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(p.status->completionTime, kNow);
  EXPECT_EQ(SucceededOf(*p.status), "False/ProcessFailed");
  EXPECT_EQ(p.status->result->exitCode, 1);
}

TEST(Decide, StartTimeOnlyWithScheduled) {
  api::Job j = NewJob();
  j.metadata.finalizers = {api::kFinalizer};
  Set(j, api::kConditionAccepted, ConditionStatus::kTrue, kReasonValid);
  Set(j, api::kConditionSucceeded, ConditionStatus::kUnknown, kReasonScheduling);
  j.status.resolvedJobClass =
      api::ResolvedJobClass{"standard", "c1", "execution.ayatori.ddupan.top/docker", {}, {}};
  Observation o = Obs(ExecutionPhase::kRunning);  // no references: cannot be Scheduled
  o.startedAt = kNow;
  Plan p = Decide(j, With(AdapterCall::kEnsure, o));
  ASSERT_TRUE(p.status);
  EXPECT_FALSE(p.status->startTime);
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/ResultUnknown");
  EXPECT_FALSE(api::IsConditionTrue(p.status->conditions, api::kConditionScheduled));
}

TEST(Decide, FailureReasonsArePassedThroughButNeverMasquerade) {
  for (const auto& [reported, expected] :
       std::vector<std::pair<std::string, std::string>>{{"OOMKilled", "OOMKilled"},
                                                        {"ImagePullFailed", "ImagePullFailed"},
                                                        {"", "ProcessFailed"},
                                                        {"Cancelled", "ProcessFailed"},
                                                        {"Completed", "ProcessFailed"},
                                                        {"not a reason!", "ProcessFailed"}}) {
    Observation o = Obs(ExecutionPhase::kFailed);
    o.reason = reported;
    Plan p = Decide(Running(kNow - seconds(5)), With(AdapterCall::kObserve, o));
    ASSERT_TRUE(p.status);
    EXPECT_EQ(SucceededOf(*p.status), "False/" + expected) << reported;
    EXPECT_EQ(p.status->result->reason, expected);
  }
}

TEST(Decide, AbsentUnderPersistedReferencesIsUnknownNotFailure) {
  Plan p =
      Decide(Running(kNow - seconds(5)), With(AdapterCall::kObserve, Obs(ExecutionPhase::kAbsent)));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/ResultUnknown");
  EXPECT_FALSE(p.status->completionTime);
  EXPECT_TRUE(p.backoff);
}

TEST(Decide, DeadlineMapsOnlyWhatOurCancelStopped) {
  api::Job j = Running(kNow - seconds(100));
  j.spec.activeDeadlineSeconds = 50;
  Observation failed = Obs(ExecutionPhase::kFailed);
  failed.exitCode = 143;
  Plan p = Decide(j, With(AdapterCall::kCancel, failed));
  EXPECT_EQ(SucceededOf(*p.status), "False/DeadlineExceeded");
  EXPECT_EQ(p.status->result->exitCode, 143);
  failed.finishedAt = kNow - seconds(70);  // failed on its own before the deadline
  p = Decide(j, With(AdapterCall::kCancel, failed));
  EXPECT_EQ(SucceededOf(*p.status), "False/ProcessFailed");
  Observation ok = Obs(ExecutionPhase::kSucceeded);  // success wins
  p = Decide(j, With(AdapterCall::kCancel, ok));
  EXPECT_EQ(SucceededOf(*p.status), "True/Completed");
}

TEST(Decide, ExternalStopIsAFailureNotACancellation) {
  Plan p = Decide(Running(kNow - seconds(5)),
                  With(AdapterCall::kObserve, Obs(ExecutionPhase::kCancelled)));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(SucceededOf(*p.status), "False/ExecutionStopped");
  EXPECT_EQ(DeriveState(api::Job{{}, {}, *p.status}), State::kFailed);
}

TEST(Decide, ConfirmationOnlyCountsForPersistedResultUnknown) {
  api::Job j = Running(kNow - seconds(5));
  j.metadata.annotations[api::kConfirmBackendLostAnnotation] = "1:bob";
  EXPECT_EQ(Decide(j, NowOnly()).call, AdapterCall::kObserve);
  // An unknown observation this round is not enough: it must have been persisted first.
  Plan p = Decide(j, With(AdapterCall::kObserve, Obs(ExecutionPhase::kUnknown)));
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/ResultUnknown");
  j.status = *p.status;
  // Found again in the same round as the confirmation: the execution wins.
  Observation running = Obs(ExecutionPhase::kRunning);
  p = Decide(j, With(AdapterCall::kObserve, running));
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/Running");
  // Otherwise: BackendLost without asking the backend again.
  p = Decide(j, NowOnly());
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_EQ(SucceededOf(*p.status), "False/BackendLost");
  EXPECT_EQ(p.status->completionTime, kNow);
}

TEST(Decide, EachResultUnknownEpisodeHasItsNumber) {
  api::Job j = Running(kNow - seconds(5));
  Plan p = Decide(j, With(AdapterCall::kObserve, Obs(ExecutionPhase::kUnknown)));
  EXPECT_EQ(p.status->resultUnknownEpisode, 1);
  EXPECT_NE(
      api::FindCondition(p.status->conditions, api::kConditionSucceeded)->message.find("episode 1"),
      std::string::npos);
  j.status = *p.status;
  // Still the same episode: no new number, no write.
  p = Decide(j, With(AdapterCall::kObserve, Obs(ExecutionPhase::kUnknown)));
  EXPECT_FALSE(p.status);
  // Found again: the number stays (it names the latest episode) ...
  p = Decide(j, With(AdapterCall::kObserve, Obs(ExecutionPhase::kRunning)));
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/Running");
  EXPECT_EQ(p.status->resultUnknownEpisode, 1);
  j.status = *p.status;
  // ... and the next outage is episode 2.
  p = Decide(j, With(AdapterCall::kObserve, Obs(ExecutionPhase::kUnknown)));
  EXPECT_EQ(p.status->resultUnknownEpisode, 2);
}

// Within an episode the message keeps its first cause, except that a backend answering again
// with a cause of its own replaces "BackendUnreachable" (once: no write for new wording).
TEST(Decide, ABackendAnsweringAgainReplacesBackendUnreachableInTheEpisode) {
  api::Job j = Running(kNow - seconds(5));
  Observation unreachable = Obs(ExecutionPhase::kUnknown);
  unreachable.reason = kReasonBackendUnreachable;
  unreachable.message = "docker engine unreachable: Couldn't connect to server";
  Plan p = Decide(j, With(AdapterCall::kObserve, unreachable));
  ASSERT_EQ(SucceededOf(*p.status), "Unknown/ResultUnknown");
  EXPECT_EQ(api::FindCondition(p.status->conditions, api::kConditionSucceeded)->message,
            "BackendUnreachable: docker engine unreachable: Couldn't connect to server "
            "(ResultUnknown episode 1)");
  EXPECT_EQ(p.status->resultUnknownCause, kReasonBackendUnreachable);
  j.status = *p.status;

  Observation lost = Obs(ExecutionPhase::kUnknown);
  lost.reason = "ExitStatusLost";
  lost.message = "The engine reports the task ended with exit code 255";
  p = Decide(j, With(AdapterCall::kObserve, lost));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/ResultUnknown");
  EXPECT_EQ(p.status->resultUnknownEpisode, 1);
  EXPECT_EQ(api::FindCondition(p.status->conditions, api::kConditionSucceeded)->message,
            "ExitStatusLost: The engine reports the task ended with exit code 255 (ResultUnknown "
            "episode 1)");
  EXPECT_TRUE(p.events.empty()) << "the same episode: no second ResultUnknown Event";
  EXPECT_EQ(p.status->resultUnknownCause, "ExitStatusLost");
  j.status = *p.status;

  // From then on the message stays, whatever comes: unreachable again, or other words.
  p = Decide(j, With(AdapterCall::kObserve, unreachable));
  EXPECT_FALSE(p.status);
  Observation other = Obs(ExecutionPhase::kUnknown);
  other.reason = "UnexpectedBackendState";
  p = Decide(j, With(AdapterCall::kObserve, other));
  EXPECT_FALSE(p.status);
}

// Condition messages are free text (spec): the episode's cause is read from
// status.resultUnknownCause. A message that reads like "BackendUnreachable: ..." written by
// someone else changes nothing; the structured cause does.
TEST(Decide, TheResultUnknownCauseIsReadFromItsFieldNotFromTheMessage) {
  api::Job j = Running(kNow - seconds(5));
  Observation unreachable = Obs(ExecutionPhase::kUnknown);
  unreachable.reason = kReasonBackendUnreachable;
  Plan p = Decide(j, With(AdapterCall::kObserve, unreachable));
  ASSERT_TRUE(p.status);
  j.status = *p.status;
  Observation lost = Obs(ExecutionPhase::kUnknown);
  lost.reason = "ExitStatusLost";
  api::Job worded = j;  // the message says unreachable, the cause field says otherwise
  worded.status.resultUnknownCause = "SomethingElse";
  EXPECT_FALSE(Decide(worded, With(AdapterCall::kObserve, lost)).status);
  api::Job unworded = j;  // the message says nothing of it, the field does
  for (api::Condition& c : unworded.status.conditions) {
    if (c.type == api::kConditionSucceeded) c.message = "free text";
  }
  p = Decide(unworded, With(AdapterCall::kObserve, lost));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(p.status->resultUnknownCause, "ExitStatusLost");
}

// The class policies a Job's spec does not name are shown where its reader looks: the Accepted
// message (TTL default or cap, start timeout), status.resolvedJobClass.startTimeoutSeconds and
// status.ttlSecondsAfterFinished, and a TTLCapped Warning when an edited TTL is capped.
TEST(Decide, ClassPoliciesAreShownToTheJobsReader) {
  api::Job j = NewJob();
  j.metadata.finalizers = {api::kFinalizer};
  j.spec.ttlSecondsAfterFinished = 100000;
  Facts f = NowOnly();
  api::ResolvedJobClass cls{"standard", "c1", "execution.ayatori.ddupan.top/docker", {}, {}};
  cls.ttlSecondsAfterFinished = api::TtlPolicy{3600, 86400};
  cls.startTimeoutSeconds = 600;
  f.resolution = Resolution::Resolved(cls, api::ResourceRequirements{}, "docker");
  Plan p = Decide(j, f);
  ASSERT_TRUE(p.status);
  const api::Condition* accepted =
      api::FindCondition(p.status->conditions, api::kConditionAccepted);
  ASSERT_NE(accepted, nullptr);
  EXPECT_THAT(accepted->message, HasSubstr("TTL 86400 s after finishing"));
  EXPECT_THAT(accepted->message, HasSubstr("capped at the class maximum"));
  EXPECT_THAT(accepted->message, HasSubstr("within 600 s"));
  EXPECT_EQ(p.status->ttlSecondsAfterFinished, 86400);
  EXPECT_EQ(p.status->resolvedJobClass->startTimeoutSeconds, 600);
  j.status = *p.status;
  // The start timeout recorded at acceptance holds without the class (Facts::startTimeout unset).
  Plan late = Decide(j, NowOnly(kNow + seconds(601)));
  EXPECT_EQ(late.call, AdapterCall::kCancel);
  // An edit of the spec's TTL that the class caps: a Warning says so.
  api::Job edited = j;
  edited.spec.ttlSecondsAfterFinished = 200000;
  edited.status.ttlSecondsAfterFinished = 50;  // as if it had been another value before
  Plan capped = Decide(edited, NowOnly());
  ASSERT_TRUE(capped.status);
  EXPECT_EQ(capped.status->ttlSecondsAfterFinished, 86400);
  bool warned = false;
  for (const Event& e : capped.events) warned |= e.reason == "TTLCapped";
  EXPECT_TRUE(warned);
}

// A confirmation left on the Job after its episode ended (the execution was found again) must not
// end the next, unrelated outage: it names the episode it confirmed.
TEST(Decide, StaleConfirmationDoesNotEndALaterEpisode) {
  api::Job j = Running(kNow - seconds(5));
  Plan p = Decide(j, With(AdapterCall::kObserve, Obs(ExecutionPhase::kUnknown)));
  j.status = *p.status;
  j.metadata.annotations[api::kConfirmBackendLostAnnotation] = "1:alice: host gone";
  // Found again in the very round the confirmation arrives: the execution wins.
  p = Decide(j, With(AdapterCall::kObserve, Obs(ExecutionPhase::kRunning)));
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/Running");
  j.status = *p.status;
  // A second outage with the annotation still on: ResultUnknown, with a Warning, never BackendLost.
  p = Decide(j, With(AdapterCall::kObserve, Obs(ExecutionPhase::kUnknown)));
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/ResultUnknown");
  EXPECT_EQ(p.status->resultUnknownEpisode, 2);
  bool warned = false;
  for (const auto& e : p.events) warned |= e.reason == "StaleBackendLostConfirmation";
  EXPECT_TRUE(warned);
  j.status = *p.status;
  p = Decide(j, NowOnly());
  EXPECT_EQ(p.call, AdapterCall::kObserve) << "the stale confirmation ended episode 2";
  EXPECT_FALSE(p.status);
  // Confirming episode 2 ends it.
  j.metadata.annotations[api::kConfirmBackendLostAnnotation] = "2:alice: host gone again";
  p = Decide(j, NowOnly());
  EXPECT_EQ(SucceededOf(*p.status), "False/BackendLost");
  // A value without an episode confirms nothing.
  j.metadata.annotations[api::kConfirmBackendLostAnnotation] = "alice: host gone";
  EXPECT_EQ(Decide(j, NowOnly()).call, AdapterCall::kObserve);
}

TEST(ConfirmedEpisode, ParsesTheLeadingNumber) {
  EXPECT_EQ(ConfirmedEpisode("3"), 3);
  EXPECT_EQ(ConfirmedEpisode("12:alice: INC-7"), 12);
  EXPECT_EQ(ConfirmedEpisode("alice"), std::nullopt);
  EXPECT_EQ(ConfirmedEpisode(""), std::nullopt);
  EXPECT_EQ(ConfirmedEpisode(":alice"), std::nullopt);
  EXPECT_EQ(ConfirmedEpisode("3 alice"), std::nullopt);
  EXPECT_EQ(ConfirmedEpisode("-1"), std::nullopt);
  EXPECT_EQ(ConfirmedEpisode("99999999999999999999"), std::nullopt);
}

TEST(Decide, DeletionDoesNotWriteForTheGenerationBumpAlone) {
  api::Job j = Settled(Running(kNow - seconds(5)));
  j.metadata.deletionTimestamp = kNow;
  j.metadata.generation = 2;
  Plan p = Decide(j, NowOnly());
  EXPECT_EQ(p.call, AdapterCall::kCancel);
  EXPECT_FALSE(p.status);
  // Without our finalizer a deleting Job is none of our business.
  j.metadata.finalizers.clear();
  p = Decide(j, NowOnly());
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_EQ(p.finalizer, FinalizerChange::kNone);
  EXPECT_FALSE(p.status);
}

TEST(Decide, ResolutionIsIgnoredOnceAccepted) {
  api::Job j = Settled(Starting());
  Facts f = NowOnly();
  f.resolution = Resolution::Pending("JobClassNotFound", "gone");
  EXPECT_FALSE(NeedsResolution(j));
  Plan p = Decide(j, f);
  EXPECT_FALSE(p.status);
  EXPECT_EQ(p.call, AdapterCall::kObserve);
}

TEST(Decide, DamagedStatusDoesNotWedgeTheJob) {
  api::Job j = Running(kNow - seconds(5));
  Set(j, api::kConditionScheduled, ConditionStatus::kFalse, "SomebodyElse");  // startTime w/o it
  Plan p = Decide(j, With(AdapterCall::kObserve, Obs(ExecutionPhase::kSucceeded)));
  EXPECT_THAT(p.invariantViolations, IsEmpty());
  ASSERT_TRUE(p.status);
  EXPECT_EQ(SucceededOf(*p.status), "True/Completed");
}

TEST(Ttl, OnlyTerminalJobsWithCompletionTime) {
  api::Job j = Running(kNow - seconds(5));
  j.spec.ttlSecondsAfterFinished = 0;
  EXPECT_FALSE(TtlDeadline(j));
  Set(j, api::kConditionSucceeded, ConditionStatus::kUnknown, kReasonResultUnknown);
  EXPECT_FALSE(TtlDeadline(j));
  EXPECT_FALSE(TtlExpired(j, kNow + seconds(1'000'000)));
  Set(j, api::kConditionSucceeded, ConditionStatus::kFalse, kReasonCancelled);
  j.status.completionTime = kNow;
  EXPECT_EQ(TtlDeadline(j), kNow);
  EXPECT_TRUE(TtlExpired(j, kNow));
  EXPECT_TRUE(Decide(j, NowOnly()).deleteJob);
  j.spec.ttlSecondsAfterFinished = std::nullopt;  // no TTL: kept forever
  EXPECT_FALSE(TtlExpired(j, kNow + seconds(1'000'000)));
  j.spec.ttlSecondsAfterFinished = 10;
  j.metadata.deletionTimestamp = kNow;  // already being deleted
  EXPECT_FALSE(TtlExpired(j, kNow + seconds(100)));
}

// The JobClass's TTL policy: recorded at acceptance, the TTL in force shown in the status and
// used for the deletion, following edits of the spec's value but not of the class.
TEST(Ttl, ClassPolicyAppliedAtAcceptanceAndShownInStatus) {
  api::ResolvedJobClass cls{"standard", "c1", "execution.ayatori.ddupan.top/docker", {}, {}};
  cls.ttlSecondsAfterFinished = api::TtlPolicy{600, 3600};
  auto accept = [&](std::optional<int32_t> requested) {
    api::Job j = NewJob();
    j.spec.ttlSecondsAfterFinished = requested;
    Facts facts;
    facts.now = kNow;
    facts.resolution = Resolution::Resolved(cls, {}, "docker");
    Plan p = Decide(j, facts);
    EXPECT_TRUE(p.status);
    if (p.status) j.status = *p.status;
    return j;
  };
  api::Job unset = accept(std::nullopt);
  ASSERT_TRUE(unset.status.resolvedJobClass);
  EXPECT_EQ(unset.status.resolvedJobClass->ttlSecondsAfterFinished, cls.ttlSecondsAfterFinished);
  EXPECT_EQ(unset.status.ttlSecondsAfterFinished, 600);          // the class default
  EXPECT_EQ(accept(7200).status.ttlSecondsAfterFinished, 3600);  // capped at the maximum
  EXPECT_EQ(accept(60).status.ttlSecondsAfterFinished, 60);      // the Job's own, within bounds
  EXPECT_EQ(accept(0).status.ttlSecondsAfterFinished, 0);

  // Finished: deleted after the TTL in force, not after the (unset) spec value.
  api::Job done = Running(kNow - seconds(5));
  done.status.resolvedJobClass = cls;
  Set(done, api::kConditionSucceeded, ConditionStatus::kTrue, kReasonCompleted);
  done.status.completionTime = kNow;
  done.status.result = api::JobResult{0, kReasonCompleted};
  EXPECT_EQ(EffectiveTtlSeconds(done), 600);
  EXPECT_EQ(TtlDeadline(done), kNow + seconds(600));
  EXPECT_FALSE(TtlExpired(done, kNow + seconds(599)));
  EXPECT_TRUE(TtlExpired(done, kNow + seconds(600)));
  Plan p = Decide(done, NowOnly());
  ASSERT_TRUE(p.status);  // the status now shows the TTL in force
  EXPECT_EQ(p.status->ttlSecondsAfterFinished, 600);
  EXPECT_EQ(p.requeueAfter, seconds(600));
  // The user extends it beyond the maximum: capped, and the status says so.
  done.status = *p.status;
  done.spec.ttlSecondsAfterFinished = 100000;
  EXPECT_EQ(TtlDeadline(done), kNow + seconds(3600));
  p = Decide(done, NowOnly());
  ASSERT_TRUE(p.status);
  EXPECT_EQ(p.status->ttlSecondsAfterFinished, 3600);
  // Nothing changed: no status write.
  done.status = *p.status;
  EXPECT_FALSE(Decide(done, NowOnly()).status);
}

// ---------------------------------------------------------------------------------------------

TEST(CheckInvariants, AcceptsTheNormalLifecycle) {
  api::Job a = Starting();
  api::Job b = Running(kNow);
  api::Job c = b;
  Set(c, api::kConditionSucceeded, ConditionStatus::kTrue, kReasonCompleted);
  c.status.completionTime = kNow + seconds(1);
  c.status.result = api::JobResult{0, kReasonCompleted};
  EXPECT_THAT(CheckInvariants(api::JobStatus{}, api::JobStatus{}), IsEmpty());
  EXPECT_THAT(CheckInvariants(api::JobStatus{}, a.status), IsEmpty());
  EXPECT_THAT(CheckInvariants(a.status, b.status), IsEmpty());
  EXPECT_THAT(CheckInvariants(b.status, c.status), IsEmpty());
  EXPECT_THAT(CheckInvariants(c.status, c.status), IsEmpty());
}

TEST(CheckInvariants, ReportsEachViolation) {
  const api::Job running = Running(kNow);
  api::Job done = running;
  Set(done, api::kConditionSucceeded, ConditionStatus::kTrue, kReasonCompleted);
  done.status.completionTime = kNow + seconds(10);
  done.status.result = api::JobResult{0, kReasonCompleted};

  auto expectViolation = [](const api::JobStatus& before, const api::JobStatus& after,
                            const std::string& text) {
    EXPECT_THAT(CheckInvariants(before, after), Contains(HasSubstr(text))) << text;
  };
  api::Job x = done;
  Set(x, api::kConditionSucceeded, ConditionStatus::kFalse, kReasonCancelled);
  expectViolation(done.status, x.status, "terminal Succeeded=True/Completed changed");
  x = done;
  x.status.completionTime = kNow + seconds(11);
  expectViolation(done.status, x.status, "completionTime changed");
  x = done;
  x.status.result->exitCode = 1;
  expectViolation(done.status, x.status, "result changed");
  x = running;
  x.status.startTime = kNow + seconds(1);
  expectViolation(running.status, x.status, "startTime changed");
  x = done;
  x.status.completionTime = kNow - seconds(1);
  expectViolation(running.status, x.status, "is before startTime");
  x = done;
  x.status.completionTime.reset();
  expectViolation(running.status, x.status, "without completionTime");
  x = running;
  x.status.completionTime = kNow;
  expectViolation(running.status, x.status, "Succeeded=Unknown/Running with completionTime");
  x = running;
  api::RemoveCondition(x.status.conditions, api::kConditionSucceeded);
  expectViolation(running.status, x.status, "no Succeeded condition");
  x = running;
  Set(x, api::kConditionScheduled, ConditionStatus::kFalse, "Nope");
  expectViolation(running.status, x.status, "Scheduled=True reverted");
  expectViolation(running.status, x.status, "startTime is set but Scheduled is not True");
  x = running;
  x.status.execution->references = {{"Container", "other"}};
  expectViolation(running.status, x.status, "execution.references replaced");
  x = running;
  x.status.resolvedJobClass->name = "other";
  expectViolation(running.status, x.status, "resolvedJobClass changed");
  x = running;
  Set(x, api::kConditionAccepted, ConditionStatus::kFalse, "Nope");
  expectViolation(running.status, x.status, "Accepted=True reverted");
  api::Job failedEarly = Starting();
  Set(failedEarly, api::kConditionSucceeded, ConditionStatus::kFalse, "ImagePullFailed");
  failedEarly.status.completionTime = kNow;
  failedEarly.status.result = api::JobResult{std::nullopt, "ImagePullFailed"};
  EXPECT_THAT(CheckInvariants(Starting().status, failedEarly.status), IsEmpty());
  x = failedEarly;
  x.status.startTime = kNow;
  expectViolation(failedEarly.status, x.status, "startTime set after the terminal state");
}

// ---------------------------------------------------------------------------------------------
// Waiting messages: every waiting Job says why, bounded in writes.

Observation Waiting(std::string reason, std::string message) {
  Observation o = Obs(ExecutionPhase::kPending);
  o.reason = std::move(reason);
  o.message = std::move(message);
  o.references = {{"Container", "abc"}};
  return o;
}

std::string SucceededMessage(const api::JobStatus& s) {
  const api::Condition* c = api::FindCondition(s.conditions, api::kConditionSucceeded);
  return c == nullptr ? "" : c->message;
}

TEST(Decide, WaitingReasonGoesToTheMessageAndAWarningEvent) {
  api::Job j = Settled(Starting());
  Plan p =
      Decide(j, With(AdapterCall::kObserve,
                     Waiting("Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.")));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/Scheduling");
  EXPECT_EQ(SucceededMessage(*p.status),
            "Waiting for the backend to start the task: Unschedulable: 0/1 nodes are available: "
            "1 Insufficient cpu.");
  EXPECT_TRUE(p.waitingMessageChanged);
  EXPECT_THAT(p.events, Contains(Event{Event::Type::kWarning, "Unschedulable",
                                       "Unschedulable: 0/1 nodes are available: 1 Insufficient "
                                       "cpu."}));

  // The next round decides without an answer first: the message stands (no write before the call).
  j.status = *p.status;
  Plan first = Decide(j, NowOnly());
  EXPECT_FALSE(first.status);
  EXPECT_EQ(first.call, AdapterCall::kObserve);
  // The same answer again: no write, no Event.
  Plan same =
      Decide(j, With(AdapterCall::kObserve, Waiting("Unschedulable",
                                                    "0/1 nodes are available: 1 Insufficient "
                                                    "cpu.")));
  EXPECT_FALSE(same.status);
  EXPECT_THAT(same.events, IsEmpty());
  // On its way again (no reason): the default message, no Event.
  Plan cleared = Decide(j, With(AdapterCall::kObserve, Waiting("", "pod is pending")));
  ASSERT_TRUE(cleared.status);
  EXPECT_EQ(SucceededMessage(*cleared.status), "Waiting for the backend to start the task");
  EXPECT_THAT(cleared.events, IsEmpty());
  EXPECT_TRUE(cleared.waitingMessageChanged);
}

TEST(Decide, HappyPathPendingWritesNothing) {
  api::Job j = Starting();
  for (api::Condition& c : j.status.conditions) {
    if (c.type == api::kConditionSucceeded) c.message = "Waiting for the backend to start the task";
  }
  j = Settled(j);
  Plan p = Decide(j, With(AdapterCall::kObserve, Waiting("", "container creating")));
  EXPECT_FALSE(p.status);
  EXPECT_FALSE(p.waitingMessageChanged);
  EXPECT_THAT(p.events, IsEmpty());
}

TEST(Decide, ImagePullingIsANormalEvent) {
  api::Job j = Settled(Starting());
  Plan p = Decide(j, With(AdapterCall::kObserve,
                          Waiting(kWaitingReasonImagePulling, "pulling image \"busybox\"")));
  ASSERT_TRUE(p.status);
  EXPECT_THAT(p.events, Contains(Event{Event::Type::kNormal, kWaitingReasonImagePulling,
                                       "ImagePulling: pulling image \"busybox\""}));
}

TEST(Decide, HeldWaitingMessageIsNotWrittenAndComesBack) {
  api::Job j = Settled(Starting());
  Plan p = Decide(j, With(AdapterCall::kObserve, Waiting("ImagePullBackOff", "back-off 10s")));
  ASSERT_TRUE(p.status);
  j.status = *p.status;

  Facts held = With(AdapterCall::kObserve, Waiting("ErrImagePull", "pull failed"));
  held.holdWaitingMessage = seconds(12);
  Plan h = Decide(j, held);
  EXPECT_FALSE(h.status);  // only the message would change: held
  EXPECT_FALSE(h.waitingMessageChanged);
  EXPECT_THAT(h.events, IsEmpty());
  EXPECT_EQ(h.requeueAfter, seconds(12));

  // A change that is written anyway (the task started) is never held.
  Observation running = Obs(ExecutionPhase::kRunning);
  running.references = {{"Container", "abc"}};
  Facts startedFacts = With(AdapterCall::kObserve, running);
  startedFacts.holdWaitingMessage = seconds(12);
  Plan started = Decide(j, startedFacts);
  ASSERT_TRUE(started.status);
  EXPECT_EQ(SucceededOf(*started.status), "Unknown/Running");

  // Once the hold is over, the new message is written.
  Plan later = Decide(j, With(AdapterCall::kObserve, Waiting("ErrImagePull", "pull failed")));
  ASSERT_TRUE(later.status);
  EXPECT_EQ(SucceededMessage(*later.status),
            "Waiting for the backend to start the task: ErrImagePull: pull failed");
  EXPECT_TRUE(later.waitingMessageChanged);
}

TEST(Decide, FirstWaitingReasonIsNeverHeld) {
  // Just accepted: the default message was written, the backend's first reason follows at once.
  api::Job j = Settled(Starting());
  Facts f = With(AdapterCall::kObserve, Waiting("FailedCreate", "quota exceeded"));
  f.holdWaitingMessage = seconds(30);
  // Held only against an earlier waiting message: the default one is not.
  api::Job fresh = j;
  for (api::Condition& c : fresh.status.conditions) {
    if (c.type == api::kConditionSucceeded) c.reason = kReasonPending;
  }
  Plan p = Decide(fresh, f);
  ASSERT_TRUE(p.status);
  EXPECT_THAT(SucceededMessage(*p.status), HasSubstr("FailedCreate: quota exceeded"));
  EXPECT_TRUE(p.waitingMessageChanged);
}

TEST(Decide, EnsureWaitingWithoutReferencesWaitsInsteadOfUnknown) {
  api::Job j = Settled(Starting());
  j.status.execution->references.clear();
  for (api::Condition& c : j.status.conditions) {
    if (c.type == api::kConditionScheduled) c.status = ConditionStatus::kFalse;
  }
  api::RemoveCondition(j.status.conditions, api::kConditionScheduled);
  j = Settled(j);
  ASSERT_EQ(Decide(j, NowOnly()).call, AdapterCall::kEnsure);
  Observation o = Obs(ExecutionPhase::kPending);
  o.reason = "SecretNotFound";
  o.message = "Secret default/creds (env TOKEN) was not found";
  Plan p = Decide(j, With(AdapterCall::kEnsure, o));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/Scheduling");
  EXPECT_THAT(SucceededMessage(*p.status), HasSubstr("SecretNotFound: Secret default/creds"));
  EXPECT_TRUE(p.backoff);
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_THAT(p.events, Contains(Event{Event::Type::kWarning, "SecretNotFound",
                                       "SecretNotFound: " + o.message}));
}

// The Docker engine lost the task's exit status (ExitStatusLost): the execution has ended, how is
// unknown. A user's cancel keeps the Job ResultUnknown (cancelling it would claim a result); a
// deletion removes the execution (nothing runs) and then the Job, with no CleanupBlocked Event.
TEST(Decide, AnExecutionThatEndedWithItsResultUnknownIsRemovedWhenTheJobIsDeleted) {
  api::Job j = Settled(Starting());
  Observation running = Obs(ExecutionPhase::kRunning);
  running.references = {{"Container", "abc"}};
  Plan started = Decide(j, With(AdapterCall::kObserve, running));
  ASSERT_TRUE(started.status);
  j.status = *started.status;
  Observation lost = Obs(ExecutionPhase::kUnknown);
  lost.ended = true;
  lost.reason = "ExitStatusLost";
  lost.message = "the engine reports exit code 255";
  lost.references = running.references;

  api::Job cancelled = j;
  cancelled.spec.desiredState = api::DesiredState::kCancelled;
  ASSERT_EQ(Decide(cancelled, NowOnly()).call, AdapterCall::kCancel);
  Plan kept = Decide(cancelled, With(AdapterCall::kCancel, lost));
  ASSERT_TRUE(kept.status);
  EXPECT_EQ(SucceededOf(*kept.status), "Unknown/ResultUnknown");
  EXPECT_EQ(kept.call, AdapterCall::kNone);
  EXPECT_TRUE(kept.backoff);

  api::Job deleted = j;
  deleted.metadata.deletionTimestamp = kNow;
  ASSERT_EQ(Decide(deleted, NowOnly()).call, AdapterCall::kCancel);
  Plan removed = Decide(deleted, With(AdapterCall::kCancel, lost));
  EXPECT_EQ(removed.call, AdapterCall::kDelete);
  EXPECT_TRUE(std::none_of(removed.events.begin(), removed.events.end(),
                           [](const Event& e) { return e.reason == kEventCleanupBlocked; }));
  // Without `ended` the backend could not tell whether it still runs: the deletion waits.
  lost.ended = false;
  Plan waits = Decide(deleted, With(AdapterCall::kCancel, lost));
  EXPECT_EQ(waits.call, AdapterCall::kNone);
  EXPECT_TRUE(waits.backoff);
}

TEST(Decide, BlockedCleanupOfAFinishedJobTellsWhy) {
  api::Job j = Settled(Starting());
  Plan done = Decide(j, With(AdapterCall::kObserve, [] {
                       Observation o = Obs(ExecutionPhase::kSucceeded);
                       o.exitCode = 0;
                       o.references = {{"Container", "abc"}};
                       return o;
                     }()));
  ASSERT_TRUE(done.status);
  j.status = *done.status;
  j.metadata.deletionTimestamp = kNow;
  ASSERT_EQ(Decide(j, NowOnly()).call, AdapterCall::kDelete);
  Observation unreachable = Obs(ExecutionPhase::kUnknown);
  unreachable.reason = "BackendUnreachable";
  unreachable.message = "the Docker engine did not answer";
  Plan p = Decide(j, With(AdapterCall::kDelete, unreachable));
  EXPECT_FALSE(p.status);
  EXPECT_TRUE(p.backoff);
  EXPECT_EQ(p.finalizer, FinalizerChange::kNone);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].type, Event::Type::kWarning);
  EXPECT_EQ(p.events[0].reason, kEventCleanupBlocked);
  EXPECT_THAT(p.events[0].message,
              HasSubstr("BackendUnreachable: the Docker engine did not answer"));
}

// ---------------------------------------------------------------------------------------------
// The status that says an execution exists is written in the round of its Ensure, busy or not;
// one whose write failed (Facts::unreportedExecution) is written by the Job's next round.

// Accepted, with the finalizer, no execution yet.
api::Job Accepted() {
  api::Job j = Starting();
  j.status.execution->references.clear();
  api::RemoveCondition(j.status.conditions, api::kConditionScheduled);
  return Settled(j);
}

Observation PendingWithReferences() {
  Observation o = Obs(ExecutionPhase::kPending);
  o.references = {{"BatchJob", "ns/ayj-uid-1"}};
  return o;
}

Facts Busy(Facts f) {
  f.backlog = true;
  return f;
}

const api::Condition* ScheduledOf(const api::JobStatus& s) {
  return api::FindCondition(s.conditions, api::kConditionScheduled);
}

TEST(DecideExecutionReport, TheExecutionIsReportedWithItsEnsureIdleOrBusy) {
  for (bool busy : {false, true}) {
    Facts f = With(AdapterCall::kEnsure, PendingWithReferences());
    f.backlog = busy;
    Plan p = Decide(Accepted(), f);
    ASSERT_TRUE(p.status) << busy;
    EXPECT_EQ(p.status->execution->references, PendingWithReferences().references);
    ASSERT_NE(ScheduledOf(*p.status), nullptr);
    EXPECT_EQ(ScheduledOf(*p.status)->status, ConditionStatus::kTrue);
    EXPECT_EQ(ScheduledOf(*p.status)->lastTransitionTime, kNow);
    EXPECT_EQ(p.call, AdapterCall::kNone);
  }
}

// The round's write failed: the next round writes the references first, with Scheduled=True at
// the Ensure's time, and only then Observes.
TEST(DecideExecutionReport, AReportThatDidNotLandIsTheNextRoundsFirstWrite) {
  Facts f = Busy(NowOnly(kNow + seconds(4)));
  f.unreportedExecution = UnreportedExecution{PendingWithReferences().references, kNow};
  Plan p = Decide(Accepted(), f);
  ASSERT_TRUE(p.status);
  EXPECT_EQ(p.status->execution->references, PendingWithReferences().references);
  EXPECT_EQ(ScheduledOf(*p.status)->lastTransitionTime, kNow);  // when it was created
  EXPECT_EQ(p.call, AdapterCall::kObserve);
}

TEST(DecideExecutionReport, AnExecutionThatStartedAtOnceIsReportedWithItsStart) {
  Observation running = PendingWithReferences();
  running.phase = ExecutionPhase::kRunning;
  Plan p = Decide(Accepted(), Busy(With(AdapterCall::kEnsure, running)));
  ASSERT_TRUE(p.status);
  EXPECT_TRUE(p.status->startTime);
  EXPECT_TRUE(api::IsConditionTrue(p.status->conditions, api::kConditionScheduled));
}

TEST(DecideExecutionReport, AWaitingReasonIsWrittenWithTheReferences) {
  Observation pulling = PendingWithReferences();
  pulling.reason = std::string(kWaitingReasonImagePulling);
  pulling.message = "pulling image busybox";
  Plan p = Decide(Accepted(), Busy(With(AdapterCall::kEnsure, pulling)));
  ASSERT_TRUE(p.status);
  EXPECT_EQ(p.status->execution->references, PendingWithReferences().references);
  EXPECT_THAT(SucceededMessage(*p.status), HasSubstr("ImagePulling"));
}

// References are durable before any further call: a cancel or a deletion writes them first.
TEST(DecideExecutionReport, ACallIsNeverMadeWithTheExecutionUnreported) {
  api::Job cancelled = Accepted();
  cancelled.spec.desiredState = api::DesiredState::kCancelled;
  api::Job deleted = Accepted();
  deleted.metadata.deletionTimestamp = kNow;
  for (const api::Job& j : {cancelled, deleted}) {
    Facts f = Busy(NowOnly(kNow + seconds(2)));
    f.unreportedExecution = UnreportedExecution{PendingWithReferences().references, kNow};
    Plan p = Decide(j, f);
    EXPECT_EQ(p.call, AdapterCall::kCancel);
    ASSERT_TRUE(p.status);
    EXPECT_EQ(p.status->execution->references, PendingWithReferences().references);
  }
}

// A lost execution is as lost as one whose references were persisted: never Ensured again.
TEST(DecideExecutionReport, AnUnreportedExecutionFoundAbsentIsResultUnknown) {
  Facts f = Busy(With(AdapterCall::kObserve, Obs(ExecutionPhase::kAbsent), kNow + seconds(3)));
  f.unreportedExecution = UnreportedExecution{PendingWithReferences().references, kNow};
  Plan p = Decide(Accepted(), f);
  ASSERT_TRUE(p.status);
  EXPECT_EQ(SucceededOf(*p.status), "Unknown/ResultUnknown");
  EXPECT_EQ(p.status->execution->references, PendingWithReferences().references);
  EXPECT_EQ(p.call, AdapterCall::kNone);
}

// ---------------------------------------------------------------------------------------------
// Plan::unwrittenAcceptance: a busy controller whose adapter records the acceptance with the
// execution creates it before it writes Accepted=True.

// New, with the finalizer (added at admission), not accepted yet.
api::Job Unaccepted() {
  api::Job j = NewJob();
  j.metadata.finalizers = {api::kFinalizer};
  return j;
}

Facts Resolving(bool busy, bool recordsAcceptance) {
  Facts f = NowOnly();
  f.backlog = busy;
  f.resolution = Resolution::Resolved(
      api::ResolvedJobClass{"standard", "c1", "execution.ayatori.ddupan.top/kubernetes", {}, {}},
      api::ResourceRequirements{}, "kubernetes");
  f.resolution->adapterRecordsAcceptance = recordsAcceptance;
  return f;
}

TEST(DecideAcceptance, ABusyControllerCarriesTheAcceptanceWithTheCreate) {
  Plan p = Decide(Unaccepted(), Resolving(true, true));
  EXPECT_FALSE(p.status);  // no write before the execution exists
  EXPECT_EQ(p.call, AdapterCall::kEnsure);
  EXPECT_THAT(p.events, IsEmpty());
  ASSERT_TRUE(p.unwrittenAcceptance);
  const api::Condition* accepted =
      api::FindCondition(p.unwrittenAcceptance->conditions, api::kConditionAccepted);
  ASSERT_NE(accepted, nullptr);
  EXPECT_EQ(accepted->status, ConditionStatus::kTrue);
  EXPECT_EQ(accepted->lastTransitionTime, kNow);
  ASSERT_TRUE(p.unwrittenAcceptance->resolvedJobClass);
  EXPECT_EQ(p.unwrittenAcceptance->resolvedJobClass->name, "standard");
  EXPECT_EQ(p.unwrittenAcceptance->execution->adapter, "kubernetes");
  EXPECT_EQ(SucceededOf(*p.unwrittenAcceptance), "Unknown/Scheduling");
}

// The acceptance is written first when the controller is idle, when the adapter cannot find it
// again after a restart, and when anything else must be written or done with it; a finalizer
// patch goes first alone.
TEST(DecideAcceptance, OtherwiseTheAcceptanceIsWrittenFirst) {
  for (auto [busy, records] : {std::pair{false, true}, std::pair{true, false}}) {
    Plan p = Decide(Unaccepted(), Resolving(busy, records));
    ASSERT_TRUE(p.status);
    EXPECT_TRUE(api::IsConditionTrue(p.status->conditions, api::kConditionAccepted));
    EXPECT_EQ(p.call, AdapterCall::kEnsure);
    EXPECT_FALSE(p.unwrittenAcceptance);
  }
  api::Job noFinalizer = NewJob();  // the finalizer is patched first, the acceptance not written
  Plan first = Decide(noFinalizer, Resolving(true, true));
  EXPECT_EQ(first.finalizer, FinalizerChange::kAdd);
  EXPECT_FALSE(first.status);
  EXPECT_TRUE(first.unwrittenAcceptance);
  api::Job cancelled = Unaccepted();
  cancelled.spec.desiredState = api::DesiredState::kCancelled;
  Plan c = Decide(cancelled, Resolving(true, true));
  EXPECT_EQ(c.call, AdapterCall::kNone);
  EXPECT_FALSE(c.unwrittenAcceptance);
  api::Job deleting = Unaccepted();
  deleting.metadata.deletionTimestamp = kNow;
  Plan d = Decide(deleting, Resolving(true, true));
  EXPECT_EQ(d.finalizer, FinalizerChange::kRemove);  // nothing was ever created
  EXPECT_FALSE(d.unwrittenAcceptance);
}

// The reconciler decides the rest of the round on the unwritten acceptance (the Job's status
// holds it in memory): the write right after the create carries the acceptance and the
// execution's report together.
TEST(DecideAcceptance, TheWriteAfterTheCreateCarriesTheAcceptanceAndTheExecution) {
  api::Job j = Unaccepted();
  Plan p = Decide(j, Resolving(true, true));
  ASSERT_TRUE(p.unwrittenAcceptance);
  api::Job known = j;
  known.status = *p.unwrittenAcceptance;
  Plan ensured = Decide(known, Busy(With(AdapterCall::kEnsure, PendingWithReferences())));
  ASSERT_TRUE(ensured.status);
  EXPECT_FALSE(ensured.unwrittenAcceptance);
  EXPECT_TRUE(api::IsConditionTrue(ensured.status->conditions, api::kConditionAccepted));
  EXPECT_TRUE(api::IsConditionTrue(ensured.status->conditions, api::kConditionScheduled));
  EXPECT_EQ(ensured.status->execution->references, PendingWithReferences().references);
  EXPECT_EQ(ensured.status->resolvedJobClass, p.unwrittenAcceptance->resolvedJobClass);
  // The API server sees one write from no status to Scheduled: every invariant holds across it.
  EXPECT_THAT(CheckInvariants(j.status, *ensured.status), IsEmpty());
}

// The matrix's cancel-during-backlog race, decided on the fresh Job the create's confirmation
// read: a Job cancelled before its acceptance was written ends Cancelled without an execution
// and without an acceptance.
TEST(DecideAcceptance, AJobCancelledBeforeItsCreateEndsWithoutAnExecution) {
  api::Job cancelled = Unaccepted();
  cancelled.spec.desiredState = api::DesiredState::kCancelled;
  Plan p = Decide(cancelled, Resolving(true, true));
  EXPECT_EQ(p.call, AdapterCall::kNone);
  EXPECT_FALSE(p.unwrittenAcceptance);
  ASSERT_TRUE(p.status);
  EXPECT_EQ(SucceededOf(*p.status), "False/Cancelled");
  EXPECT_FALSE(api::IsConditionTrue(p.status->conditions, api::kConditionAccepted));
  EXPECT_FALSE(p.status->execution && !p.status->execution->references.empty());
}

}  // namespace
}  // namespace ayatori::statemachine::testing
