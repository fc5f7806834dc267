// An Ayatori Job as a Kueue v0.17.0 Workload (kueue.x-k8s.io/v1beta2), and what a Workload read
// back from the API says about its place in the queue. Pure codecs: no I/O. The contract: one
// Workload per Job, named after the Job's UID, owned by the Job, with Kueue's resource-in-use
// finalizer and one podSet "main" of count 1 holding the Job's effective cpu/memory requests; it
// is what Kueue's own integrations do (pkg/controller/jobframework of sigs.k8s.io/kueue v0.17.0,
// pinned in hack/testenv/kueue/go.mod) and test/kueue/kueue_e2e_test.cc checks it against Kueue.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::kueue {

inline constexpr const char* kGroup = "kueue.x-k8s.io";
inline constexpr const char* kVersion = "v1beta2";
inline constexpr const char* kApiVersion = "kueue.x-k8s.io/v1beta2";

// On the Ayatori Job: the LocalQueue of its namespace, and the WorkloadPriorityClass it asks for.
inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kPriorityClassLabel = "kueue.x-k8s.io/priority-class";
// On the Workload: the owner's UID (Kueue names it in preemption messages).
inline constexpr const char* kJobUidLabel = "kueue.x-k8s.io/job-uid";
// The creator adds it; only the owner removes it, after Finished (Kueue removes it only from a
// Workload without ownerReferences).
inline constexpr const char* kResourceInUseFinalizer = "kueue.x-k8s.io/resource-in-use";
// The one podSet, looked up by this name in status.admission.podSetAssignments.
inline constexpr const char* kPodSetName = "main";

// Condition types of the Workload (Kueue's apis/kueue/v1beta2/workload_types.go).
inline constexpr const char* kConditionQuotaReserved = "QuotaReserved";
inline constexpr const char* kConditionAdmitted = "Admitted";
inline constexpr const char* kConditionEvicted = "Evicted";
inline constexpr const char* kConditionPreempted = "Preempted";
inline constexpr const char* kConditionRequeued = "Requeued";
inline constexpr const char* kConditionPodsReady = "PodsReady";
inline constexpr const char* kConditionFinished = "Finished";

// "ajob-<uid>": the same Job always maps to the same Workload, so a create after a crash finds
// the Workload of the first attempt (AlreadyExists) instead of making a second one.
std::string WorkloadName(std::string_view jobUid);

// The priority of the Workload, resolved by the caller (a WorkloadPriorityClass's top-level
// "value"): Kueue computes spec.priority only for the Workloads it creates itself.
struct ResolvedPriority {
  std::string className;  // a WorkloadPriorityClass; "" = no class, only the value
  int32_t value = 0;
  bool operator==(const ResolvedPriority&) const = default;
};

struct WorkloadOptions {
  // The LocalQueue; "" = the Job's kueue.x-k8s.io/queue-name label.
  std::string queueName;
  // Required when the Job carries kueue.x-k8s.io/priority-class (and must name that class);
  // absent and no label: priority 0, which is always written (a Workload without spec.priority
  // crashes Kueue's visibility API, pkg/visibility/storage/utils.go in v0.17.0).
  std::optional<ResolvedPriority> priority;
  // The podSet's nodeSelector: Kueue assigns only flavors whose nodeLabels match it, so it pins
  // the Job to the flavor (host) of its backend. Empty: any flavor of the ClusterQueue.
  std::map<std::string, std::string> nodeSelector;
};

// The Workload to create for `job`, whose metadata (name, namespace, uid) comes from the API and
// whose status.effectiveResources holds the requests resolved at acceptance (absent: no
// requests). kInvalidArgument when the Job has no uid or name, names no queue, or a priority class
// that `options` has not resolved.
StatusOr<nlohmann::json> BuildWorkload(const api::Job& job, const WorkloadOptions& options);

// A condition's reason and message, for the conditions that matter only when True.
struct Reason {
  std::string reason;
  std::string message;
  bool operator==(const Reason&) const = default;
};

// What a Workload read from the API says.
struct WorkloadState {
  api::ObjectMeta metadata;
  std::string queueName;
  bool quotaReserved = false;  // QuotaReserved=True
  // Admitted=True: the only signal to start (a reservation alone can still be withdrawn).
  bool admitted = false;
  bool podsReady = false;  // PodsReady=True
  // status.admission: the ClusterQueue and, for podSet "main", the ResourceFlavor of each
  // resource ("cpu" -> "docker-a"); empty while no quota is reserved.
  std::string clusterQueue;
  std::map<std::string, std::string> flavors;
  std::optional<Reason> evicted;    // Evicted=True: Preempted, ClusterQueueStopped, Deactivated...
  std::optional<Reason> preempted;  // Preempted=True: InClusterQueue, InCohortReclamation...
  std::optional<Reason> finished;   // Finished=True: Succeeded or Failed
  std::optional<api::Condition> requeued;  // Requeued, True or False
  // QuotaReserved=False: why Kueue has not reserved quota (reason Pending, Inadmissible, ...; the
  // message says what is missing); both empty otherwise.
  std::string pendingReason;
  std::string pendingMessage;
  // Every condition as read, for a status write that must keep Kueue's own.
  std::vector<api::Condition> conditions;
};

// kInvalidArgument (with the path of the value) when `workload` is not a Workload of v1beta2.
StatusOr<WorkloadState> ReadWorkload(const nlohmann::json& workload);

}  // namespace ayatori::kueue
