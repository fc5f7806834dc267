// The Kubernetes execution adapter: one batch/v1 Job per Ayatori Job, in the Job's namespace,
// named "ayj-<Job UID>", controlled by the Ayatori Job (ownerReference), run once (backoffLimit 0,
// restartPolicy Never). Secret and ConfigMap env stay references resolved by the kubelet: this
// adapter never reads their values.
//
//   kube::RestClient& client = ...;
//   KubernetesAdapter adapter(client, {.clock = &clock});
//   adapter.Start([&](const std::string& ns, const std::string& name) { queue.Add(ns + "/" + name);
//   }); Observation o = adapter.Ensure(request);
//
// Requests per Job on the happy path: Ensure = 1 create; Observe = 0 (watch caches) plus one
// fresh GET of the pod before a terminal answer; Delete = 1 delete (+ 1 get without a recorded
// reference). Start() runs three informers: batch Jobs and pods carrying the label
// execution.ayatori.ddupan.top/job-uid (all namespaces, or options.namespace_ / .namespaces), and
// core/v1 Events with reason FailedCreate about batch Jobs (why a pod was not created: quota,
// admission, a missing service account or PriorityClass); their changes call notify(namespace,
// Ayatori Job name). Without Start() every call reads fresh from the apiserver (and cannot tell
// FailedCreate).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/kubernetes/observation.h"
#include "ayatori/clock.h"
#include "ayatori/kube_client.h"
#include "kube/informer.h"
#include "kube/resource.h"

namespace ayatori::adapters::kubernetes {

struct KubernetesAdapterOptions {
  const Clock* clock = nullptr;  // nullptr = SystemClock
  std::string fieldManager = "ayatori";
  // Namespace the watches cover; "" = all namespaces.
  std::string namespace_;
  // Several namespaces instead (namespace_ unused): one watch each (--watch-namespaces).
  std::vector<std::string> namespaces;
  // Start() waits this long for the first lists of the watch caches.
  std::chrono::milliseconds syncTimeout{30000};
  // One line per problem worth an operator's attention; nullptr = stderr.
  std::function<void(const std::string&)> log;
  // GET of an API path whose body is streamed (kube::RestClient::StreamPath), for the pod's
  // log subresource, ended early when `stop` is requested (the log reader left, LogOptions::stop);
  // nullptr: StreamLogs answers kFailedPrecondition.
  std::function<Status(std::string_view path, std::stop_token stop,
                       const std::function<bool(std::string_view)>& onData)>
      streamPath;
};

// The built-in kinds it reads and writes (the Job controller records FailedCreate in v1 events).
using kube::BatchJobsResource;
using kube::CoreEventsResource;
using kube::PodsResource;

class KubernetesAdapter final : public Adapter {
 public:
  // `client` must outlive the adapter.
  explicit KubernetesAdapter(KubeClient& client, KubernetesAdapterOptions options = {});
  ~KubernetesAdapter() override;
  KubernetesAdapter(const KubernetesAdapter&) = delete;
  KubernetesAdapter& operator=(const KubernetesAdapter&) = delete;

  std::string Name() const override { return "kubernetes"; }
  // Once per adapter: a second Start(), or one after Stop(), is refused (kFailedPrecondition).
  Status Start(std::function<void(const std::string&, const std::string&)> notify) override;
  // Final: ends the watches and the timer thread. Idempotent.
  void Stop() override;
  // Pure: the parameters decode, the labels/annotations/nodeSelector they add are valid, the Job
  // has an identity and an image.
  Status Validate(const ExecutionRequest& request) override;
  // PinnedParameters: none (the default). No parameter chooses where the batch Job goes: always
  // the Job's namespace of the cluster `client` talks to.

