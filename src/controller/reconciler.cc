#include "controller/reconciler.h"

#include <algorithm>

#include "api/json.h"
#include "controller/kinds.h"
#include "controller/resolver.h"
#include "kube/config.h"
#include "kube/events.h"
#include "kube/resource.h"
#include "obs/log.h"

namespace ayatori::controller {

using statemachine::AdapterCall;
using statemachine::FinalizerChange;
using statemachine::WorkloadAction;

// Why a Job has no answer from its backend or is not accepted yet (docs/operations.md).
constexpr const char* kReasonBackendSnapshotMissing = "BackendSnapshotMissing";
constexpr const char* kReasonControllerNamespaceNotFound = "ControllerNamespaceNotFound";
constexpr const char* kReasonBackendSnapshotConflict = "BackendSnapshotConflict";
// Waiting reason (Succeeded=Unknown/Scheduling message, Warning Event) of an accepted Job whose
// Secret, ConfigMap or key is gone when its execution is to be created (docs/api.md).
constexpr const char* kReasonReferenceNotFound = "ReferenceNotFound";

namespace {

obs::LogFields JobFields(const api::Job& job) {
  return {{"namespace", job.metadata.namespace_},
          {"name", job.metadata.name},
          {"uid", job.metadata.uid}};
}

obs::LogFields With(obs::LogFields fields, const std::string& key, const std::string& value) {
  fields.emplace_back(key, value);
  return fields;
}

api::Time NowSeconds(const Clock& clock) {
  return std::chrono::floor<std::chrono::seconds>(clock.Now());
}

ReconcileResult Crashed() {
  ReconcileResult r;
  r.crashed = true;
  return r;
}

ReconcileResult Requeue(std::optional<std::chrono::seconds> after, bool backoff) {
  ReconcileResult r;
  r.requeueAfter = after;
  r.backoff = backoff;
  return r;
}

ReconcileResult Failed(Status s) {
  ReconcileResult r;
  r.backoff = true;
  r.error = std::move(s);
  return r;
}

}  // namespace

struct JobReconciler::RoundState {
  api::Job job;
  statemachine::Facts facts;
  bool fresh = false;  // job was returned by a write or a GET in this round
  // job has its whole spec: it came from the API server this round, or the cache's copy is whole
  // (ClusterCache::JobCopy: CompactJobForCache drops the task of accepted Jobs and most of the
  // task of large waiting ones).
  bool taskComplete = false;
  // The acceptance this controller decided but has not written (Plan::unwrittenAcceptance):
  // job.status holds it, so the round decides as if it were written; its next write carries it.
  std::optional<api::JobStatus> unwrittenAcceptance;
  // unwrittenAcceptance was carried by an earlier create (remembered, or read back from the
  // execution): an execution holding it may exist, so it stands when the Job is read again.
  bool acceptanceCarried = false;
  bool changed = false;  // the last fresh read found a newer resourceVersion (TakeFreshJob)
  // The Job's Workload as decided on (facts.queue.workload came from it): the cache's copy, or
  // this round's read of it. Null when it has none or queueing is off.
  std::shared_ptr<const nlohmann::json> workload;
  // A Workload write of this round was refused: no other is tried, and the round ends with
  // backoff so that the next one asks again (the Job's own progress never waits on Kueue).
  bool workloadRefused = false;
};

// What an Ensure's confirmCreate learned (ExecutionRequest::confirmCreate).
struct JobReconciler::CreateConfirmation {
  bool asked = false;
  bool refused = false;
  Status error;                     // the fresh read failed
  std::optional<api::Job> current;  // the Job as read, when it changed; nullopt: gone or replaced
};

JobReconciler::JobReconciler(KubeClient& client, const ClusterCache& cache,
                             const adapters::AdapterRegistry& registry, const Clock& clock,
                             obs::Registry& metrics, kube::EventRecorder* events,
                             ReconcilerOptions options)
    : client_(client),
      cache_(cache),
      registry_(registry),
      clock_(clock),
      metrics_(metrics),
      events_(events),
      options_(std::move(options)),
      tables_(clock),
      references_(client),
      workloads_(client, clock, [this] { CountWrite("workload"); }) {}

ReconcileResult JobReconciler::Reconcile(const std::string& ns, const std::string& name) {
  const std::string key = kube::ObjectKey(ns, name);
  ClusterCache::JobCopy copy = cache_.GetJobCopy(ns, name);
  const auto& cached = copy.job;
  if (!cached) {
    tables_.UnreportedExecutionOf(key, nullptr, nullptr);
    tables_.ForgetAcceptanceSent(key);
    return {};
  }
  auto started = clock_.SteadyNow();
  RoundState round;
  round.job = *cached;
  round.facts.now = NowSeconds(clock_);
  TakeCachedWorkload(round);
  ReconcileResult result;
  // An acceptance this process sent that the copy does not show (the cache lags, or the answer
  // was lost after it landed): the copy must not decide the Job's acceptance again. Asked
  // until the cache shows it, however long that takes (CacheBehindOwnWrite forgets after 30 s).
  const bool acceptanceSent = tables_.AcceptanceSent(key, *cached);
  if (tables_.CacheBehindOwnWrite(*cached) || acceptanceSent) {
    // The copy predates this controller's own write: read the Job instead (a read, where
    // deciding on the copy would send a write bound to fail with 409 Conflict).
    auto current = ReadCurrentJob(ns, name, cached->metadata.uid);
    if (!current.ok()) return Failed(current.status());
    if (!current->has_value()) return {};
    round.job = std::move(**current);
    round.fresh = true;
  }
  round.taskComplete = round.fresh || copy.taskComplete;
  std::optional<api::JobStatus> acceptance;
  round.facts.unreportedExecution = tables_.UnreportedExecutionOf(key, &round.job, &acceptance);
  if (!api::IsConditionTrue(round.job.status.conditions, api::kConditionAccepted)) {
    if (!acceptance) {
      auto recorded = RecordedAcceptance(round.job);
      if (recorded.ok()) {
        acceptance = std::move(*recorded);
      } else {
        result = Failed(recorded.status());
      }
    }
    if (acceptance) {
      round.job.status = *acceptance;
      round.unwrittenAcceptance = std::move(acceptance);
      round.acceptanceCarried = true;
    }
  }
  if (result.error.ok() && statemachine::NeedsResolution(round.job)) {
    bool gone = false;
    if (Status s = ResolveWholeTask(round, &gone); !s.ok()) {
      result = Failed(s);
    } else if (gone) {
      return {};
    }
  }
  round.facts.holdWaitingMessage = tables_.WaitingMessageHold(round.job.metadata.uid);
  round.facts.backlog = options_.backlog && options_.backlog();
  if (result.error.ok()) result = Step(round);
  if (round.workloadRefused) result.backoff = true;
  tables_.UnreportedExecutionOf(key, &round.job,
                                nullptr);  // forgets what this round's write reported
  if (statemachine::DeriveState(round.job) != statemachine::State::kStarting &&
      statemachine::DeriveState(round.job) != statemachine::State::kScheduling) {
    tables_.ForgetWaitingMessage(round.job.metadata.uid);
  }
  std::chrono::duration<double> took = clock_.SteadyNow() - started;
  metrics_.GetHistogram(obs::metrics::kReconcileDuration).Observe(took.count());
  if (!result.error.ok() && !result.crashed) {
    obs::Warn("reconcile did not finish",
              With(JobFields(round.job), "error", result.error.ToString()));
  }
  return result;
}

// How one part of a plan leaves the round: on to the plan's next part, back to Decide (the Job
// changed, or the finalizer now in place decides the next step), or over with a result.
struct JobReconciler::Turn {
  enum class Kind { kNext, kDecideAgain, kEnd };
  Kind kind = Kind::kNext;
  ReconcileResult result;

