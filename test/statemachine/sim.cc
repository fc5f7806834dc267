#include "test/statemachine/sim.h"

#include <algorithm>

#include "api/conditions.h"
#include "statemachine/invariants.h"

namespace ayatori::statemachine::testing {

// ---------------------------------------------------------------------------------------------
// FakeBackend

Observation FakeBackend::Describe(const FakeExecution& e) const {
  Observation o;
  o.phase = e.phase;
  o.startedAt = e.startedAt;
  o.finishedAt = e.finishedAt;
  o.exitCode = e.exitCode;
  o.reason = e.reason;
  o.references = e.references;
  return o;
}

Observation FakeBackend::Unreachable() const {
  Observation o;
  o.phase = ExecutionPhase::kUnknown;
  o.reason = "BackendUnreachable";
  o.message = "connection refused";
  return o;
}

void FakeBackend::Record(const FakeExecution& e) {
  ExecutionTruth& t = truth_[e.uid];
  t.phase = e.phase;
  t.exitCode = e.exitCode;
  t.reason = e.reason;
}

const FakeExecution* FakeBackend::Find(const std::string& uid) const {
  auto it = executions_.find(uid);
  return it == executions_.end() ? nullptr : &it->second;
}

bool FakeBackend::Live(const std::string& uid) const {
  const FakeExecution* e = Find(uid);
  return e != nullptr && !IsStopped(e->phase);
}

int FakeBackend::Creates(const std::string& uid) const {
  auto it = creates_.find(uid);
  return it == creates_.end() ? 0 : it->second;
}

int FakeBackend::Calls(AdapterCall call, const std::string& uid) const {
  auto it = calls_.find({call, uid});
  return it == calls_.end() ? 0 : it->second;
}

Observation FakeBackend::Ensure(const api::Job& job, Time now) {
  const std::string& uid = job.metadata.uid;
  ++calls_[{AdapterCall::kEnsure, uid}];
  if (unreachable) return Unreachable();
  if (!rejectOnEnsure.empty() && Find(uid) == nullptr) {
    Observation o;
    o.phase = ExecutionPhase::kFailed;
    o.reason = rejectOnEnsure;
    o.message = "the backend cannot run this request";
    ExecutionTruth& t = truth_[uid];
    t.phase = ExecutionPhase::kFailed;
    t.reason = rejectOnEnsure;
    return o;
  }
  if (Find(uid) == nullptr) {  // look up by UID first; create only if absent
    FakeExecution e;
    e.uid = uid;
    for (int i = 0; i < referencesPerExecution; ++i) {
      const int id = nextId_++;
      e.references.push_back(i == 0
                                 ? api::ExecutionReference{"Sandbox", "sbx-" + std::to_string(id)}
                                 : api::ExecutionReference{"Command", "cmd-" + std::to_string(id)});
    }
    if (!failOnCreate.empty()) {
      e.phase = ExecutionPhase::kFailed;
      e.reason = failOnCreate;
      e.finishedAt = now;
    } else if (startOnCreate) {
      e.phase = ExecutionPhase::kRunning;
      e.startedAt = now;
    }
    ++creates_[uid];
    executions_[uid] = e;
    Record(e);
  }
  if (loseNextEnsureResponse) {
    loseNextEnsureResponse = false;
    Observation o = Unreachable();
    o.reason = "Timeout";
    o.message = "the create request timed out";
    return o;
  }
  return Describe(executions_.at(uid));
}

Observation FakeBackend::Observe(const std::string& uid, Time /*now*/) {
  ++calls_[{AdapterCall::kObserve, uid}];
  if (unreachable) return Unreachable();
  const FakeExecution* e = Find(uid);
  if (e == nullptr) {
    Observation o;
    o.phase = ExecutionPhase::kAbsent;
    return o;
  }
  auto last = lastObservation_.find(uid);
  if (rng != nullptr && last != lastObservation_.end() &&
      std::uniform_real_distribution<double>(0, 1)(*rng) < staleObserveProbability) {
    return last->second;  // a lagging backend cache: an older, out-of-order answer
  }
  Observation o = Describe(*e);
  lastObservation_[uid] = o;
  return o;
}

Observation FakeBackend::Cancel(const std::string& uid, Time now) {
  ++calls_[{AdapterCall::kCancel, uid}];
  if (unreachable) return Unreachable();
  auto it = executions_.find(uid);
  if (it == executions_.end()) {
    Observation o;
    o.phase = ExecutionPhase::kAbsent;
    return o;
  }
  FakeExecution& e = it->second;
  if (!IsStopped(e.phase)) {
    const bool firstRequest = !e.stopRequested;
    e.stopRequested = true;
    if (slowStop && firstRequest) return Describe(e);
    CompleteRequestedStop(uid, now);
  }
  return Describe(e);
}

Status FakeBackend::Delete(const std::string& uid) {
  ++calls_[{AdapterCall::kDelete, uid}];
  if (unreachable) return Status(StatusCode::kUnavailable, "connection refused");
  executions_.erase(uid);
  lastObservation_.erase(uid);
  return Status::Ok();
}

void FakeBackend::Start(const std::string& uid, Time at) {
  auto it = executions_.find(uid);
  if (it == executions_.end() || it->second.phase != ExecutionPhase::kPending) return;
  it->second.phase = ExecutionPhase::kRunning;
  it->second.startedAt = at;
  Record(it->second);
}

void FakeBackend::Exit(const std::string& uid, int32_t code, Time at, std::string reason) {
  auto it = executions_.find(uid);
  if (it == executions_.end() || IsStopped(it->second.phase)) return;
  FakeExecution& e = it->second;
  if (!e.startedAt) e.startedAt = at;
  e.phase = code == 0 ? ExecutionPhase::kSucceeded : ExecutionPhase::kFailed;
  e.exitCode = code;
  e.finishedAt = at;
  e.reason = code == 0 ? "" : (reason.empty() ? "ProcessFailed" : std::move(reason));
  Record(e);
}

void FakeBackend::StopExternally(const std::string& uid, Time at) {
  auto it = executions_.find(uid);
  if (it == executions_.end() || IsStopped(it->second.phase)) return;
  it->second.phase = ExecutionPhase::kCancelled;
  it->second.finishedAt = at;
  Record(it->second);
  truth_[uid].stoppedExternally = true;
}

void FakeBackend::CompleteRequestedStop(const std::string& uid, Time at) {
  auto it = executions_.find(uid);
  if (it == executions_.end() || IsStopped(it->second.phase) || !it->second.stopRequested) return;
  FakeExecution& e = it->second;
  if (e.phase == ExecutionPhase::kRunning) e.exitCode = 143;  // SIGTERM
  e.phase = ExecutionPhase::kCancelled;
  e.finishedAt = at;
  Record(e);
  truth_[uid].stoppedByRequest = true;
}

void FakeBackend::Lose(const std::string& uid) {
  if (executions_.erase(uid) > 0) truth_[uid].lost = true;
  lastObservation_.erase(uid);
}

// ---------------------------------------------------------------------------------------------
// FakeApiServer

api::Job FakeApiServer::Create(const std::string& name, api::JobSpec spec, Time now) {
  api::Job j;
  j.metadata.name = name;
  j.metadata.namespace_ = "ci";
  j.metadata.uid = "uid-" + std::to_string(nextUid_++);
  j.metadata.generation = 1;
  j.metadata.resourceVersion = std::to_string(nextRv_++);
  j.metadata.creationTimestamp = now;
  j.spec = std::move(spec);
  jobs_[name] = j;
  history_[j.metadata.uid].push_back(j.status);
  return j;
}

std::optional<api::Job> FakeApiServer::Get(const std::string& name) const {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return std::nullopt;
  return it->second;
}

namespace {
Status Precondition(const std::map<std::string, api::Job>& jobs, const api::Job& job) {
  auto it = jobs.find(job.metadata.name);
  if (it == jobs.end()) return Status(StatusCode::kNotFound, "job not found");
  if (it->second.metadata.uid != job.metadata.uid) {
    return Status(StatusCode::kConflict, "uid precondition failed");
  }
  if (it->second.metadata.resourceVersion != job.metadata.resourceVersion) {
    return Status(StatusCode::kConflict, "resourceVersion precondition failed");
  }
  return Status::Ok();
}
}  // namespace

StatusOr<api::Job> FakeApiServer::UpdateStatus(const api::Job& job) {
  if (Status s = Precondition(jobs_, job); !s.ok()) return s;
  api::Job& stored = jobs_.at(job.metadata.name);
  stored.status = job.status;
  stored.metadata.resourceVersion = std::to_string(nextRv_++);
  ++statusWrites_[stored.metadata.uid];
  history_[stored.metadata.uid].push_back(stored.status);
  return stored;
}

StatusOr<api::Job> FakeApiServer::UpdateFinalizers(const api::Job& job,
                                                   std::vector<std::string> finalizers) {
  if (Status s = Precondition(jobs_, job); !s.ok()) return s;
  api::Job& stored = jobs_.at(job.metadata.name);
  stored.metadata.finalizers = std::move(finalizers);
  stored.metadata.resourceVersion = std::to_string(nextRv_++);
  ++metadataWrites_[stored.metadata.uid];
  api::Job result = stored;
  if (stored.metadata.deletionTimestamp && stored.metadata.finalizers.empty()) {
    jobs_.erase(job.metadata.name);
  }
  return result;
}

Status FakeApiServer::Delete(const std::string& name, const std::string& uid, Time now) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return Status(StatusCode::kNotFound, "job not found");
  if (it->second.metadata.uid != uid) return Status(StatusCode::kConflict, "uid precondition");
  ++deletes_[uid];
  if (it->second.metadata.finalizers.empty()) {
    jobs_.erase(it);
    return Status::Ok();
  }
  if (!it->second.metadata.deletionTimestamp) {
    it->second.metadata.deletionTimestamp = now;
    ++it->second.metadata.generation;
    it->second.metadata.resourceVersion = std::to_string(nextRv_++);
  }
  return Status::Ok();
}

