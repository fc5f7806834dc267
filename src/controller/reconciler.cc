#include "controller/reconciler.h"

#include "api/json.h"
#include "controller/kinds.h"
#include "controller/resolver.h"
#include "kube/config.h"
#include "kube/events.h"
#include "obs/log.h"

namespace ayatori::controller {

using statemachine::AdapterCall;
using statemachine::FinalizerChange;

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
      options_(std::move(options)) {}

ReconcileResult JobReconciler::Reconcile(const std::string& ns, const std::string& name) {
  auto cached = cache_.GetJob(ns, name);
  if (!cached) return {};
  auto started = clock_.SteadyNow();
  RoundState round;
  round.job = *cached;
  round.facts.now = NowSeconds(clock_);
  if (statemachine::NeedsResolution(round.job)) {
    round.facts.resolution = ResolveJob(round.job, cache_, registry_);
  }
  ReconcileResult result = Step(round);
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
    statemachine::Plan plan = statemachine::Decide(job, round.facts);
    round.facts.result.reset();
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
    }
    if (plan.status) {
      if (Crash(kCrashBeforeStatusWrite, job)) return Crashed();
      auto updated = WriteStatus(job, *plan.status);
      if (!updated.ok()) {
        if (updated.status().code() == StatusCode::kNotFound) return {};
        return Failed(updated.status());
      }
      job = std::move(*updated);
      round.fresh = true;
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
    if (plan.call == AdapterCall::kEnsure && !round.fresh) {
      // A new execution is about to be created: act on the current Job, not on a cache copy
      // that may lag behind (a cancel, a deletion, a new UID under the same name).
      auto current = client_.Get(kJobs, job.metadata.namespace_, job.metadata.name);
      if (!current.ok()) {
        if (current.status().code() == StatusCode::kNotFound) return {};
        return Failed(current.status());
      }
      auto decoded = api::JobFromJson(*current);
      if (!decoded.ok()) return Failed(decoded.status());
      if (decoded->metadata.uid != job.metadata.uid) return {};  // a new Job: its own events
      round.fresh = true;
      bool changed = decoded->metadata.resourceVersion != job.metadata.resourceVersion;
      // Always continue with the full object: the cache keeps a compact projection of accepted
      // Jobs without the task (CompactJobForCache), and Ensure needs all of it.
      job = std::move(*decoded);
      if (changed) {
        if (statemachine::NeedsResolution(job) && !round.facts.resolution) {
          round.facts.resolution = ResolveJob(job, cache_, registry_);
        }
        continue;
      }
    }
    auto observation = CallAdapter(plan.call, job);
    if (!observation.ok()) return Failed(observation.status());
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

StatusOr<api::Job> JobReconciler::PatchFinalizers(const api::Job& job,
                                                  std::vector<std::string> finalizers) {
  // A merge patch carrying metadata.resourceVersion is refused with 409 when the Job changed.
  nlohmann::json patch = {{"metadata",
                           {{"resourceVersion", job.metadata.resourceVersion},
                            {"finalizers", finalizers.empty() ? nlohmann::json(nullptr)
                                                              : nlohmann::json(finalizers)}}}};
  CountWrite(job, "finalizer");  // before the request: whoever sees the write sees it counted
  auto r = client_.Patch(kJobs, job.metadata.namespace_, job.metadata.name, PatchType::kMerge,
                         patch, {});
  if (!r.ok()) return r.status();
  return api::JobFromJson(*r);
}

StatusOr<api::Job> JobReconciler::WriteStatus(const api::Job& job, const api::JobStatus& status) {
  nlohmann::json body = {{"apiVersion", api::kApiVersion},
                         {"kind", "Job"},
                         {"metadata",
                          {{"name", job.metadata.name},
                           {"namespace", job.metadata.namespace_},
                           {"resourceVersion", job.metadata.resourceVersion}}},
                         {"status", api::StatusToJson(status)}};
  CountWrite(job, "status");
  auto r = client_.UpdateStatus(kJobs, job.metadata.namespace_, body, {});
  if (!r.ok()) return r.status();
  return api::JobFromJson(*r);
}

Status JobReconciler::DeleteExpiredJob(const api::Job& job, api::Time now) {
  // The TTL decision is irreversible: re-check it on the Job as the API server has it now (the
  // TTL may have been extended a moment ago), and delete exactly that UID.
  auto current = client_.Get(kJobs, job.metadata.namespace_, job.metadata.name);
  if (!current.ok()) {
    return current.status().code() == StatusCode::kNotFound ? Status::Ok() : current.status();
  }
  auto fresh = api::JobFromJson(*current);
  if (!fresh.ok()) return fresh.status();
  if (fresh->metadata.uid != job.metadata.uid || !statemachine::TtlExpired(*fresh, now)) {
    return Status::Ok();  // the update event of the fresh Job brings a new round
  }
  DeleteOptions options;
  options.preconditionUid = job.metadata.uid;
  CountWrite(job, "delete");
  Status s = client_.Delete(kJobs, job.metadata.namespace_, job.metadata.name, options);
  if (s.ok()) obs::Info("TTL expired, Job deleted", JobFields(job));
  if (s.code() == StatusCode::kNotFound || s.code() == StatusCode::kConflict) return Status::Ok();
  return s;
}

StatusOr<Observation> JobReconciler::CallAdapter(AdapterCall call, const api::Job& job) {
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
  auto began = clock_.SteadyNow();
  Observation result;
  switch (call) {
    case AdapterCall::kEnsure: {
      auto request = BuildRequest(job);
      if (!request.ok()) return request.status();
      result = adapter->Ensure(*request);
      break;
    }
    case AdapterCall::kObserve:
      result = adapter->Observe(BuildKey(job));
      break;
    case AdapterCall::kCancel:
      result = adapter->Cancel(BuildKey(job));
      break;
    case AdapterCall::kDelete:
      result = statemachine::DeleteObservation(adapter->Delete(BuildKey(job)));
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

StatusOr<std::string> JobReconciler::ReadReferencedValue(const std::string& ns,
                                                         const api::KeySelector& ref, bool secret,
                                                         bool* found) {
  *found = false;
  auto obj = client_.Get(secret ? kSecrets : kConfigMaps, ns, ref.name);
  const char* kind = secret ? "Secret" : "ConfigMap";
  if (!obj.ok()) {
    if (obj.status().code() == StatusCode::kNotFound && ref.optional) return std::string();
    return Status(obj.status().code(), std::string("reading ") + kind + " " + ns + "/" + ref.name +
                                           ": " + obj.status().message());
  }
  for (const char* field : {"data", "binaryData"}) {
    if (!obj->contains(field) || !(*obj)[field].is_object()) continue;
    const auto& data = (*obj)[field];
    auto it = data.find(ref.key);
    if (it == data.end() || !it->is_string()) continue;
    *found = true;
    if (!secret && std::string(field) == "data") return it->get<std::string>();
    std::string decoded;
    if (!kube::Base64Decode(it->get<std::string>(), &decoded)) {
      return Status(StatusCode::kInvalidArgument, std::string(kind) + " " + ns + "/" + ref.name +
                                                      " key " + ref.key + " is not base64");
    }
    return decoded;
  }
  if (ref.optional) return std::string();
  return Status(StatusCode::kNotFound,
                std::string(kind) + " " + ns + "/" + ref.name + " has no key " + ref.key);
}

StatusOr<ExecutionRequest> JobReconciler::BuildRequest(const api::Job& job) {
  ExecutionRequest request;
  request.job = job;
  request.jobClass = *job.status.resolvedJobClass;
  request.parameters = BuildKey(job).parameters;
  if (job.status.effectiveResources) request.resources = *job.status.effectiveResources;
  if (AdapterPassesReferences(request.jobClass.controllerName)) return request;
  const std::string& ns = job.metadata.namespace_;
  for (const auto& env : job.spec.task.env) {
    if (env.value) {
      request.resolvedEnv.push_back({env.name, SensitiveString(*env.value)});
      continue;
    }
    if (!env.valueFrom) continue;
    bool secret = env.valueFrom->secretKeyRef.has_value();
    const api::KeySelector& ref =
        secret ? *env.valueFrom->secretKeyRef : *env.valueFrom->configMapKeyRef;
    bool found = false;
    auto value = ReadReferencedValue(ns, ref, secret, &found);
    if (!value.ok()) return value.status();
    if (found) request.resolvedEnv.push_back({env.name, SensitiveString(std::move(*value))});
  }
  for (const auto& pull : job.spec.task.imagePullSecrets) {
    bool found = false;
    auto config = ReadReferencedValue(ns, {pull.name, ".dockerconfigjson", false}, true, &found);
    if (!config.ok()) return config.status();
    request.imagePullConfigs.emplace_back(std::move(*config));
  }
  return request;
}

ExecutionKey JobReconciler::BuildKey(const api::Job& job) const {
  ExecutionKey key;
  key.uid = job.metadata.uid;
  key.namespace_ = job.metadata.namespace_;
  key.name = job.metadata.name;
  if (job.status.execution) key.references = job.status.execution->references;
  key.parameters = nlohmann::json::object();
  if (job.status.resolvedJobClass && job.status.resolvedJobClass->parametersRef) {
    const auto& ref = *job.status.resolvedJobClass->parametersRef;
    if (auto params = cache_.GetParameters(ref.kind, ref.name)) key.parameters = *params;
  }
  return key;
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

void JobReconciler::CountWrite(const api::Job& job, const char* what) {
  metrics_
      .GetCounter("ayatori_job_api_writes_total",
                  "API writes made for Jobs (finalizer patches, status updates, TTL deletes).",
                  {{"kind", what}})
      .Inc();
  if (!options_.countWritesPerJob) return;
  std::lock_guard lock(writesMu_);
  writes_[job.metadata.uid]++;
}

uint64_t JobReconciler::WritesFor(const std::string& uid) const {
  std::lock_guard lock(writesMu_);
  auto it = writes_.find(uid);
  return it == writes_.end() ? 0 : it->second;
}

bool JobReconciler::Crash(std::string_view point, const api::Job& job) const {
  if (!options_.crashHook || !options_.crashHook(point, job)) return false;
  obs::Warn("simulated crash", With(JobFields(job), "point", std::string(point)));
  return true;
}

}  // namespace ayatori::controller
