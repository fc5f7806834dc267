#include "adapters/kubernetes/kubernetes_adapter.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "adapters/common/observations.h"
#include "adapters/kubernetes/batch_job.h"
#include "kube/resource.h"

namespace ayatori::adapters::kubernetes {

namespace {

using nlohmann::json;

constexpr std::chrono::seconds kDefaultPullTimeout{300};
constexpr const char* kUidIndex = "job-uid";

// Ended by itself (not cancelled): a result the cancellation must not overwrite.
bool EndedByItself(ExecutionPhase p) {
  return p == ExecutionPhase::kSucceeded || p == ExecutionPhase::kFailed;
}

Observation Rejected(std::string message) {
  return Failed(kReasonBackendRejected, std::move(message));
}

// kUnknown for an API error: the cause is in the reason, the details in the message.
Observation FromError(const Status& s, const std::string& what) {
  const char* reason = kReasonBackendUnreachable;
  switch (s.code()) {
    case StatusCode::kForbidden:
      reason = kReasonForbidden;  // RBAC, quota, terminating namespace: may change
      break;
    case StatusCode::kTooManyRequests:
    case StatusCode::kServerError:
      reason = kReasonBackendError;
      break;
    default:
      break;
  }
  return Unknown(reason, what + ": " + s.ToString());
}

std::chrono::seconds PullTimeout(const json& parameters) {
  auto params = ParseParameters(parameters);
  if (!params.ok()) return kDefaultPullTimeout;
  return std::chrono::seconds(params->imagePullFailureTimeoutSeconds);
}

std::string Uid(const json& obj) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return "";
  return md->value("uid", "");
}

std::vector<PodFacts> ToFacts(const std::vector<json>& pods) {
  std::vector<PodFacts> out;
  out.reserve(pods.size());
  for (const auto& p : pods) out.push_back(PodFactsFromJson(p));
  return out;
}

bool IsImagePullWait(const PodFacts& p) {
  return p.state == ContainerState::kWaiting &&
         (p.reason == "ErrImagePull" || p.reason == "ImagePullBackOff" ||
          p.reason == "InvalidImageName");
}

}  // namespace

KubernetesAdapter::KubernetesAdapter(KubeClient& client, KubernetesAdapterOptions options)
    : client_(client),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Instance()) {}

KubernetesAdapter::~KubernetesAdapter() { Stop(); }

api::Time KubernetesAdapter::Now() const {
  return std::chrono::floor<std::chrono::seconds>(clock_.Now());
}

void KubernetesAdapter::Log(const std::string& line) const {
  std::string msg = "kubernetes adapter: " + line;
  if (options_.log) {
    options_.log(msg);
  } else {
    std::fprintf(stderr, "%s\n", msg.c_str());
  }
}

void KubernetesAdapter::BuildInformers() {
  kube::InformerOptions io;
  io.namespace_ = options_.namespace_;
  io.namespaces = options_.namespaces;
  io.labelSelector = ManagedSelector();
  io.log = options_.log;
  io.name = "batch/v1 jobs (ayatori)";
  jobs_ = std::make_unique<kube::Informer<BatchJobFacts>>(
      client_, BatchJobsResource(), io, [](const json& j) {
        return std::make_shared<const BatchJobFacts>(BatchJobFactsFromJson(j));
      });
  io.name = "v1 pods (ayatori)";
  pods_ = std::make_unique<kube::Informer<PodFacts>>(
      client_, PodsResource(), io,
      [](const json& j) { return std::make_shared<const PodFacts>(PodFactsFromJson(j)); });
  // Indexed by UID only when the pod claims the UID's batch Job as its controller: a pod that
  // merely copies the label is nobody's execution (whether the claim names the right batch Job
  // uid is checked where that uid is known).
  pods_->AddIndex(kUidIndex, [](const PodFacts& p) {
    return IsPodOfBatchJob(p, p.jobUid, "") ? std::vector<std::string>{p.jobUid}
                                            : std::vector<std::string>{};
  });
  kube::InformerOptions eo;
  eo.namespace_ = options_.namespace_;
  eo.namespaces = options_.namespaces;
  eo.fieldSelector = "involvedObject.kind=Job,reason=FailedCreate";
  eo.log = options_.log;
  eo.name = "v1 events (FailedCreate of batch Jobs)";
  failedCreates_ = std::make_unique<kube::Informer<FailedCreateFacts>>(
      client_, CoreEventsResource(), eo, [](const json& j) {
        return std::make_shared<const FailedCreateFacts>(FailedCreateFactsFromJson(j));
      });
  failedCreates_->AddIndex(
      kUidIndex, [](const FailedCreateFacts& e) { return std::vector<std::string>{e.jobUid}; });
}

