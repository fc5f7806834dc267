// One reconcile round of one Job, exactly as statemachine.h § Protocol describes it: start from
// the cache's (compact, possibly stale) copy; resolve while needed, from the cache; ask the pure
// state machine what to do; write the finalizer and the status it decides (resourceVersion
// preconditions, so a decision on a stale copy never lands) and record its Events; GET the Job
// before an Ensure unless this round already wrote it, and decide again if it changed; make the
// one adapter call the plan names, feed the observation back, repeat; a TTL deletion rechecks a
// fresh GET and deletes that UID only. API writes are counted by kind in
// ayatori_job_api_writes_total; tests count them per Job with a KubeClient decorator
// (test/support/counting_kube_client.h). test/statemachine/ runs this code against fakes. What a
// reconciler remembers between rounds (own writes, unreported executions, ...) is in
// job_tables.h.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/registry.h"
#include "ayatori/clock.h"
#include "ayatori/kube_client.h"
#include "controller/cluster_cache.h"
#include "controller/job_tables.h"
#include "controller/reference_reader.h"
#include "controller/workloads.h"
#include "obs/metrics.h"
#include "statemachine/statemachine.h"

namespace ayatori::kube {
class EventRecorder;
}

namespace ayatori::controller {

// Named points where a test can make the controller "crash": the round stops there, without any
// further write or call, as if the process had died.
inline constexpr const char* kCrashAfterEnsure = "after-ensure";  // before the status write
inline constexpr const char* kCrashAfterCancel = "after-cancel";
inline constexpr const char* kCrashAfterDelete = "after-delete";  // before finalizer removal
inline constexpr const char* kCrashBeforeStatusWrite = "before-status-write";

struct ReconcileResult {
  std::optional<std::chrono::seconds> requeueAfter;
  bool backoff = false;  // retry with the per-item exponential backoff
  bool crashed = false;  // a test crash point fired
  Status error;          // why the round ended early (for logs)
};

struct ReconcilerOptions {
  // Test hook: returns true to crash at `point` for `job`.
  std::function<bool(std::string_view point, const api::Job& job)> crashHook;
  // Upper bound of decide/act iterations in one round (a safety net; the protocol needs ≤ 5).
  int maxSteps = 12;
  // The controller's namespace: the backend snapshots are stored and read there
  // (backend_snapshot.h). It must exist; the controller never creates namespaces.
  std::string controllerNamespace = kDefaultControllerNamespace;
  // True while the controller has a backlog (other Jobs wait in its queue): a create may then
  // carry the Job's acceptance instead of a write of its own (statemachine::Facts::backlog).
  // Unset: never.
  std::function<bool()> backlog;
  // Queueing through Kueue (--kueue; docs/queueing.md): the Jobs that name a LocalQueue wait for
  // their Workload's admission, whose Workloads this controller creates, watches and finishes.
  // Off: the queue label is ignored (statemachine.h § Queueing).
  bool kueue = false;
};

class JobReconciler {
 public:
  JobReconciler(KubeClient& client, const ClusterCache& cache,
                const adapters::AdapterRegistry& registry, const Clock& clock,
                obs::Registry& metrics, kube::EventRecorder* events, ReconcilerOptions options);

  ReconcileResult Reconcile(const std::string& ns, const std::string& name);

  // The Job of this key has an execution whose report a round could not write
  // (JobTables::HasUnreportedExecution): its next round writes it.
  bool HasUnreportedExecution(const std::string& key) const {
    return tables_.HasUnreportedExecution(key);
  }