  static Turn Next() { return {}; }
  static Turn DecideAgain() { return {Kind::kDecideAgain, {}}; }
  static Turn End(ReconcileResult result) { return {Kind::kEnd, std::move(result)}; }
};

ReconcileResult JobReconciler::Step(RoundState& round) {
  using Kind = Turn::Kind;
  for (int step = 0; step < options_.maxSteps; ++step) {
    const statemachine::Plan plan = DecideNext(round);
    Turn turn = RefuseBrokenInvariants(round.job, plan);
    if (turn.kind == Kind::kNext) turn = AddFinalizer(round, plan);
    if (turn.kind == Kind::kNext) turn = WritePlannedStatus(round, plan);
    if (turn.kind == Kind::kEnd) return std::move(turn.result);
    RecordEvents(round.job, plan.events);
    turn = ReadJobBeforeWorkloadRelease(round, plan);
    if (turn.kind == Kind::kEnd) return std::move(turn.result);
    if (turn.kind == Kind::kDecideAgain) continue;
    if (plan.call != AdapterCall::kNone) {
      turn = ReadWholeTaskForEnsure(round, plan);
      if (turn.kind == Kind::kNext) {
        turn = CallPlannedAdapter(round, plan);
        // The Workload action comes after the call it goes with (statemachine.h § Queueing).
        if (turn.kind != Kind::kEnd) ApplyWorkloadAction(round, plan);
      }
      if (turn.kind == Kind::kEnd) return std::move(turn.result);
      continue;
    }
    if (ApplyWorkloadAction(round, plan).kind == Kind::kDecideAgain) continue;
    if (plan.finalizer == FinalizerChange::kRemove) return RemoveFinalizer(round.job);
    if (plan.deleteJob) return DeleteExpired(round, plan);
    // With the finalizer now in place, decide again: the next step is usually Ensure.
    if (plan.finalizer == FinalizerChange::kAdd) continue;
    return Requeue(plan.requeueAfter, plan.backoff);
  }
  return Failed({StatusCode::kInternal, "reconcile did not settle within " +
                                            std::to_string(options_.maxSteps) + " steps"});
}

statemachine::Plan JobReconciler::DecideNext(RoundState& round) {
  api::Job& job = round.job;
  if (!round.facts.startTimeout && job.status.resolvedJobClass) {
    round.facts.startTimeout = StartTimeoutOf(*job.status.resolvedJobClass);
  }
  statemachine::Plan plan = statemachine::Decide(job, round.facts);
  round.facts.result.reset();
  if (plan.unwrittenAcceptance) {
    if (!round.unwrittenAcceptance) {  // once per round (a finalizer patch decides it twice)
      metrics_.GetCounter(obs::metrics::kAcceptancesDeferred).Inc();
    }
    job.status = std::move(*plan.unwrittenAcceptance);
    plan.unwrittenAcceptance.reset();
    round.unwrittenAcceptance = job.status;
  }
  return plan;
}

JobReconciler::Turn JobReconciler::RefuseBrokenInvariants(const api::Job& job,
                                                          const statemachine::Plan& plan) {
  if (plan.invariantViolations.empty()) return Turn::Next();
  std::string all;
  for (const auto& v : plan.invariantViolations) all += (all.empty() ? "" : "; ") + v;
  obs::Error("state machine refused a transition that breaks an invariant",
             With(JobFields(job), "violations", all));
  return Turn::End(Failed({StatusCode::kInternal, "invariant violation: " + all}));
}

JobReconciler::Turn JobReconciler::AddFinalizer(RoundState& round, const statemachine::Plan& plan) {
  if (plan.finalizer != FinalizerChange::kAdd) return Turn::Next();
  auto finalizers = round.job.metadata.finalizers;
  finalizers.emplace_back(api::kFinalizer);
  auto updated = PatchFinalizers(round.job, finalizers);
  if (!updated.ok()) return Turn::End(Failed(updated.status()));
  round.job = std::move(*updated);
  round.fresh = true;
  round.taskComplete = true;
  return Turn::Next();
}

JobReconciler::Turn JobReconciler::WritePlannedStatus(RoundState& round,
                                                      const statemachine::Plan& plan) {
  if (!plan.status) return Turn::Next();
  api::Job& job = round.job;
  if (Crash(kCrashBeforeStatusWrite, job)) return Turn::End(Crashed());
  if (round.unwrittenAcceptance ||
      (!api::IsConditionTrue(job.status.conditions, api::kConditionAccepted) &&
       api::IsConditionTrue(plan.status->conditions, api::kConditionAccepted))) {
    tables_.KeepAcceptanceSent(job);  // before the request: its answer may be lost after it landed
  }
  auto updated = WriteStatus(job, *plan.status);
  if (!updated.ok()) {
    if (updated.status().code() == StatusCode::kNotFound) return Turn::End({});
    return Turn::End(Failed(updated.status()));
  }
  job = std::move(*updated);
  round.fresh = true;
  round.taskComplete = true;
  round.unwrittenAcceptance.reset();  // the write carried it: the plan was decided on it
  round.acceptanceCarried = false;
  if (plan.waitingMessageChanged) {
    tables_.WaitingMessageWritten(job.metadata.uid);
    round.facts.holdWaitingMessage = tables_.WaitingMessageHold(job.metadata.uid);
  }
  return Turn::Next();
}

ReconcileResult JobReconciler::RemoveFinalizer(const api::Job& job) {
  auto finalizers = job.metadata.finalizers;
  std::erase(finalizers, api::kFinalizer);
  auto updated = PatchFinalizers(job, finalizers);
  if (!updated.ok() && updated.status().code() != StatusCode::kNotFound) {
    return Failed(updated.status());
  }
  obs::Info("cleanup finished, finalizer removed", JobFields(job));
  return {};
}

ReconcileResult JobReconciler::DeleteExpired(const RoundState& round,
                                             const statemachine::Plan& plan) {
  Status s = DeleteExpiredJob(round.job, round.facts.now);
  if (!s.ok()) return Failed(s);
  return Requeue(plan.requeueAfter, false);
}

void JobReconciler::TakeCachedWorkload(RoundState& round) {
  round.facts.queue.enabled = options_.kueue;
  round.facts.queue.workload.reset();
  round.workload.reset();
  const api::ObjectMeta& meta = round.job.metadata;
  if (!options_.kueue || meta.uid.empty()) return;
  auto cached = cache_.GetWorkload(meta.namespace_, kueue::WorkloadName(meta.uid));
  if (cached) TakeWorkload(round, std::move(cached), /*fresh=*/false);
}

void JobReconciler::TakeWorkload(RoundState& round, std::shared_ptr<const nlohmann::json> workload,
                                 bool fresh) {
  auto state = kueue::ReadWorkload(*workload);
  if (!state.ok()) {
    // Not a Workload this controller can read: as if there were none (a create then finds it
    // and leaves it, and the Job waits with the create's error in the log).
    obs::Warn("cannot read the Job's Workload",
              With(JobFields(round.job), "error", state.status().message()));
    return;
  }
  if (!ControlledByJob(*state, round.job.metadata.uid)) {
    obs::Warn("a Workload of the Job's name is not controlled by the Job; it is ignored",
              JobFields(round.job));
    return;
  }
  round.workload = std::move(workload);
  round.facts.queue.workload = WorkloadFactsOf(*state, fresh);
}

JobReconciler::Turn JobReconciler::ReadJobBeforeWorkloadRelease(RoundState& round,
                                                                const statemachine::Plan& plan) {
  if (round.fresh || (plan.workload != WorkloadAction::kClearReservation &&
                      plan.workload != WorkloadAction::kFinish)) {
    return Turn::Next();
  }
  // Quota goes back only on a Job read now: a cached copy may predate its admission or its
  // execution.
  return ReadJobNow(round);
}

JobReconciler::Turn JobReconciler::ApplyWorkloadAction(RoundState& round,
                                                       const statemachine::Plan& plan) {
  if (plan.workload == WorkloadAction::kNone || round.workloadRefused) return Turn::Next();
  const api::Job& job = round.job;
  Status s;
  if (plan.workload == WorkloadAction::kRead) {
    auto read = workloads_.Read(job.metadata.namespace_, job.metadata.uid);
    if (read.ok()) {
      round.workload.reset();
      round.facts.queue.workload.reset();
      if (*read) {
        TakeWorkload(round, std::make_shared<const nlohmann::json>(std::move(**read)), true);
      }
      return Turn::DecideAgain();
    }
    s = read.status();
  } else if (plan.workload == WorkloadAction::kCreate) {
    auto parameters = ParametersFor(job);
    s = parameters.ok() ? workloads_.Create(job, QueueNameOf(job), QueueNodeSelector(*parameters))
                        : parameters.status();
  } else if (round.workload == nullptr) {
    s = Status(StatusCode::kFailedPrecondition, "no Workload was read to write to");
  } else {
    s = WriteWorkload(round, plan);
  }
  if (!s.ok()) {
    round.workloadRefused = true;
    obs::Warn("Workload not written; retrying with backoff",
              With(With(JobFields(job), "action", statemachine::WorkloadActionName(plan.workload)),
                   "error", s.ToString()));
  }
  return Turn::Next();
}

StatusOr<nlohmann::json> JobReconciler::PlacedOnAdmittedFlavors(const api::Job& job,
                                                                nlohmann::json parameters) {
  if (!options_.kueue || !statemachine::IsQueued(job.status)) return parameters;
  const AdapterDescriptor* descriptor =
      registry_.FindDescriptor(job.status.resolvedJobClass->controllerName);
  if (descriptor == nullptr || !descriptor->placedByFlavors) return parameters;
  auto placement = workloads_.AdmittedPlacement(job.metadata.namespace_, job.metadata.uid);
  if (!placement.ok()) return placement.status();
  return WithPlacement(std::move(parameters), *placement);
}

std::string JobReconciler::QueueNameOf(const api::Job& job) const {
  std::string label = statemachine::QueueName(job);
  if (!label.empty() || !job.status.resolvedJobClass) return label;
  // Accepted into its class's default queue (ResolveQueue in resolver.cc): the class it was
  // accepted with, as long as that one is still there.
  const api::ResolvedJobClass& resolved = *job.status.resolvedJobClass;
  auto cls = cache_.GetJobClass(resolved.name);
  if (cls == nullptr || cls->metadata.uid != resolved.uid || !cls->spec.queueing) return "";
  return cls->spec.queueing->defaultLocalQueue;
}

Status JobReconciler::WriteWorkload(const RoundState& round, const statemachine::Plan& plan) {
  const nlohmann::json& workload = *round.workload;
  switch (plan.workload) {
    case WorkloadAction::kClearReservation:
      return workloads_.ClearReservation(workload, round.facts.queue.workload->evictedReason,
                                         plan.workloadMessage);
    case WorkloadAction::kMarkPodsReady:
      return workloads_.MarkPodsReady(workload, plan.workloadReason, plan.workloadMessage);
    case WorkloadAction::kFinish:
      return workloads_.Finish(workload, plan.workloadReason, plan.workloadMessage);
    default:
      return Status::Ok();
  }
}

JobReconciler::Turn JobReconciler::ReadWholeTaskForEnsure(RoundState& round,
                                                          const statemachine::Plan& plan) {
  if (plan.call != AdapterCall::kEnsure || round.taskComplete) return Turn::Next();
  // The cache keeps a compact projection of accepted Jobs without the task
  // (CompactJobForCache), and Ensure needs all of it: read the Job, and decide again if it
  // changed. (Whether the execution may be created is confirmed right before its create.)
  return ReadJobNow(round);
}

JobReconciler::Turn JobReconciler::ReadJobNow(RoundState& round) {
  const api::ObjectMeta& meta = round.job.metadata;
  auto current = ReadCurrentJob(meta.namespace_, meta.name, meta.uid);
  if (!current.ok()) return Turn::End(Failed(current.status()));
  if (!current->has_value()) return Turn::End({});
  if (Status s = TakeFreshJob(round, std::move(**current)); !s.ok()) return Turn::End(Failed(s));
  return round.changed ? Turn::DecideAgain() : Turn::Next();
}

JobReconciler::Turn JobReconciler::CallPlannedAdapter(RoundState& round,
                                                      const statemachine::Plan& plan) {
  const api::Job& job = round.job;
  // An execution left unreported is called by the references its Ensure returned.
  api::Job withReferences;
  const bool unreported = round.facts.unreportedExecution &&
                          (!job.status.execution || job.status.execution->references.empty());
  if (unreported) {
    withReferences = job;
    if (!withReferences.status.execution) withReferences.status.execution.emplace();
    withReferences.status.execution->references = round.facts.unreportedExecution->references;
  }
  CreateConfirmation confirmation;
  auto observation = CallAdapter(plan.call, unreported ? withReferences : job,
                                 round.unwrittenAcceptance.has_value(), &confirmation);
  if (!observation.ok()) return Turn::End(Failed(observation.status()));
  if (confirmation.refused) return TakeUnconfirmedJob(round, std::move(confirmation));
  if (plan.call == AdapterCall::kEnsure && round.unwrittenAcceptance) {
    // Kept at once: should this round's write fail, the next round still knows the class
    // and the execution (the Decide below keeps them again if it defers the report).
    tables_.KeepUnreportedExecution(
        job, statemachine::UnreportedExecution{observation->references, round.facts.now},
        round.unwrittenAcceptance);
  }
  const char* point = plan.call == AdapterCall::kEnsure   ? kCrashAfterEnsure
                      : plan.call == AdapterCall::kCancel ? kCrashAfterCancel
                      : plan.call == AdapterCall::kDelete ? kCrashAfterDelete
                                                          : nullptr;
  if (point != nullptr && Crash(point, job)) return Turn::End(Crashed());
  round.facts.result = statemachine::CallResult{plan.call, std::move(*observation)};
  return Turn::DecideAgain();
}

JobReconciler::Turn JobReconciler::TakeUnconfirmedJob(RoundState& round,
                                                      CreateConfirmation confirmation) {
  // Nothing was created: the Job changed since this round decided (a cancel, a deletion, a
  // new UID under the name, any edit). Decide again on the Job as it is now.
  metrics_.GetCounter(obs::metrics::kCreatesNotConfirmed).Inc();
  if (!confirmation.error.ok()) return Turn::End(Failed(confirmation.error));
  if (!confirmation.current) return Turn::End({});  // gone, or a new Job took the name
  if (Status s = TakeFreshJob(round, std::move(*confirmation.current)); !s.ok()) {
    return Turn::End(Failed(s));
  }
  return Turn::DecideAgain();
}

Status JobReconciler::TakeFreshJob(RoundState& round, api::Job current) {
  round.changed = current.metadata.resourceVersion != round.job.metadata.resourceVersion;
  round.fresh = true;
  round.taskComplete = true;
  if (round.unwrittenAcceptance &&
      !api::IsConditionTrue(current.status.conditions, api::kConditionAccepted)) {
    // Carried by a create (an execution may hold it), or decided on this very version: it
    // stands. Decided by this round on an older copy and carried by nothing yet: decide anew.
    if (round.acceptanceCarried || !round.changed) {
      current.status = *round.unwrittenAcceptance;
    } else {
      round.unwrittenAcceptance.reset();
    }
  }
  round.job = std::move(current);
  if (round.changed && statemachine::NeedsResolution(round.job) && !round.facts.resolution) {
    auto resolution = Resolve(round.job);
    if (!resolution.ok()) return resolution.status();
    round.facts.resolution = std::move(*resolution);
  }
  return Status::Ok();
}

StatusOr<api::Job> JobReconciler::PatchFinalizers(const api::Job& job,
                                                  const std::vector<std::string>& finalizers) {
  // A merge patch carrying metadata.resourceVersion is refused with 409 when the Job changed.
  nlohmann::json patch = {{"metadata",
                           {{"resourceVersion", job.metadata.resourceVersion},
                            {"finalizers", finalizers.empty() ? nlohmann::json(nullptr)
                                                              : nlohmann::json(finalizers)}}}};
  CountWrite("finalizer");  // before the request: whoever sees the write sees it counted
  auto r = client_.Patch(kJobs, job.metadata.namespace_, job.metadata.name, PatchType::kMerge,
                         patch, {});
  if (!r.ok()) return r.status();
  auto updated = api::JobFromJson(*r);
  if (updated.ok()) tables_.WroteOver(job, *updated);
  return updated;
}

StatusOr<api::Job> JobReconciler::WriteStatus(const api::Job& job, const api::JobStatus& status) {
  nlohmann::json body = {{"apiVersion", api::kApiVersion},
                         {"kind", "Job"},
                         {"metadata",
                          {{"name", job.metadata.name},
                           {"namespace", job.metadata.namespace_},
                           {"resourceVersion", job.metadata.resourceVersion}}},
                         {"status", api::StatusToJson(status)}};
  CountWrite("status");
  auto r = client_.UpdateStatus(kJobs, job.metadata.namespace_, body, {});
  if (!r.ok()) return r.status();
  auto updated = api::JobFromJson(*r);
  if (updated.ok()) tables_.WroteOver(job, *updated);
  return updated;
}

StatusOr<std::optional<api::Job>> JobReconciler::ReadCurrentJob(const std::string& ns,
                                                                const std::string& name,
                                                                const std::string& uid) {
  auto current = client_.Get(kJobs, ns, name);
  if (!current.ok()) {
    if (current.status().code() == StatusCode::kNotFound) return std::optional<api::Job>();
    return current.status();
  }
  auto decoded = api::JobFromJson(*current);
  if (!decoded.ok()) return decoded.status();
  if (decoded->metadata.uid != uid) return std::optional<api::Job>();
  return std::optional<api::Job>(std::move(*decoded));
}

Status JobReconciler::DeleteExpiredJob(const api::Job& job, api::Time now) {
  // The TTL decision is irreversible: re-check it on the Job as the API server has it now (the
  // TTL may have been extended a moment ago), and delete exactly that UID.
  auto current = ReadCurrentJob(job.metadata.namespace_, job.metadata.name, job.metadata.uid);
  if (!current.ok()) return current.status();
  if (!current->has_value() || !statemachine::TtlExpired(**current, now)) {
    return Status::Ok();  // gone, replaced, or the update event of the fresh Job brings a round
  }
  DeleteOptions options;
  options.preconditionUid = job.metadata.uid;
  CountWrite("delete");
  Status s = client_.Delete(kJobs, job.metadata.namespace_, job.metadata.name, options);
  if (s.ok()) obs::Info("TTL expired, Job deleted", JobFields(job));
  if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kConflict) return Status::Ok();
  return s;
}

