#include "controller/controller.h"

#include "api/json.h"
#include "controller/kinds.h"
#include "controller/resolver.h"
#include "obs/log.h"

namespace ayatori::controller {
namespace {

std::string Key(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

obs::Counter& ReconcilePanics(obs::Registry& metrics) {
  return metrics.GetCounter(obs::metrics::kReconcilePanics);
}

obs::Counter& WaitingJobWakeups(obs::Registry& metrics) {
  return metrics.GetCounter(obs::metrics::kWaitingJobWakeups);
}

// Called in a catch handler: logs and counts the exception a reconcile round threw. Never throws
// itself (under bad_alloc the log line may be lost; the worker must live on all the same).
void ReportReconcileException(obs::Registry& metrics, const std::string& ns,
                              const std::string& name) noexcept {
  try {
    std::string what;
    try {
      throw;
    } catch (const nlohmann::json::parse_error& e) {
      // Its message quotes the text it failed on, which may be a Secret's: only the position.
      what = "JSON parse error " + std::to_string(e.id) + " at byte " + std::to_string(e.byte);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
      what = "an exception that is not a std::exception";
    }
    ReconcilePanics(metrics).Inc();
    obs::Error("reconcile threw; retrying with backoff",
               {{"namespace", ns}, {"name", name}, {"error", what}});
  } catch (...) {
  }
}

kube::InformerOptions Named(const char* name) {
  kube::InformerOptions o;
  o.name = name;
  o.log = [](const std::string& line) { obs::Warn(line); };
  return o;
}

// The Job informer's list pages: a page's body is read whole before its items are decoded one by
// one, and a Job may be ~530 KB (the CRD's caps, docs/api.md § Limits at a glance), so 100 Jobs
// a page bound that body to ~53 MB where the default 500 would allow ~265 MB, over the
// controller's 256Mi limit (docs/operations.md § A flood of large waiting Jobs).
kube::InformerOptions JobPages() {
  kube::InformerOptions o = Named("jobs");
  o.pageSize = 100;
  return o;
}

// The options of a namespaced kind's informer: the watched namespaces, or all (empty).
kube::InformerOptions In(const std::vector<std::string>& watchNamespaces, kube::InformerOptions o) {
  o.namespaces = watchNamespaces;
  return o;
}

kube::InformerOptions SnapshotsIn(const std::string& controllerNamespace) {
  kube::InformerOptions o = Named("backend snapshots");
  o.namespace_ = controllerNamespace;
  o.labelSelector = std::string(kBackendSnapshotLabel) + "=true";
  return o;
}

std::shared_ptr<const CachedJob> DecodeJob(const nlohmann::json& j) {
  auto job = api::JobFromJson(j);
  if (!job.ok()) {
    obs::Error("cannot decode Job; it is ignored", {{"error", job.status().message()}});
    return nullptr;
  }
  bool taskComplete = false;
  api::Job compact = CompactJobForCache(std::move(*job), &taskComplete);
  auto entry = CachedJob::Encode(compact, taskComplete);
  if (!entry.ok()) {
    obs::Error("cannot encode Job for the cache; it is ignored",
               {{"error", entry.status().message()}});
    return nullptr;
  }
  return std::make_shared<const CachedJob>(std::move(*entry));
}

std::shared_ptr<const api::JobClass> DecodeJobClass(const nlohmann::json& j) {
  auto c = api::JobClassFromJson(j);
  if (!c.ok()) {
    obs::Error("cannot decode JobClass; it is ignored", {{"error", c.status().message()}});
    return nullptr;
  }
  return std::make_shared<const api::JobClass>(std::move(*c));
}

std::shared_ptr<const NamespaceInfo> DecodeNamespace(const nlohmann::json& j) {
  NamespaceInfo info;
  auto ptr = nlohmann::json::json_pointer("/metadata/annotations");
  if (j.contains(ptr) && j[ptr].is_object()) {
    auto it = j[ptr].find(api::kDefaultClassAnnotation);
    if (it != j[ptr].end() && it->is_string()) info.defaultJobClass = it->get<std::string>();
  }
  return std::make_shared<const NamespaceInfo>(std::move(info));
}

// Metadata-only informers (Secrets, ConfigMaps): what the API server sends is a
// PartialObjectMetadata, and only its metadata is kept.
kube::InformerOptions MetadataOnly(const char* name) {
  kube::InformerOptions o = Named(name);
  o.metadataOnly = true;
  return o;
}

std::shared_ptr<const kube::ObjectMetadata> DecodeMetadata(const nlohmann::json& j) {
  auto m = kube::DecodeObjectMetadata(j);
  if (!m.ok()) {
    obs::Error("cannot decode object metadata; it is ignored", {{"error", m.status().message()}});
    return nullptr;
  }
  return std::make_shared<const kube::ObjectMetadata>(std::move(*m));
}

// Workloads are kept as read: the reconciler decodes the one of the Job it works on.
std::shared_ptr<const nlohmann::json> DecodeWorkload(const nlohmann::json& j) {
  return std::make_shared<const nlohmann::json>(j);
}

// The key of the Ayatori Job that owns a Workload ("" when none does): its controller
// ownerReference of the Job kind.
std::string OwnerJobKey(const std::string& workloadKey, const nlohmann::json& workload) {
  const auto slash = workloadKey.find('/');
  if (slash == std::string::npos) return "";
  auto refs = workload.find("metadata");
  if (refs == workload.end() || !refs->contains("ownerReferences")) return "";
  for (const auto& ref : (*refs)["ownerReferences"]) {
    if (ref.is_object() && ref.value("apiVersion", "") == api::kApiVersion &&
        ref.value("kind", "") == "Job" && ref.value("controller", false)) {
      return workloadKey.substr(0, slash + 1) + ref.value("name", "");
    }
  }
  return "";
}

std::vector<ParametersInformer> ParametersInformers(KubeClient& client,
                                                    const adapters::AdapterRegistry& registry) {
  std::vector<ParametersInformer> out;
  for (const auto& entry : registry.All()) {
    if (!entry.descriptor.parameters) continue;
    const ParametersKind& kind = *entry.descriptor.parameters;
    auto decode = [descriptor = entry.descriptor](const nlohmann::json& j) {
      return std::make_shared<const nlohmann::json>(adapters::WithSpecOverrides(descriptor, j));
    };
    kube::InformerOptions options = Named(kind.resource.c_str());
    out.push_back({kind, std::make_unique<kube::Informer<nlohmann::json>>(
                             client, adapters::ParametersResource(kind), std::move(options),
                             std::move(decode))});
  }
  return out;
}

}  // namespace

int WorkPriority(statemachine::State state) {
  switch (state) {
    case statemachine::State::kStarting:
      return 0;
    case statemachine::State::kResolving:
    case statemachine::State::kQueued:
    case statemachine::State::kScheduling:
      return 1;
    default:
      return kWorkPriorityLevels - 1;
  }
}

size_t TaskBytes(const api::TaskSpec& task) {
  size_t n = task.image.size() + task.workingDir.size();
  for (const auto& s : task.command) n += s.size();
  for (const auto& s : task.args) n += s.size();
  for (const auto& p : task.imagePullSecrets) n += p.name.size();
  for (const auto& e : task.env) {
    n += e.name.size() + (e.value ? e.value->size() : 0);
    if (!e.valueFrom) continue;
    for (const auto& ref : {e.valueFrom->secretKeyRef, e.valueFrom->configMapKeyRef}) {
      if (ref) n += ref->name.size() + ref->key.size();
    }
  }
  return n;
}

api::Job CompactJobForCache(api::Job job, bool* taskComplete) {
  job.metadata.generateName.clear();
  // Only Kueue's: the queue a Job is accepted into and its Workload's priority.
  std::erase_if(job.metadata.labels, [](const auto& l) {
    return l.first != kueue::kQueueNameLabel && l.first != kueue::kPriorityClassLabel;
  });
  job.metadata.ownerReferences.clear();
  std::erase_if(job.metadata.annotations,
                [](const auto& a) { return a.first != api::kConfirmBackendLostAnnotation; });
  bool complete = false;
  if (!statemachine::NeedsResolution(job)) {
    api::TaskSpec compact;
    compact.image = std::move(job.spec.task.image);
    job.spec.task = std::move(compact);
    job.spec.resources.reset();
  } else if (TaskBytes(job.spec.task) <= kWholeTaskBytes) {
    complete = true;
  } else {
    // What the resolver reads before adapter Validate, and what WaitTargets reads.
    api::TaskSpec& task = job.spec.task;
    task.args.clear();
    task.args.shrink_to_fit();
    task.workingDir.clear();
    if (!task.command.empty()) task.command = {""};
    std::erase_if(task.env, [](const api::EnvVar& e) { return !e.valueFrom.has_value(); });
    task.env.shrink_to_fit();
  }
  if (taskComplete != nullptr) *taskComplete = complete;
  return job;
}

InformerClusterCache::InformerClusterCache(KubeClient& client,
                                           const adapters::AdapterRegistry& registry,
                                           const std::string& controllerNamespace,
                                           const std::vector<std::string>& watchNamespaces,
                                           bool kueue)
    : jobs(client, kJobs, In(watchNamespaces, JobPages()), DecodeJob),
      jobClasses(client, kJobClasses, Named("jobclasses"), DecodeJobClass),
      parameters(ParametersInformers(client, registry)),
      namespaces(client, kNamespaces, Named("namespaces"), DecodeNamespace),
      secrets(client, kSecrets, In(watchNamespaces, MetadataOnly("secrets")), DecodeMetadata),
      configMaps(client, kConfigMaps, In(watchNamespaces, MetadataOnly("configmaps")),
                 DecodeMetadata),
      backendSnapshots(client, kConfigMaps, SnapshotsIn(controllerNamespace),
                       DecodeBackendSnapshot),
      controllerNamespace_(controllerNamespace) {
  jobs.AddIndex(kWaitsOnIndex, [](const CachedJob& job) { return job.waitsOn(); });
  if (kueue) {
    workloads = std::make_unique<kube::Informer<nlohmann::json>>(
        client, kWorkloads, In(watchNamespaces, Named("workloads")), DecodeWorkload);
  }
}

void InformerClusterCache::Start() {
  jobs.Start();
  jobClasses.Start();
  for (auto& p : parameters) p.informer->Start();
  namespaces.Start();
  secrets.Start();
  configMaps.Start();
  backendSnapshots.Start();
  if (workloads) workloads->Start();
}

void InformerClusterCache::Stop() {
  jobs.Stop();
  jobClasses.Stop();
  for (auto& p : parameters) p.informer->Stop();
  namespaces.Stop();
  secrets.Stop();
  configMaps.Stop();
  backendSnapshots.Stop();
  if (workloads) workloads->Stop();
}

bool InformerClusterCache::WaitForSync(std::chrono::milliseconds timeout, std::string* notSynced,
                                       const std::stop_token& cancel) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remaining = [&] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  std::vector<std::pair<std::string, bool>> results = {
      {"jobs", jobs.WaitForSync(remaining(), cancel)},
      {"jobclasses", jobClasses.WaitForSync(remaining(), cancel)},
  };
  for (const auto& p : parameters) {
    results.emplace_back(p.kind.resource, p.informer->WaitForSync(remaining(), cancel));
  }
  results.insert(results.end(),
                 {
                     {"namespaces", namespaces.WaitForSync(remaining(), cancel)},
                     {"secrets", secrets.WaitForSync(remaining(), cancel)},
                     {"configmaps", configMaps.WaitForSync(remaining(), cancel)},
                     {"backend snapshots", backendSnapshots.WaitForSync(remaining(), cancel)},
                 });
  if (workloads) results.emplace_back("workloads", workloads->WaitForSync(remaining(), cancel));
  notSynced->clear();
  for (const auto& [name, ok] : results) {
    if (!ok) *notSynced += (notSynced->empty() ? "" : ", ") + name;
  }
  return notSynced->empty();
}

std::shared_ptr<const api::Job> InformerClusterCache::GetJob(const std::string& ns,
                                                             const std::string& name) const {
  return GetJobCopy(ns, name).job;
}

ClusterCache::JobCopy InformerClusterCache::GetJobCopy(const std::string& ns,
                                                       const std::string& name) const {
  auto entry = jobs.Get(Key(ns, name));
  if (!entry) return {};
  auto job = entry->Decode();
  if (!job.ok()) {
    obs::Error("cannot decode a cached Job",
               {{"namespace", ns}, {"name", name}, {"error", job.status().message()}});
    return {};
  }
  return {std::make_shared<const api::Job>(std::move(*job)), entry->taskComplete()};
}

std::shared_ptr<const api::JobClass> InformerClusterCache::GetJobClass(
    const std::string& name) const {
  return jobClasses.Get(name);
}

std::vector<std::shared_ptr<const api::JobClass>> InformerClusterCache::ListJobClasses() const {
  return jobClasses.List();
}

std::shared_ptr<const nlohmann::json> InformerClusterCache::GetParameters(
    const std::string& kind, const std::string& name) const {
  for (const auto& p : parameters) {
    if (p.kind.kind == kind) return p.informer->Get(name);
  }
  return nullptr;
}

std::string InformerClusterCache::NamespaceDefaultJobClass(const std::string& ns) const {
  auto info = namespaces.Get(ns);
  return info ? info->defaultJobClass : "";
}

std::shared_ptr<const kube::ObjectMetadata> InformerClusterCache::GetSecret(
    const std::string& ns, const std::string& name) const {
  return secrets.Get(Key(ns, name));
}

std::shared_ptr<const kube::ObjectMetadata> InformerClusterCache::GetConfigMap(
    const std::string& ns, const std::string& name) const {
  return configMaps.Get(Key(ns, name));
}

std::shared_ptr<const BackendSnapshot> InformerClusterCache::GetBackendSnapshot(
    const std::string& name) const {
  return backendSnapshots.Get(Key(controllerNamespace_, name));
}

std::shared_ptr<const nlohmann::json> InformerClusterCache::GetWorkload(
    const std::string& ns, const std::string& name) const {
  return workloads ? workloads->Get(Key(ns, name)) : nullptr;
}

JobController::JobController(KubeClient& client, adapters::AdapterRegistry& registry,
                             const Clock& clock, obs::Registry& metrics,
                             kube::EventRecorder* events, ControllerOptions options)
    : registry_(registry),
      metrics_(metrics),
      options_(std::move(options)),
      cache_(std::make_unique<InformerClusterCache>(
          client, registry, options_.reconciler.controllerNamespace, options_.watchNamespaces,
          options_.reconciler.kueue)),
      reconciler_(std::make_unique<JobReconciler>(client, *cache_, registry, clock, metrics, events,
                                                  WithBacklog(options_.reconciler))),
      queue_(std::make_unique<kube::Workqueue>(clock, WithPriority(options_.queue))) {
  QueueJobEvents();
  QueueWorkloadEvents();
  WakeJobsOnReferenceChanges();
  WakeJobsOnNamespaceChanges();
  WakeJobsOnClassChanges();
  WakeJobsOnParametersChanges();
  // Counters exist from the start, so that a scrape shows 0 rather than nothing.
  ReconcilePanics(metrics_);
  WaitingJobWakeups(metrics_);
  RegisterMetrics();
}

void JobController::QueueJobEvents() {
  using JobPtr = kube::Informer<CachedJob>::Ptr;
  cache_->jobs.AddHandlers({
      .onAdd = [this](const std::string& key, const JobPtr&) { queue_->Add(key); },
      .onUpdate = [this](const std::string& key, const JobPtr&,
                         const JobPtr&) { queue_->Add(key); },
      .onDelete = [this](const std::string& key, const JobPtr&) { queue_->Add(key); },
  });
}

void JobController::QueueWorkloadEvents() {
  if (!cache_->workloads) return;
  using WorkloadPtr = kube::Informer<nlohmann::json>::Ptr;
  // Kueue's admission, eviction and Finished all come as Workload updates: each one is a round
  // of the Job that owns the Workload.
  auto owner = [this](const std::string& key, const WorkloadPtr& workload) {
    const std::string job = OwnerJobKey(key, *workload);
    if (!job.empty()) queue_->Add(job);
  };
  cache_->workloads->AddHandlers({
      .onAdd = owner,
      .onUpdate = [owner](const std::string& key, const WorkloadPtr&,
                          const WorkloadPtr& now) { owner(key, now); },
      .onDelete = owner,
  });
}

void JobController::WakeJobsOnReferenceChanges() {
  using RefPtr = kube::Informer<kube::ObjectMetadata>::Ptr;
  for (const auto& [informerRef, kindRef] :
       {std::pair{&cache_->secrets, "Secret"}, std::pair{&cache_->configMaps, "ConfigMap"}}) {
    auto* informer = informerRef;  // lambdas capture variables, not structured bindings
    const char* kind = kindRef;
    informer->AddHandlers({
        .onAdd =
            [this, informer, kind](const std::string& key, const RefPtr&) {
              if (informer->HasSynced()) WakeJobsWaitingOn(WaitTarget(kind, key));
            },
        // The metadata does not say which keys changed: any new resourceVersion (a key added, a
        // type changed, the object replaced) wakes the waiting Jobs, which read it again.
        .onUpdate =
            [this, kind](const std::string& key, const RefPtr& old, const RefPtr& now) {
              if (old->resourceVersion != now->resourceVersion || old->uid != now->uid) {
                WakeJobsWaitingOn(WaitTarget(kind, key));
              }
            },
        .onDelete = nullptr,
    });
  }
}

void JobController::WakeJobsOnNamespaceChanges() {
  using NamespacePtr = kube::Informer<NamespaceInfo>::Ptr;
  cache_->namespaces.AddHandlers({
      .onAdd =
          [this](const std::string& key, const NamespacePtr&) {
            if (cache_->namespaces.HasSynced()) WakeJobsWaitingOn(WaitTarget("Namespace", key));
          },
      .onUpdate =
          [this](const std::string& key, const NamespacePtr& old, const NamespacePtr& now) {
            if (old->defaultJobClass != now->defaultJobClass) {
              WakeJobsWaitingOn(WaitTarget("Namespace", key));
            }
          },
      .onDelete = nullptr,
  });
}

void JobController::WakeJobsOnClassChanges() {
  using ClassPtr = kube::Informer<api::JobClass>::Ptr;
  // A deleted class matters too: it may have been one of two cluster defaults.
  cache_->jobClasses.AddHandlers({
      .onAdd =
          [this](const std::string&, const ClassPtr& c) {
            if (cache_->jobClasses.HasSynced()) WakeJobsOfClass(*c, *c);
          },
      .onUpdate = [this](const std::string&, const ClassPtr& old,
                         const ClassPtr& now) { WakeJobsOfClass(*old, *now); },
      .onDelete = [this](const std::string&, const ClassPtr& c) { WakeJobsOfClass(*c, *c); },
  });
}

void JobController::WakeJobsOnParametersChanges() {
  using ParamsPtr = kube::Informer<nlohmann::json>::Ptr;
  for (auto& p : cache_->parameters) {
    auto* informer = p.informer.get();
    std::string kind = p.kind.kind;
    informer->AddHandlers({
        .onAdd =
            [this, informer, kind](const std::string& key, const ParamsPtr&) {
              if (informer->HasSynced()) WakeJobsOfParameters(kind, key);
            },
        .onUpdate = [this, kind](const std::string& key, const ParamsPtr&,
                                 const ParamsPtr&) { WakeJobsOfParameters(kind, key); },
        .onDelete = nullptr,
    });
  }
}

JobController::~JobController() { Stop(); }

ReconcilerOptions JobController::WithBacklog(ReconcilerOptions options) const {
  // Keys ready in the queue are other Jobs' rounds waiting for a worker.
  if (!options.backlog) options.backlog = [this] { return queue_->Len() > 0; };
  return options;
}

kube::WorkqueueOptions JobController::WithPriority(kube::WorkqueueOptions options) const {
  options.priorityLevels = kWorkPriorityLevels;
  options.priority = [cache = cache_.get(),
                      reconciler = reconciler_.get()](const std::string& key) {
    auto job = cache->jobs.Get(key);
    if (!job) return kWorkPriorityLevels - 1;
    // An execution left unreported (a busy round deferred the report, and maybe the acceptance):
    // the next round reports its start, like a Starting Job's.
    const statemachine::State state = job->state();
    if ((state == statemachine::State::kScheduling || state == statemachine::State::kResolving) &&
        reconciler->HasUnreportedExecution(key)) {
      return WorkPriority(statemachine::State::kStarting);
    }
    return WorkPriority(state);
  };
  // Each namespace takes its turn within a level: a tenant's flood of new Jobs queues behind
  // itself, not in front of another namespace's Jobs (test/kube/workqueue_test.cc; measured by
  // bench/flood/flood_bench.cc).
  options.shareOf = [](const std::string& key) { return key.substr(0, key.find('/')); };
  return options;
}

void JobController::WakeJobsWaitingOn(const std::string& target) {
  if (!started_.load()) return;
  auto keys = cache_->jobs.IndexKeys(kWaitsOnIndex, target);
  if (keys.empty()) return;
  WaitingJobWakeups(metrics_).Inc(static_cast<double>(keys.size()));
  for (const auto& key : keys) {
    if (options_.onWake) options_.onWake(key, target);
    queue_->Add(key);
  }
}

void JobController::WakeJobsOfClass(const api::JobClass& old, const api::JobClass& now) {
  const std::string& name = now.metadata.name;
  WakeJobsWaitingOn(WaitTarget("JobClass", name));
  // Jobs without a class name resolve to a default: the cluster's when this class is (or was)
  // one, or their namespace's when it names this class.
  auto isDefault = [](const api::JobClass& c) {
    auto it = c.metadata.annotations.find(api::kIsDefaultClassAnnotation);
    return it != c.metadata.annotations.end() && it->second == "true";
  };
  if (isDefault(old) || isDefault(now)) WakeJobsWaitingOn(kWaitsOnDefaultJobClass);
  std::vector<std::string> namespaces;
  cache_->namespaces.ForEach([&](const std::string& ns, const NamespaceInfo& info) {
    if (info.defaultJobClass == name) namespaces.push_back(ns);
  });
  for (const auto& ns : namespaces) WakeJobsWaitingOn(WaitTarget("Namespace", ns));
}

void JobController::WakeJobsOfParameters(const std::string& kind, const std::string& name) {
  for (const auto& c : cache_->jobClasses.List()) {
    const auto& ref = c->spec.parametersRef;
    if (ref && ref->kind == kind && ref->name == name) WakeJobsOfClass(*c, *c);
  }
}

void JobController::Enqueue(const std::string& ns, const std::string& name) {
  queue_->Add(Key(ns, name));
}

void JobController::RegisterMetrics() {
  metrics_.AddCollector([this](obs::Registry& r) {
    std::map<std::string, int> byState;
    for (int s = 0; s <= static_cast<int>(statemachine::State::kDeleting); ++s) {
      byState[statemachine::StateName(static_cast<statemachine::State>(s))] = 0;
    }
    cache_->jobs.ForEach([&](const std::string&, const CachedJob& job) {
      byState[statemachine::StateName(job.state())]++;
    });
    for (const auto& [state, n] : byState) {
      r.GetGauge(obs::metrics::kJobs, {{"state", state}}).Set(n);
    }
    r.GetGauge(obs::metrics::kWorkqueueDepth).Set(static_cast<double>(queue_->Len()));
    r.GetGauge(obs::metrics::kWorkqueueWaiting).Set(static_cast<double>(queue_->WaitingLen()));
  });
}

Status JobController::Start(const std::stop_token& cancel) {
  if (stopped_.load() || started_.exchange(true)) {
    return {StatusCode::kFailedPrecondition,
            "a JobController starts once (a replica that stops working ends its process)"};
  }
  cache_->Start();
  std::string notSynced;
  if (!cache_->WaitForSync(options_.syncTimeout, &notSynced, cancel)) {
    if (cancel.stop_requested()) return {StatusCode::kCancelled, "stopped while starting"};
    return {StatusCode::kDeadlineExceeded,
            "informers did not sync within the timeout: " + notSynced +
                " (are the CRDs installed and may this user list them?)"};
  }
  adaptersStarted_ = true;
  for (const auto& [descriptor, adapter] : registry_.All()) {
    Status s = adapter->Start([this](const std::string& ns, const std::string& job) {
      if (!crashed_.load()) queue_->Add(Key(ns, job));
    });
    // Unavailable: its caches are not synced yet, and it works meanwhile (reading from its
    // backend until they are), so a warning; anything else is an error.
    if (s.code() == StatusCode::kUnavailable) {
      obs::Warn("adapter not fully started",
                {{"adapter", adapter->Name()}, {"error", s.ToString()}});
    } else if (!s.ok()) {
      obs::Error("adapter did not start", {{"adapter", adapter->Name()}, {"error", s.ToString()}});
    }
  }
  for (const auto& key : cache_->jobs.Keys()) queue_->Add(key);
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
  ready_ = true;
  obs::Info("controller ready",
            {{"jobs", static_cast<int64_t>(cache_->jobs.Size())}, {"workers", options_.workers}});
  return Status::Ok();
}

void JobController::StopTakingWork() {
  takingWork_ = false;
  queue_->ShutDown();
}

void JobController::Stop() {
  if (stopped_.exchange(true)) return;
  ready_ = false;
  StopTakingWork();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  workers_.clear();
  if (adaptersStarted_) {
    for (const auto& [descriptor, adapter] : registry_.All()) adapter->Stop();
  }
  cache_->Stop();
}

void JobController::Worker() {
  while (true) {
    auto item = queue_->Get();
    if (item.shutdown) return;
    if (crashed_.load() || !takingWork_.load()) {
      queue_->Done(item.key);
      return;
    }
    auto slash = item.key.find('/');
    std::string ns = slash == std::string::npos ? "" : item.key.substr(0, slash);
    std::string name = slash == std::string::npos ? item.key : item.key.substr(slash + 1);
    ReconcileResult r;
    try {
      r = reconciler_->Reconcile(ns, name);
    } catch (...) {
      // Whatever a round throws (a malformed object a decoder let through, bad_alloc, a bug)
      // must not end this worker, which would leave the queue to the others and then to none
      // (controller-runtime's RecoverPanic): the Job is retried with backoff like a failed round.
      ReportReconcileException(metrics_, ns, name);
      r.backoff = true;
    }
    if (r.crashed) {
      crashed_ = true;
      queue_->Done(item.key);
      queue_->ShutDown();
      return;
    }
    if (r.backoff) {
      metrics_.GetCounter(obs::metrics::kWorkqueueRetries).Inc();
      queue_->AddRateLimited(item.key);
    } else {
      queue_->Forget(item.key);
    }
    if (r.requeueAfter) {
      queue_->AddAfter(item.key, std::max(std::chrono::seconds(0), *r.requeueAfter) +
                                     std::chrono::milliseconds(200));
    }
    queue_->Done(item.key);
  }
}

}  // namespace ayatori::controller