void FakeApiServer::SetCancelled(const std::string& name) {
  auto it = jobs_.find(name);
  if (it == jobs_.end() || it->second.spec.desiredState == api::DesiredState::kCancelled) return;
  it->second.spec.desiredState = api::DesiredState::kCancelled;
  ++it->second.metadata.generation;
  it->second.metadata.resourceVersion = std::to_string(nextRv_++);
}

void FakeApiServer::SetTtl(const std::string& name, std::optional<int32_t> ttl) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return;
  it->second.spec.ttlSecondsAfterFinished = ttl;
  ++it->second.metadata.generation;
  it->second.metadata.resourceVersion = std::to_string(nextRv_++);
}

void FakeApiServer::Annotate(const std::string& name, const std::string& key,
                             const std::string& value) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return;
  it->second.metadata.annotations[key] = value;
  it->second.metadata.resourceVersion = std::to_string(nextRv_++);
}

void FakeApiServer::ForceRemoveFinalizers(const std::string& name) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return;
  it->second.metadata.finalizers.clear();
  it->second.metadata.resourceVersion = std::to_string(nextRv_++);
  if (it->second.metadata.deletionTimestamp) jobs_.erase(it);
}

void FakeApiServer::EditSpecUnchecked(const std::string& name,
                                      const std::function<void(api::JobSpec&)>& edit) {
  auto it = jobs_.find(name);
  if (it == jobs_.end()) return;
  edit(it->second.spec);
  ++it->second.metadata.generation;
  it->second.metadata.resourceVersion = std::to_string(nextRv_++);
}

