// Derived state and time-derived facts of a Job.
#include <algorithm>

#include "api/conditions.h"
#include "statemachine/statemachine.h"

namespace ayatori::statemachine {

const char* StateName(State state) {
  switch (state) {
    case State::kResolving:
      return "Resolving";
    case State::kQueued:
      return "Queued";
    case State::kScheduling:
      return "Scheduling";
    case State::kStarting:
      return "Starting";
    case State::kRunning:
      return "Running";
    case State::kCancelling:
      return "Cancelling";
    case State::kResultUnknown:
      return "ResultUnknown";
    case State::kSucceeded:
      return "Succeeded";
    case State::kFailed:
      return "Failed";
    case State::kCancelled:
      return "Cancelled";
    case State::kDeleting:
      return "Deleting";
  }
  return "Unknown";
}

bool IsTerminal(State state) {
  return state == State::kSucceeded || state == State::kFailed || state == State::kCancelled;
}

bool IsTerminal(const api::JobStatus& status) {
  const api::Condition* c = api::FindCondition(status.conditions, api::kConditionSucceeded);
  return c != nullptr && c->status != api::ConditionStatus::kUnknown;
}

bool InResultUnknownEpisode(const api::JobStatus& status) {
  const api::Condition* c = api::FindCondition(status.conditions, api::kConditionSucceeded);
  return c != nullptr && c->status == api::ConditionStatus::kUnknown &&
         c->reason == kReasonResultUnknown;
}

State DeriveState(const api::Job& job) {
  const api::JobStatus& st = job.status;
  if (job.metadata.deletionTimestamp) return State::kDeleting;
  const api::Condition* succeeded = api::FindCondition(st.conditions, api::kConditionSucceeded);
  if (succeeded != nullptr && succeeded->status == api::ConditionStatus::kTrue) {
    return State::kSucceeded;
  }
  if (succeeded != nullptr && succeeded->status == api::ConditionStatus::kFalse) {
    return succeeded->reason == kReasonCancelled ? State::kCancelled : State::kFailed;
  }
  if (job.spec.desiredState == api::DesiredState::kCancelled) return State::kCancelling;
  if (succeeded != nullptr && succeeded->reason == kReasonResultUnknown) {
    return State::kResultUnknown;
  }
  if (st.startTime) return State::kRunning;
  if (api::IsConditionTrue(st.conditions, api::kConditionScheduled)) return State::kStarting;
  if (!api::IsConditionTrue(st.conditions, api::kConditionAccepted)) return State::kResolving;
  return AdmissionAllowsEnsure(st) ? State::kScheduling : State::kQueued;
}

std::string QueueName(const api::Job& job) {
  auto it = job.metadata.labels.find(kQueueNameLabel);
  return it == job.metadata.labels.end() ? "" : it->second;
}

bool IsQueued(const api::JobStatus& status) {
  return api::FindCondition(status.conditions, kConditionAdmitted) != nullptr;
}

bool AdmissionAllowsEnsure(const api::JobStatus& status) {
  return !IsQueued(status) || api::IsConditionTrue(status.conditions, kConditionAdmitted);
}

std::optional<api::Time> DeadlineAt(const api::Job& job) {
  if (!job.status.startTime || !job.spec.activeDeadlineSeconds) return std::nullopt;
  return *job.status.startTime + std::chrono::seconds(*job.spec.activeDeadlineSeconds);
}

bool DeadlineExpired(const api::Job& job, api::Time now) {
  std::optional<api::Time> at = DeadlineAt(job);
  return at && !IsTerminal(job.status) && *at <= now;
}

std::optional<int32_t> EffectiveTtlSeconds(const api::Job& job) {
  if (!job.status.resolvedJobClass) return job.spec.ttlSecondsAfterFinished;
  return api::ApplyTtlPolicy(job.spec.ttlSecondsAfterFinished,
                             job.status.resolvedJobClass->ttlSecondsAfterFinished);
}

std::optional<api::Time> TtlDeadline(const api::Job& job) {
  std::optional<int32_t> ttl = EffectiveTtlSeconds(job);
  if (!IsTerminal(job.status) || !job.status.completionTime || !ttl) return std::nullopt;
  return *job.status.completionTime + std::chrono::seconds(*ttl);
}

bool TtlExpired(const api::Job& job, api::Time now) {
  std::optional<api::Time> at = TtlDeadline(job);
  return at && !job.metadata.deletionTimestamp && *at <= now;
}

bool NeedsResolution(const api::Job& job) {
  return !job.metadata.deletionTimestamp && !IsTerminal(job.status) &&
         job.spec.desiredState == api::DesiredState::kRunning &&
         !api::IsConditionTrue(job.status.conditions, api::kConditionAccepted);
}

bool HasFinalizer(const api::Job& job) {
  const auto& f = job.metadata.finalizers;
  return std::find(f.begin(), f.end(), api::kFinalizer) != f.end();
}

// A queued Job is never Ensured before Admitted=True is persisted, so until then nothing exists.
bool ExecutionMayExist(const api::JobStatus& status) {
  return (api::IsConditionTrue(status.conditions, api::kConditionAccepted) &&
          AdmissionAllowsEnsure(status)) ||
         (status.execution && !status.execution->references.empty());
}

Resolution Resolution::Pending(std::string reason, std::string message) {
  Resolution r;
  r.outcome = Outcome::kPending;
  r.reason = std::move(reason);
  r.message = std::move(message);
  return r;
}

Resolution Resolution::Rejected(std::string reason, std::string message) {
  Resolution r;
  r.outcome = Outcome::kRejected;
  r.reason = std::move(reason);
  r.message = std::move(message);
  return r;
}

Resolution Resolution::Resolved(api::ResolvedJobClass jobClass, api::ResourceRequirements resources,
                                std::string adapter) {
  Resolution r;
  r.outcome = Outcome::kResolved;
  r.jobClass = std::move(jobClass);
  r.resources = std::move(resources);
  r.adapter = std::move(adapter);
  return r;
}

const char* AdapterCallName(AdapterCall call) {
  switch (call) {
    case AdapterCall::kNone:
      return "None";
    case AdapterCall::kEnsure:
      return "Ensure";
    case AdapterCall::kObserve:
      return "Observe";
    case AdapterCall::kCancel:
      return "Cancel";
    case AdapterCall::kDelete:
      return "Delete";
  }
  return "None";
}

const char* WorkloadActionName(WorkloadAction action) {
  switch (action) {
    case WorkloadAction::kNone:
      return "None";
    case WorkloadAction::kCreate:
      return "Create";
    case WorkloadAction::kRead:
      return "Read";
    case WorkloadAction::kClearReservation:
      return "ClearReservation";
    case WorkloadAction::kMarkPodsReady:
      return "MarkPodsReady";
    case WorkloadAction::kFinish:
      return "Finish";
  }
  return "None";
}

Observation DeleteObservation(const Status& status) {
  Observation o;
  if (status.ok()) {
    o.phase = ExecutionPhase::kAbsent;
  } else {
    o.phase = ExecutionPhase::kUnknown;
    o.reason = "DeleteFailed";
    o.message = status.message();
  }
  return o;
}

}  // namespace ayatori::statemachine