void KubernetesAdapter::AddWakeUps() {
  // Only changes of the facts the mapping reads wake the controller: kwok's and the kubelet's
  // status patches that touch nothing else (conditions, IPs) are not worth a reconcile.
  auto wake = [this](const std::string& key, const std::string& jobName) {
    if (!notify_ || jobName.empty()) return;
    notify_(kube::SplitObjectKey(key).first, jobName);
  };
  jobs_->AddHandlers({
      .onAdd = [wake](const std::string& k, const auto& o) { wake(k, o->jobName); },
      .onUpdate =
          [wake](const std::string& k, const auto& old, const auto& cur) {
            if (!(*old == *cur)) wake(k, cur->jobName);
          },
      .onDelete = [wake](const std::string& k, const auto& o) { wake(k, o->jobName); },
  });
  // A pod wakes its Job only when it claims the Job's batch Job as its controller: any pod-creating
  // tenant can copy the label, and must not make the controller reconcile a Job at will.
  auto wakeForPod = [wake](const std::string& key, const PodFacts& p) {
    if (IsPodOfBatchJob(p, p.jobUid, "")) wake(key, p.jobName);
  };
  pods_->AddHandlers({
      .onAdd = [wakeForPod](const std::string& k, const auto& o) { wakeForPod(k, *o); },
      .onUpdate =
          [wakeForPod](const std::string& k, const auto& old, const auto& cur) {
            if (!(*old == *cur)) wakeForPod(k, *cur);
          },
      .onDelete = [wakeForPod](const std::string& k, const auto& o) { wakeForPod(k, *o); },
  });
  // An Event names the batch Job; ours map to the Ayatori Job through the batch Job cache (an
  // Event that comes before its batch Job is cached is seen by the batch Job's own wake-up).
  auto wakeForEvent = [this](const std::string& key, const FailedCreateFacts& e) {
    if (!notify_ || !jobs_) return;
    auto job = jobs_->Get(kube::ObjectKey(kube::SplitObjectKey(key).first, e.jobName));
    if (job && job->uid == e.jobUid && !job->jobName.empty()) {
      notify_(kube::SplitObjectKey(key).first, job->jobName);
    }
  };
  failedCreates_->AddHandlers({
      .onAdd = [wakeForEvent](const std::string& k, const auto& e) { wakeForEvent(k, *e); },
      .onUpdate =
          [wakeForEvent](const std::string& k, const auto& old, const auto& cur) {
            if (!(*old == *cur)) wakeForEvent(k, *cur);
          },
      .onDelete = nullptr,
  });
}

Status KubernetesAdapter::Start(
    std::function<void(const std::string&, const std::string&)> notify) {
  if (jobs_ || stopped_) {
    return Status(StatusCode::kFailedPrecondition,
                  "the kubernetes adapter starts once; it is already started or stopped");
  }
  notify_ = std::move(notify);

  BuildInformers();
  AddWakeUps();
  timerThread_ = std::jthread([this](const std::stop_token& stop) { TimerLoop(stop); });
  jobs_->Start();
  pods_->Start();
  failedCreates_->Start();
  if (!jobs_->WaitForSync(options_.syncTimeout) || !pods_->WaitForSync(options_.syncTimeout)) {
    return Status(StatusCode::kUnavailable,
                  "the watches of batch/v1 Jobs and pods did not sync within " +
                      std::to_string(options_.syncTimeout.count()) +
                      " ms; they keep retrying and calls read from the apiserver until then");
  }
  return Status::Ok();
}

