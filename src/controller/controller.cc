#include "controller/controller.h"

#include "api/json.h"
#include "controller/kinds.h"
#include "obs/log.h"

namespace ayatori::controller {
namespace {

std::string Key(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

kube::InformerOptions Named(const char* name) {
  kube::InformerOptions o;
  o.name = name;
  o.log = [](const std::string& line) { obs::Warn(line); };
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
  auto entry = CachedJob::Encode(CompactJobForCache(std::move(*job)));
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

// Keeps the key names only: Secret values never enter the cache.
std::shared_ptr<const ReferencedObjectInfo> DecodeReferenced(const nlohmann::json& j) {
  ReferencedObjectInfo info;
  if (j.contains("type") && j["type"].is_string()) info.type = j["type"].get<std::string>();
  for (const char* field : {"data", "binaryData"}) {
    if (!j.contains(field) || !j[field].is_object()) continue;
    for (const auto& [k, v] : j[field].items()) info.keys.insert(k);
  }
  return std::make_shared<const ReferencedObjectInfo>(std::move(info));
}

std::function<std::shared_ptr<const nlohmann::json>(const nlohmann::json&)> DecodeParameters(
    std::string endpointOverride) {
  return [endpointOverride](const nlohmann::json& j) {
    auto copy = std::make_shared<nlohmann::json>(j);
    if (!endpointOverride.empty() && copy->value("kind", "") == "DockerExecutionParameters") {
      (*copy)["spec"]["endpoint"] = endpointOverride;
    }
    return std::shared_ptr<const nlohmann::json>(std::move(copy));
  };
}

}  // namespace

api::Job CompactJobForCache(api::Job job) {
  job.metadata.generateName.clear();
  job.metadata.labels.clear();
  job.metadata.ownerReferences.clear();
  std::erase_if(job.metadata.annotations,
                [](const auto& a) { return a.first != api::kConfirmBackendLostAnnotation; });
  if (!statemachine::NeedsResolution(job)) {
    api::TaskSpec compact;
    compact.image = std::move(job.spec.task.image);
    job.spec.task = std::move(compact);
    job.spec.resources.reset();
  }
  return job;
}

InformerClusterCache::InformerClusterCache(KubeClient& client, std::string dockerEndpointOverride,
                                           const std::string& controllerNamespace)
    : jobs(client, kJobs, Named("jobs"), DecodeJob),
      jobClasses(client, kJobClasses, Named("jobclasses"), DecodeJobClass),
      kubernetesParameters(client, kKubernetesParameters, Named("kubernetesexecutionparameters"),
                           DecodeParameters("")),
      openSandboxParameters(client, kOpenSandboxParameters, Named("opensandboxexecutionparameters"),
                            DecodeParameters("")),
      dockerParameters(client, kDockerParameters, Named("dockerexecutionparameters"),
                       DecodeParameters(dockerEndpointOverride)),
      namespaces(client, kNamespaces, Named("namespaces"), DecodeNamespace),
      secrets(client, kSecrets, Named("secrets"), DecodeReferenced),
      configMaps(client, kConfigMaps, Named("configmaps"), DecodeReferenced),
      backendSnapshots(client, kConfigMaps, SnapshotsIn(controllerNamespace),
                       DecodeBackendSnapshot),
      controllerNamespace_(controllerNamespace) {}

void InformerClusterCache::Start() {
  jobs.Start();
  jobClasses.Start();
  kubernetesParameters.Start();
  openSandboxParameters.Start();
  dockerParameters.Start();
  namespaces.Start();
  secrets.Start();
  configMaps.Start();
  backendSnapshots.Start();
}

void InformerClusterCache::Stop() {
  jobs.Stop();
  jobClasses.Stop();
  kubernetesParameters.Stop();
  openSandboxParameters.Stop();
  dockerParameters.Stop();
  namespaces.Stop();
  secrets.Stop();
  configMaps.Stop();
  backendSnapshots.Stop();
}

bool InformerClusterCache::WaitForSync(std::chrono::milliseconds timeout,
                                       std::string* notSynced) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remaining = [&] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  std::vector<std::pair<const char*, bool>> results = {
      {"jobs", jobs.WaitForSync(remaining())},
      {"jobclasses", jobClasses.WaitForSync(remaining())},
      {"kubernetesexecutionparameters", kubernetesParameters.WaitForSync(remaining())},
      {"opensandboxexecutionparameters", openSandboxParameters.WaitForSync(remaining())},
      {"dockerexecutionparameters", dockerParameters.WaitForSync(remaining())},
      {"namespaces", namespaces.WaitForSync(remaining())},
      {"secrets", secrets.WaitForSync(remaining())},
      {"configmaps", configMaps.WaitForSync(remaining())},
      {"backend snapshots", backendSnapshots.WaitForSync(remaining())},
  };
  notSynced->clear();
  for (const auto& [name, ok] : results) {
    if (!ok) *notSynced += (notSynced->empty() ? "" : ", ") + std::string(name);
  }
  return notSynced->empty();
}

std::shared_ptr<const api::Job> InformerClusterCache::GetJob(const std::string& ns,
                                                             const std::string& name) const {
  auto entry = jobs.Get(Key(ns, name));
  if (!entry) return nullptr;
  auto job = entry->Decode();
  if (!job.ok()) {
    obs::Error("cannot decode a cached Job",
               {{"namespace", ns}, {"name", name}, {"error", job.status().message()}});
    return nullptr;
  }
  return std::make_shared<const api::Job>(std::move(*job));
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
  if (kind == "KubernetesExecutionParameters") return kubernetesParameters.Get(name);
  if (kind == "OpenSandboxExecutionParameters") return openSandboxParameters.Get(name);
  if (kind == "DockerExecutionParameters") return dockerParameters.Get(name);
  return nullptr;
}

std::string InformerClusterCache::NamespaceDefaultJobClass(const std::string& ns) const {
  auto info = namespaces.Get(ns);
  return info ? info->defaultJobClass : "";
}

std::shared_ptr<const ReferencedObjectInfo> InformerClusterCache::GetSecret(
    const std::string& ns, const std::string& name) const {
  return secrets.Get(Key(ns, name));
}

std::shared_ptr<const ReferencedObjectInfo> InformerClusterCache::GetConfigMap(
    const std::string& ns, const std::string& name) const {
  return configMaps.Get(Key(ns, name));
}

std::shared_ptr<const BackendSnapshot> InformerClusterCache::GetBackendSnapshot(
    const std::string& name) const {
  return backendSnapshots.Get(Key(controllerNamespace_, name));
}

JobController::JobController(KubeClient& client, adapters::AdapterRegistry& registry,
                             const Clock& clock, obs::Registry& metrics,
                             kube::EventRecorder* events, ControllerOptions options)
    : registry_(registry),
      clock_(clock),
      metrics_(metrics),
      options_(std::move(options)),
      cache_(std::make_unique<InformerClusterCache>(client, options_.dockerEndpointOverride,
                                                    options_.reconciler.controllerNamespace)),
      reconciler_(std::make_unique<JobReconciler>(client, *cache_, registry, clock, metrics, events,
                                                  options_.reconciler)),
      queue_(std::make_unique<kube::Workqueue>(clock, options_.queue)) {
  using JobPtr = kube::Informer<CachedJob>::Ptr;
  cache_->jobs.AddHandlers({
      .onAdd = [this](const std::string& key, const JobPtr&) { queue_->Add(key); },
      .onUpdate = [this](const std::string& key, const JobPtr&,
                         const JobPtr&) { queue_->Add(key); },
      .onDelete = [this](const std::string& key, const JobPtr&) { queue_->Add(key); },
  });
  // Whatever a waiting Job may be waiting for: wake the Jobs that are not accepted yet.
  auto wake = [this](const std::string&, const auto&) { EnqueueWaitingJobs(); };
  auto wakeUpdate = [this](const std::string&, const auto&, const auto&) { EnqueueWaitingJobs(); };
  cache_->jobClasses.AddHandlers({.onAdd = wake, .onUpdate = wakeUpdate, .onDelete = wake});
  for (auto* params :
       {&cache_->kubernetesParameters, &cache_->openSandboxParameters, &cache_->dockerParameters}) {
    params->AddHandlers({.onAdd = wake, .onUpdate = wakeUpdate, .onDelete = wake});
  }
  cache_->namespaces.AddHandlers({.onAdd = wake, .onUpdate = wakeUpdate, .onDelete = nullptr});
  cache_->secrets.AddHandlers({.onAdd = wake, .onUpdate = wakeUpdate, .onDelete = nullptr});
  cache_->configMaps.AddHandlers({.onAdd = wake, .onUpdate = wakeUpdate, .onDelete = nullptr});
  RegisterMetrics();
}

JobController::~JobController() { Stop(); }

void JobController::EnqueueWaitingJobs() {
  if (!started_.load()) return;
  std::vector<std::string> waiting;
  cache_->jobs.ForEach([&](const std::string& key, const CachedJob& job) {
    if (job.needsResolution()) waiting.push_back(key);
  });
  for (const auto& key : waiting) queue_->Add(key);
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
      r.GetGauge("ayatori_jobs", "Jobs in the cache by derived state.", {{"state", state}}).Set(n);
    }
    std::lock_guard lock(queueMu_);
    r.GetGauge("ayatori_workqueue_depth", "Job keys ready in the workqueue.")
        .Set(static_cast<double>(queue_->Len()));
    r.GetGauge("ayatori_workqueue_waiting", "Job keys waiting for a delayed requeue.")
        .Set(static_cast<double>(queue_->WaitingLen()));
  });
}

