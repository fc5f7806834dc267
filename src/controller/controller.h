// The Job controller: informers on Jobs, JobClasses, the parameters kinds of the registered
// adapters (one informer per AdapterDescriptor::parameters), Namespaces and the metadata of
// Secrets/ConfigMaps (PartialObjectMetadata: never their content); a workqueue of Job keys; workers
// running JobReconciler; the adapters' notifications; metrics. A JobController works once: Start()
// when this replica leads (or at once without leader election), Stop() when the process ends. A
// replica that stops leading ends its process instead of stopping and starting again
// (docs/operations.md, "Leader election"), so nothing here restarts.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <stop_token>
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
  // The controller's namespace (backend snapshots) is reconciler.controllerNamespace.
  ReconcilerOptions reconciler;
  kube::WorkqueueOptions queue;
  std::chrono::milliseconds syncTimeout{60000};
  // The namespaces whose Jobs, Secrets and ConfigMaps are listed and watched (one watch each;
  // --watch-namespaces); empty = all namespaces. Jobs elsewhere are never seen. Cluster-scoped
  // kinds (JobClasses, parameters, Namespaces) are watched cluster-wide either way.
  std::vector<std::string> watchNamespaces;
  // Test hook: called for each waiting Job requeued because `target` (a WaitTargets value of
  // controller/resolver.h) changed.
  std::function<void(const std::string& jobKey, const std::string& target)> onWake;
};

// What the Job cache keeps (≤ 3 KiB per Job is the budget): once a Job no longer needs
// resolution, its task (argv, env, pull secrets) and requested resources are dropped, since the
// controller reads the Job fresh from the API server before the one call that needs them
// (Ensure), and effectiveResources in status carries the resources. A Job that needs resolution
// keeps its whole task while the task is small (kWholeTaskBytes); a larger one keeps only what
// its wait reads (the resolver before Validate, and WaitTargets): the class name, the env
// references (names, keys, optional) without literal values, imagePullSecrets, resources, and
// whether a command is set (one empty argument stands for it). The reconciler reads such a Job
// from the API server before a resolution that may accept it (ClusterCache::JobCopy). Owner
// references, annotations other than confirm-backend-lost and labels other than Kueue's
// queue-name and priority-class are never needed.
// `taskComplete` (when given) is set to whether the copy's spec.task is the Job's whole task.
api::Job CompactJobForCache(api::Job job, bool* taskComplete = nullptr);
// A waiting Job whose task (the sum of its strings, TaskBytes) is larger is cached compact.
inline constexpr size_t kWholeTaskBytes = size_t{8} * 1024;
// The bytes of a task's strings (image, argv, working dir, env names and values, references).
size_t TaskBytes(const api::TaskSpec& task);

// The workqueue's order (kube::WorkqueueOptions::priority), by what a Job's next round does, so
// that under a burst the rounds that make a Job start, or say that it started, are not queued
// behind the bookkeeping of Jobs already running or finished (docs/operations.md, "Start latency
// under a burst"): 0 = Starting (the execution exists; the round reports the start, and costs no
// request while the task is not running yet), 1 = Resolving, Queued and Scheduling (the round
// accepts the Job, waits on its Workload or creates its execution), 2 = the rest (results,
// cancellation, TTL, deletion; also a key whose Job is no longer cached).
inline constexpr int kWorkPriorityLevels = 3;
int WorkPriority(statemachine::State state);

// The Job informer's index of the Jobs that need resolution by what they wait on (WaitTargets in
// controller/resolver.h). Only waiting Jobs have entries.
inline constexpr const char* kWaitsOnIndex = "waits-on";

// The informer of one registered adapter's parameters kind (cluster-scoped objects, as JSON with
// the descriptor's specOverrides applied).
struct ParametersInformer {
  ParametersKind kind;
  std::unique_ptr<kube::Informer<nlohmann::json>> informer;
};

// A projection of a Namespace: only the default-job-class annotation.
struct NamespaceInfo {
  std::string defaultJobClass;
};

class InformerClusterCache final : public ClusterCache {
 public:
  // One parameters informer per adapter of `registry` that takes parameters.
  // `controllerNamespace`: where the backend snapshots are (backend_snapshot.h).
  // `watchNamespaces`: ControllerOptions::watchNamespaces.
  InformerClusterCache(KubeClient& client, const adapters::AdapterRegistry& registry,
                       const std::string& controllerNamespace,
                       const std::vector<std::string>& watchNamespaces = {}, bool kueue = false);
  void Start();
  void Stop();
  // False, with the informers not synced named in `notSynced`, on timeout or when `cancel` is
  // requested.
  bool WaitForSync(std::chrono::milliseconds timeout, std::string* notSynced,
                   const std::stop_token& cancel = {}) const;

