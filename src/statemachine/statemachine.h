// The Job state machine (spec § 状态机): a pure function from what is persisted in the Job plus
// what the controller learned this round to what the controller must do next. No I/O, no threads,
// no clock reads: time is an input (Facts::now). Everything the controller writes to a Job's
// status is decided here, so the spec's invariants are enforced in one place (invariants.h).
//
// clang-format off
// ## Protocol: one reconcile round
//
// The controller reads the Job (metadata, spec, status) and builds Facts: `now`, and — only when
// NeedsResolution(job) — the outcome of resolving JobClass, parameters, Secrets and ConfigMaps.
// Then it loops:
//
//   Facts facts;
//   facts.now = std::chrono::floor<std::chrono::seconds>(clock.Now());
//   if (NeedsResolution(job)) facts.resolution = Resolve(job);  // controller I/O
//   for (;;) {
//     Plan plan = Decide(job, facts);
//     // 1. finalizer: kAdd / kRemove via a metadata update (resourceVersion precondition).
//     //    After kRemove the Job may be gone: the round ends.
//     // 2. status: if plan.status, write it to /status (resourceVersion precondition) and
//     //    replace job.status with what was written. ALWAYS before step 3: a resolved class must
//     //    be durable before Ensure, references before any later call.
//     // 3. events: record plan.events.
//     // Any failed write ends the round (requeue with backoff); the next round starts from the
//     // fresh Job, never from the plan.
//     if (plan.call == AdapterCall::kNone && plan.finalizer != FinalizerChange::kAdd) break;
//     if (plan.call == AdapterCall::kNone) continue;  // finalizer added: decide again
//     // Before kEnsure the Job must be current, not a lagging cache copy (desiredState may have
//     // become Cancelled, or the name may now belong to a new UID): the object returned by a write
//     // made in this round is current; otherwise GET it and restart the round if its
//     // resourceVersion differs.
//     Observation o = ...;  // Ensure(request) | Observe(key) | Cancel(key) |
//                           // DeleteObservation(Delete(key))
//     facts.result = CallResult{plan.call, o};
//   }
//   // The last plan says when to come back: requeueAfter (deadline, TTL), backoff (backend
//   // unknown, stop not yet confirmed: use the workqueue's per-item exponential backoff, and
//   // Forget() the item when backoff is false), deleteJob (TTL expired: GET the Job fresh from
//   // the API server, recheck TtlExpired(fresh, now), DELETE with a UID precondition).
//
// At most one execution per UID rests on Ensure's lookup by UID (spec § 幂等): when references
// are missing although an Ensure may have run (crash, lost response), Decide asks for Ensure
// again and the adapter adopts what it finds. Once references are persisted Decide only Observes,
// so an execution the backend loses afterwards ends in ResultUnknown, never in a second run.
//
// Termination: a plan decided with a CallResult never names a call of the same or an earlier rank
// (Ensure = Observe < Cancel < Delete), and kAdd happens at most once, so a round makes at most
// three adapter calls and five Decide calls.
//
// Example, a new Job whose class resolves and whose container starts at once:
//   Decide(job{no finalizer}, {now, Resolved})  -> finalizer kAdd, status {Accepted=True/Valid,
//                                                  resolvedJobClass, effectiveResources,
//                                                  Succeeded=Unknown/Scheduling}, call kNone
//   Decide(job{finalizer, Accepted}, {now})     -> call kEnsure
//   Decide(job, {now, {kEnsure, Running+refs}}) -> status {Scheduled=True/BackendCreated,
//                                                  execution.references, startTime,
//                                                  Succeeded=Unknown/Running}, call kNone:
//                                                  the round ends
//   ...a later round, woken by the adapter's notify:
//   Decide(job, {now})                          -> call kObserve
//   Decide(job, {now, {kObserve, Succeeded}})   -> status {Succeeded=True/Completed, result,
//                                                  completionTime}, requeueAfter = TTL
//   ...after the TTL: deleteJob; then the deletion rounds:
//   Decide(job{deleting}, {now})                -> call kDelete (the execution is known stopped)
//   Decide(job, {now, {kDelete, Absent}})       -> finalizer kRemove
// clang-format on
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/types.h"
#include "ayatori/adapter.h"
#include "ayatori/status.h"

