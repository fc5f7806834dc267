// The Job state machine (docs/design.md § The state machine): a pure function from what is
// persisted in the Job plus what the controller learned this round to what it must do next. No
// I/O, no threads, no clock reads: time is an input (Facts::now). All the controller writes to a
// Job's status is decided here, so the invariants are enforced in one place (invariants.h).
//
// clang-format off
// ## Protocol: one reconcile round
//
// What controller::JobReconciler::Reconcile (src/controller/reconciler.cc) does for one Job key;
// test/statemachine/property_test.cc drives that very code against fakes. The round starts from
// the informer cache's copy of the Job, a compact projection (controller.h, CompactJobForCache:
// no task once accepted) that may lag behind the API server. Every finalizer and status write
// carries the resourceVersion of the copy it was decided on, so a decision taken on a stale copy
// never lands; the TTL DELETE carries the UID.
//
//   job = cache.GetJob(ns, name);                       // gone: nothing to do
//   Facts facts;
//   facts.now = std::chrono::floor<std::chrono::seconds>(clock.Now());  // once per round
//   if (NeedsResolution(job)) facts.resolution = ResolveJob(job, cache);  // no values read
//   bool fresh = false;   // job came from a write or a GET of this round
//   for (step = 0; step < 12; ++step) {                  // a safety net: ≤ 5 are needed
//     Plan plan = Decide(job, facts);  facts.result.reset();
//     if (!plan.invariantViolations.empty()) fail;        // a bug: log it, write nothing
//     if (plan.finalizer == kAdd)  job = PATCH finalizers += ours;      fresh = true;
//     if (plan.status)             job = PUT /status plan.status;       fresh = true;
//     // The status lands before any call this plan or a later one makes: a resolved class is
//     // durable before Ensure, references before any later call.
//     record plan.events;                                 // only once the status is written
//     if (plan.finalizer == kRemove) { PATCH finalizers -= ours; return; }  // the Job may go
//     if (plan.deleteJob) {   // TTL: GET the Job; if it is the same UID and still
//       ...; return requeueAfter;  // TtlExpired(fresh, now), DELETE with preconditions {uid}
//     }
//     if (plan.call == kNone) {
//       if (plan.finalizer == kAdd) continue;            // decide again with the finalizer on
//       return {plan.requeueAfter, plan.backoff};
//     }
//     if (plan.call == kEnsure && !taskComplete) {
//       // The cache copy of an accepted Job has no task: Ensure needs the whole spec.
//       current = GET job;                   // gone, or a new UID: the round ends
//       job = current;
//       if (its resourceVersion changed) { resolve if needed; continue; }  // decide again
//     }
//     Observation o = Ensure(BuildRequest(job)) | Observe(key) | Cancel(key) |
//                     DeleteObservation(Delete(key));   // key: UID, references, parameters
//     // Ensure: request.confirmCreate, called by the adapter right before its create, GETs
//     // the Job (quorum read; the GET and the create take their rate-limiter tokens together,
//     // KubeClient::ReserveRequests) and refuses unless it is the resourceVersion decided on.
//     if (the create was refused) { job = current; resolve if needed; continue; }
//     facts.result = CallResult{plan.call, o};
//   }
//
// BuildRequest reads Secret and ConfigMap values from the API server (never from the cache) for
// adapters that cannot pass references. A call without a resolved class or with no adapter
// registered for it is not made: it reads as kUnknown.
//
// How a round ends (ReconcileResult): requeueAfter (the deadline, the TTL), backoff (backend
// unknown, stop not yet confirmed, or a failed request: the workqueue's per-item exponential
// backoff; without it the item is Forget()-ed). A refused write (409 Conflict) or any other
// failed request ends the round with backoff and writes nothing more; the next round starts from
// the cache's newer copy, never from the plan. A Job found gone (404) by the status write, the
// GET or the finalizer removal ends the round quietly, as does a TTL DELETE answered 404 or 409.
// Tests may stop a round at named crash points (reconciler.h: before-status-write, after-ensure,
// after-cancel, after-delete), as if the process died there.
//
// At most one execution per UID rests on Ensure's lookup by UID (docs/design.md § At most one
// execution per Job): without references although an Ensure may have run (crash, lost response),
// Decide asks for Ensure again and the adapter adopts what it finds. Once references are persisted
// Decide only Observes: an execution the backend loses then ends in ResultUnknown, never rerun.
//
// A busy controller may also create an execution before it writes Accepted=True, when the
// adapter stores the acceptance with the execution (Plan::unwrittenAcceptance): the create then
// carries the acceptance, and the status write that follows it in the same round carries the
// acceptance, the references and Scheduled=True together. A restarted controller reads the
// acceptance back from the execution (Adapter::RecordedAcceptance) before it resolves the Job.
//
// No execution is created on a stale copy (spec: no new execution once desiredState=Cancelled):
// every adapter calls ExecutionRequest::confirmCreate immediately before the request that
// creates the execution; the controller reads the Job fresh from the API server there and lets
// the create go only if that Job is the one the round decided on (same resourceVersion). A Job
// that changed meanwhile is decided again (a cancelled one ends Cancelled without an execution).
//
// The status that says an execution exists (references, Scheduled=True) is written in the
// round of the Ensure that created or adopted it. Should that write fail, the reconciler keeps
// the references in memory (Facts::unreportedExecution) and the Job's next round writes them
// before any other call; after a restart the memory is gone and the Job is Ensured again, which
// adopts the execution by UID: the same recovery as a crash between Ensure and the status write.
//
// Kueue (Facts::queue; "Queueing" below). The controller passes queue.enabled = true when it
// runs with --kueue (docs/queueing.md), else false, and then Decide never names a Workload
// action and a queue label changes nothing. Each round passes the Workload from the informer
// cache (fresh = false); a plan's Workload action comes after its status write and its call:
// kRead GETs the Workload and decides again with it (fresh = true), any other is a write to the
// Workload (src/controller/workloads.h). A refused Workload write does not stop the round (the
// Job's result and finalizer never wait on Kueue): no other Workload write is tried in it, and
// it ends with backoff so the next round retries. test/statemachine/kueue_property_test.cc plays
// this protocol against FakeKueue, test/e2e/docker_kueue_e2e_test.cc against Kueue v0.17.0.
//
// Termination: a plan decided with a CallResult never names a call of the same or an earlier rank
// (Ensure = Observe < Cancel < Delete); kAdd happens at most once, and it or the GET before
// Ensure (never both: kAdd makes the Job fresh) adds one Decide, so a round makes at most three
// adapter calls and five Decide calls.
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
#include <string_view>
#include <vector>