namespace {
int Lookup(const std::map<std::string, int>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}
}  // namespace

int FakeApiServer::StatusWrites(const std::string& uid) const { return Lookup(statusWrites_, uid); }
int FakeApiServer::MetadataWrites(const std::string& uid) const {
  return Lookup(metadataWrites_, uid);
}
int FakeApiServer::Deletes(const std::string& uid) const { return Lookup(deletes_, uid); }

const std::vector<api::JobStatus>& FakeApiServer::History(const std::string& uid) const {
  static const std::vector<api::JobStatus> kNone;
  auto it = history_.find(uid);
  return it == history_.end() ? kNone : it->second;
}

// ---------------------------------------------------------------------------------------------
// FakeResolver

Resolution FakeResolver::Resolve(const api::Job& job) const {
  const std::string cls = job.spec.jobClassName.empty() ? defaultClass : job.spec.jobClassName;
  if (cls.empty()) return Resolution::Pending("NoDefaultJobClass", "No default JobClass");
  if (classes.count(cls) == 0) {
    return Resolution::Pending("JobClassNotFound", "JobClass \"" + cls + "\" not found");
  }
  auto check = [](const std::map<std::string, std::map<std::string, std::string>>& objects,
                  const api::KeySelector& ref, const char* kind) -> std::optional<Resolution> {
    auto obj = objects.find(ref.name);
    if (obj == objects.end()) {
      if (ref.optional) return std::nullopt;
      return Resolution::Pending(std::string(kind) + "NotFound",
                                 std::string(kind) + " \"" + ref.name + "\" not found");
    }
    if (obj->second.count(ref.key) == 0 && !ref.optional) {
      return Resolution::Pending("KeyNotFound", std::string(kind) + " \"" + ref.name +
                                                    "\" has no key \"" + ref.key + "\"");
    }
    return std::nullopt;
  };
  for (const api::EnvVar& env : job.spec.task.env) {
    if (!env.valueFrom) continue;
    if (env.valueFrom->secretKeyRef) {
      if (auto r = check(secrets, *env.valueFrom->secretKeyRef, "Secret")) return *r;
    }
    if (env.valueFrom->configMapKeyRef) {
      if (auto r = check(configMaps, *env.valueFrom->configMapKeyRef, "ConfigMap")) return *r;
    }
  }
  if (!rejectReason.empty()) {
    return Resolution::Rejected(rejectReason,
                                "The request is outside what JobClass \"" + cls + "\" allows");
  }
  api::ResolvedJobClass rc;
  rc.name = cls;
  rc.uid = "class-uid-" + cls;
  rc.controllerName = api::kControllerDocker;
  rc.parametersRef =
      api::ParametersRef{api::kGroup, "DockerExecutionParameters", cls, "params-uid-" + cls};
  return Resolution::Resolved(rc, api::ResourceRequirements{}, "docker");
}

