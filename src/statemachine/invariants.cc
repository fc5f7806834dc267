#include "statemachine/invariants.h"

#include "api/conditions.h"

namespace ayatori::statemachine {
namespace {

using api::ConditionStatus;

std::string Seconds(api::Time t) { return std::to_string(t.time_since_epoch().count()); }

std::string Describe(const api::Condition* c) {
  if (c == nullptr) return "<absent>";
  return api::ToString(c->status) + "/" + c->reason;
}

bool IsFinal(const api::Condition* succeeded) {
  return succeeded != nullptr && succeeded->status != ConditionStatus::kUnknown;
}

// Queueing invariants of one status on its own.
void CheckQueueAlone(const api::JobStatus& s, const api::Condition* succeeded,
                     std::vector<std::string>& out) {
  const bool admitted = api::IsConditionTrue(s.conditions, kConditionAdmitted);
  if (admitted && !api::IsConditionTrue(s.conditions, api::kConditionAccepted)) {
    out.emplace_back("Admitted=True without Accepted=True");
  }
  if (!AdmissionAllowsEnsure(s) &&
      (api::IsConditionTrue(s.conditions, api::kConditionScheduled) || s.startTime ||
       (s.execution && !s.execution->references.empty()))) {
    out.emplace_back("an execution exists although Admitted is not True");
  }
  const bool evicted = api::IsConditionTrue(s.conditions, kConditionEvicted);
  if (evicted && !admitted) out.emplace_back("Evicted=True without Admitted=True");
  if (IsFinal(succeeded) && succeeded->status == ConditionStatus::kFalse && !evicted &&
      (succeeded->reason == kReasonPreempted || succeeded->reason == kReasonEvicted)) {
    out.push_back("Succeeded=" + Describe(succeeded) + " without Evicted=True");
  }
}

// Queueing invariants of a transition.
void CheckQueueTransition(const api::JobStatus& before, const api::JobStatus& after,
                          std::vector<std::string>& out) {
  if (api::IsConditionTrue(before.conditions, kConditionAdmitted) &&
      !api::IsConditionTrue(after.conditions, kConditionAdmitted)) {
    out.emplace_back("Admitted=True reverted");
  }
  if (api::IsConditionTrue(before.conditions, api::kConditionAccepted) && !IsQueued(before) &&
      IsQueued(after)) {
    out.emplace_back("an Admitted condition appeared on a Job accepted unqueued");
  }
  const api::Condition* eb = api::FindCondition(before.conditions, kConditionEvicted);
  const api::Condition* ea = api::FindCondition(after.conditions, kConditionEvicted);
  if (eb != nullptr && eb->status == ConditionStatus::kTrue &&
      (ea == nullptr || ea->status != eb->status || ea->reason != eb->reason)) {
    out.push_back("Evicted=" + Describe(eb) + " changed to " + Describe(ea));
  }
}

// Invariants of one status on its own.
void CheckAlone(const api::JobStatus& s, std::vector<std::string>& out) {
  const api::Condition* succeeded = api::FindCondition(s.conditions, api::kConditionSucceeded);
  const bool empty = s == api::JobStatus{};
  if (!empty && succeeded == nullptr) {
    out.emplace_back("status has no Succeeded condition (a non-terminal Job must say Unknown)");
  }
  if (IsFinal(succeeded) && !s.completionTime) {
    out.push_back("Succeeded=" + Describe(succeeded) + " without completionTime");
  }
  if (succeeded != nullptr && succeeded->status == ConditionStatus::kUnknown) {
    if (s.completionTime) {
      out.push_back("Succeeded=" + Describe(succeeded) + " with completionTime " +
                    Seconds(*s.completionTime));
    }
    if (s.result) out.push_back("Succeeded=" + Describe(succeeded) + " with a result");
  }
  if (s.startTime && s.completionTime && *s.completionTime < *s.startTime) {
    out.push_back("completionTime " + Seconds(*s.completionTime) + " is before startTime " +
                  Seconds(*s.startTime));
  }
  if (s.startTime && !api::IsConditionTrue(s.conditions, api::kConditionScheduled)) {
    out.emplace_back("startTime is set but Scheduled is not True");
  }
  CheckQueueAlone(s, succeeded, out);
}

template <typename T>
void CheckSetOnce(const char* field, const std::optional<T>& before, const std::optional<T>& after,
                  std::vector<std::string>& out) {
  if (before && (!after || !(*after == *before))) {
    out.push_back(std::string(field) + " changed after it was set");
  }
}

}  // namespace

std::vector<std::string> CheckInvariants(const api::JobStatus& before,
                                         const api::JobStatus& after) {
  std::vector<std::string> out;
  CheckAlone(after, out);

  const api::Condition* sb = api::FindCondition(before.conditions, api::kConditionSucceeded);
  const api::Condition* sa = api::FindCondition(after.conditions, api::kConditionSucceeded);
  if (IsFinal(sb)) {
    if (sa == nullptr || sa->status != sb->status || sa->reason != sb->reason) {
      out.push_back("terminal Succeeded=" + Describe(sb) + " changed to " + Describe(sa));
    }
    if (after.result != before.result) out.emplace_back("result changed after the terminal state");
    if (!before.startTime && after.startTime) {
      out.emplace_back("startTime set after the terminal state");
    }
  }
  CheckSetOnce("startTime", before.startTime, after.startTime, out);
  CheckSetOnce("completionTime", before.completionTime, after.completionTime, out);
  CheckSetOnce("resolvedJobClass", before.resolvedJobClass, after.resolvedJobClass, out);
  CheckSetOnce("effectiveResources", before.effectiveResources, after.effectiveResources, out);

  if (api::IsConditionTrue(before.conditions, api::kConditionScheduled) &&
      !api::IsConditionTrue(after.conditions, api::kConditionScheduled)) {
    out.emplace_back("Scheduled=True reverted");
  }
  if (api::IsConditionTrue(before.conditions, api::kConditionAccepted) &&
      !api::IsConditionTrue(after.conditions, api::kConditionAccepted)) {
    out.emplace_back("Accepted=True reverted");
  }
  CheckQueueTransition(before, after, out);
  if (before.execution) {
    if (!after.execution) {
      out.emplace_back("execution removed");
    } else {
      if (!before.execution->adapter.empty() &&
          after.execution->adapter != before.execution->adapter) {
        out.emplace_back("execution.adapter replaced");
      }
      if (!before.execution->references.empty() &&
          after.execution->references != before.execution->references) {
        out.emplace_back("execution.references replaced");
      }
    }
  }
  return out;
}

std::vector<std::string> CheckPlan(const api::Job& job, const Plan& plan) {
  std::vector<std::string> out;
  const api::JobStatus& after = plan.status                ? *plan.status
                                : plan.unwrittenAcceptance ? *plan.unwrittenAcceptance
                                                           : job.status;
  if (plan.call == AdapterCall::kEnsure) {
    if (!api::IsConditionTrue(after.conditions, api::kConditionAccepted)) {
      out.emplace_back("Ensure before Accepted=True");
    }
    if (!AdmissionAllowsEnsure(after)) out.emplace_back("Ensure before Admitted=True is persisted");
    if (IsTerminal(after)) out.emplace_back("Ensure of a terminal Job");
    if (after.execution && !after.execution->references.empty()) {
      out.emplace_back("Ensure although references are persisted");
    }
    if (job.spec.desiredState == api::DesiredState::kCancelled || job.metadata.deletionTimestamp) {
      out.emplace_back("Ensure of a cancelled or deleted Job");
    }
    if (api::IsConditionTrue(after.conditions, kConditionEvicted)) {
      out.emplace_back("Ensure after an eviction");
    }
  }
  switch (plan.workload) {
    case WorkloadAction::kFinish:
      if (!IsTerminal(after) && plan.finalizer != FinalizerChange::kRemove) {
        out.emplace_back("Workload Finished before the stop is confirmed");
      }
      break;
    case WorkloadAction::kMarkPodsReady:
      if (!after.startTime) out.emplace_back("PodsReady before the task started");
      break;
    case WorkloadAction::kClearReservation:
      if (api::IsConditionTrue(job.status.conditions, kConditionAdmitted)) {
        out.emplace_back("reservation cleared after Admitted=True was persisted");
      }
      break;
    default:
      break;
  }
  return out;
}

}  // namespace ayatori::statemachine