void KubernetesAdapter::Stop() {
  stopped_ = true;
  if (jobs_) jobs_->Stop();
  if (pods_) pods_->Stop();
  if (failedCreates_) failedCreates_->Stop();
  if (timerThread_.joinable()) {
    timerThread_.request_stop();
    timerCv_.notify_all();
    timerThread_.join();
  }
}

bool KubernetesAdapter::CachesSynced() const {
  return jobs_ && pods_ && jobs_->HasSynced() && pods_->HasSynced();
}

Observation KubernetesAdapter::WithFailedCreate(Observation o, const BatchJobFacts& job,
                                                const std::vector<PodFacts>& pods) const {
  if (o.phase != ExecutionPhase::kPending || !failedCreates_ || !failedCreates_->HasSynced()) {
    return o;
  }
  for (const PodFacts& p : pods) {
    if (p.controllerUid == job.uid) return o;  // the pod exists: it speaks for itself
  }
  std::shared_ptr<const FailedCreateFacts> newest;
  for (const auto& e : failedCreates_->ByIndex(kUidIndex, job.uid)) {
    if (!newest || (e->lastSeen && (!newest->lastSeen || *e->lastSeen > *newest->lastSeen))) {
      newest = e;
    }
  }
  if (!newest) return o;
  return ExplainMissingPod(std::move(o), job.name, newest->message);
}

void KubernetesAdapter::NotifyAt(api::Time when, const std::string& ns, const std::string& name) {
  if (!notify_ || !timerThread_.joinable()) return;
  std::lock_guard lock(timerMu_);
  auto range = timers_.equal_range(when);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second.first == ns && it->second.second == name) return;
  }
  timers_.emplace(when, std::make_pair(ns, name));
  timerCv_.notify_all();
}

void KubernetesAdapter::WakeAtPullTimeouts(const std::vector<PodFacts>& pods,
                                           std::chrono::seconds pullTimeout,
                                           const ExecutionKey& key) {
  for (const PodFacts& p : pods) {
    if (IsImagePullWait(p) && p.created) {
      NotifyAt(*p.created + pullTimeout, key.namespace_, key.name);
    }
  }
}

void KubernetesAdapter::TimerLoop(const std::stop_token& stop) {
  std::unique_lock lock(timerMu_);
  while (!stop.stop_requested()) {
    if (timers_.empty()) {
      timerCv_.wait(lock, stop, [&] { return !timers_.empty(); });
      continue;
    }
    auto first = timers_.begin();
    auto wait = first->first - Now();
    if (wait > std::chrono::seconds(0)) {
      // Woken by new, earlier timers; and at least every second, so that a wall clock that
      // jumps (or a test's FakeClock) is noticed.
      timerCv_.wait_for(lock, stop,
                        std::min<std::chrono::nanoseconds>(wait, std::chrono::seconds(1)),
                        [] { return false; });
      continue;
    }
    auto [ns, name] = first->second;
    timers_.erase(first);
    lock.unlock();
    notify_(ns, name);
    lock.lock();
  }
}

Status KubernetesAdapter::Validate(const ExecutionRequest& request) {
  auto params = ParseParameters(request.parameters);
  if (!params.ok()) return params.status();
  return ValidateRequest(request, *params);
}