namespace {

// A call that cannot be made (no class, no adapter, no snapshot): its outcome is unknown.
Observation UnknownObservation(std::string reason, std::string message) {
  Observation unknown;
  unknown.phase = ExecutionPhase::kUnknown;
  unknown.reason = std::move(reason);
  unknown.message = std::move(message);
  return unknown;
}

// An Ensure whose request could not be built: a Secret, ConfigMap or key the Job was accepted
// with is gone (kNotFound). Nothing is created and the Job says what it waits for (the message
// names the reference, never a value). Other errors end the round.
StatusOr<Observation> WaitingForReference(const Status& buildFailed) {
  if (buildFailed.code() != StatusCode::kNotFound) return buildFailed;
  Observation waiting;
  waiting.phase = ExecutionPhase::kPending;
  waiting.reason = kReasonReferenceNotFound;
  waiting.message = buildFailed.message() +
                    "; it was deleted after the Job was "
                    "accepted, the Job starts once it is back";
  return waiting;
}

}  // namespace

// Where an adapter call of a Job goes: its adapter and the parameters it gets, or the Unknown
// observation that stands for a call that cannot be made.
struct JobReconciler::CallTarget {
  std::shared_ptr<Adapter> adapter;
  nlohmann::json parameters;
  std::optional<Observation> cannotCall;
};

