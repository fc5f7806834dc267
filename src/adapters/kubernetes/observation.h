// What a batch/v1 Job and its pod say about the one execution of an Ayatori Job: pure functions,
// so every mapping rule is unit-tested without a cluster.
//
// Objects are first reduced to compact facts (BatchJobFacts, PodFacts: the few fields the mapping
// reads, a few hundred bytes) — that is also what the adapter's watch cache keeps — and the
// mapping works on facts. The *FromJson variants decode and map in one step.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"
#include "api/types.h"

namespace ayatori::adapters::kubernetes {

// Reference type written to status.execution.references: {type: Job, id: <batch Job uid>}.
inline constexpr const char* kReferenceType = "Job";

struct BatchJobFacts {
  std::string name;
  std::string uid;
  std::string jobUid;     // label execution.ayatori.ddupan.top/job-uid
  std::string jobName;    // the Ayatori Job's name (label, annotation or ownerReference)
  bool owned = false;     // IsOwnedBy(batch Job, jobUid)
  bool complete = false;  // condition Complete=True
  bool failed = false;    // condition Failed=True
  std::string failedReason, failedMessage;
  std::optional<api::Time> completionTime;
  // A pod was made at some point: active/failed/succeeded/terminating counts or uncounted pods.
  bool hadPods = false;
  // The batch Job carries the Ayatori Job's acceptance (kAcceptanceAnnotation); its text is not
  // kept here (read fresh when needed: KubernetesAdapter::RecordedAcceptance).
  bool acceptanceRecorded = false;
  bool operator==(const BatchJobFacts&) const = default;
};

// A core/v1 Event with reason FailedCreate about a batch/v1 Job (the Job controller could not
// create its pod), as the adapter's watch cache keeps it.
struct FailedCreateFacts {
  std::string jobName;  // involvedObject.name, the batch Job
  std::string jobUid;   // involvedObject.uid
  std::string message;
  std::optional<api::Time> lastSeen;  // lastTimestamp, else eventTime, else firstTimestamp
  bool operator==(const FailedCreateFacts&) const = default;
};

FailedCreateFacts FailedCreateFactsFromJson(const nlohmann::json& event);

enum class ContainerState { kNone, kWaiting, kRunning, kTerminated };

struct PodFacts {
  std::string name;
  std::string jobUid;   // label execution.ayatori.ddupan.top/job-uid
  std::string jobName;  // annotation execution.ayatori.ddupan.top/job-name (or label)
  // The controller ownerReference, when it is a batch/v1 Job (else both empty).
  std::string controllerName;
  std::string controllerUid;
  // Label batch.kubernetes.io/controller-uid (else the older controller-uid): the uid of the
  // batch Job whose controller made the pod. It stays when the pod is orphaned.
  std::string batchJobUidLabel;
  std::optional<api::Time> created;
  std::optional<api::Time> deleted;  // deletionTimestamp
  int64_t deletionGracePeriodSeconds = 0;
  std::string phase;                  // Pending, Running, Succeeded, Failed, Unknown
  std::string podReason, podMessage;  // status.reason/message (evicted, rejected by the node)
  // PodScheduled=False: its reason (Unschedulable, SchedulingGated) and the scheduler's message.
  std::string unschedulable, unschedulableMessage;
  // The main container ("main", else the first).
  ContainerState state = ContainerState::kNone;
  std::string reason, message;  // of the waiting or terminated state
  std::optional<int32_t> exitCode;
  std::optional<api::Time> startedAt, finishedAt;
  bool operator==(const PodFacts&) const = default;
};

BatchJobFacts BatchJobFactsFromJson(const nlohmann::json& batchJob);
PodFacts PodFactsFromJson(const nlohmann::json& pod);

// Observe: the execution as it stands.
//  - batch Job absent: kAbsent, unless pods of the UID are still there (their state is reported:
//    a pod still running is not "absent").
//  - the main container of the batch Job's pod decides:
//      running                                  -> kRunning, startedAt = state.running.startedAt
//      terminated exit 0                        -> kSucceeded, exitCode 0
//      terminated reason OOMKilled              -> kFailed OOMKilled (with the exit code)
//      terminated exit != 0                     -> kFailed ProcessFailed (with the exit code)
//      terminated ContainerStatusUnknown        -> kUnknown (the kubelet lost the container)
//      waiting ErrImagePull / ImagePullBackOff / InvalidImageName for at least
//        imagePullFailureTimeout since the pod was created
//                                               -> kFailed ImagePullFailed, no startedAt
//      waiting otherwise, or no container state -> kPending; reason and message say why when it
//        is held up (the waiting reason, e.g. CreateContainerConfigError, ImagePullBackOff with
//        the time it fails; PodScheduled=False: Unschedulable with the scheduler's message), no
//        reason while it is on its way (ContainerCreating, PodInitializing, not scheduled yet)
//    terminated states carry startedAt/finishedAt from the container state.
//  - pod Failed without a container state (evicted or rejected by the node) -> kFailed
//    BackendRejected with the pod's reason.
//  - no pod: batch Job Complete -> kSucceeded; the Job controller has not made the pod yet ->
//    kPending; a pod existed (counts, Failed condition) but is gone without a terminal state we
//    can read -> kUnknown PodLost (never a guess at failure).
// `expectedBatchJobUid`, when not empty, is the batch Job uid persisted in status: a batch Job
// with another uid is a different execution -> kUnknown ExecutionMismatch.
Observation ObserveExecution(const std::optional<BatchJobFacts>& batchJob,
                             const std::vector<PodFacts>& pods, api::Time now,
                             std::chrono::seconds imagePullFailureTimeout,
                             const std::string& expectedBatchJobUid = "");
Observation ObserveExecutionFromJson(const std::optional<nlohmann::json>& batchJob,
                                     const std::vector<nlohmann::json>& pods, api::Time now,
                                     std::chrono::seconds imagePullFailureTimeout,
                                     const std::string& expectedBatchJobUid = "");

// Cancel, after the batch Job was deleted (propagationPolicy=Background): what is left of the
// execution, judged from the pods still carrying the UID label.
//  - a pod not yet terminal -> its kPending / kRunning observation (still stopping);
//  - a container that exited 0 -> kSucceeded, whenever it happened (success wins, as on every
//    adapter: an exit 0 is the task's own result, a kill gives 137);
//  - a container that failed before the deletion was requested (no deletionTimestamp on the pod,
//    or finishedAt < deletionTimestamp - deletionGracePeriodSeconds with a grace period > 0: a
//    final delete with grace 0 moves deletionTimestamp and loses the request time) keeps its
//    kFailed;
//  - everything else (killed, or nothing left at all) -> kCancelled.
Observation ObserveCancellation(const std::vector<PodFacts>& pods, api::Time now);
Observation ObserveCancellationFromJson(const std::vector<nlohmann::json>& pods, api::Time now);

// What a batch Job's FailedCreate Event (the Job controller could not create the pod: quota,
// admission, a missing service account or PriorityClass) says about a kPending execution without
// a pod: reason FailedCreate and the Event's message. Anything else is returned unchanged.
// Only for a batch Job that has no pod.
Observation ExplainMissingPod(Observation o, const std::string& batchJobName,
                              const std::string& failedCreateMessage);

// The batch Job uid in `references` ({type: Job, id}), empty if none.
std::string ReferencedBatchJobUid(const std::vector<api::ExecutionReference>& references);

// True when `pod` belongs to the execution of the Ayatori Job `jobUid`: it carries that UID's
// label AND its controller ownerReference is the batch/v1 Job BatchJobName(jobUid) with uid
// `batchJobUid` (any uid when that is empty: the batch Job is gone and none was recorded). The
// label alone proves nothing: whoever may create pods in the namespace can copy it, and such a
// pod must neither feed the Job's log nor change its observed state (docs/security.md).
bool IsPodOfBatchJob(const PodFacts& pod, std::string_view jobUid, std::string_view batchJobUid);

// True when `pod` was our batch Job's and lost its ownerReference: the batch Job was deleted
// with propagation Orphan, so the garbage collector will never delete the pod, while its task
// may still run. It has no controller ownerReference, the UID's label and the Job controller's
// label naming the batch Job `batchJobUid` (which must be known: the live or the recorded one).
// Only Cancel and Delete use it, once the batch Job is gone: such a pod is still stopped and
// waited for, but it never feeds a log or an observation, since an impostor can forge those
// labels too.
bool IsOrphanOfBatchJob(const PodFacts& pod, std::string_view jobUid, std::string_view batchJobUid);

// Phase Succeeded/Failed, or the main container terminated.
bool IsPodTerminal(const PodFacts& pod);

}  // namespace ayatori::adapters::kubernetes
