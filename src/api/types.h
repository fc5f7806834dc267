// Typed model of the execution.ayatori.ddupan.top/v1alpha1 API (see docs/api.md and
// docs/design.md). These structs are what the controller caches and reasons
// about: compact, no raw JSON, no managedFields. JSON conversion lives in api/json.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/quantity.h"

namespace ayatori::api {

inline constexpr const char* kGroup = "execution.ayatori.ddupan.top";
inline constexpr const char* kVersion = "v1alpha1";
inline constexpr const char* kApiVersion = "execution.ayatori.ddupan.top/v1alpha1";

inline constexpr const char* kFinalizer = "execution.ayatori.ddupan.top/job-cleanup";
inline constexpr const char* kDefaultClassAnnotation =
    "execution.ayatori.ddupan.top/default-job-class";  // on a Namespace
inline constexpr const char* kIsDefaultClassAnnotation =
    "execution.ayatori.ddupan.top/is-default-class";  // on a JobClass, value "true"
inline constexpr const char* kConfirmBackendLostAnnotation =
    "execution.ayatori.ddupan.top/confirm-backend-lost";  // on a Job, value "<who/why>"
inline constexpr const char* kJobUidLabel = "execution.ayatori.ddupan.top/job-uid";
inline constexpr const char* kJobNameLabel = "execution.ayatori.ddupan.top/job-name";
inline constexpr const char* kJobNamespaceLabel = "execution.ayatori.ddupan.top/job-namespace";

// metav1.Time: RFC 3339 with second precision on the wire.
using Time = std::chrono::sys_seconds;

struct OwnerReference {
  std::string apiVersion;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool blockOwnerDeletion = false;
  bool operator==(const OwnerReference&) const = default;
};

struct ObjectMeta {
  std::string name;
  std::string generateName;
  std::string namespace_;  // "namespace" on the wire
  std::string uid;
  std::string resourceVersion;
  int64_t generation = 0;
  std::optional<Time> creationTimestamp;
  std::optional<Time> deletionTimestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> finalizers;
  std::vector<OwnerReference> ownerReferences;
  bool operator==(const ObjectMeta&) const = default;
};

// Only cpu and memory are part of v1alpha1.
struct ResourceList {
  std::optional<Quantity> cpu;
  std::optional<Quantity> memory;
  bool empty() const { return !cpu && !memory; }
  bool operator==(const ResourceList&) const = default;
};

struct ResourceRequirements {
  ResourceList requests;
  ResourceList limits;
  bool empty() const { return requests.empty() && limits.empty(); }
  bool operator==(const ResourceRequirements&) const = default;
};

struct KeySelector {  // SecretKeySelector / ConfigMapKeySelector
  std::string name;
  std::string key;
  bool optional = false;
  bool operator==(const KeySelector&) const = default;
};

struct EnvVarSource {
  std::optional<KeySelector> secretKeyRef;
  std::optional<KeySelector> configMapKeyRef;
  bool operator==(const EnvVarSource&) const = default;
};

struct EnvVar {
  std::string name;
  std::optional<std::string> value;  // exactly one of value / valueFrom (CEL-enforced)
  std::optional<EnvVarSource> valueFrom;
  bool operator==(const EnvVar&) const = default;
};

struct LocalObjectReference {
  std::string name;
  bool operator==(const LocalObjectReference&) const = default;
};

struct TaskSpec {
  std::string image;
  std::vector<LocalObjectReference> imagePullSecrets;
  std::vector<std::string> command;  // argv: replaces the image entrypoint; never a shell
  std::vector<std::string> args;
  std::string workingDir;
  std::vector<EnvVar> env;
  bool operator==(const TaskSpec&) const = default;
};

enum class DesiredState { kRunning, kCancelled };

struct JobSpec {
  std::string jobClassName;
  TaskSpec task;
  std::optional<ResourceRequirements> resources;
  std::optional<int64_t> activeDeadlineSeconds;
  std::optional<int32_t> ttlSecondsAfterFinished;
  DesiredState desiredState = DesiredState::kRunning;
  bool operator==(const JobSpec&) const = default;
};

inline constexpr const char* kConditionAccepted = "Accepted";
inline constexpr const char* kConditionScheduled = "Scheduled";
inline constexpr const char* kConditionSucceeded = "Succeeded";

enum class ConditionStatus { kTrue, kFalse, kUnknown };

// metav1.Condition.
struct Condition {
  std::string type;
  ConditionStatus status = ConditionStatus::kUnknown;
  std::string reason;
  std::string message;
  int64_t observedGeneration = 0;
  Time lastTransitionTime{};
  bool operator==(const Condition&) const = default;
};

struct ParametersRef {
  std::string group;
  std::string kind;
  std::string name;
  std::string uid;  // only in status.resolvedJobClass
  bool operator==(const ParametersRef&) const = default;
};

// A JobClass's policy for spec.ttlSecondsAfterFinished (docs/jobclass.md § TTL): the TTL of a
// Job that sets none, and the most a Job may ask for. Either may be absent.
struct TtlPolicy {
  std::optional<int32_t> defaultSeconds;  // "default" on the wire
  std::optional<int32_t> maximumSeconds;  // "maximum" on the wire
  bool operator==(const TtlPolicy&) const = default;
};

// How a class's Jobs are queued through Kueue (docs/queueing.md), for a controller run with
// --kueue.
struct QueueingPolicy {
  // A Job of the class must be queued: one without a LocalQueue (its label, or defaultLocalQueue)
  // is not accepted, nor is any Job of the class while the controller does not queue.
  bool required = false;
  // The LocalQueue of the Job's namespace for a Job without the kueue.x-k8s.io/queue-name label.
  std::string defaultLocalQueue;
  bool operator==(const QueueingPolicy&) const = default;
};

// The TTL in force for a Job that asks for `requested` under `policy`: its own value capped at
// the maximum, else the default (capped too); nullopt (never deleted) when neither is set.
std::optional<int32_t> ApplyTtlPolicy(std::optional<int32_t> requested,
                                      const std::optional<TtlPolicy>& policy);

struct ResolvedJobClass {
  std::string name;
  std::string uid;
  std::string controllerName;
  std::optional<ParametersRef> parametersRef;
  // The name of the backend snapshot recorded at acceptance: an immutable ConfigMap in the
  // controller's namespace holding the parameters' spec fields that decide where and how the
  // Job's execution exists (e.g. the engine endpoint; Adapter::PinnedParameters).
  // Every later adapter call uses those values, whatever happens to the parameters object since.
  // Only the name is in the Job: the values are backend configuration, which the Job API never
  // shows. nullopt: accepted before snapshots existed; such a Job reads the parameters by name.
  std::optional<std::string> backendSnapshot;
  // The class's TTL policy at acceptance: later edits of the class do not change accepted Jobs.
  // (Initialized so that the aggregate initializations that predate it stay complete.)
  std::optional<TtlPolicy> ttlSecondsAfterFinished = std::nullopt;
  // The class's startTimeoutSeconds at acceptance, shown to the Job's readers and used for the
  // Job's StartTimeout whatever happens to the class later. nullopt: the class set none (or the
  // Job was accepted before this field existed, and the class is read as it is now).
  std::optional<int64_t> startTimeoutSeconds = std::nullopt;
  bool operator==(const ResolvedJobClass&) const = default;
};

struct ExecutionReference {
  std::string type;
  std::string id;
  bool operator==(const ExecutionReference&) const = default;
};

struct ExecutionStatus {
  std::string adapter;
  std::vector<ExecutionReference> references;
  bool operator==(const ExecutionStatus&) const = default;
};

struct JobResult {
  std::optional<int32_t> exitCode;
  std::string reason;
  bool operator==(const JobResult&) const = default;
};

struct JobStatus {
  int64_t observedGeneration = 0;
  std::vector<Condition> conditions;
  std::optional<ResolvedJobClass> resolvedJobClass;
  std::optional<ResourceRequirements> effectiveResources;
  std::optional<ExecutionStatus> execution;
  // The TTL in force (ApplyTtlPolicy of spec.ttlSecondsAfterFinished and the policy in
  // resolvedJobClass), kept current when the spec's value changes. Absent: never deleted.
  std::optional<int32_t> ttlSecondsAfterFinished;
  std::optional<Time> startTime;
  std::optional<Time> completionTime;
  std::optional<JobResult> result;
  // The number of the latest ResultUnknown episode: incremented each time the Job enters
  // Succeeded=Unknown/ResultUnknown, kept afterwards. The confirm-backend-lost annotation names
  // the episode it confirms (ConfirmedEpisode), so that a confirmation left on the Job never
  // ends a later, unrelated outage.
  int64_t resultUnknownEpisode = 0;
  // The PascalCase cause of the latest ResultUnknown episode as the backend stated it
  // (BackendUnreachable, ExitStatusLost, ...; empty when it stated none): what the state machine
  // reads, where the condition's message is free text for humans.
  std::string resultUnknownCause;
  bool operator==(const JobStatus&) const = default;
};

struct Job {
  ObjectMeta metadata;
  JobSpec spec;
  JobStatus status;
  bool operator==(const Job&) const = default;
};

enum class SecretEnvForwarding { kDenied, kAllowed };

struct ResourcePolicy {
  ResourceRequirements defaults;  // applied to requests/limits the Job leaves empty
  ResourceList min;               // lower bound for requests and limits
  ResourceList max;               // upper bound for requests and limits
  bool operator==(const ResourcePolicy&) const = default;
};

struct JobClassSpec {
  std::string controllerName;
  std::optional<ParametersRef> parametersRef;  // uid unused here
  ResourcePolicy resources;
  SecretEnvForwarding secretEnvForwarding = SecretEnvForwarding::kDenied;
  std::optional<TtlPolicy> ttlSecondsAfterFinished = std::nullopt;
  // A Job of this class whose task has not started this long after acceptance is stopped and
  // fails with reason StartTimeout. Unset: it waits as long as it takes.
  std::optional<int64_t> startTimeoutSeconds;
  std::optional<QueueingPolicy> queueing;
  bool operator==(const JobClassSpec&) const = default;
};

// Cluster-scoped.
struct JobClass {
  ObjectMeta metadata;
  JobClassSpec spec;
  bool operator==(const JobClass&) const = default;
};

// A key of a Secret in a named namespace (the parameters kinds name their credentials so).
struct SecretKeyReference {
  std::string namespace_;
  std::string name;
  std::string key;
  bool operator==(const SecretKeyReference&) const = default;
};

// Small helpers used everywhere.
const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);
bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type);
std::string ToString(ConditionStatus status);
std::string ToString(DesiredState state);

}  // namespace ayatori::api
