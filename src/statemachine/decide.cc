// Decide(): the transition function. Reads like the spec's tables: first what this round's adapter
// call taught us (ApplyResult), then the facts that need no backend (admin confirmation,
// cancellation before acceptance, resolution), then the Succeeded reason of an active Job, then
// the next call, and last the timers. The resulting status is checked against CheckInvariants.
#include <algorithm>
#include <cassert>

#include "adapters/task_messages.h"
#include "api/conditions.h"
#include "statemachine/invariants.h"
#include "statemachine/statemachine.h"

namespace ayatori::statemachine {
namespace {

using api::Condition;
using api::ConditionStatus;
using std::chrono::seconds;

// Calls are ordered; a plan decided from a call's result only names a later call, so every
// round terminates (Ensure and Observe share a rank: neither follows the other).
int Rank(AdapterCall call) {
  switch (call) {
    case AdapterCall::kNone:
      return 0;
    case AdapterCall::kEnsure:
    case AdapterCall::kObserve:
      return 1;
    case AdapterCall::kCancel:
      return 2;
    case AdapterCall::kDelete:
      return 3;
  }
  return 0;
}

// metav1.Condition.message allows 32 KiB; keep statuses small.
constexpr size_t kMaxMessage = 1024;

std::string Truncate(std::string s) {
  if (s.size() > kMaxMessage) s.resize(kMaxMessage);
  return s;
}

// metav1.Condition.reason: ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, at most 1024 characters.
bool IsValidReason(const std::string& r) {
  if (r.empty() || r.size() > 1024) return false;
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!alpha(r.front())) return false;
  for (char c : r) {
    if (!alpha(c) && !digit(c) && c != '_' && c != ',' && c != ':') return false;
  }
  return r.back() != ',' && r.back() != ':';
}

// A failure reason from an adapter or the resolver, passed through unless it is malformed or
// would be read as another state (a Failed Job must never look Cancelled or active).
std::string FailureReason(const std::string& reported, const char* fallback) {
  static const char* const kReserved[] = {kReasonCancelled, kReasonCompleted,
                                          kReasonPending,   kReasonScheduling,
                                          kReasonRunning,   kReasonResultUnknown};
  if (!IsValidReason(reported)) return fallback;
  for (const char* r : kReserved) {
    if (reported == r) return fallback;
  }
  return reported;
}

// "<Reason>: <message>", the form MarkUnknown uses too.
std::string WithReason(const Observation& o, const std::string& fallbackMessage) {
  std::string message = !o.message.empty() ? o.message : fallbackMessage;
  if (!o.reason.empty()) message = o.reason + ": " + message;
  return message;
}

const char* ActiveMessage(const std::string& reason) {
  if (reason == kReasonPending) return "Waiting for the Job to be accepted";
  if (reason == kReasonScheduling) return "Waiting for the backend to start the task";
  if (reason == kReasonRunning) return "The task is running";
  return "";
}

// Canonical condition order, so that equal statuses compare equal.
int ConditionOrder(const std::string& type) {
  static const char* const kOrder[] = {api::kConditionAccepted, kConditionAdmitted,
                                       kConditionEvicted, api::kConditionScheduled,
                                       api::kConditionSucceeded};
  const auto* it = std::find(std::begin(kOrder), std::end(kOrder), type);
  return static_cast<int>(it - std::begin(kOrder));
}

enum class StopCause {
  kNone,          // nobody asked the execution to stop
  kCancel,        // desiredState=Cancelled or deletion
  kDeadline,      // activeDeadlineSeconds expired
  kStartTimeout,  // the class's startTimeoutSeconds expired before the task started
  kEvicted,       // Kueue evicted the admitted Workload (Evicted=True on the Job)
};

class Decider {
 public:
  Decider(const api::Job& job, const Facts& facts)
      : job_(job), facts_(facts), now_(facts.now), st_(job.status) {}

  Plan Run();

 private:
  bool Deleting() const { return job_.metadata.deletionTimestamp.has_value(); }
  bool Cancelled() const { return job_.spec.desiredState == api::DesiredState::kCancelled; }
  bool Terminal() const { return IsTerminal(st_); }
  bool ConditionTrue(const char* type) const { return api::IsConditionTrue(st_.conditions, type); }
  const Condition* Succeeded() const {
    return api::FindCondition(st_.conditions, api::kConditionSucceeded);
  }
  std::optional<api::Time> DeadlineAtNow() const {
    if (!st_.startTime || !job_.spec.activeDeadlineSeconds) return std::nullopt;
    return *st_.startTime + seconds(*job_.spec.activeDeadlineSeconds);
  }
  bool DeadlinePassed() const {
    std::optional<api::Time> at = DeadlineAtNow();
    return at && *at <= now_;
  }
  // The start timeout in force: the one recorded at acceptance (status.resolvedJobClass),
  // else, for a Job accepted before it was recorded, the class's current one (Facts).
  std::optional<seconds> StartTimeout() const {
    if (st_.resolvedJobClass && st_.resolvedJobClass->startTimeoutSeconds) {
      return seconds(*st_.resolvedJobClass->startTimeoutSeconds);
    }
    return facts_.startTimeout;
  }
  // Accepted=True's transition + startTimeout, while the task has not started.
  std::optional<api::Time> StartDeadlineAt() const {
    const std::optional<seconds> timeout = StartTimeout();
    if (!timeout || *timeout <= seconds(0) || st_.startTime) return std::nullopt;
    const Condition* accepted = api::FindCondition(st_.conditions, api::kConditionAccepted);
    if (accepted == nullptr || accepted->status != ConditionStatus::kTrue) return std::nullopt;
    return accepted->lastTransitionTime + *timeout;
  }
  StopCause Cause() const {
    if (Deleting() || Cancelled()) return StopCause::kCancel;
    if (ConditionTrue(kConditionEvicted)) return StopCause::kEvicted;
    if (DeadlinePassed()) return StopCause::kDeadline;
    if (std::optional<api::Time> at = StartDeadlineAt(); at && *at <= now_) {
      return StopCause::kStartTimeout;
    }
    return StopCause::kNone;
  }