// ---------------------------------------------------------------------------------------------
// Harness

api::JobSpec BasicSpec() {
  api::JobSpec s;
  s.task.image = "registry.local/busybox:1";
  s.task.command = {"/bin/true"};
  return s;
}

std::string Harness::Create(const std::string& name, api::JobSpec spec) {
  api::Job j = api.Create(name, std::move(spec), now);
  cache_[name] = j;
  return j.metadata.uid;
}

void Harness::SyncCache(const std::string& name) {
  if (std::optional<api::Job> j = api.Get(name)) {
    cache_[name] = *j;
  } else {
    cache_.erase(name);
  }
}

api::Job Harness::Job(const std::string& name) const {
  std::optional<api::Job> j = api.Get(name);
  if (!j) return api::Job{};
  return *j;
}

void Harness::CheckResultTruth(const api::Job& job, const api::JobStatus& before,
                               const api::JobStatus& after) {
  if (IsTerminal(before) || !IsTerminal(after)) return;
  const std::string& uid = job.metadata.uid;
  const api::Condition* s = api::FindCondition(after.conditions, api::kConditionSucceeded);
  auto it = backend.truth().find(uid);
  const ExecutionTruth* truth = it == backend.truth().end() ? nullptr : &it->second;
  auto fail = [&](const std::string& why) {
    Fail(uid + ": terminal " + api::ToString(s->status) + "/" + s->reason + " " + why);
  };
  if (after.result && after.result->exitCode &&
      (truth == nullptr || truth->exitCode != after.result->exitCode)) {
    fail("carries an exit code the backend never reported");
  }
  const std::string& reason = s->reason;
  // Terminal only once the backend confirmed the execution will not continue (an administrator's
  // BackendLost is the one exception: the backend could not be asked).
  if (reason != kReasonBackendLost && backend.Live(uid)) fail("while the execution still runs");
  const bool succeededTruth = truth != nullptr && truth->phase == ExecutionPhase::kSucceeded;
  if (s->status == api::ConditionStatus::kTrue) {
    if (!succeededTruth) fail("but the execution did not succeed");
    return;
  }
  if (reason == kReasonCancelled) {
    if (job.spec.desiredState != api::DesiredState::kCancelled && !job.metadata.deletionTimestamp) {
      fail("but nobody cancelled or deleted the Job");
    }
    if (truth != nullptr && !truth->lost && truth->phase != ExecutionPhase::kCancelled) {
      fail("but the backend did not confirm a stop");
    }
  } else if (reason == kReasonDeadlineExceeded) {
    std::optional<api::Time> deadline =
        after.startTime && job.spec.activeDeadlineSeconds
            ? std::optional<api::Time>(*after.startTime +
                                       std::chrono::seconds(*job.spec.activeDeadlineSeconds))
            : std::nullopt;
    if (!deadline || now < *deadline) fail("before the deadline passed");
    if (succeededTruth) fail("but the execution succeeded");
  } else if (reason == kReasonBackendLost) {
    const api::Condition* prev = api::FindCondition(before.conditions, api::kConditionSucceeded);
    if (job.metadata.annotations.count(api::kConfirmBackendLostAnnotation) == 0 ||
        prev == nullptr || prev->reason != kReasonResultUnknown) {
      fail("without the administrator's confirmation of a ResultUnknown Job");
    }
  } else if (reason == kReasonExecutionStopped) {
    if (truth == nullptr || !truth->stoppedExternally) fail("but nobody stopped it externally");
  } else if (reason == resolver.rejectReason) {
    if (truth != nullptr) fail("but an execution was created");
  } else {
    // A failure reported by the backend: ProcessFailed, ImagePullFailed, BackendRejected...
    if (truth == nullptr || truth->phase != ExecutionPhase::kFailed || truth->reason != reason) {
      fail("but the backend reported no such failure");
    }
  }
}