StatusOr<KubernetesAdapter::Fresh> KubernetesAdapter::ReadFresh(
    const std::string& ns, const std::string& uid, const std::string& recordedBatchJobUid) {
  Fresh f;
  const std::string name = BatchJobName(uid);
  auto job = client_.Get(BatchJobsResource(), ns, name);
  if (job.ok()) {
    if (IsOwnedBy(*job, uid)) {
      f.batchJob = std::move(*job);
    } else {
      f.foreignUid = Uid(*job);
    }
  } else if (job.status().code() != StatusCode::kNotFound) {
    return job.status();
  }
  ListOptions lo;
  lo.labelSelector = SelectorForUid(uid);
  auto pods = client_.List(PodsResource(), ns, lo);
  if (!pods.ok()) return pods.status();
  const std::string batchJobUid = f.batchJob ? Uid(*f.batchJob) : recordedBatchJobUid;
  for (auto& p : pods->items) {
    // Only the pods of our batch Job: a pod (or a stranger's Job) that copied our label does not
    // speak for our execution.
    PodFacts facts = PodFactsFromJson(p);
    if (!f.batchJob && IsOrphanOfBatchJob(facts, uid, batchJobUid)) {
      f.orphans.push_back(std::move(p));
      continue;
    }
    if (!IsPodOfBatchJob(facts, uid, batchJobUid)) continue;
    if (!f.foreignUid.empty() && facts.controllerUid == f.foreignUid) continue;
    f.pods.push_back(std::move(p));
  }
  return f;
}

Observation KubernetesAdapter::ObserveFromFresh(const Fresh& fresh,
                                                std::chrono::seconds pullTimeout,
                                                const std::string& expectedUid) {
  std::optional<BatchJobFacts> job;
  if (fresh.batchJob) job = BatchJobFactsFromJson(*fresh.batchJob);
  return ObserveExecution(job, ToFacts(fresh.pods), Now(), pullTimeout, expectedUid);
}

Observation KubernetesAdapter::ObserveFresh(const ExecutionKey& key,
                                            std::chrono::seconds pullTimeout) {
  auto fresh = ReadFresh(key.namespace_, key.uid, ReferencedBatchJobUid(key.references));
  if (!fresh.ok()) {
    return FromError(fresh.status(), "reading batch/v1 Job " + key.namespace_ + "/" +
                                         BatchJobName(key.uid) + " and its pod");
  }
  Observation o = ObserveFromFresh(*fresh, pullTimeout, ReferencedBatchJobUid(key.references));
  if (o.phase == ExecutionPhase::kPending) {
    WakeAtPullTimeouts(ToFacts(fresh->pods), pullTimeout, key);
  }
  if (o.phase == ExecutionPhase::kAbsent && !fresh->foreignUid.empty()) {
    o.message = "batch/v1 Job " + key.namespace_ + "/" + BatchJobName(key.uid) +
                " exists but is not owned by this Job";
  }
  return o;
}

std::optional<Observation> KubernetesAdapter::ObserveCached(const ExecutionKey& key,
                                                            std::chrono::seconds pullTimeout) {
  if (!CachesSynced()) return std::nullopt;
  auto job = jobs_->Get(kube::ObjectKey(key.namespace_, BatchJobName(key.uid)));
  if (!job || !job->owned || job->jobUid != key.uid) return std::nullopt;
  std::vector<PodFacts> pods;
  for (const auto& p : pods_->ByIndex(kUidIndex, key.uid)) pods.push_back(*p);
  Observation o =
      ObserveExecution(*job, pods, Now(), pullTimeout, ReferencedBatchJobUid(key.references));
  // Answers that lead to an irreversible status write (a result) or to ResultUnknown are read
  // fresh from the apiserver; progress (pending, running) is served from the cache.
  if (o.phase == ExecutionPhase::kSucceeded || o.phase == ExecutionPhase::kFailed) {
    return ConfirmResultFromPod(key, *job, pods, pullTimeout);
  }
  if (o.phase != ExecutionPhase::kPending && o.phase != ExecutionPhase::kRunning) {
    return std::nullopt;
  }
  WakeAtPullTimeouts(pods, pullTimeout, key);
  return WithFailedCreate(std::move(o), *job, pods);
}