namespace ayatori::statemachine {

// ---------------------------------------------------------------------------------------------
// States (derived, never persisted).

enum class State {
  kResolving,      // Accepted != True, not terminal
  kScheduling,     // Accepted = True, Scheduled != True
  kStarting,       // Scheduled = True, no startTime
  kRunning,        // startTime set, Succeeded = Unknown
  kCancelling,     // desiredState = Cancelled, not terminal
  kResultUnknown,  // Succeeded = Unknown/ResultUnknown
  kSucceeded,      // Succeeded = True
  kFailed,         // Succeeded = False, reason != Cancelled
  kCancelled,      // Succeeded = False/Cancelled
  kDeleting,       // deletionTimestamp set; overrides everything
};

const char* StateName(State state);
bool IsTerminal(State state);

// The spec's priority: Deleting → terminal → Cancelling → ResultUnknown → Running → Starting →
// Scheduling → Resolving. A Job being stopped because its activeDeadlineSeconds expired keeps
// desiredState=Running and so derives as Running (or ResultUnknown): the deadline is not
// persisted, it is recomputed from startTime and the clock (see DeadlineExpired), and the
// eventual reason is DeadlineExceeded.
State DeriveState(const api::Job& job);

// Succeeded=True or Succeeded=False.
bool IsTerminal(const api::JobStatus& status);

// Reasons written by the state machine (Succeeded unless noted). Failure reasons reported by an
// adapter (OOMKilled, ImagePullFailed, BackendRejected, ...) are passed through unchanged.
inline constexpr const char* kReasonValid = "Valid";                    // Accepted=True
inline constexpr const char* kReasonBackendCreated = "BackendCreated";  // Scheduled=True
inline constexpr const char* kReasonPending = "Pending";                // Resolving
inline constexpr const char* kReasonScheduling = "Scheduling";          // Scheduling, Starting
inline constexpr const char* kReasonRunning = "Running";                // Running
inline constexpr const char* kReasonResultUnknown = "ResultUnknown";
inline constexpr const char* kReasonCompleted = "Completed";
inline constexpr const char* kReasonProcessFailed = "ProcessFailed";
inline constexpr const char* kReasonDeadlineExceeded = "DeadlineExceeded";
inline constexpr const char* kReasonCancelled = "Cancelled";
inline constexpr const char* kReasonBackendLost = "BackendLost";
// The backend reports the execution stopped on request although nobody asked it to (an operator
// stopped the container, the backend evicted it). A failure, not a cancellation.
inline constexpr const char* kReasonExecutionStopped = "ExecutionStopped";

// ---------------------------------------------------------------------------------------------
// Time-derived facts, usable by the controller (e.g. for printing or metrics).

// startTime + activeDeadlineSeconds, if both are set.
std::optional<api::Time> DeadlineAt(const api::Job& job);
// Not terminal and DeadlineAt(job) <= now.
bool DeadlineExpired(const api::Job& job, api::Time now);

// completionTime + ttlSecondsAfterFinished for a terminal Job (Succeeded, Failed, Cancelled) that
// has a completionTime; nullopt otherwise (non-terminal Jobs, ResultUnknown, no TTL).
std::optional<api::Time> TtlDeadline(const api::Job& job);
// The Job may be deleted by the TTL controller: TtlDeadline(job) <= now and the Job is not
// already being deleted. Recheck on a Job read fresh from the API server before deleting.
bool TtlExpired(const api::Job& job, api::Time now);

// The controller must resolve the class/references and pass Facts::resolution: the Job is not
// Accepted=True, not terminal, not being deleted and not cancelled.
bool NeedsResolution(const api::Job& job);

bool HasFinalizer(const api::Job& job);

// Conservative: once Accepted=True has been persisted an Ensure may have run (even if the process
// crashed before its references were written), so an execution may exist.
bool ExecutionMayExist(const api::JobStatus& status);

// ---------------------------------------------------------------------------------------------
// Inputs.

// The outcome of resolving the Job's class and references, computed by the controller (I/O)
// while NeedsResolution(job). Ignored once Accepted=True: the class is never re-resolved.
struct Resolution {
  enum class Outcome {
    // Waiting for something that may appear or change: JobClassNotFound, NoDefaultJobClass,
    // AmbiguousDefaultJobClass, ParametersNotFound, SecretNotFound, ConfigMapNotFound,
    // KeyNotFound, AdapterNotRegistered. Accepted=False/<reason>; the Job stays Resolving.
    kPending,
    // Refused for good: ResourcesOutOfRange, SecretForwardingDenied, BackendRejected (the
    // adapter's Validate), ImagePullSecretInvalid... Accepted=False/<reason> and the Job fails
    // (Succeeded=False/<reason>) without an execution.
    kRejected,
    // Accepted=True/Valid; jobClass, resources and adapter are written to status once.
    kResolved,
  };
  Outcome outcome = Outcome::kPending;
  std::string reason;                   // PascalCase, for kPending / kRejected
  std::string message;                  // for humans; never Secret or ConfigMap values
  api::ResolvedJobClass jobClass;       // kResolved: status.resolvedJobClass (uids, snapshot)
  api::ResourceRequirements resources;  // kResolved: status.effectiveResources
  std::string adapter;                  // kResolved: status.execution.adapter ("docker", ...)
  // kResolved: the values jobClass.backendSnapshot names (Adapter::PinnedParameters). Not part of
  // the status: the controller stores them in the snapshot before it writes the status.
  std::map<std::string, std::string> pinnedParameters;