StatusOr<Observation> JobReconciler::CallAdapter(AdapterCall call, const api::Job& job,
                                                 bool acceptanceUnwritten,
                                                 CreateConfirmation* confirmation) {
  auto target = CallTargetOf(job);
  if (!target.ok()) return target.status();
  if (target->cannotCall) return std::move(*target->cannotCall);
  Adapter& adapter = *target->adapter;
  auto began = clock_.SteadyNow();
  Observation result;
  switch (call) {
    case AdapterCall::kEnsure: {
      auto placed = PlacedOnAdmittedFlavors(job, std::move(target->parameters));
      if (!placed.ok()) return placed.status();
      auto request = BuildRequest(job, std::move(*placed), acceptanceUnwritten);
      if (!request.ok()) return WaitingForReference(request.status());
      result = EnsureConfirmed(adapter, job, *request, confirmation);
      break;
    }
    case AdapterCall::kObserve:
      result = adapter.Observe(BuildKey(job, std::move(target->parameters)));
      break;
    case AdapterCall::kCancel:
      result = adapter.Cancel(BuildKey(job, std::move(target->parameters)));
      break;
    case AdapterCall::kDelete:
      result = statemachine::DeleteObservation(
          adapter.Delete(BuildKey(job, std::move(target->parameters))));
      break;
    case AdapterCall::kNone:
      return UnknownObservation("", "");
  }
  RecordAdapterCall(adapter, call, job, result, clock_.SteadyNow() - began);
  return result;
}

