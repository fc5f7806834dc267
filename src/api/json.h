// JSON wire format of the execution.ayatori.ddupan.top/v1alpha1 kinds (nlohmann::json).
//
// Output omits empty and absent optional fields (Go's omitempty); input ignores unknown fields
// (the apiserver adds managedFields and more), treats null as absent, and reports a wrong type
// with the path of the value ("spec.task.env[1].name: expected a string, got number").
//
// Wire shape (every name is camelCase; T = string, Q = Quantity string ("100m", "512Mi"; a JSON
// number is accepted on input), Time = RFC 3339 "2026-11-29T08:00:00Z"):
//
//   metadata (all kinds): name, generateName, namespace, uid, resourceVersion, generation,
//     creationTimestamp, deletionTimestamp, labels{}, annotations{}, finalizers[],
//     ownerReferences[{apiVersion, kind, name, uid, controller, blockOwnerDeletion}]
//   ResourceRequirements: {requests: {cpu: Q, memory: Q}, limits: {cpu: Q, memory: Q}}
//
//   Job (namespaced)
//     spec.jobClassName                T
//     spec.task.image                  T (always written)
//     spec.task.imagePullSecrets       [{name}]
//     spec.task.command, .args         [T]
//     spec.task.workingDir             T
//     spec.task.env                    [{name, value | valueFrom: {secretKeyRef | configMapKeyRef:
//                                        {name, key, optional (written only when true)}}}]
//     spec.resources                   ResourceRequirements
//     spec.activeDeadlineSeconds       int64
//     spec.ttlSecondsAfterFinished     int32
//     spec.desiredState                "Running" | "Cancelled" (always written)
//     status.observedGeneration        int64
//     status.conditions                [{type, status: "True"|"False"|"Unknown", reason,
//                                        message (always written, may be ""), observedGeneration,
//                                        lastTransitionTime}]
//     status.resolvedJobClass          {name, uid, controllerName,
//                                        parametersRef: {group, kind, name, uid},
//                                        backendSnapshot: T}
//     status.effectiveResources        ResourceRequirements
//     status.execution                 {adapter, references: [{type, id}]}
//     status.startTime, completionTime Time
//     status.result                    {exitCode: int32, reason}
//   JobClass (cluster-scoped)
//     spec.controllerName              T
//     spec.parametersRef               {group, kind, name}
//     spec.resources                   {defaults: ResourceRequirements, min: {cpu, memory},
//                                        max: {cpu, memory}}
//     spec.secretEnvForwarding         "Allowed" | "Denied" (always written; absent = Denied)
//   SecretKeyReference               {namespace, name, key} (a key of a Secret in a named
//                                      namespace; the parameters kinds use it)
//
// The parameters kinds belong to their adapters: each has its struct and codec in
// src/adapters/<backend>/parameters.h, built from the blocks of api/json_codec.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::api {

// RFC 3339 (base::ParseTime, its fraction of a second dropped). Output is UTC with whole seconds:
// "2026-11-29T08:00:00Z".
StatusOr<Time> ParseTime(std::string_view text);
std::string FormatTime(Time t);

// Whole objects, with apiVersion and kind. A non-empty Job status is included.
nlohmann::json ToJson(const Job& job);
nlohmann::json ToJson(const JobClass& jobClass);
// The value of a "metadata" field (no apiVersion/kind).
nlohmann::json ToJson(const ObjectMeta& metadata);
// The value of the "status" field of a Job, for writes to the /status subresource.
nlohmann::json StatusToJson(const JobStatus& status);

// Decoding without exceptions. A wrong type or value is kInvalidArgument naming the object and
// the path of the value; a present kind or apiVersion that does not match is an error too.
StatusOr<Job> JobFromJson(const nlohmann::json& j);
StatusOr<JobStatus> JobStatusFromJson(const nlohmann::json& j);  // the value of "status"
StatusOr<JobClass> JobClassFromJson(const nlohmann::json& j);
StatusOr<ObjectMeta> ObjectMetaFromJson(const nlohmann::json& j);