  static Resolution Pending(std::string reason, std::string message);
  static Resolution Rejected(std::string reason, std::string message);
  static Resolution Resolved(api::ResolvedJobClass jobClass, api::ResourceRequirements resources,
                             std::string adapter);
};

enum class AdapterCall { kNone, kEnsure, kObserve, kCancel, kDelete };
const char* AdapterCallName(AdapterCall call);

// What an adapter call made this round returned.
struct CallResult {
  AdapterCall call = AdapterCall::kNone;
  Observation observation;
};

// Adapter::Delete returns a Status; the state machine reads it as an observation: OK means
// nothing is left (kAbsent), anything else means the backend could not confirm (kUnknown).
Observation DeleteObservation(const Status& status);

struct Facts {
  api::Time now{};                       // wall clock, read once per round by the controller
  std::optional<Resolution> resolution;  // only while NeedsResolution(job)
  std::optional<CallResult> result;      // the adapter call the previous plan named
};

// ---------------------------------------------------------------------------------------------
// Output.

enum class FinalizerChange { kNone, kAdd, kRemove };

struct Event {
  enum class Type { kNormal, kWarning };
  Type type = Type::kNormal;
  std::string reason;
  std::string message;
  bool operator==(const Event&) const = default;
};

struct Plan {
  // The complete new status, set only when it differs from job.status. Write it (to /status,
  // with a resourceVersion precondition) before making `call`.
  std::optional<api::JobStatus> status;
  AdapterCall call = AdapterCall::kNone;
  FinalizerChange finalizer = FinalizerChange::kNone;
  // Come back at the latest after this long: the active deadline, the TTL.
  std::optional<std::chrono::seconds> requeueAfter;
  // Something is not settled (backend unknown or unreachable, stop requested but not yet
  // confirmed): retry with the workqueue's per-item exponential backoff. False: Forget() it.
  bool backoff = false;
  // TTL expired: GET the Job fresh, recheck TtlExpired(fresh, now), DELETE with preconditions
  // {uid}. Deletion then goes through the finalizer path like any other deletion.
  bool deleteJob = false;
  // Kubernetes Events to record for this plan's status transition.
  std::vector<Event> events;
  // Non-empty only on a bug: the status Decide computed broke an invariant (CheckInvariants).
  // The status and the call are then dropped; log these and do nothing else.
  std::vector<std::string> invariantViolations;
};

// Decides the next step for `job`. See the protocol at the top of this file.
Plan Decide(const api::Job& job, const Facts& facts);

}  // namespace ayatori::statemachine