StatusOr<JobReconciler::CallTarget> JobReconciler::CallTargetOf(const api::Job& job) {
  CallTarget target;
  if (!job.status.resolvedJobClass) {
    target.cannotCall = UnknownObservation("NotResolved", "the Job has no resolved JobClass");
    return target;
  }
  const std::string& controllerName = job.status.resolvedJobClass->controllerName;
  target.adapter = registry_.Find(controllerName);
  if (!target.adapter) {
    target.cannotCall = UnknownObservation(
        "AdapterNotRegistered", "this controller does not serve controllerName " + controllerName);
    return target;
  }
  auto parameters = ParametersFor(job);
  if (!parameters.ok()) {
    if (parameters.status().code() != StatusCode::kFailedPrecondition) return parameters.status();
    // Never guess another backend: without its snapshot the Job's backend is unknown.
    target.cannotCall =
        UnknownObservation(kReasonBackendSnapshotMissing, parameters.status().message());
    obs::Warn("backend snapshot missing: no adapter call",
              With(JobFields(job), "error", target.cannotCall->message));
    return target;
  }
  target.parameters = std::move(*parameters);
  return target;
}

Observation JobReconciler::EnsureConfirmed(Adapter& adapter, const api::Job& job,
                                           ExecutionRequest& request,
                                           CreateConfirmation* confirmation) {
  if (confirmation != nullptr) {
    request.confirmCreate = [this, &job, confirmation]() -> Status {
      return ConfirmCreate(job, *confirmation);
    };
  }
  Observation result = adapter.Ensure(request);
  // A token the fresh read reserved for a create that was not sent goes back unused.
  if (confirmation != nullptr && confirmation->asked) client_.ReserveRequests(0);
  return result;
}