  // Creates the batch Job (one POST). AlreadyExists -> GET it and adopt it only if it carries
  // this UID's label and a controller ownerReference to this Job; otherwise kFailed
  // BackendRejected: the name is derived from the UID, so the object is a stranger's (or a
  // tampered one) and we neither run it as ours nor create anything else. The apiserver refusing
  // the object (400/422) is kFailed BackendRejected; anything else (403 quota or terminating
  // namespace, 5xx, transport) is kUnknown and the next Ensure finds or creates it.
  Observation Ensure(const ExecutionRequest& request) override;
  Observation Observe(const ExecutionKey& key) override;
  // The acceptance annotation of the batch Job of `uid`, if the watch cache has one owned by that
  // UID and carrying it: then one GET reads it (the cache keeps only that it is there). Before
  // the cache is synced (Start waits for it, up to syncTimeout), the GET answers alone; a 403
  // answers "none" (without the RBAC to read batch Jobs none was created by this identity).
  StatusOr<std::optional<std::string>> RecordedAcceptance(const std::string& ns,
                                                          const std::string& uid) override;
  // Deletes the batch Job with propagationPolicy=Background (a plain delete orphans the pod),
  // unless the execution already ended by itself (that result is returned). Then reports what is
  // left: kPending/kRunning while a pod has not terminated, kCancelled once none runs, or the
  // pod's own result if it finished before the deletion was requested (success wins).
  Observation Cancel(const ExecutionKey& key) override;
  // Deletes the batch Job (Background); OK when no batch Job of ours is left and no pod of the
  // UID is still running. Never deletes a batch Job that is not ours.
  Status Delete(const ExecutionKey& key) override;
  // The log of the newest pod of the UID's batch Job (IsPodOfBatchJob: a pod that only copies the
  // label is never read) through the apiserver's pods/log (which the kubelet serves); kNotFound
  // when no such pod is left.
  Status StreamLogs(const ExecutionKey& key, const LogOptions& options,
                    const LogSink& sink) override;

 private:
  // Start's parts: the watches of batch Jobs, pods and FailedCreate Events with their indexes;
  // then the handlers that wake a Job when a fact its observation reads changes.
  void BuildInformers();
  void AddWakeUps();
  struct Fresh {
    std::optional<nlohmann::json> batchJob;  // ours only; a stranger's Job reads as absent
    std::string foreignUid;                  // uid of a stranger's Job with our name
    std::vector<nlohmann::json> pods;
    // Without our batch Job: its orphaned pods (IsOrphanOfBatchJob), for Cancel to stop.
    std::vector<nlohmann::json> orphans;
  };
  // The batch Job of `uid` (if ours) and the pods of that batch Job: IsPodOfBatchJob with the
  // live batch Job's uid, else `recordedBatchJobUid` (status.execution.references; may be empty).
  StatusOr<Fresh> ReadFresh(const std::string& ns, const std::string& uid,
                            const std::string& recordedBatchJobUid);
  Observation ObserveFresh(const ExecutionKey& key, std::chrono::seconds pullTimeout);
  Observation ObserveFromFresh(const Fresh& fresh, std::chrono::seconds pullTimeout,
                               const std::string& expectedUid);
  std::optional<Observation> ObserveCached(const ExecutionKey& key,
                                           std::chrono::seconds pullTimeout);
  // A result the watch cache shows, confirmed by one fresh GET of the pod it came from;
  // nullopt when that GET does not confirm it (the caller then reads everything fresh).
  std::optional<Observation> ConfirmResultFromPod(const ExecutionKey& key, const BatchJobFacts& job,
                                                  const std::vector<PodFacts>& cachedPods,
                                                  std::chrono::seconds pullTimeout);
  bool CachesSynced() const;
  // ExplainMissingPod with the newest cached FailedCreate Event of the batch Job, if it has no pod.
  Observation WithFailedCreate(Observation o, const BatchJobFacts& job,
                               const std::vector<PodFacts>& pods) const;
  api::Time Now() const;
  void Log(const std::string& line) const;
  // Wakes the controller when an image-pull timeout expires (no Kubernetes event says so).
  void NotifyAt(api::Time when, const std::string& ns, const std::string& name);
  // NotifyAt the image-pull timeout of every pod waiting for its image.
  void WakeAtPullTimeouts(const std::vector<PodFacts>& pods, std::chrono::seconds pullTimeout,
                          const ExecutionKey& key);
  void TimerLoop(const std::stop_token& stop);

  KubeClient& client_;
  const KubernetesAdapterOptions options_;
  const Clock& clock_;

  std::function<void(const std::string&, const std::string&)> notify_;
  std::unique_ptr<kube::Informer<BatchJobFacts>> jobs_;
  std::unique_ptr<kube::Informer<PodFacts>> pods_;
  std::unique_ptr<kube::Informer<FailedCreateFacts>> failedCreates_;
  bool stopped_ = false;  // Start and Stop come from one thread (the controller's)

  std::mutex timerMu_;
  std::condition_variable_any timerCv_;
  std::multimap<api::Time, std::pair<std::string, std::string>> timers_;
  std::jthread timerThread_;
};

}  // namespace ayatori::adapters::kubernetes