Status JobController::Start() {
  if (started_.exchange(true)) return Status::Ok();
  if (queue_->ShuttingDown()) {
    // Stop() shut the queue down to wake the workers, for good: a new term (this replica leads
    // again) needs a new queue. Nothing else touches it now: informers and adapters are stopped.
    std::lock_guard lock(queueMu_);
    queue_ = std::make_unique<kube::Workqueue>(clock_, options_.queue);
  }
  cache_->Start();
  std::string notSynced;
  if (!cache_->WaitForSync(options_.syncTimeout, &notSynced)) {
    return {StatusCode::kDeadlineExceeded,
            "informers did not sync within the timeout: " + notSynced +
                " (are the CRDs installed and may this user list them?)"};
  }
  for (const auto& [name, adapter] : registry_.All()) {
    Status s = adapter->Start([this](const std::string& ns, const std::string& job) {
      if (!crashed_.load()) queue_->Add(Key(ns, job));
    });
    if (!s.ok()) {
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

void JobController::Stop() {
  if (!started_.load()) return;
  ready_ = false;
  queue_->ShutDown();
  for (auto& w : workers_) {
    if (w.joinable()) w.join();
  }
  workers_.clear();
  for (const auto& [name, adapter] : registry_.All()) adapter->Stop();
  cache_->Stop();
  started_ = false;
}

void JobController::Worker() {
  while (true) {
    auto item = queue_->Get();
    if (item.shutdown) return;
    if (crashed_.load()) {
      queue_->Done(item.key);
      return;
    }
    auto slash = item.key.find('/');
    std::string ns = slash == std::string::npos ? "" : item.key.substr(0, slash);
    std::string name = slash == std::string::npos ? item.key : item.key.substr(slash + 1);
    ReconcileResult r = reconciler_->Reconcile(ns, name);
    if (r.crashed) {
      crashed_ = true;
      queue_->Done(item.key);
      queue_->ShutDown();
      return;
    }
    if (r.backoff) {
      metrics_.GetCounter("ayatori_workqueue_retries_total", "Job keys requeued with backoff.")
          .Inc();
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
