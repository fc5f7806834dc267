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

// Why a Job has no answer from its backend or is not accepted yet (docs/operations.md).
constexpr const char* kReasonBackendSnapshotMissing = "BackendSnapshotMissing";
constexpr const char* kReasonControllerNamespaceNotFound = "ControllerNamespaceNotFound";
constexpr const char* kReasonBackendSnapshotConflict = "BackendSnapshotConflict";
// Waiting reason (Succeeded=Unknown/Scheduling message, Warning Event) of an accepted Job whose
// Secret, ConfigMap or key is gone when its execution is to be created (docs/api.md).
constexpr const char* kReasonReferenceNotFound = "ReferenceNotFound";
// Own writes the cache has not seen yet (CacheBehindOwnWrite): how long they are remembered and
// how many per Job.
constexpr std::chrono::seconds kOwnWriteMemory{30};
constexpr size_t kOwnWritesRemembered = 4;

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
      references_(client) {}

ReconcileResult JobReconciler::Reconcile(const std::string& ns, const std::string& name) {
  const std::string key = kube::ObjectKey(ns, name);
  ClusterCache::JobCopy copy = cache_.GetJobCopy(ns, name);
  const auto& cached = copy.job;
  if (!cached) {
    UnreportedExecutionOf(key, nullptr, nullptr);
    ForgetAcceptanceSent(key);
    return {};
  }
  auto started = clock_.SteadyNow();
  RoundState round;
  round.job = *cached;
  round.facts.now = NowSeconds(clock_);
  ReconcileResult result;
  // An acceptance this process sent that the copy does not show (the cache lags, or the answer
  // was lost after it landed): the copy must not decide the Job's acceptance again. Asked
  // until the cache shows it, however long that takes (CacheBehindOwnWrite forgets after 30 s).
  const bool acceptanceSent = AcceptanceSent(key, cached.get());
  if (CacheBehindOwnWrite(*cached) || acceptanceSent) {
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
  round.facts.unreportedExecution = UnreportedExecutionOf(key, &round.job, &acceptance);
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
  round.facts.holdWaitingMessage = WaitingMessageHold(round.job.metadata.uid);
  round.facts.backlog = options_.backlog && options_.backlog();
  if (result.error.ok()) result = Step(round);
  UnreportedExecutionOf(key, &round.job, nullptr);  // forgets what this round's write reported
  if (statemachine::DeriveState(round.job) != statemachine::State::kStarting &&
      statemachine::DeriveState(round.job) != statemachine::State::kScheduling) {
    ForgetWaitingMessage(round.job.metadata.uid);
  }
  std::chrono::duration<double> took = clock_.SteadyNow() - started;
  metrics_.GetHistogram("ayatori_reconcile_duration_seconds", "Duration of Job reconcile rounds.")
      .Observe(took.count());
  if (!result.error.ok() && !result.crashed) {
    obs::Warn("reconcile did not finish",
              With(JobFields(round.job), "error", result.error.ToString()));
  }
  return result;
}

ReconcileResult JobReconciler::Step(RoundState& round) {
  api::Job& job = round.job;
  for (int step = 0; step < options_.maxSteps; ++step) {
    if (!round.facts.startTimeout && job.status.resolvedJobClass) {
      round.facts.startTimeout = StartTimeoutOf(*job.status.resolvedJobClass);
    }
    statemachine::Plan plan = statemachine::Decide(job, round.facts);
    round.facts.result.reset();
    if (plan.unwrittenAcceptance) {
      if (!round.unwrittenAcceptance) {  // once per round (a finalizer patch decides it twice)
        metrics_
            .GetCounter("ayatori_acceptances_deferred_total",
                        "Jobs whose acceptance a busy round left to the Job's next write, the "
                        "execution's create carrying it.")
            .Inc();
      }
      job.status = std::move(*plan.unwrittenAcceptance);
      round.unwrittenAcceptance = job.status;
    }
    if (!plan.invariantViolations.empty()) {
      std::string all;
      for (const auto& v : plan.invariantViolations) all += (all.empty() ? "" : "; ") + v;
      obs::Error("state machine refused a transition that breaks an invariant",
                 With(JobFields(job), "violations", all));
      return Failed({StatusCode::kInternal, "invariant violation: " + all});
    }

    if (plan.finalizer == FinalizerChange::kAdd) {
      auto finalizers = job.metadata.finalizers;
      finalizers.emplace_back(api::kFinalizer);
      auto updated = PatchFinalizers(job, finalizers);
      if (!updated.ok()) return Failed(updated.status());
      job = std::move(*updated);
      round.fresh = true;
      round.taskComplete = true;
    }
    if (plan.status) {
      if (Crash(kCrashBeforeStatusWrite, job)) return Crashed();
      if (round.unwrittenAcceptance ||
          (!api::IsConditionTrue(job.status.conditions, api::kConditionAccepted) &&
           api::IsConditionTrue(plan.status->conditions, api::kConditionAccepted))) {
        KeepAcceptanceSent(job);  // before the request: its answer may be lost after it landed
      }
      auto updated = WriteStatus(job, *plan.status);
      if (!updated.ok()) {
        if (updated.status().code() == StatusCode::kNotFound) return {};
        return Failed(updated.status());
      }
      job = std::move(*updated);
      round.fresh = true;
      round.taskComplete = true;
      round.unwrittenAcceptance.reset();  // the write carried it: the plan was decided on it
      round.acceptanceCarried = false;
      if (plan.waitingMessageChanged) {
        WaitingMessageWritten(job.metadata.uid);
        round.facts.holdWaitingMessage = WaitingMessageHold(job.metadata.uid);
      }
    }
    RecordEvents(job, plan.events);
    if (plan.finalizer == FinalizerChange::kRemove) {
      auto finalizers = job.metadata.finalizers;
      std::erase(finalizers, api::kFinalizer);
      auto updated = PatchFinalizers(job, finalizers);
      if (!updated.ok() && updated.status().code() != StatusCode::kNotFound) {
        return Failed(updated.status());
      }
      obs::Info("cleanup finished, finalizer removed", JobFields(job));
      return {};
    }
    if (plan.deleteJob) {
      Status s = DeleteExpiredJob(job, round.facts.now);
      if (!s.ok()) return Failed(s);
      return Requeue(plan.requeueAfter, false);
    }
    if (plan.call == AdapterCall::kNone) {
      // With the finalizer now in place, decide again: the next step is usually Ensure.
      if (plan.finalizer == FinalizerChange::kAdd) continue;
      return Requeue(plan.requeueAfter, plan.backoff);
    }
    if (plan.call == AdapterCall::kEnsure && !round.taskComplete) {
      // The cache keeps a compact projection of accepted Jobs without the task
      // (CompactJobForCache), and Ensure needs all of it: read the Job, and decide again if it
      // changed. (Whether the execution may be created is confirmed right before its create.)
      auto current = ReadCurrentJob(job.metadata.namespace_, job.metadata.name, job.metadata.uid);
      if (!current.ok()) return Failed(current.status());
      if (!current->has_value()) return {};
      if (Status s = TakeFreshJob(round, std::move(**current)); !s.ok()) return Failed(s);
      if (round.changed) continue;
    }
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
    if (!observation.ok()) return Failed(observation.status());
    if (confirmation.refused) {
      // Nothing was created: the Job changed since this round decided (a cancel, a deletion, a
      // new UID under the name, any edit). Decide again on the Job as it is now.
      metrics_
          .GetCounter("ayatori_creates_not_confirmed_total",
                      "Executions not created because the fresh read of the Job right before "
                      "the create found it changed since the decision (cancelled, deleted, ...).")
          .Inc();
      if (!confirmation.error.ok()) return Failed(confirmation.error);
      if (!confirmation.current) return {};  // gone, or a new Job took the name
      if (Status s = TakeFreshJob(round, std::move(*confirmation.current)); !s.ok()) {
        return Failed(s);
      }
      continue;
    }
    if (plan.call == AdapterCall::kEnsure && round.unwrittenAcceptance) {
      // Kept at once: should this round's write fail, the next round still knows the class
      // and the execution (the Decide below keeps them again if it defers the report).
      KeepUnreportedExecution(
          job, statemachine::UnreportedExecution{observation->references, round.facts.now},
          round.unwrittenAcceptance);
    }
    const char* point = plan.call == AdapterCall::kEnsure   ? kCrashAfterEnsure
                        : plan.call == AdapterCall::kCancel ? kCrashAfterCancel
                        : plan.call == AdapterCall::kDelete ? kCrashAfterDelete
                                                            : nullptr;
    if (point != nullptr && Crash(point, job)) return Crashed();
    round.facts.result = statemachine::CallResult{plan.call, std::move(*observation)};
  }
  return Failed({StatusCode::kInternal, "reconcile did not settle within " +
                                            std::to_string(options_.maxSteps) + " steps"});
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
  if (updated.ok()) WroteOver(job, *updated);
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
  if (updated.ok()) WroteOver(job, *updated);
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

StatusOr<Observation> JobReconciler::CallAdapter(AdapterCall call, const api::Job& job,
                                                 bool acceptanceUnwritten,
                                                 CreateConfirmation* confirmation) {
  Observation unknown;
  unknown.phase = ExecutionPhase::kUnknown;
  if (!job.status.resolvedJobClass) {
    unknown.reason = "NotResolved";
    unknown.message = "the Job has no resolved JobClass";
    return unknown;
  }
  const std::string& controllerName = job.status.resolvedJobClass->controllerName;
  auto adapter = registry_.Find(controllerName);
  if (!adapter) {
    unknown.reason = "AdapterNotRegistered";
    unknown.message = "this controller does not serve controllerName " + controllerName;
    return unknown;
  }
  auto parameters = ParametersFor(job);
  if (!parameters.ok()) {
    if (parameters.status().code() != StatusCode::kFailedPrecondition) return parameters.status();
    // Never guess another backend: without its snapshot the Job's backend is unknown.
    unknown.reason = kReasonBackendSnapshotMissing;
    unknown.message = parameters.status().message();
    obs::Warn("backend snapshot missing: no adapter call",
              With(JobFields(job), "error", unknown.message));
    return unknown;
  }
  auto began = clock_.SteadyNow();
  Observation result;
  switch (call) {
    case AdapterCall::kEnsure: {
      auto request = BuildRequest(job, std::move(*parameters), acceptanceUnwritten);
      if (!request.ok()) {
        if (request.status().code() != StatusCode::kNotFound) return request.status();
        // A Secret, ConfigMap or key the Job was accepted with is gone: nothing is created and
        // the Job says what it waits for (the message names the reference, never a value).
        Observation waiting;
        waiting.phase = ExecutionPhase::kPending;
        waiting.reason = kReasonReferenceNotFound;
        waiting.message = request.status().message() +
                          "; it was deleted after the Job was "
                          "accepted, the Job starts once it is back";
        return waiting;
      }
      if (confirmation != nullptr) {
        request->confirmCreate = [this, &job, confirmation]() -> Status {
          return ConfirmCreate(job, *confirmation);
        };
      }
      result = adapter->Ensure(*request);
      // A token the fresh read reserved for a create that was not sent goes back unused.
      if (confirmation != nullptr && confirmation->asked) client_.ReserveRequests(0);
      break;
    }
    case AdapterCall::kObserve:
      result = adapter->Observe(BuildKey(job, std::move(*parameters)));
      break;
    case AdapterCall::kCancel:
      result = adapter->Cancel(BuildKey(job, std::move(*parameters)));
      break;
    case AdapterCall::kDelete:
      result =
          statemachine::DeleteObservation(adapter->Delete(BuildKey(job, std::move(*parameters))));
      break;
    case AdapterCall::kNone:
      return unknown;
  }
  std::chrono::duration<double> took = clock_.SteadyNow() - began;
  obs::Labels labels{{"adapter", adapter->Name()}, {"call", statemachine::AdapterCallName(call)}};
  metrics_
      .GetHistogram("ayatori_adapter_call_duration_seconds", "Latency of adapter calls.", labels)
      .Observe(took.count());
  if (result.phase == ExecutionPhase::kUnknown) {
    metrics_
        .GetCounter("ayatori_adapter_call_errors_total",
                    "Adapter calls whose outcome was unknown (backend unreachable, ambiguous).",
                    labels)
        .Inc();
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
  return result;
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
    auto onCopy =
        ResolveJob(round.job, cache_, registry_, references_, options_.controllerNamespace);
    if (!onCopy.ok()) return onCopy.status();
    if (onCopy->outcome == statemachine::Resolution::Outcome::kPending) {
      round.facts.resolution = std::move(*onCopy);
      return Status::Ok();
    }
    metrics_
        .GetCounter("ayatori_compact_job_reads_total",
                    "Reads of a Job whose cached copy is compact, before a resolution that may "
                    "accept it.")
        .Inc();
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
  auto resolved = ResolveJob(job, cache_, registry_, references_, options_.controllerNamespace);
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
  metrics_
      .GetCounter("ayatori_job_api_writes_total",
                  "API writes made for Jobs (finalizer patches, status updates, TTL deletes).",
                  {{"kind", what}})
      .Inc();
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

std::optional<std::chrono::seconds> JobReconciler::WaitingMessageHold(const std::string& uid) {
  std::lock_guard lock(waitingMu_);
  auto it = waitingWrites_.find(uid);
  if (it == waitingWrites_.end()) return std::nullopt;
  auto left = it->second + statemachine::kWaitingMessageInterval - clock_.SteadyNow();
  if (left <= std::chrono::seconds(0)) return std::nullopt;
  return std::chrono::ceil<std::chrono::seconds>(left);
}

void JobReconciler::WaitingMessageWritten(const std::string& uid) {
  const auto now = clock_.SteadyNow();
  std::lock_guard lock(waitingMu_);
  // Entries past the interval hold nothing: drop them now and then, so the map stays as large
  // as the number of Jobs whose waiting message changed in the last interval.
  if (waitingWrites_.size() >= 1024 && waitingWrites_.size() % 256 == 0) {
    std::erase_if(waitingWrites_, [&](const auto& e) {
      return e.second + statemachine::kWaitingMessageInterval <= now;
    });
  }
  waitingWrites_[uid] = now;
}

void JobReconciler::WroteOver(const api::Job& before, const api::Job& after) {
  // A write that changed nothing keeps the resourceVersion: the cache showing it is current. But
  // the write that removes the last finalizer of a deleted Job also answers with the
  // resourceVersion it had (the server deletes the object and returns its last stored state), and
  // the cache keeps showing that version with the finalizer until the deletion's event arrives.
  const bool deletedByWrite = after.metadata.deletionTimestamp && after.metadata.finalizers.empty();
  if (after.metadata.resourceVersion == before.metadata.resourceVersion && !deletedByWrite) return;
  const auto now = clock_.SteadyNow();
  std::lock_guard lock(writesMu_);
  // Entries of Jobs that went away (the last write removed the finalizer) are dropped now and
  // then, so the map stays as large as the number of Jobs written in the last kOwnWriteMemory.
  if (superseded_.size() >= 1024 && superseded_.size() % 256 == 0) {
    std::erase_if(superseded_, [&](const auto& e) { return e.second.at + kOwnWriteMemory <= now; });
  }
  auto& entry = superseded_[before.metadata.uid];
  if (entry.resourceVersions.size() >= kOwnWritesRemembered) {
    entry.resourceVersions.erase(entry.resourceVersions.begin());
  }
  entry.resourceVersions.push_back(before.metadata.resourceVersion);
  entry.at = now;
}

bool JobReconciler::CacheBehindOwnWrite(const api::Job& cached) {
  const auto now = clock_.SteadyNow();
  std::lock_guard lock(writesMu_);
  auto it = superseded_.find(cached.metadata.uid);
  if (it == superseded_.end()) return false;
  const auto& versions = it->second.resourceVersions;
  if (it->second.at + kOwnWriteMemory > now &&
      std::find(versions.begin(), versions.end(), cached.metadata.resourceVersion) !=
          versions.end()) {
    return true;
  }
  superseded_.erase(it);  // the cache has caught up (or the entry is too old to trust)
  return false;
}

bool JobReconciler::HasUnreportedExecution(const std::string& key) const {
  std::lock_guard lock(unreportedMu_);
  return unreported_.contains(key);
}

std::optional<statemachine::UnreportedExecution> JobReconciler::UnreportedExecutionOf(
    const std::string& key, const api::Job* job, std::optional<api::JobStatus>* acceptance) {
  std::lock_guard lock(unreportedMu_);
  auto it = unreported_.find(key);
  if (it == unreported_.end()) return std::nullopt;
  const bool reported =
      job != nullptr && job->status.execution && !job->status.execution->references.empty();
  if (job == nullptr || reported || it->second.uid != job->metadata.uid) {
    unreported_.erase(it);
    return std::nullopt;
  }
  if (acceptance != nullptr) *acceptance = it->second.acceptance;
  return it->second.execution;
}

void JobReconciler::KeepUnreportedExecution(const api::Job& job,
                                            statemachine::UnreportedExecution execution,
                                            std::optional<api::JobStatus> acceptance) {
  std::lock_guard lock(unreportedMu_);
  unreported_[kube::ObjectKey(job.metadata.namespace_, job.metadata.name)] =
      UnreportedEntry{job.metadata.uid, std::move(execution), std::move(acceptance)};
}

void JobReconciler::KeepAcceptanceSent(const api::Job& job) {
  std::lock_guard lock(unreportedMu_);
  acceptanceSent_[kube::ObjectKey(job.metadata.namespace_, job.metadata.name)] = job.metadata.uid;
}

bool JobReconciler::AcceptanceSent(const std::string& key, const api::Job* job) {
  std::lock_guard lock(unreportedMu_);
  auto it = acceptanceSent_.find(key);
  if (it == acceptanceSent_.end()) return false;
  if (it->second != job->metadata.uid ||
      api::IsConditionTrue(job->status.conditions, api::kConditionAccepted)) {
    acceptanceSent_.erase(it);
    return false;
  }
  return true;
}

void JobReconciler::ForgetAcceptanceSent(const std::string& key) {
  std::lock_guard lock(unreportedMu_);
  acceptanceSent_.erase(key);
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

void JobReconciler::ForgetWaitingMessage(const std::string& uid) {
  std::lock_guard lock(waitingMu_);
  waitingWrites_.erase(uid);
}

bool JobReconciler::Crash(std::string_view point, const api::Job& job) const {
  if (!options_.crashHook || !options_.crashHook(point, job)) return false;
  obs::Warn("simulated crash", With(JobFields(job), "point", std::string(point)));
  return true;
}

}  // namespace ayatori::controller