void JobReconciler::RecordAdapterCall(const Adapter& adapter, AdapterCall call, const api::Job& job,
                                      const Observation& result,
                                      std::chrono::duration<double> took) {
  obs::Labels labels{{"adapter", adapter.Name()}, {"call", statemachine::AdapterCallName(call)}};
  metrics_.GetHistogram(obs::metrics::kAdapterCallDuration, labels).Observe(took.count());
  if (result.phase == ExecutionPhase::kUnknown) {
    metrics_.GetCounter(obs::metrics::kAdapterCallErrors, labels).Inc();
  }
  if (obs::LogEnabled(obs::LogLevel::kDebug) || result.phase == ExecutionPhase::kUnknown) {
    auto fields = JobFields(job);
    fields.emplace_back("call", statemachine::AdapterCallName(call));
    fields.emplace_back("phase", ExecutionPhaseName(result.phase));
    fields.emplace_back("reason", result.reason);
    fields.emplace_back("message", result.message);
    obs::Log(
        result.phase == ExecutionPhase::kUnknown ? obs::LogLevel::kWarn : obs::LogLevel::kDebug,
        "adapter call", fields);
  }
}

StatusOr<ExecutionRequest> JobReconciler::BuildRequest(const api::Job& job,
                                                       nlohmann::json parameters,
                                                       bool acceptanceUnwritten) {
  ExecutionRequest request;
  request.job = job;
  request.jobClass = *job.status.resolvedJobClass;
  request.parameters = std::move(parameters);
  if (job.status.effectiveResources) request.resources = *job.status.effectiveResources;
  request.resultUnknown = statemachine::InResultUnknownEpisode(job.status);
  // Only an adapter that says it resolves references gets them unresolved.
  const AdapterDescriptor* descriptor = registry_.FindDescriptor(request.jobClass.controllerName);
  if (acceptanceUnwritten && descriptor != nullptr && descriptor->recordsAcceptance) {
    request.acceptance = api::StatusToJson(job.status).dump();
  }
  if (descriptor != nullptr && descriptor->resolvesEnvReferences) return request;
  const std::string& ns = job.metadata.namespace_;
  // One GET per referenced object, however many of its keys the Job names.
  ReferenceReads reads(references_);
  for (const auto& env : job.spec.task.env) {
    if (env.value) {
      request.resolvedEnv.push_back({env.name, SensitiveString(*env.value)});
      continue;
    }
    if (!env.valueFrom) continue;
    const bool secret = env.valueFrom->secretKeyRef.has_value();
    const ReferenceKind kind = secret ? ReferenceKind::kSecret : ReferenceKind::kConfigMap;
    const api::KeySelector& ref =
        secret ? *env.valueFrom->secretKeyRef : *env.valueFrom->configMapKeyRef;
    auto obj = reads.Get(kind, ns, ref.name);
    if (!obj.ok()) return obj.status();
    const std::string what = std::string(ReferenceKindName(kind)) + " " + ns + "/" + ref.name;
    if (*obj == nullptr) {
      if (ref.optional) continue;
      return Status(StatusCode::kNotFound, what + " does not exist");
    }
    auto value = (*obj)->values.find(ref.key);
    if (value == (*obj)->values.end()) {
      if (ref.optional) continue;
      return Status(StatusCode::kNotFound, what + " has no key " + ref.key);
    }
    request.resolvedEnv.push_back({env.name, value->second});
  }
  for (const auto& pull : job.spec.task.imagePullSecrets) {
    auto obj = reads.Get(ReferenceKind::kSecret, ns, pull.name);
    if (!obj.ok()) return obj.status();
    const std::string what = "Secret " + ns + "/" + pull.name;
    if (*obj == nullptr) return Status(StatusCode::kNotFound, what + " does not exist");
    auto config = (*obj)->values.find(".dockerconfigjson");
    if (config == (*obj)->values.end()) {
      return Status(StatusCode::kNotFound, what + " has no key .dockerconfigjson");
    }
    request.imagePullConfigs.push_back(config->second);
  }
  return request;
}

