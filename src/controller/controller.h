// The Job controller: informers on Jobs, JobClasses, the parameters kinds, Namespaces and the
// key names of Secrets/ConfigMaps; a workqueue of Job keys; workers running JobReconciler; the
// adapters' notifications; metrics. Start() when this replica leads, Stop() when it no longer
// does.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/registry.h"
#include "ayatori/clock.h"
#include "ayatori/kube_client.h"
#include "controller/cached_job.h"
#include "controller/cluster_cache.h"
#include "controller/reconciler.h"
#include "kube/informer.h"
#include "kube/workqueue.h"
#include "obs/metrics.h"

namespace ayatori::kube {
class EventRecorder;
}

namespace ayatori::controller {

struct ControllerOptions {
  int workers = 4;
  // Replaces spec.endpoint of every DockerExecutionParameters (a controller run outside the
  // cluster next to a local dockerd, as in `make demo`).
  std::string dockerEndpointOverride;
  // The controller's namespace (backend snapshots) is reconciler.controllerNamespace.
  ReconcilerOptions reconciler;
  kube::WorkqueueOptions queue;
  std::chrono::milliseconds syncTimeout{60000};
};

// What the Job cache keeps (≤ 3 KiB per Job is the budget): once a Job no longer needs
// resolution, its task (argv, env, pull secrets) and requested resources are dropped, since the
// controller reads the Job fresh from the API server before the one call that needs them
// (Ensure), and effectiveResources in status carries the resources. Labels, owner references and
// annotations other than confirm-backend-lost are never needed.
api::Job CompactJobForCache(api::Job job);

// A projection of a Namespace: only the default-job-class annotation.
struct NamespaceInfo {
  std::string defaultJobClass;
};

class InformerClusterCache final : public ClusterCache {
 public:
  // `controllerNamespace`: where the backend snapshots are (backend_snapshot.h).
  InformerClusterCache(KubeClient& client, std::string dockerEndpointOverride,
                       const std::string& controllerNamespace);
  void Start();
  void Stop();
  bool WaitForSync(std::chrono::milliseconds timeout, std::string* notSynced) const;

  std::shared_ptr<const api::Job> GetJob(const std::string& ns,
                                         const std::string& name) const override;
  std::shared_ptr<const api::JobClass> GetJobClass(const std::string& name) const override;
  std::vector<std::shared_ptr<const api::JobClass>> ListJobClasses() const override;
  std::shared_ptr<const nlohmann::json> GetParameters(const std::string& kind,
                                                      const std::string& name) const override;
  std::string NamespaceDefaultJobClass(const std::string& ns) const override;
  std::shared_ptr<const ReferencedObjectInfo> GetSecret(const std::string& ns,
                                                        const std::string& name) const override;
  std::shared_ptr<const ReferencedObjectInfo> GetConfigMap(const std::string& ns,
                                                           const std::string& name) const override;
  std::shared_ptr<const BackendSnapshot> GetBackendSnapshot(const std::string& name) const override;

  // The compact projection of each Job, deflated (see cached_job.h); GetJob inflates one.
  kube::Informer<CachedJob> jobs;
  kube::Informer<api::JobClass> jobClasses;
  kube::Informer<nlohmann::json> kubernetesParameters;
  kube::Informer<nlohmann::json> openSandboxParameters;
  kube::Informer<nlohmann::json> dockerParameters;
  kube::Informer<NamespaceInfo> namespaces;
  kube::Informer<ReferencedObjectInfo> secrets;
  kube::Informer<ReferencedObjectInfo> configMaps;
  // Only the labelled ConfigMaps of the controller's namespace, with their values.
  kube::Informer<BackendSnapshot> backendSnapshots;

 private:
  std::string controllerNamespace_;
};

class JobController {
 public:
  JobController(KubeClient& client, adapters::AdapterRegistry& registry, const Clock& clock,
                obs::Registry& metrics, kube::EventRecorder* events, ControllerOptions options);
  ~JobController();
  JobController(const JobController&) = delete;
  JobController& operator=(const JobController&) = delete;

  // Starts informers, waits for their first list, starts the adapters and the workers.
  Status Start();
  // Stops workers (after their current round), informers and adapters. Idempotent.
  void Stop();

  bool Ready() const { return ready_.load(); }
  // A test crash point fired: this instance stopped working, as a killed process would.
  bool Crashed() const { return crashed_.load(); }
  const InformerClusterCache& cache() const { return *cache_; }
  uint64_t WritesFor(const std::string& uid) const { return reconciler_->WritesFor(uid); }
  void Enqueue(const std::string& ns, const std::string& name);

 private:
  void Worker();
  void EnqueueWaitingJobs();
  void RegisterMetrics();

  adapters::AdapterRegistry& registry_;
  const Clock& clock_;
  obs::Registry& metrics_;
  ControllerOptions options_;
  std::unique_ptr<InformerClusterCache> cache_;
  std::unique_ptr<JobReconciler> reconciler_;
  std::unique_ptr<kube::Workqueue> queue_;
  std::mutex queueMu_;  // guards replacing queue_ (Start after Stop) against the metrics collector
  std::vector<std::thread> workers_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> crashed_{false};
  std::atomic<bool> started_{false};
};

}  // namespace ayatori::controller