std::optional<Observation> KubernetesAdapter::ConfirmResultFromPod(
    const ExecutionKey& key, const BatchJobFacts& job, const std::vector<PodFacts>& cachedPods,
    std::chrono::seconds pullTimeout) {
  // backoffLimit 0 and podReplacementPolicy Failed: the batch Job makes one pod. Anything else
  // (a second pod, a result from the batch Job's conditions alone) is read whole.
  const PodFacts* pod = nullptr;
  for (const PodFacts& p : cachedPods) {
    if (p.controllerUid != job.uid) continue;
    if (pod) return std::nullopt;
    pod = &p;
  }
  if (!pod) return std::nullopt;
  // One GET of that pod is the fresh read: a terminated container state is final, and the pod's
  // controller reference names the batch Job, so it proves the result of this execution.
  auto fresh = client_.Get(PodsResource(), key.namespace_, pod->name);
  if (!fresh.ok()) return std::nullopt;  // gone, or unreadable: the whole read decides
  PodFacts facts = PodFactsFromJson(*fresh);
  if (facts.jobUid != key.uid || facts.controllerUid != job.uid) return std::nullopt;
  Observation o =
      ObserveExecution(job, {facts}, Now(), pullTimeout, ReferencedBatchJobUid(key.references));
  if (o.phase != ExecutionPhase::kSucceeded && o.phase != ExecutionPhase::kFailed) {
    return std::nullopt;
  }
  return o;
}

Observation KubernetesAdapter::Ensure(const ExecutionRequest& request) {
  const auto& meta = request.job.metadata;
  ExecutionKey key{meta.uid, meta.namespace_, meta.name, {}, request.parameters};
  auto params = ParseParameters(request.parameters);
  const std::chrono::seconds pullTimeout =
      params.ok() ? std::chrono::seconds(params->imagePullFailureTimeoutSeconds)
                  : kDefaultPullTimeout;

  if (CachesSynced()) {
    if (auto cached = ObserveCached(key, pullTimeout)) return *cached;
    // A pod of this UID without its batch Job (deleted by someone): the execution exists, so
    // never create a second one; report what is left.
    if (!jobs_->Get(kube::ObjectKey(meta.namespace_, BatchJobName(meta.uid))) &&
        !pods_->ByIndex(kUidIndex, meta.uid).empty()) {
      return ObserveFresh(key, pullTimeout);
    }
  }

  if (!params.ok()) return Rejected(params.status().message());
  if (Status s = ValidateRequest(request, *params); !s.ok()) return Rejected(s.message());

  // Last, right before the create: the controller's fresh read of the Job (no execution for a
  // Job cancelled or deleted since the decision).
  if (!request.CreateConfirmed()) return NotCreated();
  WriteOptions wo;
  wo.fieldManager = options_.fieldManager;
  auto created =
      client_.Create(BatchJobsResource(), meta.namespace_, BuildBatchJob(request, *params), wo);
  if (created.ok()) {
    return ObserveExecution(BatchJobFactsFromJson(*created), std::vector<PodFacts>{}, Now(),
                            pullTimeout);
  }
  const Status& err = created.status();
  const std::string what = "batch/v1 Job " + meta.namespace_ + "/" + BatchJobName(meta.uid);
  switch (err.code()) {
    case StatusCode::kAlreadyExists: {
      // Ours from an earlier Ensure whose answer was lost, or a stranger's.
      auto fresh = ReadFresh(meta.namespace_, meta.uid, "");
      if (!fresh.ok()) return FromError(fresh.status(), "reading " + what);
      if (fresh->batchJob) return ObserveFromFresh(*fresh, pullTimeout, "");
      if (!fresh->foreignUid.empty()) {
        Log(what + " exists without this Job's uid label and controller reference; not adopted");
        return Rejected(what +
                        " already exists and is not owned by this Job (no matching "
                        "execution.ayatori.ddupan.top/job-uid label and controller "
                        "ownerReference); it was not adopted and nothing was run");
      }
      return Unknown("Conflict", what + " was deleted while it was being created; retrying");
    }
    case StatusCode::kInvalid:
    case StatusCode::kInvalidArgument:
      return Rejected("the API server rejected " + what + ": " + err.message());
    default:
      return FromError(err, "creating " + what);
  }
}