 private:
  struct RoundState;
  struct CreateConfirmation;
  struct Turn;
  // Decides and carries out plans until one ends the round: each part of a plan (its status
  // write, finalizer, Events, TTL deletion, adapter call, requeue) has a method below.
  ReconcileResult Step(RoundState& round);
  // Decide on round.job and round.facts; an acceptance the plan leaves unwritten goes into
  // round.job.status (and round.unwrittenAcceptance), so that the round goes on as if written.
  statemachine::Plan DecideNext(RoundState& round);
  // A plan whose status breaks an invariant (statemachine/invariants.h) ends the round.
  Turn RefuseBrokenInvariants(const api::Job& job, const statemachine::Plan& plan);
  Turn AddFinalizer(RoundState& round, const statemachine::Plan& plan);
  // The plan's status, preconditioned on round.job's resourceVersion.
  Turn WritePlannedStatus(RoundState& round, const statemachine::Plan& plan);
  // The last step of a deleted Job's cleanup.
  ReconcileResult RemoveFinalizer(const api::Job& job);
  ReconcileResult DeleteExpired(const RoundState& round, const statemachine::Plan& plan);
  // Queueing on: the Job's Workload from the cache into round.facts.queue (TakeWorkload).
  void TakeCachedWorkload(RoundState& round);
  void TakeWorkload(RoundState& round, std::shared_ptr<const nlohmann::json> workload, bool fresh);
  // A plan that gives quota back (kClearReservation, kFinish) on a copy not read this round reads
  // the Job first, and decides again if it changed.
  Turn ReadJobBeforeWorkloadRelease(RoundState& round, const statemachine::Plan& plan);
  // The plan's Workload action: kRead decides again with the Workload read now; a write that is
  // refused sets round.workloadRefused (statemachine.h § Queueing).
  Turn ApplyWorkloadAction(RoundState& round, const statemachine::Plan& plan);
  Status WriteWorkload(const RoundState& round, const statemachine::Plan& plan);
  // The LocalQueue of a queued Job: its label, else the default of the class it was accepted
  // with ("" when neither is there any more: the create then fails and is retried).
  std::string QueueNameOf(const api::Job& job) const;
  // The parameters of an Ensure of `job`: for a queued Job whose adapter is placedByFlavors, with
  // the nodeLabels and tolerations of the flavors its Workload was admitted on (read now).
  StatusOr<nlohmann::json> PlacedOnAdmittedFlavors(const api::Job& job, nlohmann::json parameters);
  // The round goes on with the Job as the API server has it now (TakeFreshJob): decides again
  // if it changed, ends if it is gone.
  Turn ReadJobNow(RoundState& round);
  // An Ensure planned on a compact copy (!round.taskComplete) reads the whole Job first.
  Turn ReadWholeTaskForEnsure(RoundState& round, const statemachine::Plan& plan);
  // The one adapter call the plan names; its observation is the next Decide's CallResult.
  Turn CallPlannedAdapter(RoundState& round, const statemachine::Plan& plan);
  // An Ensure whose confirmCreate found the Job changed created nothing: the round goes on with
  // the Job as read then.
  Turn TakeUnconfirmedJob(RoundState& round, CreateConfirmation confirmation);
  // Continues the round with `current`, read from the API server (sets round.changed when its
  // resourceVersion differs): keeps an unwritten acceptance that an execution may hold, drops
  // one decided on the older copy, and resolves the Job if it now needs it.
  Status TakeFreshJob(RoundState& round, api::Job current);
  // ExecutionRequest::confirmCreate of an Ensure of `decided`: the quorum GET right before the
  // create; OK only for the same UID at the same resourceVersion.
  Status ConfirmCreate(const api::Job& decided, CreateConfirmation& confirmation);
  StatusOr<api::Job> PatchFinalizers(const api::Job& job,
                                     const std::vector<std::string>& finalizers);
  StatusOr<api::Job> WriteStatus(const api::Job& job, const api::JobStatus& status);
  Status DeleteExpiredJob(const api::Job& job, api::Time now);
  // The Job as the API server has it now, if it is still the Job of `uid`: nullopt when it is
  // gone or a new Job took its name (that one has its own events and rounds).
  StatusOr<std::optional<api::Job>> ReadCurrentJob(const std::string& ns, const std::string& name,
                                                   const std::string& uid);
  // acceptanceUnwritten: job.status holds an acceptance not written yet (RoundState); an Ensure
  // of an adapter that records acceptances then stores it with the execution.
  // confirmation: for an Ensure, what its confirmCreate learned (nullptr: no confirmation asked).
  StatusOr<Observation> CallAdapter(statemachine::AdapterCall call, const api::Job& job,
                                    bool acceptanceUnwritten = false,
                                    CreateConfirmation* confirmation = nullptr);
  struct CallTarget;
  StatusOr<CallTarget> CallTargetOf(const api::Job& job);
  // adapter.Ensure(request), confirmed by ConfirmCreate when `confirmation` is given.
  Observation EnsureConfirmed(Adapter& adapter, const api::Job& job, ExecutionRequest& request,
                              CreateConfirmation* confirmation);
  // The call's latency and unknown outcomes in the metrics, and its outcome in the log.
  void RecordAdapterCall(const Adapter& adapter, statemachine::AdapterCall call,
                         const api::Job& job, const Observation& result,
                         std::chrono::duration<double> took);
  // ResolveJob, then for a resolved Job stores its backend snapshot, so that the status write
  // recording acceptance never names a snapshot that does not exist. A missing namespace or a
  // conflicting object keeps the Job pending (Accepted=False) with a reason; other API errors end
  // the round (retried with backoff).
  StatusOr<statemachine::Resolution> Resolve(const api::Job& job);
  // Sets round.facts.resolution for a Job that needs resolution. From a compact copy
  // (!round.taskComplete) the copy decides only a wait; any other outcome is decided on the Job
  // read from the API server, which then replaces round.job. *gone: that read found no such Job.
  Status ResolveWholeTask(RoundState& round, bool* gone);
  StatusOr<ExecutionRequest> BuildRequest(const api::Job& job, nlohmann::json parameters,
                                          bool acceptanceUnwritten);
  static ExecutionKey BuildKey(const api::Job& job, nlohmann::json parameters);
  // The parameters an adapter call of `job` gets: the parameters object it was accepted with
  // (same uid) as the cache has it now, else {}, overlaid with the fields of its backend
  // snapshot. kFailedPrecondition: the snapshot is gone (or does not hold what its name stands
  // for); the Job must not fall back to the current parameters.
  StatusOr<nlohmann::json> ParametersFor(const api::Job& job);
  StatusOr<std::shared_ptr<const BackendSnapshot>> ReadBackendSnapshot(const std::string& name);
  void RecordEvents(const api::Job& job, const std::vector<statemachine::Event>& events);
  void CountWrite(const char* what);
  bool Crash(std::string_view point, const api::Job& job) const;
  // The startTimeoutSeconds of the JobClass `resolved` names, if it is still that class.
  std::optional<std::chrono::seconds> StartTimeoutOf(const api::ResolvedJobClass& resolved) const;
  // For a Job whose acceptance is not written and that this process does not remember: the
  // acceptance an adapter recorded with its execution (AdapterDescriptor::recordsAcceptance),
  // written there by a process that stopped before it wrote the status. Asked of every adapter
  // that records acceptances, since the Job's class may name another backend by now.
  StatusOr<std::optional<api::JobStatus>> RecordedAcceptance(const api::Job& job);

  KubeClient& client_;
  const ClusterCache& cache_;
  const adapters::AdapterRegistry& registry_;
  const Clock& clock_;
  obs::Registry& metrics_;
  kube::EventRecorder* events_;
  ReconcilerOptions options_;

  JobTables tables_;            // what rounds remember between them
  ReferenceReader references_;  // GETs of referenced Secrets/ConfigMaps, forwarding adapters only
  WorkloadClient workloads_;    // the Workloads of queued Jobs (options_.kueue)
};

}  // namespace ayatori::controller