// nlohmann::json ADL hooks, so that `json j = value;` and `j.get<T>()` work for every type. As
// nlohmann's own conversions do, from_json throws nlohmann::json::type_error on bad input; code
// outside this library should prefer the *FromJson functions above.
void to_json(nlohmann::json& j, const Quantity& v);
void from_json(const nlohmann::json& j, Quantity& v);
void to_json(nlohmann::json& j, const OwnerReference& v);
void from_json(const nlohmann::json& j, OwnerReference& v);
void to_json(nlohmann::json& j, const ObjectMeta& v);
void from_json(const nlohmann::json& j, ObjectMeta& v);
void to_json(nlohmann::json& j, const ResourceList& v);
void from_json(const nlohmann::json& j, ResourceList& v);
void to_json(nlohmann::json& j, const ResourceRequirements& v);
void from_json(const nlohmann::json& j, ResourceRequirements& v);
void to_json(nlohmann::json& j, const KeySelector& v);
void from_json(const nlohmann::json& j, KeySelector& v);
void to_json(nlohmann::json& j, const EnvVarSource& v);
void from_json(const nlohmann::json& j, EnvVarSource& v);
void to_json(nlohmann::json& j, const EnvVar& v);
void from_json(const nlohmann::json& j, EnvVar& v);
void to_json(nlohmann::json& j, const LocalObjectReference& v);
void from_json(const nlohmann::json& j, LocalObjectReference& v);
void to_json(nlohmann::json& j, const TaskSpec& v);
void from_json(const nlohmann::json& j, TaskSpec& v);
void to_json(nlohmann::json& j, DesiredState v);
void from_json(const nlohmann::json& j, DesiredState& v);
void to_json(nlohmann::json& j, const JobSpec& v);
void from_json(const nlohmann::json& j, JobSpec& v);
void to_json(nlohmann::json& j, ConditionStatus v);
void from_json(const nlohmann::json& j, ConditionStatus& v);
void to_json(nlohmann::json& j, const Condition& v);
void from_json(const nlohmann::json& j, Condition& v);
void to_json(nlohmann::json& j, const ParametersRef& v);
void from_json(const nlohmann::json& j, ParametersRef& v);
void to_json(nlohmann::json& j, const TtlPolicy& v);
void from_json(const nlohmann::json& j, TtlPolicy& v);
void to_json(nlohmann::json& j, const ResolvedJobClass& v);
void from_json(const nlohmann::json& j, ResolvedJobClass& v);
void to_json(nlohmann::json& j, const ExecutionReference& v);
void from_json(const nlohmann::json& j, ExecutionReference& v);
void to_json(nlohmann::json& j, const ExecutionStatus& v);
void from_json(const nlohmann::json& j, ExecutionStatus& v);
void to_json(nlohmann::json& j, const JobResult& v);
void from_json(const nlohmann::json& j, JobResult& v);
void to_json(nlohmann::json& j, const JobStatus& v);
void from_json(const nlohmann::json& j, JobStatus& v);
void to_json(nlohmann::json& j, const Job& v);
void from_json(const nlohmann::json& j, Job& v);
void to_json(nlohmann::json& j, SecretEnvForwarding v);
void from_json(const nlohmann::json& j, SecretEnvForwarding& v);
void to_json(nlohmann::json& j, const ResourcePolicy& v);
void from_json(const nlohmann::json& j, ResourcePolicy& v);
void to_json(nlohmann::json& j, const JobClassSpec& v);
void from_json(const nlohmann::json& j, JobClassSpec& v);
void to_json(nlohmann::json& j, const JobClass& v);
void from_json(const nlohmann::json& j, JobClass& v);
void to_json(nlohmann::json& j, const SecretKeyReference& v);
void from_json(const nlohmann::json& j, SecretKeyReference& v);

}  // namespace ayatori::api

// Time is std::chrono::sys_seconds, whose namespace ADL cannot extend; it converts as RFC 3339.
namespace nlohmann {
template <>
struct adl_serializer<ayatori::api::Time> {
  static void to_json(json& j, const ayatori::api::Time& t);
  static void from_json(const json& j, ayatori::api::Time& t);
};
}  // namespace nlohmann