Status JobReconciler::ConfirmCreate(const api::Job& decided, CreateConfirmation& confirmation) {
  confirmation.asked = true;
  // The read and the create take their rate-limiter tokens together, so that under a backlog
  // the create follows the read at once instead of queueing behind other Jobs' requests.
  client_.ReserveRequests(2);
  auto current =
      ReadCurrentJob(decided.metadata.namespace_, decided.metadata.name, decided.metadata.uid);
  if (!current.ok()) {
    confirmation.refused = true;
    confirmation.error = current.status();
    return confirmation.error;
  }
  if (!current->has_value()) {
    confirmation.refused = true;
    return Status(StatusCode::kNotFound, "the Job is gone or was replaced");
  }
  if ((*current)->metadata.resourceVersion == decided.metadata.resourceVersion) {
    return Status::Ok();
  }
  confirmation.refused = true;
  confirmation.current = std::move(**current);
  return Status(StatusCode::kConflict, "the Job changed since the decision");
}

ExecutionKey JobReconciler::BuildKey(const api::Job& job, nlohmann::json parameters) {
  ExecutionKey key;
  key.uid = job.metadata.uid;
  key.namespace_ = job.metadata.namespace_;
  key.name = job.metadata.name;
  if (job.status.execution) key.references = job.status.execution->references;
  key.parameters = std::move(parameters);
  key.resultUnknown = statemachine::InResultUnknownEpisode(job.status);
  return key;
}

Status JobReconciler::ResolveWholeTask(RoundState& round, bool* gone) {
  if (!round.taskComplete) {
    // A compact copy (CompactJobForCache) has what the wait reads: while it keeps the Job
    // waiting, that is the outcome, and a flood of large waiting Jobs costs no read. Anything
    // else (acceptance, a refusal) is decided on the whole task, which adapter Validate reads.
    auto onCopy = ResolveJob(round.job, cache_, registry_, references_,
                             options_.controllerNamespace, options_.kueue);
    if (!onCopy.ok()) return onCopy.status();
    if (onCopy->outcome == statemachine::Resolution::Outcome::kPending) {
      round.facts.resolution = std::move(*onCopy);
      return Status::Ok();
    }
    metrics_.GetCounter(obs::metrics::kCompactJobReads).Inc();
    const api::ObjectMeta& meta = round.job.metadata;
    auto current = ReadCurrentJob(meta.namespace_, meta.name, meta.uid);
    if (!current.ok()) return current.status();
    if (!current->has_value()) {
      *gone = true;
      return Status::Ok();
    }
    round.job = std::move(**current);
    round.fresh = true;
    round.taskComplete = true;
    if (!statemachine::NeedsResolution(round.job)) return Status::Ok();
  }
  auto resolution = Resolve(round.job);
  if (!resolution.ok()) return resolution.status();
  round.facts.resolution = std::move(*resolution);
  return Status::Ok();
}

StatusOr<statemachine::Resolution> JobReconciler::Resolve(const api::Job& job) {
  auto resolved =
      ResolveJob(job, cache_, registry_, references_, options_.controllerNamespace, options_.kueue);
  if (!resolved.ok()) return resolved.status();
  statemachine::Resolution resolution = std::move(*resolved);
  if (resolution.outcome == statemachine::Resolution::Outcome::kResolved) {
    const AdapterDescriptor* d = registry_.FindDescriptor(resolution.jobClass.controllerName);
    resolution.adapterRecordsAcceptance = d != nullptr && d->recordsAcceptance;
  }
  if (resolution.outcome != statemachine::Resolution::Outcome::kResolved ||
      !resolution.jobClass.backendSnapshot) {
    return resolution;
  }
  BackendSnapshot snapshot{resolution.jobClass.controllerName, resolution.pinnedParameters};
  if (auto cached = cache_.GetBackendSnapshot(*resolution.jobClass.backendSnapshot);
      cached && *cached == snapshot) {
    return resolution;  // stored for an earlier Job
  }
  Status s = StoreBackendSnapshot(client_, options_.controllerNamespace, snapshot);
  if (s.ok()) return resolution;
  if (s.code() == StatusCode::kNotFound) {
    return statemachine::Resolution::Pending(kReasonControllerNamespaceNotFound, s.message());
  }
  if (s.code() == StatusCode::kAlreadyExists) {
    return statemachine::Resolution::Pending(kReasonBackendSnapshotConflict, s.message());
  }
  return s;
}