void Harness::CheckWrite(const api::Job& before, const api::JobStatus& after) {
  for (const std::string& v : CheckInvariants(before.status, after)) {
    Fail(before.metadata.uid + ": " + v);
  }
  CheckResultTruth(before, before.status, after);
}

RoundReport Harness::Reconcile(const std::string& name, RoundOptions options) {
  RoundReport rep;
  std::optional<api::Job> read;
  if (useCache && cache_.count(name) != 0) {
    read = cache_.at(name);
  } else {
    read = api.Get(name);
  }
  if (!read) return rep;
  rep.ran = true;
  ++counters_.rounds;
  api::Job job = *read;
  const std::string uid = job.metadata.uid;
  auto abort = [&] {
    rep.aborted = true;
    ++counters_.conflicts;
    SyncCache(name);  // the watch delivers the newer object; the next round starts from it
    return rep;
  };
  int steps = 0;
  auto crashNow = [&] {
    ++steps;
    if (options.crashAfterSteps && steps >= *options.crashAfterSteps) rep.crashed = true;
    if (rep.crashed) ++counters_.crashes;
    return rep.crashed;
  };

  Facts facts;
  facts.now = now;
  if (NeedsResolution(job)) facts.resolution = resolver.Resolve(job);
  for (int decisions = 0;; ++decisions) {
    if (decisions == 6) {
      Fail(uid + ": the round did not terminate");
      break;
    }
    Plan plan = Decide(job, facts);
    rep.last = plan;
    for (const std::string& v : plan.invariantViolations) Fail(uid + ": Decide: " + v);
    if (facts.result && plan.call != AdapterCall::kNone && plan.call == facts.result->call) {
      Fail(uid + ": Decide repeated " + AdapterCallName(plan.call) + " within a round");
    }
    events_.insert(events_.end(), plan.events.begin(), plan.events.end());

    if (plan.finalizer != FinalizerChange::kNone) {
      std::vector<std::string> finalizers = job.metadata.finalizers;
      if (plan.finalizer == FinalizerChange::kAdd) {
        finalizers.push_back(api::kFinalizer);
      } else {
        std::erase(finalizers, std::string(api::kFinalizer));
        if (backend.Find(uid) != nullptr) {
          Fail(uid + ": finalizer removed while the backend still has the execution");
        }
      }
      StatusOr<api::Job> written = api.UpdateFinalizers(job, finalizers);
      if (!written.ok()) return abort();
      ++rep.finalizerWrites;
      job = *written;
      if (crashNow()) return rep;
      if (plan.finalizer == FinalizerChange::kRemove) {
        ++counters_.finalizerRemovals;
        SyncCache(name);
        return rep;
      }
    }
    if (plan.status) {
      api::Job next = job;
      next.status = *plan.status;
      StatusOr<api::Job> written = api.UpdateStatus(next);
      if (!written.ok()) return abort();  // decided on a stale copy: nothing happened
      // The resourceVersion precondition held, so job.status is what the server had before.
      CheckWrite(job, *plan.status);
      ++rep.statusWrites;
      job = *written;
      if (crashNow()) return rep;
    }
    if (plan.call == AdapterCall::kNone) {
      if (plan.finalizer == FinalizerChange::kAdd) continue;
      break;
    }
    if (plan.call == AdapterCall::kEnsure) {
      // A careful controller re-reads before anything that may create an execution.
      std::optional<api::Job> fresh = api.Get(name);
      if (!fresh || fresh->metadata.resourceVersion != job.metadata.resourceVersion) {
        return abort();
      }
      if (job.spec.desiredState == api::DesiredState::kCancelled) {
        Fail(uid + ": Ensure after desiredState=Cancelled");
      }
      if (job.metadata.deletionTimestamp) Fail(uid + ": Ensure while deleting");
      if (!HasFinalizer(job)) Fail(uid + ": Ensure without the finalizer");
      if (!api::IsConditionTrue(job.status.conditions, api::kConditionAccepted) ||
          !job.status.resolvedJobClass) {
        Fail(uid + ": Ensure before Accepted=True and resolvedJobClass were persisted");
      }
    }
    Observation o;
    switch (plan.call) {
      case AdapterCall::kEnsure:
        o = backend.Ensure(job, now);
        break;
      case AdapterCall::kObserve:
        o = backend.Observe(uid, now);
        break;
      case AdapterCall::kCancel:
        o = backend.Cancel(uid, now);
        break;
      case AdapterCall::kDelete:
        o = DeleteObservation(backend.Delete(uid));
        break;
      case AdapterCall::kNone:
        break;
    }
    rep.calls.push_back(plan.call);
    if (options.crashAfterCall == plan.call) rep.crashed = true;
    if (crashNow()) return rep;
    facts.result = CallResult{plan.call, o};
  }
  if (rep.last.deleteJob) {
    // TTL: re-read fresh, recheck, delete with a UID precondition.
    std::optional<api::Job> fresh = api.Get(name);
    if (fresh && fresh->metadata.uid == uid && TtlExpired(*fresh, now)) {
      if (!IsTerminal(fresh->status)) Fail(uid + ": TTL deletion of a non-terminal Job");
      rep.ttlDeleted = api.Delete(name, uid, now).ok();
      counters_.ttlDeletions += rep.ttlDeleted ? 1 : 0;
    }
  }
  return rep;
}

int Harness::Settle(const std::string& name, int maxRounds) {
  for (int i = 0; i < maxRounds; ++i) {
    RoundReport rep = Reconcile(name);
    if (!rep.ran) return i;
    if (rep.statusWrites == 0 && rep.finalizerWrites == 0 && !rep.ttlDeleted && !rep.aborted) {
      return i + 1;
    }
  }
  Fail(name + ": did not settle in " + std::to_string(maxRounds) + " rounds");
  return maxRounds;
}

}  // namespace ayatori::statemachine::testing