  // observedGeneration is kept here and set for all conditions at once in Normalize(), so that
  // a generation bump alone is not mistaken for a change of the condition.
  void SetCondition(const char* type, ConditionStatus status, std::string reason,
                    std::string message, std::optional<api::Time> transitionAt = std::nullopt) {
    const Condition* existing = api::FindCondition(st_.conditions, type);
    const int64_t generation =
        existing != nullptr ? existing->observedGeneration : job_.metadata.generation;
    api::SetCondition(st_.conditions,
                      Condition{type, status, std::move(reason), Truncate(std::move(message)),
                                generation, api::Time{}},
                      transitionAt.value_or(now_));
  }

  void ApplyResult(const CallResult& r);
  void ApplyUnknownResult(const CallResult& r);
  void ApplyActiveResult(const CallResult& r);
  void ApplyFinishedResult(const CallResult& r);
  void ApplyFailed(const CallResult& r);
  void ApplyStopped(const Observation& o);
  bool LearnReferences(const Observation& o);
  void MarkScheduled(std::optional<api::Time> at = std::nullopt);
  void TakeUnreportedExecution();
  void DeferAcceptance();
  void SetStart(std::optional<api::Time> startedAt);
  void MarkUnknown(const Observation& o, const std::string& fallbackMessage);
  void Terminate(ConditionStatus status, const std::string& reason, std::string message,
                 std::optional<int32_t> exitCode, std::optional<api::Time> finishedAt);
  void ApplyJobFacts();
  void ApplyQueue();
  void WaitInQueue(const WorkloadFacts* w);
  void RecordEviction(const WorkloadFacts& w);
  void SetWorkloadAction();
  std::optional<api::Time> EvictedAt() const;
  void SetTtl();
  void ApplyResolution(const Resolution& r);
  std::string ClassPolicyNote(const api::ResolvedJobClass& cls) const;
  void SetActiveReason();
  AdapterCall NextCall();
  void SetTimers();
  void Normalize();
  void AddEvents();
  void HoldWaitingMessage();