#include "adapters/adapter.h"
#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::statemachine {

// ---------------------------------------------------------------------------------------------
// States (derived, never persisted).

enum class State {
  kResolving,      // Accepted != True, not terminal
  kQueued,         // Accepted = True, Admitted present and != True (Kueue has not admitted it)
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
// Queued → Scheduling → Resolving. A Job being stopped because its activeDeadlineSeconds expired
// keeps desiredState=Running and so derives as Running (or ResultUnknown): the deadline is not
// persisted, it is recomputed from startTime and the clock (see DeadlineExpired), and the
// eventual reason is DeadlineExceeded.
State DeriveState(const api::Job& job);

// Succeeded=True or Succeeded=False.
bool IsTerminal(const api::JobStatus& status);

// Succeeded=Unknown/ResultUnknown: at its last look the controller could not confirm the task's
// state. Unlike DeriveState's kResultUnknown it holds also while the Job is cancelled or deleted
// during the episode (the condition stays until the backend answers).
bool InResultUnknownEpisode(const api::JobStatus& status);

// Reasons written by the state machine (Succeeded unless noted). Failure reasons reported by an
// adapter (OOMKilled, ImagePullFailed, BackendRejected, ...) are passed through unchanged.
inline constexpr const char* kReasonValid = "Valid";                    // Accepted=True
inline constexpr const char* kReasonBackendCreated = "BackendCreated";  // Scheduled=True
inline constexpr const char* kReasonPending = "Pending";                // Resolving
inline constexpr const char* kReasonScheduling = "Scheduling";          // Scheduling, Starting
inline constexpr const char* kReasonRunning = "Running";                // Running
inline constexpr const char* kReasonResultUnknown = "ResultUnknown";
// The cause every adapter gives an Unknown observation when its backend does not answer.
inline constexpr const char* kReasonBackendUnreachable = "BackendUnreachable";
inline constexpr const char* kReasonCompleted = "Completed";
inline constexpr const char* kReasonProcessFailed = "ProcessFailed";
inline constexpr const char* kReasonDeadlineExceeded = "DeadlineExceeded";
inline constexpr const char* kReasonCancelled = "Cancelled";
inline constexpr const char* kReasonBackendLost = "BackendLost";
// The backend reports the execution stopped on request although nobody asked it to (an operator
// stopped the container, the backend evicted it). A failure, not a cancellation.
inline constexpr const char* kReasonExecutionStopped = "ExecutionStopped";
// The class's startTimeoutSeconds passed after acceptance without the task starting
// (Facts::startTimeout): the execution is stopped like for a deadline, then the Job fails.
inline constexpr const char* kReasonStartTimeout = "StartTimeout";
// Kueue evicted the Job's Workload after its admission and the task was stopped: Preempted for
// Kueue's reason Preempted, Evicted for any other (the message names it). Never rerun.
inline constexpr const char* kReasonPreempted = "Preempted";
inline constexpr const char* kReasonEvicted = "Evicted";
// Admitted=True: Kueue admitted the Workload. Admitted=False/Pending: waiting for the Workload or
// its admission (Kueue's own waiting reason is passed through when it has one).
inline constexpr const char* kReasonAdmitted = "Admitted";
// Admitted=False after Kueue evicted the Workload before the Job's admission was persisted.
inline constexpr const char* kReasonRequeued = "Requeued";
// Warning Event of a Job being deleted whose backend cannot confirm the cleanup (Cancel or Delete
// answered unknown): the finalizer stays and the call is retried (docs/operations.md).
inline constexpr const char* kEventCleanupBlocked = "CleanupBlocked";
// Waiting reason (Observation::reason of kPending) that is progress, not a problem: its Event is
// Normal. Every other waiting reason's Event is a Warning.
inline constexpr const char* kWaitingReasonImagePulling = "ImagePulling";

// How often a changed waiting message may be written to one Job's status (the reconciler keeps
// the time of the last write and passes Facts::holdWaitingMessage).
inline constexpr std::chrono::seconds kWaitingMessageInterval{30};

// ---------------------------------------------------------------------------------------------
// Time-derived facts, usable by the controller (e.g. for printing or metrics).

// startTime + activeDeadlineSeconds, if both are set.
std::optional<api::Time> DeadlineAt(const api::Job& job);
// Not terminal and DeadlineAt(job) <= now.
bool DeadlineExpired(const api::Job& job, api::Time now);

// The TTL in force: spec.ttlSecondsAfterFinished under the JobClass policy recorded at acceptance
// (status.resolvedJobClass.ttlSecondsAfterFinished, api::ApplyTtlPolicy); the spec's value alone
// for a Job that was never accepted. Decide keeps status.ttlSecondsAfterFinished equal to it.
std::optional<int32_t> EffectiveTtlSeconds(const api::Job& job);
// completionTime + EffectiveTtlSeconds for a terminal Job (Succeeded, Failed, Cancelled) that
// has a completionTime; nullopt otherwise (non-terminal Jobs, ResultUnknown, no TTL).
std::optional<api::Time> TtlDeadline(const api::Job& job);
// The Job may be deleted by the TTL controller: TtlDeadline(job) <= now and the Job is not
// already being deleted. Recheck on a Job read fresh from the API server before deleting.
bool TtlExpired(const api::Job& job, api::Time now);

// The controller must resolve the class/references and pass Facts::resolution: the Job is not
// Accepted=True, not terminal, not being deleted and not cancelled.
bool NeedsResolution(const api::Job& job);

bool HasFinalizer(const api::Job& job);

// The ResultUnknown episode (status.resultUnknownEpisode) that a confirm-backend-lost annotation
// value confirms: "<episode>" or "<episode>:<who/why>" (decimal digits, then the end or ':');
// nullopt when the value names none. A confirmation ends only the episode it names.
std::optional<int64_t> ConfirmedEpisode(std::string_view annotation);

// Conservative: once Accepted=True has been persisted an Ensure may have run (even if the process
// crashed before its references were written), so an execution may exist. A queued Job: once
// Admitted=True has been persisted too.
bool ExecutionMayExist(const api::JobStatus& status);

// ---------------------------------------------------------------------------------------------
// Queueing through Kueue (issue 30).
//
// A Job is queued when it is accepted while the controller has queueing enabled
// (QueueFacts::enabled) and the Job names a LocalQueue (label kueue.x-k8s.io/queue-name): its
// acceptance then also writes Admitted=False, and from then on the Job is gated by its Kueue
// Workload (one per UID, created by the controller on Plan::workload = kCreate):
//   - no Ensure until Admitted=True is persisted, written only from a fresh read of the Workload
//     (WorkloadFacts::fresh) that says admitted and not evicted; Admitted=True never reverts;
//   - an eviction seen before Admitted=True was persisted: the reservation is cleared
//     (kClearReservation) and the Job waits again: nothing ran, nothing can rerun;
//   - an eviction once Admitted=True is persisted: Evicted=True is written, the task is cancelled
//     like for a deadline, and once the stop is confirmed the Job ends Succeeded=False/Preempted
//     (Kueue's reason Preempted) or Evicted (any other reason, named in the message): never a
//     rerun;
//   - cancel or the class's start timeout while queued end the Job without an adapter call
//     (activeDeadlineSeconds counts from startTime, so it cannot expire in the queue);
//   - a finished Job (or one being deleted whose execution is confirmed gone) marks its Workload
//     Finished (kFinish), which releases the quota; the Job's own status never waits on that write;
//   - PodsReady=True is written once the task started (kMarkPodsReady), so that clusters with
//     waitForPodsReady do not evict the Job.
// With queueing disabled the label is ignored exactly as before issue 30: such a Job is accepted
// without an Admitted condition and runs unqueued. A Job queued earlier (Admitted=False) whose
// controller no longer has queueing enabled drops its Admitted condition and runs unqueued too
// (nobody would ever admit it); its Workload goes with the Job (ownerReference).
// A Job accepted without an Admitted condition is never gated later, whatever the label says: an
// execution may already exist.
// Once Admitted=True, a Workload that disappears is not recreated (a new one would be admitted
// again, counting the running task twice); the task runs on and no Workload action is asked for.

// The conditions of a queued Job besides Accepted, Scheduled and Succeeded (api/types.h): Admitted
// says whether Kueue admitted its Workload (True never reverts); Evicted=True records that Kueue
// evicted it after admission, so that the stop's reason survives a restart without the Workload.
inline constexpr const char* kConditionAdmitted = "Admitted";
inline constexpr const char* kConditionEvicted = "Evicted";
// The label that names a Job's Kueue LocalQueue (Kueue's QueueLabel).
inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";

// The Job names a LocalQueue: the value of its kueue.x-k8s.io/queue-name label ("" if none).
std::string QueueName(const api::Job& job);
// The Job's status says it is gated by Kueue: it has an Admitted condition.
bool IsQueued(const api::JobStatus& status);
// Ensure is allowed by queueing: not queued, or Admitted=True persisted in `status`.
bool AdmissionAllowsEnsure(const api::JobStatus& status);

// The Job's Workload as the controller read it (conditions of kueue.x-k8s.io/v1beta2 Workload).
struct WorkloadFacts {
  // Read from the API server this round (a quorum GET), not from an informer cache. Admitted=True
  // is written to the Job only from such a read.
  bool fresh = false;
  bool quotaReserved = false;  // QuotaReserved=True
  bool admitted = false;       // Admitted=True
  // Where it stands, in Kueue's words: QuotaReserved=False's reason and message while it waits for
  // quota (Pending, Inadmissible, ...), else Admitted's (False: UnsatisfiedChecks, ...; True:
  // Admitted). The controller adds the queue position to the message where it knows it.
  std::string reason;
  std::string message;
  // Evicted=True: Kueue's reason (Preempted, PodsReadyTimeout, ClusterQueueStopped,
  // Deactivated...) and message.
  bool evicted = false;
  std::string evictedReason;
  std::string evictedMessage;
  bool podsReady = false;  // PodsReady=True (written by this controller)
  bool finished = false;   // Finished=True (written by this controller)
  bool operator==(const WorkloadFacts&) const = default;
};

struct QueueFacts {
  // The controller has Kueue support switched on (ayatori-controller --kueue). False: the queue
  // label is ignored, Workloads are neither read nor written.
  bool enabled = false;
  // The Job's Workload; nullopt: none exists (or the controller could not see one).
  std::optional<WorkloadFacts> workload;
};

// What Decide wants done to the Job's Workload, after the plan's status write and adapter call.
enum class WorkloadAction {
  kNone,
  // Create the Workload (deterministic name from the Job UID; one that exists is fine, one Finished
  // while the Job was never admitted is deleted and created again).
  kCreate,
  // GET the Workload from the API server and decide again with it (WorkloadFacts::fresh).
  kRead,
  // Kueue evicted the Workload before the Job's admission was persisted: clear its reservation
  // (QuotaReserved=False, admission removed) so that Kueue queues it again, with the Workload's
  // resourceVersion decided on. Like kFinish: only on a Job read this round (else GET, decide).
  kClearReservation,
  // Write PodsReady=True/Started.
  kMarkPodsReady,
  // Write Finished=True (reason Succeeded or Failed, Plan::workloadFinish): releases the quota.
  // Retried with backoff while Kueue does not answer; nothing of the Job waits on it.
  kFinish,
};
const char* WorkloadActionName(WorkloadAction action);

// ---------------------------------------------------------------------------------------------
// Inputs.

// The outcome of resolving the Job's class and references, computed by the controller (I/O)
// while NeedsResolution(job). Ignored once Accepted=True: the class is never re-resolved.
struct Resolution {
  enum class Outcome {
    // Waiting for something that may appear or change: JobClassNotFound, NoDefaultJobClass,
    // AmbiguousDefaultJobClass, ParametersNotFound, SecretNotFound, ConfigMapNotFound,
    // KeyNotFound, AdapterNotRegistered, QueueRequired, QueueingUnavailable.
    // Accepted=False/<reason>; the Job stays Resolving.
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
  // kResolved: the adapter stores the acceptance with the execution it creates
  // (AdapterDescriptor::recordsAcceptance), so a busy round may Ensure before it writes
  // Accepted=True (Plan::unwrittenAcceptance).
  bool adapterRecordsAcceptance = false;
  // kResolved: the LocalQueue the Job is queued in: its kueue.x-k8s.io/queue-name label, else its
  // class's queueing.defaultLocalQueue; "" = the label's (QueueName), if any. Only a controller
  // that queues (QueueFacts::enabled) queues it.
  std::string queueName;

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

// An execution this controller process created or adopted (Ensure answered with its
// references) whose report did not land: the status write of its round failed, so the status
// has neither its references nor Scheduled=True. Kept in memory only; lost with the process,
// after which the Job is Ensured again and the adapter adopts it by UID.
struct UnreportedExecution {
  std::vector<api::ExecutionReference> references;
  api::Time createdAt{};  // the round of the Ensure: Scheduled's lastTransitionTime
  bool operator==(const UnreportedExecution&) const = default;
};

struct Facts {
  api::Time now{};                       // wall clock, read once per round by the controller
  std::optional<Resolution> resolution;  // only while NeedsResolution(job)
  std::optional<CallResult> result;      // the adapter call the previous plan named
  // Set when a changed waiting message was written to this Job less than
  // kWaitingMessageInterval ago: how long until another may be. A plan whose only change would
  // be the waiting message then keeps the persisted one and asks to come back after this long.
  std::optional<std::chrono::seconds> holdWaitingMessage;
  // The startTimeoutSeconds of the JobClass the Job was resolved to (same uid), if set: counted
  // from the Accepted=True transition; the Job fails with StartTimeout when its task has not
  // started by then.
  std::optional<std::chrono::seconds> startTimeout;
  // The execution an earlier round of this process created but could not report (its status
  // write failed), if the status still has no references: Decide writes them (Scheduled=True)
  // with its next status, which it always makes, before any other call.
  std::optional<UnreportedExecution> unreportedExecution;
  // The controller has a backlog (other Jobs wait in its queue): an acceptance for an adapter
  // that records it with the execution may go with the create instead of a write of its own
  // (Plan::unwrittenAcceptance); the write after the create carries it. Saves one request per
  // Job before the Jobs behind it get their executions.
  bool backlog = false;
  // Kueue: whether queueing is on and what the Job's Workload says (see "Queueing" above).
  QueueFacts queue;
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
  // The status carries a new waiting message (why the backend has not started the task yet).
  // Once it is written the reconciler holds further changes for kWaitingMessageInterval.
  bool waitingMessageChanged = false;
  // Set when a busy round (Facts::backlog) accepts the Job for an adapter that
  // records the acceptance (Resolution::adapterRecordsAcceptance) and goes on to Ensure: the
  // accepted status, left out of the write (`status` is unset) and carried by the Ensure instead
  // (ExecutionRequest::acceptance). The controller decides the Job's later rounds on it, as if
  // written, until a write carries it (docs/design.md § At most one execution per Job).
  std::optional<api::JobStatus> unwrittenAcceptance;
  // What to do to the Job's Workload once the status is written and the call made ("Queueing"
  // above). For kFinish and kClearReservation: the condition's reason and message to write
  // (Finished=True/Succeeded|Failed; QuotaReserved=False/Pending).
  WorkloadAction workload = WorkloadAction::kNone;
  std::string workloadReason;
  std::string workloadMessage;
  // Non-empty only on a bug: the status Decide computed broke an invariant (CheckInvariants).
  // The status and the call are then dropped; log these and do nothing else.
  std::vector<std::string> invariantViolations;
};

// Decides the next step for `job`. See the protocol at the top of this file.
Plan Decide(const api::Job& job, const Facts& facts);

}  // namespace ayatori::statemachine