StatusOr<std::optional<std::string>> KubernetesAdapter::RecordedAcceptance(const std::string& ns,
                                                                           const std::string& uid) {
  if (CachesSynced()) {  // else the API server answers
    auto cached = jobs_->Get(kube::ObjectKey(ns, BatchJobName(uid)));
    if (!cached || !cached->owned || cached->jobUid != uid || !cached->acceptanceRecorded) {
      return std::optional<std::string>();
    }
  }
  auto fresh = client_.Get(BatchJobsResource(), ns, BatchJobName(uid));
  if (!fresh.ok()) {
    // Forbidden: this identity cannot read batch Jobs, so it cannot have created one that a
    // Job's acceptance waits in; a controller without the Kubernetes backend's RBAC must still
    // accept the Jobs of its other backends.
    const StatusCode code = fresh.status().code();
    if (code == StatusCode::kNotFound || code == StatusCode::kForbidden) {
      return std::optional<std::string>();
    }
    return fresh.status();
  }
  const auto pointer = json::json_pointer("/metadata/annotations") / kAcceptanceAnnotation;
  if (!IsOwnedBy(*fresh, uid) || !fresh->contains(pointer) || !(*fresh)[pointer].is_string()) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>((*fresh)[pointer].get<std::string>());
}

Observation KubernetesAdapter::Observe(const ExecutionKey& key) {
  const std::chrono::seconds pullTimeout = PullTimeout(key.parameters);
  if (auto cached = ObserveCached(key, pullTimeout)) return *cached;
  return ObserveFresh(key, pullTimeout);
}

Observation KubernetesAdapter::Cancel(const ExecutionKey& key) {
  const std::string what = "batch/v1 Job " + key.namespace_ + "/" + BatchJobName(key.uid);
  auto fresh = ReadFresh(key.namespace_, key.uid, ReferencedBatchJobUid(key.references));
  if (!fresh.ok()) return FromError(fresh.status(), "reading " + what);

  if (fresh->batchJob) {
    Observation now = ObserveFromFresh(*fresh, PullTimeout(key.parameters), "");
    if (EndedByItself(now.phase)) return now;  // it ended by itself first: that result stands
    DeleteOptions d;
    d.propagationPolicy = "Background";
    d.preconditionUid = Uid(*fresh->batchJob);
    Status s = client_.Delete(BatchJobsResource(), key.namespace_, BatchJobName(key.uid), d);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return FromError(s, "deleting " + what);
  } else {
    // The batch Job is gone; its pods are the garbage collector's. Should it be slow (or absent),
    // delete the ones it has not reached yet ourselves, and the orphans it never will.
    std::vector<json> pods = fresh->pods;
    pods.insert(pods.end(), fresh->orphans.begin(), fresh->orphans.end());
    for (const auto& pod : pods) {
      PodFacts f = PodFactsFromJson(pod);
      if (f.deleted || IsPodTerminal(f)) continue;
      DeleteOptions d;
      d.preconditionUid = Uid(pod);
      Status s = client_.Delete(PodsResource(), key.namespace_, f.name, d);
      if (!s.ok() && s.code() != StatusCode::kNotFound && s.code() != StatusCode::kConflict) {
        return FromError(s, "deleting pod " + key.namespace_ + "/" + f.name);
      }
    }
  }
  // An orphan still running holds the cancellation open; a stopped one says nothing of the
  // result (an impostor could forge its labels and exit code).
  std::vector<PodFacts> stopping = ToFacts(fresh->pods);
  for (const PodFacts& orphan : ToFacts(fresh->orphans)) {
    if (!IsPodTerminal(orphan)) stopping.push_back(orphan);
  }
  return ObserveCancellation(stopping, Now());
}