  std::shared_ptr<const api::Job> GetJob(const std::string& ns,
                                         const std::string& name) const override;
  JobCopy GetJobCopy(const std::string& ns, const std::string& name) const override;
  std::shared_ptr<const api::JobClass> GetJobClass(const std::string& name) const override;
  std::vector<std::shared_ptr<const api::JobClass>> ListJobClasses() const override;
  std::shared_ptr<const nlohmann::json> GetParameters(const std::string& kind,
                                                      const std::string& name) const override;
  std::string NamespaceDefaultJobClass(const std::string& ns) const override;
  std::shared_ptr<const kube::ObjectMetadata> GetSecret(const std::string& ns,
                                                        const std::string& name) const override;
  std::shared_ptr<const kube::ObjectMetadata> GetConfigMap(const std::string& ns,
                                                           const std::string& name) const override;
  std::shared_ptr<const BackendSnapshot> GetBackendSnapshot(const std::string& name) const override;
  std::shared_ptr<const nlohmann::json> GetWorkload(const std::string& ns,
                                                    const std::string& name) const override;

  // The compact projection of each Job, deflated (see cached_job.h); GetJob inflates one.
  kube::Informer<CachedJob> jobs;
  kube::Informer<api::JobClass> jobClasses;
  // In registration order.
  std::vector<ParametersInformer> parameters;
  kube::Informer<NamespaceInfo> namespaces;
  // Metadata-only list/watch of every Secret and ConfigMap of the watched namespaces
  // (kube/object_metadata.h): they wake
  // the Jobs waiting for one and answer whether one exists; the content is never sent.
  kube::Informer<kube::ObjectMetadata> secrets;
  kube::Informer<kube::ObjectMetadata> configMaps;
  // Only the labelled ConfigMaps of the controller's namespace, with their values.
  kube::Informer<BackendSnapshot> backendSnapshots;
  // Kueue Workloads of the watched namespaces, only with queueing on (else null).
  std::unique_ptr<kube::Informer<nlohmann::json>> workloads;

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

  // Starts informers, waits for their first list (at most options.syncTimeout), starts the
  // adapters and the workers. Once per instance: a second call, or one after Stop(), is refused
  // (kFailedPrecondition). kDeadlineExceeded when the informers did not sync in time, kCancelled
  // when `cancel` was requested first; either way nothing works and Stop() remains to be called.
  Status Start(const std::stop_token& cancel = {});
  // Final: stops the workers (each after its current reconcile), the adapters and the
  // informers. Idempotent. Call it from the thread that called Start(), or after Start()
  // returned.
  void Stop();
  // Hands no further Job key to a worker, at once and without waiting for anything: for a
  // replica that lost its lease and is about to exit. Thread-safe.
  void StopTakingWork();

  bool Ready() const { return ready_.load(); }
  // A test crash point fired: this instance stopped working, as a killed process would.
  bool Crashed() const { return crashed_.load(); }
  const InformerClusterCache& cache() const { return *cache_; }
  void Enqueue(const std::string& ns, const std::string& name);

 private:
  void Worker();
  // The informers' event handlers, set once by the constructor: every Job event queues its key;
  // a change to something waiting Jobs wait on (WaitTargets in resolver.h) wakes those Jobs: the
  // Job informer indexes waiting Jobs by those objects, so an event costs a lookup, not a scan
  // of every Job. Events of an informer's first list are skipped: Start() queues every Job once
  // all informers have synced.
  void QueueJobEvents();
  // Every Workload event queues the key of the Job that owns it (queueing on).
  void QueueWorkloadEvents();
  void WakeJobsOnReferenceChanges();  // Secrets and ConfigMaps (metadata only)
  void WakeJobsOnNamespaceChanges();  // the default-class annotation
  void WakeJobsOnClassChanges();
  void WakeJobsOnParametersChanges();  // each parameters kind of the registered adapters
  // Requeues the Jobs indexed under a WaitTargets value (controller/resolver.h).
  void WakeJobsWaitingOn(const std::string& target);
  // A JobClass changed from `old` to `now` (the same object for an add or a delete): wakes the
  // Jobs that name it and those that may resolve to it as a default.
  void WakeJobsOfClass(const api::JobClass& old, const api::JobClass& now);
  // A parameters object changed: wakes the Jobs of every class that refers to it.
  void WakeJobsOfParameters(const std::string& kind, const std::string& name);
  void RegisterMetrics();
  // `options` with backlog() = "keys are ready in the queue", unless the caller set one.
  ReconcilerOptions WithBacklog(ReconcilerOptions options) const;
  // `options` ordered by what each Job's next round does (WorkPriority).
  kube::WorkqueueOptions WithPriority(kube::WorkqueueOptions options) const;

  adapters::AdapterRegistry& registry_;
  obs::Registry& metrics_;
  ControllerOptions options_;
  std::unique_ptr<InformerClusterCache> cache_;
  std::unique_ptr<JobReconciler> reconciler_;
  const std::unique_ptr<kube::Workqueue> queue_;
  std::vector<std::thread> workers_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> crashed_{false};
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> takingWork_{true};
  bool adaptersStarted_ = false;  // by Start(); read by Stop() on the same thread
};

}  // namespace ayatori::controller