StatusOr<std::shared_ptr<const BackendSnapshot>> JobReconciler::ReadBackendSnapshot(
    const std::string& name) {
  if (auto cached = cache_.GetBackendSnapshot(name)) return cached;
  // Not (yet) in the cache: stored a moment ago by this round, or gone. Ask the API server.
  auto live = client_.Get(kConfigMaps, options_.controllerNamespace, name);
  if (!live.ok()) {
    if (live.status().code() == StatusCode::kNotFound) {
      return std::shared_ptr<const BackendSnapshot>();
    }
    return live.status();
  }
  return DecodeBackendSnapshot(*live);
}

StatusOr<nlohmann::json> JobReconciler::ParametersFor(const api::Job& job) {
  nlohmann::json parameters = nlohmann::json::object();
  if (!job.status.resolvedJobClass) return parameters;
  const api::ResolvedJobClass& resolved = *job.status.resolvedJobClass;
  std::shared_ptr<const BackendSnapshot> snapshot;
  if (resolved.backendSnapshot) {
    const std::string& name = *resolved.backendSnapshot;
    auto read = ReadBackendSnapshot(name);
    if (!read.ok()) return read.status();
    snapshot = std::move(*read);
    // The name is a hash of the content: an object recreated with other values is not it.
    if (snapshot == nullptr || BackendSnapshotName(*snapshot) != name) {
      return Status(StatusCode::kFailedPrecondition,
                    "the backend snapshot ConfigMap " + options_.controllerNamespace + "/" + name +
                        (snapshot == nullptr ? " is missing"
                                             : " does not hold the values its name stands for") +
                        ": the backend this Job was accepted for is unknown (see "
                        "docs/operations.md, BackendSnapshotMissing)");
    }
  }
  if (resolved.parametersRef) {
    const auto& ref = *resolved.parametersRef;
    auto current = cache_.GetParameters(ref.kind, ref.name);
    // Only the object the Job was accepted with counts: one created under the same name since
    // (another uid) is not it. Jobs accepted before backend snapshots existed keep reading
    // whatever the name holds, as they always did.
    const bool sameObject =
        current && current->value("/metadata/uid"_json_pointer, std::string()) == ref.uid;
    if (current && (sameObject || !resolved.backendSnapshot)) parameters = *current;
  }
  if (snapshot == nullptr) return parameters;
  return WithPinnedParameters(std::move(parameters), snapshot->pinned);
}

void JobReconciler::RecordEvents(const api::Job& job,
                                 const std::vector<statemachine::Event>& events) {
  for (const auto& e : events) {
    auto fields = JobFields(job);
    fields.emplace_back("reason", e.reason);
    fields.emplace_back("message", e.message);
    obs::Info("event", fields);
    if (events_ == nullptr) continue;
    kube::ObjectReference regarding{api::kApiVersion,        "Job",
                                    job.metadata.namespace_, job.metadata.name,
                                    job.metadata.uid,        job.metadata.resourceVersion};
    events_->Record(regarding,
                    e.type == statemachine::Event::Type::kWarning ? kube::EventType::kWarning
                                                                  : kube::EventType::kNormal,
                    e.reason, "Reconcile", e.message);
  }
}

void JobReconciler::CountWrite(const char* what) {
  metrics_.GetCounter(obs::metrics::kJobApiWrites, {{"kind", what}}).Inc();
}

std::optional<std::chrono::seconds> JobReconciler::StartTimeoutOf(
    const api::ResolvedJobClass& resolved) const {
  auto cls = cache_.GetJobClass(resolved.name);
  // Only the class the Job was accepted with: one recreated under the name since is not it.
  if (cls == nullptr || cls->metadata.uid != resolved.uid || !cls->spec.startTimeoutSeconds ||
      *cls->spec.startTimeoutSeconds <= 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(*cls->spec.startTimeoutSeconds);
}

StatusOr<std::optional<api::JobStatus>> JobReconciler::RecordedAcceptance(const api::Job& job) {
  // Only a Job that may have an execution: it carries the finalizer (added before any Ensure)
  // and has not ended.
  if (!statemachine::HasFinalizer(job) || statemachine::IsTerminal(job.status)) {
    return std::optional<api::JobStatus>();
  }
  for (const auto& registered : registry_.All()) {
    if (!registered.descriptor.recordsAcceptance) continue;
    auto recorded =
        registered.adapter->RecordedAcceptance(job.metadata.namespace_, job.metadata.uid);
    if (!recorded.ok()) return recorded.status();
    if (!recorded->has_value()) continue;
    auto parsed = nlohmann::json::parse(**recorded, nullptr, false);
    auto status = parsed.is_discarded()
                      ? StatusOr<api::JobStatus>(Status(StatusCode::kInvalidArgument, "not JSON"))
                      : api::JobStatusFromJson(parsed);
    if (!status.ok() || !api::IsConditionTrue(status->conditions, api::kConditionAccepted)) {
      // Never resolve such a Job anew: its execution exists, for a class no one can name now.
      return Status(StatusCode::kInternal,
                    "the " + registered.adapter->Name() +
                        " execution of this Job holds an unreadable acceptance record" +
                        (status.ok() ? std::string() : ": " + status.status().message()));
    }
    obs::Info("acceptance read back from the execution (not written before a restart)",
              With(JobFields(job), "adapter", registered.adapter->Name()));
    return std::optional<api::JobStatus>(std::move(*status));
  }
  return std::optional<api::JobStatus>();
}

bool JobReconciler::Crash(std::string_view point, const api::Job& job) const {
  if (!options_.crashHook || !options_.crashHook(point, job)) return false;
  obs::Warn("simulated crash", With(JobFields(job), "point", std::string(point)));
  return true;
}

}  // namespace ayatori::controller