Status KubernetesAdapter::Delete(const ExecutionKey& key) {
  const std::string name = BatchJobName(key.uid);
  const std::string what = "batch/v1 Job " + key.namespace_ + "/" + name;
  DeleteOptions d;
  d.propagationPolicy = "Background";
  bool done = false;
  if (std::string recorded = ReferencedBatchJobUid(key.references); !recorded.empty()) {
    // The recorded uid is the precondition: exactly the object this Job created, no GET needed.
    d.preconditionUid = recorded;
    Status s = client_.Delete(BatchJobsResource(), key.namespace_, name, d);
    if (s.ok() || s.code() == StatusCode::kNotFound) {
      done = true;
    } else if (s.code() != StatusCode::kConflict) {
      return Status(s.code(), "deleting " + what + ": " + s.message());
    }
  }
  if (!done) {
    auto job = client_.Get(BatchJobsResource(), key.namespace_, name);
    if (job.ok() && IsOwnedBy(*job, key.uid)) {
      d.preconditionUid = Uid(*job);
      Status s = client_.Delete(BatchJobsResource(), key.namespace_, name, d);
      if (!s.ok() && s.code() != StatusCode::kNotFound) {
        return Status(s.code(), "deleting " + what + ": " + s.message());
      }
    } else if (!job.ok() && job.status().code() != StatusCode::kNotFound) {
      return Status(job.status().code(), "reading " + what + ": " + job.status().message());
    }
    // Not found, or a stranger's: nothing of ours to delete.
  }

  std::vector<PodFacts> pods;
  if (CachesSynced()) {
    for (const auto& p : pods_->ByIndex(kUidIndex, key.uid)) pods.push_back(*p);
  } else {
    ListOptions lo;
    lo.labelSelector = SelectorForUid(key.uid);
    auto list = client_.List(PodsResource(), key.namespace_, lo);
    if (!list.ok()) {
      return Status(list.status().code(),
                    "listing the pods of " + what + ": " + list.status().message());
    }
    pods = ToFacts(list->items);
  }
  // A pod that only copied the label must not hold the Job's deletion up.
  const std::string recorded = ReferencedBatchJobUid(key.references);
  for (const PodFacts& p : pods) {
    if (!IsPodOfBatchJob(p, key.uid, recorded) && !IsOrphanOfBatchJob(p, key.uid, recorded)) {
      continue;
    }
    if (!IsPodTerminal(p)) {
      return Status(StatusCode::kUnavailable,
                    "pod " + key.namespace_ + "/" + p.name +
                        " of the execution has not stopped yet; it is being deleted");
    }
  }
  return Status::Ok();
}

Status KubernetesAdapter::StreamLogs(const ExecutionKey& key, const LogOptions& options,
                                     const LogSink& sink) {
  if (!options_.streamPath) {
    return Status(StatusCode::kFailedPrecondition, "this controller cannot stream pod logs");
  }
  auto fresh = ReadFresh(key.namespace_, key.uid, ReferencedBatchJobUid(key.references));
  if (!fresh.ok()) return fresh.status();
  // The newest pod of our batch Job (ReadFresh keeps no other): with backoffLimit 0 there is
  // one, but a deleted pod may linger beside it.
  const json* newest = nullptr;
  for (const json& p : fresh->pods) {
    const std::string created = p.value("/metadata/creationTimestamp"_json_pointer, std::string());
    if (newest == nullptr ||
        created > newest->value("/metadata/creationTimestamp"_json_pointer, std::string())) {
      newest = &p;
    }
  }
  if (newest == nullptr) {
    return Status(StatusCode::kNotFound, "no pod of Job UID " + key.uid + " is left");
  }
  const std::string pod = newest->value("/metadata/name"_json_pointer, std::string());
  const std::string path =
      kube::ResourcePath(PodsResource(), key.namespace_, pod, "log") +
      kube::QueryString(
          {{"follow", options.follow ? "true" : ""},
           {"timestamps", options.timestamps ? "true" : ""},
           {"tailLines", options.tailLines ? std::to_string(*options.tailLines) : ""},
           {"sinceSeconds", options.sinceSeconds ? std::to_string(*options.sinceSeconds) : ""}});
  Status s = options_.streamPath(path, options.stop, sink);
  if (s.ok() || s.code() == StatusCode::kNotFound) return s;
  // The apiserver reaches the kubelet for the log; say which pod when that fails.
  return Status(s.code(), "pod " + key.namespace_ + "/" + pod + ": " + s.message());
}

}  // namespace ayatori::adapters::kubernetes