  const api::Job& job_;
  const Facts& facts_;
  const api::Time now_;
  api::JobStatus st_;
  Plan plan_;
  // Succeeded=Unknown/ResultUnknown holds: persisted and not cleared by a definite observation
  // this round, or set by an ambiguous one.
  bool unknown_ = false;
  bool definiteResult_ = false;
  // This round's kPending answer: what the Scheduling message says (the default without a
  // reason). Without one the persisted waiting message stands.
  std::optional<Observation> waiting_;
  // What ApplyQueue wants done to the Workload of a Job that waits in the queue.
  WorkloadAction queueAction_ = WorkloadAction::kNone;
  std::string queueActionMessage_;
};

void Decider::MarkScheduled(std::optional<api::Time> at) {
  if (ConditionTrue(api::kConditionScheduled)) return;
  SetCondition(api::kConditionScheduled, ConditionStatus::kTrue, kReasonBackendCreated,
               "The backend execution exists", at);
}

// An execution whose report an earlier round could not write counts as reported from the start
// of this round: calls use its references, and this round's status write carries them.
void Decider::TakeUnreportedExecution() {
  if (!facts_.unreportedExecution || facts_.unreportedExecution->references.empty()) return;
  if (st_.execution && !st_.execution->references.empty()) return;
  if (!st_.execution) st_.execution.emplace();
  st_.execution->references = facts_.unreportedExecution->references;
  MarkScheduled(std::min(facts_.unreportedExecution->createdAt, now_));
}

// A busy round that accepts the Job for an adapter that records the acceptance with the
// execution goes on to Ensure without writing it: the Ensure carries it
// (Plan::unwrittenAcceptance). Only a plain acceptance, before the Ensure or before the finalizer
// patch that precedes it (the Decide after the patch defers it again): not with a deletion, a
// result or any other news.
void Decider::DeferAcceptance() {
  const bool beforeEnsure =
      plan_.call == AdapterCall::kEnsure ||
      (plan_.call == AdapterCall::kNone && plan_.finalizer == FinalizerChange::kAdd);
  if (!facts_.backlog || !beforeEnsure || facts_.result || plan_.backoff || Deleting() ||
      Terminal() || IsQueued(st_)) {
    return;
  }
  if (!facts_.resolution || facts_.resolution->outcome != Resolution::Outcome::kResolved ||
      !facts_.resolution->adapterRecordsAcceptance) {
    return;
  }
  if (api::IsConditionTrue(job_.status.conditions, api::kConditionAccepted) ||
      !ConditionTrue(api::kConditionAccepted)) {
    return;
  }
  plan_.unwrittenAcceptance = std::move(st_);
  st_ = job_.status;
}

bool Decider::LearnReferences(const Observation& o) {
  if (st_.execution && !st_.execution->references.empty()) return true;  // never replaced
  if (o.references.empty()) return false;
  if (!st_.execution) st_.execution.emplace();
  st_.execution->references = o.references;
  return true;
}

// startTime: when the adapter says the main process started (never in the future of our clock),
// else now; once; only after Scheduled=True.
void Decider::SetStart(std::optional<api::Time> startedAt) {
  if (st_.startTime || !ConditionTrue(api::kConditionScheduled)) return;
  st_.startTime = startedAt ? std::min(*startedAt, now_) : now_;
}

void Decider::MarkUnknown(const Observation& o, const std::string& fallbackMessage) {
  plan_.backoff = true;
  if (Terminal()) return;
  const Condition* s = Succeeded();
  unknown_ = true;
  if (s != nullptr && s->reason == kReasonResultUnknown) {
    // The same episode keeps its number and its first message (no write for new wording),
    // except once: a backend that answers again with a cause of its own (e.g. Docker's
    // ExitStatusLost) replaces "BackendUnreachable", which no longer holds. The cause is read
    // from status.resultUnknownCause, never from the message.
    if (st_.resultUnknownCause != kReasonBackendUnreachable || o.reason.empty() ||
        o.reason == kReasonBackendUnreachable) {
      return;
    }
  } else {
    // A new episode: a confirm-backend-lost annotation must name this number to end it.
    ++st_.resultUnknownEpisode;
  }
  st_.resultUnknownCause = IsValidReason(o.reason) && o.reason.size() <= 128 ? o.reason : "";
  // The cause's reason stays first (runbooks match on it); the episode to confirm goes last.
  std::string message = WithReason(o, fallbackMessage) + " (ResultUnknown episode " +
                        std::to_string(st_.resultUnknownEpisode) + ")";
  SetCondition(api::kConditionSucceeded, ConditionStatus::kUnknown, kReasonResultUnknown,
               std::move(message));
}

void Decider::Terminate(ConditionStatus status, const std::string& reason, std::string message,
                        std::optional<int32_t> exitCode, std::optional<api::Time> finishedAt) {
  if (Terminal()) return;
  api::Time completion = finishedAt ? std::min(*finishedAt, now_) : now_;
  if (st_.startTime && completion < *st_.startTime) completion = *st_.startTime;
  st_.completionTime = completion;
  st_.result = api::JobResult{exitCode, reason};
  SetCondition(api::kConditionSucceeded, status, reason, std::move(message));
}

// The execution stopped without succeeding or failing by itself (kCancelled), or is gone after we
// asked it to stop (kAbsent on Cancel).
void Decider::ApplyStopped(const Observation& o) {
  switch (Cause()) {
    case StopCause::kCancel:
      Terminate(ConditionStatus::kFalse, kReasonCancelled,
                Deleting() ? "Cancelled because the Job is being deleted"
                           : "Cancelled on request (desiredState=Cancelled)",
                o.exitCode, o.finishedAt);
      return;
    case StopCause::kDeadline:
      Terminate(
          ConditionStatus::kFalse, kReasonDeadlineExceeded,
          "Stopped after activeDeadlineSeconds=" + std::to_string(*job_.spec.activeDeadlineSeconds),
          o.exitCode, o.finishedAt);
      return;
    case StopCause::kStartTimeout: {
      std::string message = "The task did not start within startTimeoutSeconds=" +
                            std::to_string(StartTimeout()->count()) + " of the Job's acceptance";
      const Condition* s = Succeeded();
      const Condition* admitted = api::FindCondition(st_.conditions, kConditionAdmitted);
      if (admitted != nullptr && admitted->status != ConditionStatus::kTrue) {
        message += " (queued: " + admitted->message + ")";  // Kueue did not admit it in time
      } else if (s != nullptr && s->reason == kReasonScheduling && !s->message.empty()) {
        message += " (" + s->message + ")";  // what it was waiting for
      }
      Terminate(ConditionStatus::kFalse, kReasonStartTimeout, std::move(message), o.exitCode,
                o.finishedAt);
      return;
    }
    case StopCause::kEvicted: {
      const Condition* evicted = api::FindCondition(st_.conditions, kConditionEvicted);
      Terminate(ConditionStatus::kFalse,
                evicted->reason == kReasonPreempted ? kReasonPreempted : kReasonEvicted,
                "Stopped because Kueue evicted the Workload (" + evicted->reason +
                    "): " + evicted->message,
                o.exitCode, o.finishedAt);
      return;
    }
    case StopCause::kNone:
      Terminate(ConditionStatus::kFalse, kReasonExecutionStopped,
                o.message.empty() ? "The backend stopped the execution" : o.message, o.exitCode,
                o.finishedAt);
      return;
  }
}

void Decider::ApplyResult(const CallResult& r) {
  const Observation& o = r.observation;
  if (o.phase == ExecutionPhase::kUnknown) {
    ApplyUnknownResult(r);
    return;
  }
  if (r.call == AdapterCall::kDelete) return;  // handled by NextCall
  if (Terminal()) return;                      // terminal results are irreversible
  switch (o.phase) {
    case ExecutionPhase::kUnknown:
      return;
    case ExecutionPhase::kAbsent:
      if (r.call == AdapterCall::kCancel) {
        definiteResult_ = true;
        ApplyStopped(o);  // nothing exists, nothing will run
      } else {
        // Observe found nothing under the references we persisted (or Ensure adopted nothing):
        // the execution is lost, but we cannot prove how it ended.
        MarkUnknown(o, "The backend has no execution for this Job");
      }
      return;
    case ExecutionPhase::kPending:
    case ExecutionPhase::kRunning:
      ApplyActiveResult(r);
      return;
    case ExecutionPhase::kSucceeded:
    case ExecutionPhase::kFailed:
    case ExecutionPhase::kCancelled:
      ApplyFinishedResult(r);
      return;
  }
}

// The backend did not answer, or its answer was ambiguous.
void Decider::ApplyUnknownResult(const CallResult& r) {
  const Observation& o = r.observation;
  MarkUnknown(o, "The backend did not answer");
  const bool endedUnknown = r.call == AdapterCall::kCancel && o.ended;  // removed next
  if (Deleting() && !endedUnknown &&
      (r.call == AdapterCall::kCancel || r.call == AdapterCall::kDelete)) {
    // Nothing in the status changes for a finished Job: this Event is what tells why the Job
    // does not go away (docs/operations.md, "A Job is stuck deleting").
    plan_.events.push_back(
        {Event::Type::kWarning, kEventCleanupBlocked,
         "Deletion waits until the backend confirms the execution is stopped and removed; "
         "retrying. " +
             WithReason(o, "The backend did not answer")});
  }
}

// The execution is pending or running (or, without references, may not exist).
void Decider::ApplyActiveResult(const CallResult& r) {
  const Observation& o = r.observation;
  if (!LearnReferences(o)) {
    // Nothing was created and the backend says why (a Secret deleted after acceptance):
    // the Job waits, and the call is retried.
    if (r.call == AdapterCall::kEnsure && o.phase == ExecutionPhase::kPending &&
        !o.reason.empty()) {
      waiting_ = o;
      plan_.backoff = true;
      return;
    }
    // Cancel without references is just "not stopped yet"; an Ensure that cannot name what
    // it established leaves the result unknown (the next Ensure looks it up by UID).
    if (r.call != AdapterCall::kCancel) {
      MarkUnknown(o, "The adapter reported an execution without references");
    }
    return;
  }
  definiteResult_ = true;
  MarkScheduled();
  if (o.phase == ExecutionPhase::kRunning) SetStart(o.startedAt);
  if (o.phase == ExecutionPhase::kPending) waiting_ = o;
}

// The execution ended: succeeded, failed or stopped.
void Decider::ApplyFinishedResult(const CallResult& r) {
  const Observation& o = r.observation;
  definiteResult_ = true;
  if (LearnReferences(o)) MarkScheduled();
  if (o.startedAt) SetStart(o.startedAt);
  if (o.phase == ExecutionPhase::kSucceeded) {
    // Success wins over a concurrent cancel or deadline: it is the backend's irreversible fact.
    Terminate(ConditionStatus::kTrue, kReasonCompleted,
              o.message.empty() ? adapters::TaskExitedMessage(0) : o.message, o.exitCode,
              o.finishedAt);
  } else if (o.phase == ExecutionPhase::kFailed) {
    ApplyFailed(r);
  } else {
    ApplyStopped(o);
  }
}

void Decider::ApplyFailed(const CallResult& r) {
  const Observation& o = r.observation;
  std::string reason = FailureReason(o.reason, kReasonProcessFailed);
  const StopCause cause = Cause();
  std::optional<api::Time> deadline = cause == StopCause::kStartTimeout ? StartDeadlineAt()
                                      : cause == StopCause::kEvicted    ? EvictedAt()
                                                                        : DeadlineAtNow();
  // Stopped by our Cancel (deadline, start timeout, eviction) unless it provably failed before
  // the stop was decided. A failure that Observe found is the task's own.
  if (r.call == AdapterCall::kCancel &&
      (cause == StopCause::kDeadline || cause == StopCause::kStartTimeout ||
       cause == StopCause::kEvicted) &&
      !(o.finishedAt && deadline && *o.finishedAt < *deadline)) {
    ApplyStopped(o);
    return;
  }
  std::string message = o.message;
  if (message.empty()) {
    message = o.exitCode ? adapters::TaskExitedMessage(*o.exitCode) : "The task failed";
  }
  Terminate(ConditionStatus::kFalse, reason, std::move(message), o.exitCode, o.finishedAt);
}

// The class policies that shape this Job although its spec does not name them, for the Accepted
// message (status.ttlSecondsAfterFinished and status.resolvedJobClass hold the values).
std::string Decider::ClassPolicyNote(const api::ResolvedJobClass& cls) const {
  std::string note;
  const std::optional<int32_t> requested = job_.spec.ttlSecondsAfterFinished;
  const std::optional<int32_t> ttl = api::ApplyTtlPolicy(requested, cls.ttlSecondsAfterFinished);
  if (ttl && (!requested || *ttl != *requested)) {
    note += "; TTL " + std::to_string(*ttl) + " s after finishing (" +
            (requested ? "spec.ttlSecondsAfterFinished=" + std::to_string(*requested) +
                             " capped at the class maximum"
                       : std::string("the class default")) +
            ")";
  }
  if (cls.startTimeoutSeconds) {
    note += "; fails with StartTimeout unless its task starts within " +
            std::to_string(*cls.startTimeoutSeconds) + " s (the class's startTimeoutSeconds)";
  }
  return note;
}

void Decider::ApplyResolution(const Resolution& r) {
  switch (r.outcome) {
    case Resolution::Outcome::kPending:
      SetCondition(api::kConditionAccepted, ConditionStatus::kFalse,
                   FailureReason(r.reason, "Pending"), r.message);
      return;
    case Resolution::Outcome::kRejected: {
      std::string reason = FailureReason(r.reason, "Rejected");
      SetCondition(api::kConditionAccepted, ConditionStatus::kFalse, reason, r.message);
      Terminate(ConditionStatus::kFalse, reason, r.message, std::nullopt, std::nullopt);
      return;
    }
    case Resolution::Outcome::kResolved:
      st_.resolvedJobClass = r.jobClass;
      st_.effectiveResources = r.resources;
      if (!st_.execution) st_.execution.emplace();
      st_.execution->adapter = r.adapter;
      SetCondition(api::kConditionAccepted, ConditionStatus::kTrue, kReasonValid,
                   "Resolved JobClass " + r.jobClass.name + ClassPolicyNote(r.jobClass));
      // Queued from its acceptance on, or never (a Job accepted unqueued may run any moment).
      // With queueing disabled the label is ignored exactly as before (statemachine.h).
      if (const std::string queue = r.queueName.empty() ? QueueName(job_) : r.queueName;
          facts_.queue.enabled && !queue.empty()) {
        SetCondition(kConditionAdmitted, ConditionStatus::kFalse, kReasonPending,
                     "Waiting for the Workload in LocalQueue " + queue);
      }
      return;
  }
}

// Facts that need no backend call.
void Decider::ApplyJobFacts() {
  if (Terminal()) return;
  // The administrator's confirmation that a backend is lost counts only for a Job that was
  // persisted as ResultUnknown and that this round did not find again.
  const Condition* persisted = api::FindCondition(job_.status.conditions, api::kConditionSucceeded);
  const bool persistedUnknown = persisted != nullptr && persisted->reason == kReasonResultUnknown;
  auto confirmation = job_.metadata.annotations.find(api::kConfirmBackendLostAnnotation);
  if (confirmation != job_.metadata.annotations.end()) {
    // Only the episode the administrator looked at: a confirmation left on the Job after that
    // episode ended never fails a later one.
    const std::optional<int64_t> episode = ConfirmedEpisode(confirmation->second);
    const bool confirmsThisEpisode = episode && *episode == job_.status.resultUnknownEpisode;
    if (!persistedUnknown && unknown_ && episode != st_.resultUnknownEpisode) {
      plan_.events.push_back(
          {Event::Type::kWarning, "StaleBackendLostConfirmation",
           std::string("The ") + api::kConfirmBackendLostAnnotation + " annotation (\"" +
               confirmation->second + "\") does not confirm ResultUnknown episode " +
               std::to_string(st_.resultUnknownEpisode) + "; to confirm this loss, set it to \"" +
               std::to_string(st_.resultUnknownEpisode) + ":<who/why>\""});
    }
    if (persistedUnknown && unknown_ && confirmsThisEpisode) {
      Terminate(ConditionStatus::kFalse, kReasonBackendLost,
                "An administrator confirmed the execution is lost: " + confirmation->second,
                std::nullopt, std::nullopt);
      return;
    }
    if (persistedUnknown && definiteResult_) {
      plan_.events.push_back({Event::Type::kWarning, "StaleBackendLostConfirmation",
                              std::string("The execution was found again; remove the ") +
                                  api::kConfirmBackendLostAnnotation + " annotation"});
    }
  }
  if (Deleting() || ConditionTrue(api::kConditionAccepted)) return;
  if (Cancelled()) {
    // Never accepted, so no Ensure ever ran: nothing to stop.
    Terminate(ConditionStatus::kFalse, kReasonCancelled,
              "Cancelled before an execution was created", std::nullopt, std::nullopt);
    return;
  }
  if (facts_.resolution && !facts_.result) ApplyResolution(*facts_.resolution);
}

// Kueue's gate (statemachine.h, "Queueing"), for a Job accepted as queued.
void Decider::ApplyQueue() {
  if (Terminal() || Deleting() || !IsQueued(st_)) return;
  const bool admitted = api::IsConditionTrue(job_.status.conditions, kConditionAdmitted);
  const WorkloadFacts* w = facts_.queue.workload ? &*facts_.queue.workload : nullptr;
  if (!admitted && Cause() != StopCause::kNone) {
    ApplyStopped(Observation{});  // cancelled or timed out in the queue: nothing ever ran
    return;
  }
  if (!facts_.queue.enabled) {
    // Nobody would ever admit it: it runs unqueued, like a Job accepted while queueing was off.
    // An admitted Job just runs on; the controller cannot read its Workload any more.
    if (admitted) return;
    api::RemoveCondition(st_.conditions, kConditionAdmitted);
    plan_.events.push_back({Event::Type::kWarning, "QueueIgnored",
                            "The controller runs without Kueue support: the Job runs unqueued "
                            "(the label " +
                                std::string(kQueueNameLabel) + "=" + QueueName(job_) +
                                " is ignored)"});
    return;
  }
  if (admitted) {
    if (w != nullptr && w->evicted && Cause() == StopCause::kNone) RecordEviction(*w);
    return;
  }
  WaitInQueue(w);
}

// Not admitted yet (persisted): create the Workload, follow what Kueue says, admit on a fresh read.
void Decider::WaitInQueue(const WorkloadFacts* w) {
  if (w == nullptr || w->finished) {
    // A Workload finished by someone else before the Job ran is never admitted again: it is
    // replaced (nothing ran, so nothing is counted twice).
    queueAction_ = WorkloadAction::kCreate;
    return;
  }
  if (w->evicted) {
    // Nothing ran (Admitted=True was never persisted, so nothing was Ensured): the quota goes
    // back and the Job waits again.
    std::string why = "Kueue evicted the Workload before the Job started (" + w->evictedReason +
                      "): " + w->evictedMessage;
    if (w->quotaReserved) {
      queueAction_ = WorkloadAction::kClearReservation;
      queueActionMessage_ = why;
    }
    SetCondition(kConditionAdmitted, ConditionStatus::kFalse, kReasonRequeued,
                 why + "; waiting to be admitted again");
    return;
  }
  if (w->admitted && !w->fresh) {
    queueAction_ = WorkloadAction::kRead;  // an informer's copy may be older than an eviction
    return;
  }
  if (w->admitted) {
    SetCondition(kConditionAdmitted, ConditionStatus::kTrue, kReasonAdmitted,
                 w->message.empty() ? "Kueue admitted the Workload" : w->message);
    return;
  }
  const std::string reason = IsValidReason(w->reason) ? w->reason : kReasonPending;
  SetCondition(kConditionAdmitted, ConditionStatus::kFalse, reason,
               w->message.empty() ? "Waiting for Kueue to admit the Workload" : w->message);
}

// Admitted=True was persisted, so an execution may exist: the eviction is recorded before the
// Cancel that follows in this plan, and its reason survives any restart (Cause: kEvicted).
void Decider::RecordEviction(const WorkloadFacts& w) {
  const std::string reason = IsValidReason(w.evictedReason) ? w.evictedReason : kReasonEvicted;
  SetCondition(kConditionEvicted, ConditionStatus::kTrue, reason, w.evictedMessage);
  plan_.events.push_back({Event::Type::kWarning, kReasonEvicted,
                          "Kueue evicted the Workload (" + reason + "): " + w.evictedMessage +
                              "; stopping the task, which will not run again"});
}

// When the Evicted condition was written: a failure the task reported before it is its own.
std::optional<api::Time> Decider::EvictedAt() const {
  const Condition* c = api::FindCondition(st_.conditions, kConditionEvicted);
  if (c == nullptr || c->status != ConditionStatus::kTrue) return std::nullopt;
  return c->lastTransitionTime;
}

// After NextCall (the finalizer change is known). The Workload is finished only once the Job
// is terminal (its stop confirmed) or its cleanup is confirmed; PodsReady once the task started.
void Decider::SetWorkloadAction() {
  if (!facts_.queue.enabled || !IsQueued(st_)) return;
  const WorkloadFacts* w = facts_.queue.workload ? &*facts_.queue.workload : nullptr;
  if (Terminal() || plan_.finalizer == FinalizerChange::kRemove) {
    if (w == nullptr || w->finished) return;
    const Condition* s = Succeeded();
    const bool succeeded = s != nullptr && s->status == ConditionStatus::kTrue;
    plan_.workload = WorkloadAction::kFinish;
    plan_.workloadReason = succeeded ? "Succeeded" : "Failed";
    plan_.workloadMessage = Terminal() ? s->reason + ": " + s->message
                                       : std::string("The Job was deleted before it finished");
    return;
  }
  if (Deleting() || !HasFinalizer(job_)) return;
  if (queueAction_ != WorkloadAction::kNone) {
    plan_.workload = queueAction_;
    if (queueAction_ == WorkloadAction::kClearReservation) plan_.workloadReason = kReasonPending;
    plan_.workloadMessage = queueActionMessage_;
    return;
  }
  if (st_.startTime && ConditionTrue(kConditionAdmitted) && w != nullptr && w->admitted &&
      !w->evicted && !w->podsReady && !w->finished) {
    plan_.workload = WorkloadAction::kMarkPodsReady;
    plan_.workloadReason = "Started";
    plan_.workloadMessage = "The task started";
  }
}

void Decider::SetActiveReason() {
  if (Terminal()) return;
  if (unknown_) {
    const Condition* s = Succeeded();
    if (s == nullptr || s->reason != kReasonResultUnknown) {
      MarkUnknown(Observation{}, "The backend result is unknown");
    }
    return;
  }
  const char* reason = st_.startTime                            ? kReasonRunning
                       : ConditionTrue(api::kConditionAccepted) ? kReasonScheduling
                                                                : kReasonPending;
  std::string message = ActiveMessage(reason);
  if (reason == std::string(kReasonScheduling) && !AdmissionAllowsEnsure(st_)) {
    reason = kReasonPending;
    message = "Waiting for Kueue to admit the Job";
  } else if (reason == std::string(kReasonScheduling)) {
    const Condition* s = Succeeded();
    if (waiting_ && !waiting_->reason.empty()) {
      message += ": " + WithReason(*waiting_, "");
    } else if (!waiting_ && s != nullptr && s->reason == kReasonScheduling) {
      message = s->message;  // no answer this round: what the backend said last still stands
    }
  }
  SetCondition(api::kConditionSucceeded, ConditionStatus::kUnknown, reason, std::move(message));
}

AdapterCall Decider::NextCall() {
  const CallResult* r = facts_.result ? &*facts_.result : nullptr;
  const int done = r != nullptr ? Rank(r->call) : 0;
  auto after = [&](AdapterCall c) { return Rank(c) > done ? c : AdapterCall::kNone; };

  if (Deleting()) {
    if (!ExecutionMayExist(st_)) {
      plan_.finalizer = FinalizerChange::kRemove;
      return AdapterCall::kNone;
    }
    if (r != nullptr && r->call == AdapterCall::kDelete) {
      if (r->observation.phase == ExecutionPhase::kAbsent) {
        plan_.finalizer = FinalizerChange::kRemove;
      } else {
        plan_.backoff = true;  // cleanup not confirmed: keep the finalizer and retry
      }
      return AdapterCall::kNone;
    }
    if (Terminal()) return after(AdapterCall::kDelete);
    if (r != nullptr && r->call == AdapterCall::kCancel) {
      // It ended by itself and how is lost: nothing runs, so it is removed with the Job (whose
      // result no one can read any more); the loss was reported while the Job existed.
      if (r->observation.phase == ExecutionPhase::kUnknown && r->observation.ended) {
        return after(AdapterCall::kDelete);
      }
      plan_.backoff = true;  // still stopping, or unknown: keep asking
      return AdapterCall::kNone;
    }
    return after(AdapterCall::kCancel);
  }
  if (Terminal()) return AdapterCall::kNone;
  if (!HasFinalizer(job_)) {
    // Before any execution can be created; decide again once it is there.
    plan_.finalizer = FinalizerChange::kAdd;
    return AdapterCall::kNone;
  }
  if (!ConditionTrue(api::kConditionAccepted)) return AdapterCall::kNone;
  // Queued: nothing may exist, nothing is called until Admitted=True (written by this plan at
  // the latest, and so persisted before the call).
  if (!AdmissionAllowsEnsure(st_)) return AdapterCall::kNone;
  if (Cause() != StopCause::kNone) {
    if (r != nullptr && r->call == AdapterCall::kCancel) {
      plan_.backoff = true;
      return AdapterCall::kNone;
    }
    return after(AdapterCall::kCancel);
  }
  if (r != nullptr) return AdapterCall::kNone;
  // Without references an execution may still exist (crash between Ensure and the status
  // write): Ensure looks it up by UID before creating, which is the spec's recovery rule.
  const bool haveReferences = st_.execution && !st_.execution->references.empty();
  return haveReferences ? AdapterCall::kObserve : AdapterCall::kEnsure;
}

// status.ttlSecondsAfterFinished shows the TTL in force once the Job is accepted, and follows
// edits of spec.ttlSecondsAfterFinished (the one spec field besides desiredState that may change).
void Decider::SetTtl() {
  if (!st_.resolvedJobClass) return;
  st_.ttlSecondsAfterFinished = api::ApplyTtlPolicy(job_.spec.ttlSecondsAfterFinished,
                                                    st_.resolvedJobClass->ttlSecondsAfterFinished);
}

void Decider::SetTimers() {
  auto until = [&](api::Time t) { return std::max(seconds(1), t - now_); };
  if (Terminal()) {
    if (Deleting()) return;
    api::Job after = job_;
    after.status = st_;
    if (std::optional<api::Time> at = TtlDeadline(after)) {
      if (*at <= now_) {
        plan_.deleteJob = true;
      } else {
        plan_.requeueAfter = until(*at);
      }
    }
    return;
  }
  if (Deleting() || Cause() != StopCause::kNone) return;
  if (std::optional<api::Time> at = DeadlineAtNow()) plan_.requeueAfter = until(*at);
  if (std::optional<api::Time> at = StartDeadlineAt()) {
    plan_.requeueAfter =
        plan_.requeueAfter ? std::min(*plan_.requeueAfter, until(*at)) : until(*at);
  }
}

void Decider::Normalize() {
  std::stable_sort(st_.conditions.begin(), st_.conditions.end(),
                   [](const Condition& a, const Condition& b) {
                     return ConditionOrder(a.type) < ConditionOrder(b.type);
                   });
  // observedGeneration says which spec this status reflects. A Job being deleted does not get a
  // write for that alone (deletion bumps the generation).
  if (Deleting() && st_ == job_.status) return;
  st_.observedGeneration = job_.metadata.generation;
  for (Condition& c : st_.conditions) c.observedGeneration = job_.metadata.generation;
}

// The rate limit of waiting messages (Facts::holdWaitingMessage): a status whose only change is
// the Scheduling message keeps the persisted message; the round comes back when it may change.
void Decider::HoldWaitingMessage() {
  const Condition* sb = api::FindCondition(job_.status.conditions, api::kConditionSucceeded);
  const Condition* sa = Succeeded();
  if (sa == nullptr || sa->reason != kReasonScheduling) return;
  const bool wasWaiting = sb != nullptr && sb->reason == kReasonScheduling;
  if (wasWaiting && sa->message == sb->message) return;
  // The default message written at acceptance is not a waiting message: the backend's first
  // reason is written at once, later changes are held.
  if (!wasWaiting && !(waiting_ && !waiting_->reason.empty())) return;
  plan_.waitingMessageChanged = true;
  if (!wasWaiting || !facts_.holdWaitingMessage) return;
  api::JobStatus held = st_;
  for (Condition& c : held.conditions) {
    if (c.type == api::kConditionSucceeded) c.message = sb->message;
  }
  if (!(held == job_.status)) return;  // written anyway: the new message goes with it
  st_ = std::move(held);
  plan_.waitingMessageChanged = false;
  const seconds hold = std::max(seconds(1), *facts_.holdWaitingMessage);
  plan_.requeueAfter = plan_.requeueAfter ? std::min(*plan_.requeueAfter, hold) : hold;
}

void Decider::AddEvents() {
  const api::JobStatus& before = job_.status;
  using T = Event::Type;
  const Condition* ab = api::FindCondition(before.conditions, api::kConditionAccepted);
  const Condition* aa = api::FindCondition(st_.conditions, api::kConditionAccepted);
  // A successful Job records two Events (Started, Completed), like a native batch Job: each
  // Event is an API write and a cached series in the recorder. Acceptance and scheduling are
  // visible in the conditions; only a refusal or a wait is worth a Warning.
  if (aa != nullptr && aa->status != ConditionStatus::kTrue &&
      (ab == nullptr || ab->status != aa->status || ab->reason != aa->reason)) {
    plan_.events.push_back({T::kWarning, aa->reason, aa->message});
  }
  // A TTL the class caps is visible in status.ttlSecondsAfterFinished; the Event says why it
  // differs from the spec's (at acceptance the Accepted message says so too).
  const std::optional<int32_t> requested = job_.spec.ttlSecondsAfterFinished;
  if (st_.ttlSecondsAfterFinished != before.ttlSecondsAfterFinished && requested &&
      st_.ttlSecondsAfterFinished && *st_.ttlSecondsAfterFinished < *requested) {
    plan_.events.push_back({T::kWarning, "TTLCapped",
                            "spec.ttlSecondsAfterFinished=" + std::to_string(*requested) +
                                " is above the JobClass maximum; the TTL in force is " +
                                std::to_string(*st_.ttlSecondsAfterFinished) +
                                " s (status.ttlSecondsAfterFinished)"});
  }
  if (!before.startTime && st_.startTime) {
    plan_.events.push_back({T::kNormal, "Started", "The task started"});
  }
  const Condition* sb = api::FindCondition(before.conditions, api::kConditionSucceeded);
  const Condition* sa = Succeeded();
  if (sa == nullptr) return;
  if (waiting_ && !waiting_->reason.empty() && sa->reason == kReasonScheduling &&
      (sb == nullptr || sb->message != sa->message)) {
    const bool progress = waiting_->reason == kWaitingReasonImagePulling;
    plan_.events.push_back(
        {progress ? T::kNormal : T::kWarning, waiting_->reason, WithReason(*waiting_, "")});
  }
  const bool wasUnknownResult = sb != nullptr && sb->reason == kReasonResultUnknown;
  if (!IsTerminal(before) && Terminal()) {
    const bool normal = sa->status == ConditionStatus::kTrue || sa->reason == kReasonCancelled;
    plan_.events.push_back({normal ? T::kNormal : T::kWarning, sa->reason, sa->message});
  } else if (!wasUnknownResult && sa->reason == kReasonResultUnknown) {
    plan_.events.push_back({T::kWarning, kReasonResultUnknown, sa->message});
  } else if (wasUnknownResult && sa->reason != kReasonResultUnknown) {
    plan_.events.push_back({T::kNormal, "ResultRecovered", "The backend answered again"});
  }
}

Plan Decider::Run() {
  if (Deleting() && !HasFinalizer(job_)) return plan_;  // nothing of ours is left to clean up
  {
    const Condition* s = Succeeded();
    unknown_ =
        s != nullptr && s->status == ConditionStatus::kUnknown && s->reason == kReasonResultUnknown;
  }
  TakeUnreportedExecution();
  if (facts_.result) {
    ApplyResult(*facts_.result);
    if (definiteResult_) unknown_ = false;  // found again: back to Scheduling/Running/terminal
  }
  ApplyJobFacts();
  ApplyQueue();
  SetActiveReason();
  SetTtl();
  plan_.call = NextCall();
  SetWorkloadAction();
  SetTimers();
  Normalize();
  HoldWaitingMessage();
  DeferAcceptance();
  if (!(st_ == job_.status)) {
    AddEvents();
    // Invariants: only violations this status introduces count (a status damaged by someone
    // else must not wedge the Job).
    std::vector<std::string> introduced;
    const std::vector<std::string> existing = CheckInvariants(job_.status, job_.status);
    for (std::string& v : CheckInvariants(job_.status, st_)) {
      if (std::find(existing.begin(), existing.end(), v) == existing.end()) {
        introduced.push_back(std::move(v));
      }
    }
    if (!introduced.empty()) {
      assert(false && "Decide computed a status that breaks an invariant");
      Plan broken;
      broken.invariantViolations = std::move(introduced);
      broken.backoff = true;
      return broken;
    }
    plan_.status = std::move(st_);
  }
  if (std::vector<std::string> broken = CheckPlan(job_, plan_); !broken.empty()) {
    assert(false && "Decide computed a plan that breaks an invariant");
    Plan refused;
    refused.invariantViolations = std::move(broken);
    refused.backoff = true;
    return refused;
  }
  if (facts_.result && plan_.call != AdapterCall::kNone &&
      Rank(plan_.call) <= Rank(facts_.result->call)) {
    assert(false && "Decide repeated a call within a round");
    plan_.call = AdapterCall::kNone;
  }
  return plan_;
}

}  // namespace

std::optional<int64_t> ConfirmedEpisode(std::string_view annotation) {
  const size_t digits = std::min(annotation.find(':'), annotation.size());
  if (digits == 0 || digits > 18) return std::nullopt;  // at most 18 digits: no overflow
  int64_t episode = 0;
  for (char c : annotation.substr(0, digits)) {
    if (c < '0' || c > '9') return std::nullopt;
    episode = episode * 10 + (c - '0');
  }
  return episode;
}

Plan Decide(const api::Job& job, const Facts& facts) { return Decider(job, facts).Run(); }

}  // namespace ayatori::statemachine
