#include "api/json.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/json_codec.h"
#include "base/time.h"

namespace ayatori::api {
namespace {

using json = nlohmann::json;

// Names of the enums of this API on the wire.
constexpr EnumName<DesiredState> kDesiredStateNames[] = {
    {"Running", DesiredState::kRunning},
    {"Cancelled", DesiredState::kCancelled},
};
constexpr EnumName<ConditionStatus> kConditionStatusNames[] = {
    {"True", ConditionStatus::kTrue},
    {"False", ConditionStatus::kFalse},
    {"Unknown", ConditionStatus::kUnknown},
};
constexpr EnumName<SecretEnvForwarding> kSecretEnvForwardingNames[] = {
    {"Allowed", SecretEnvForwarding::kAllowed},
    {"Denied", SecretEnvForwarding::kDenied},
};
// Puts `segment` ("spec", "[1]", "[\"app\"]") in front of the error's path.
void Prepend(DecodeError& e, std::string_view segment) {
  if (!e.path.empty() && e.path[0] != '[') e.path.insert(0, 1, '.');
  e.path.insert(0, segment);
}

}  // namespace

Decoded DecodeFailure(std::string what) { return DecodeError{{}, std::move(what)}; }

std::string Excerpt(const json& j) {
  std::string text = j.dump();
  if (text.size() > 64) text.replace(61, std::string::npos, "...");
  return text;
}

Decoded WrongType(const json& j, const char* expected) {
  return DecodeFailure(std::string("expected ") + expected + ", got " + j.type_name());
}

Decoded InField(Decoded e, const char* name) {
  if (e) Prepend(*e, name);
  return e;
}

Decoded InElement(Decoded e, size_t index) {
  if (!e) return e;
  // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict for
  // `"[" + std::to_string(index) + "]"` (std::string operator+).
  std::string segment = "[";
  segment += std::to_string(index);
  segment += ']';
  Prepend(*e, segment);
  return e;
}

Decoded InKey(Decoded e, const std::string& key) {
  if (e) Prepend(*e, "[\"" + key + "\"]");
  return e;
}

Decoded CheckKind(const json& j, const char* kind) {
  if (!j.is_object()) return {};
  for (auto [field, want] : {std::pair<const char*, const char*>{"apiVersion", kApiVersion},
                             std::pair<const char*, const char*>{"kind", kind}}) {
    auto it = j.find(field);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_string() || it->get_ref<const std::string&>() != want) {
      return InField(DecodeFailure(std::string("expected \"") + want + "\", got " + Excerpt(*it)),
                     field);
    }
  }
  return {};
}

Decoded DecodeInteger(const json& j, int64_t min, int64_t max, int64_t& out) {
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX))
      return DecodeFailure("integer " + j.dump() + " out of range");
    out = static_cast<int64_t>(u);
  } else if (j.is_number_integer()) {
    out = j.get<int64_t>();
  } else if (j.is_number_float()) {
    // Only integral values; the bound keeps the conversion defined.
    const double d = j.get<double>();
    if (d != std::floor(d) || std::fabs(d) > 9.0e18)
      return DecodeFailure("expected an integer, got " + Excerpt(j));
    out = static_cast<int64_t>(d);
  } else {
    return WrongType(j, "an integer");
  }
  if (out < min || out > max) {
    return DecodeFailure("integer " + std::to_string(out) + " out of range [" +
                         std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return {};
}

Decoded Decode(const json& j, std::string& out) {
  if (!j.is_string()) return WrongType(j, "a string");
  out = j.get_ref<const std::string&>();
  return {};
}

Decoded Decode(const json& j, bool& out) {
  if (!j.is_boolean()) return WrongType(j, "a boolean");
  out = j.get<bool>();
  return {};
}

Decoded Decode(const json& j, int64_t& out) { return DecodeInteger(j, INT64_MIN, INT64_MAX, out); }

Decoded Decode(const json& j, int32_t& out) {
  int64_t v = 0;
  if (Decoded e = DecodeInteger(j, INT32_MIN, INT32_MAX, v)) return e;
  out = static_cast<int32_t>(v);
  return {};
}

// A Quantity is a string on the wire; YAML authors also write bare numbers (cpu: 1, cpu: 0.5).
Decoded Decode(const json& j, Quantity& out) {
  std::string text;
  if (j.is_string()) {
    text = j.get_ref<const std::string&>();
  } else if (j.is_number()) {
    text = j.dump();
  } else {
    return WrongType(j, "a quantity string");
  }
  StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) return DecodeFailure(q.status().message());
  out = std::move(q).value();
  return {};
}

Decoded Decode(const json& j, Time& out) {
  if (!j.is_string()) return WrongType(j, "an RFC 3339 time string");
  StatusOr<Time> t = ParseTime(j.get_ref<const std::string&>());
  if (!t.ok()) return DecodeFailure(t.status().message());
  out = *t;
  return {};
}

Decoded Decode(const json& j, std::map<std::string, std::string>& out) {
  if (!j.is_object()) return WrongType(j, "an object of strings");
  out.clear();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_string()) return InKey(WrongType(*it, "a string"), it.key());
    out.emplace_hint(out.end(), it.key(), it->get_ref<const std::string&>());
  }
  return {};
}

Decoded Decode(const json& j, OwnerReference& out) {
  return ObjectDecoder(j)("apiVersion", out.apiVersion)("kind", out.kind)("name", out.name)(
             "uid", out.uid)("controller", out.controller)("blockOwnerDeletion",
                                                           out.blockOwnerDeletion)
      .Done();
}

Decoded Decode(const json& j, ObjectMeta& out) {
  return ObjectDecoder(j)("name", out.name)("generateName", out.generateName)(
             "namespace", out.namespace_)("uid", out.uid)("resourceVersion", out.resourceVersion)(
             "generation", out.generation)("creationTimestamp", out.creationTimestamp)(
             "deletionTimestamp", out.deletionTimestamp)("labels", out.labels)(
             "annotations", out.annotations)("finalizers", out.finalizers)("ownerReferences",
                                                                           out.ownerReferences)
      .Done();
}

Decoded Decode(const json& j, ResourceList& out) {
  return ObjectDecoder(j)("cpu", out.cpu)("memory", out.memory).Done();
}

Decoded Decode(const json& j, ResourceRequirements& out) {
  return ObjectDecoder(j)("requests", out.requests)("limits", out.limits).Done();
}

Decoded Decode(const json& j, KeySelector& out) {
  return ObjectDecoder(j)("name", out.name)("key", out.key)("optional", out.optional).Done();
}

Decoded Decode(const json& j, EnvVarSource& out) {
  return ObjectDecoder(j)("secretKeyRef", out.secretKeyRef)("configMapKeyRef", out.configMapKeyRef)
      .Done();
}

Decoded Decode(const json& j, EnvVar& out) {
  return ObjectDecoder(j)("name", out.name)("value", out.value)("valueFrom", out.valueFrom).Done();
}

Decoded Decode(const json& j, LocalObjectReference& out) {
  return ObjectDecoder(j)("name", out.name).Done();
}

Decoded Decode(const json& j, TaskSpec& out) {
  return ObjectDecoder(j)("image", out.image)("imagePullSecrets", out.imagePullSecrets)(
             "command", out.command)("args", out.args)("workingDir", out.workingDir)("env", out.env)
      .Done();
}

Decoded Decode(const json& j, DesiredState& out) { return DecodeEnum(j, kDesiredStateNames, out); }

Decoded Decode(const json& j, JobSpec& out) {
  return ObjectDecoder(j)("jobClassName", out.jobClassName)("task", out.task)(
             "resources", out.resources)("activeDeadlineSeconds", out.activeDeadlineSeconds)(
             "ttlSecondsAfterFinished", out.ttlSecondsAfterFinished)("desiredState",
                                                                     out.desiredState)
      .Done();
}

Decoded Decode(const json& j, ConditionStatus& out) {
  return DecodeEnum(j, kConditionStatusNames, out);
}

Decoded Decode(const json& j, Condition& out) {
  return ObjectDecoder(j)("type", out.type)("status", out.status)("reason", out.reason)(
             "message", out.message)("observedGeneration", out.observedGeneration)(
             "lastTransitionTime", out.lastTransitionTime)
      .Done();
}

Decoded Decode(const json& j, ParametersRef& out) {
  return ObjectDecoder(j)("group", out.group)("kind", out.kind)("name", out.name)("uid", out.uid)
      .Done();
}

Decoded Decode(const json& j, TtlPolicy& out) {
  return ObjectDecoder(j)("default", out.defaultSeconds)("maximum", out.maximumSeconds).Done();
}

Decoded Decode(const json& j, QueueingPolicy& out) {
  return ObjectDecoder(j)("required", out.required)("defaultLocalQueue", out.defaultLocalQueue)
      .Done();
}

Decoded Decode(const json& j, ResolvedJobClass& out) {
  return ObjectDecoder(j)("name", out.name)("uid", out.uid)("controllerName", out.controllerName)(
             "parametersRef", out.parametersRef)("backendSnapshot", out.backendSnapshot)(
             "ttlSecondsAfterFinished", out.ttlSecondsAfterFinished)("startTimeoutSeconds",
                                                                     out.startTimeoutSeconds)
      .Done();
}

Decoded Decode(const json& j, ExecutionReference& out) {
  return ObjectDecoder(j)("type", out.type)("id", out.id).Done();
}

Decoded Decode(const json& j, ExecutionStatus& out) {
  return ObjectDecoder(j)("adapter", out.adapter)("references", out.references).Done();
}

Decoded Decode(const json& j, JobResult& out) {
  return ObjectDecoder(j)("exitCode", out.exitCode)("reason", out.reason).Done();
}

Decoded Decode(const json& j, JobStatus& out) {
  return ObjectDecoder(j)("observedGeneration", out.observedGeneration)(
             "conditions", out.conditions)("resolvedJobClass", out.resolvedJobClass)(
             "effectiveResources", out.effectiveResources)("execution", out.execution)(
             "ttlSecondsAfterFinished", out.ttlSecondsAfterFinished)("startTime", out.startTime)(
             "completionTime", out.completionTime)("result", out.result)(
             "resultUnknownEpisode", out.resultUnknownEpisode)("resultUnknownCause",
                                                               out.resultUnknownCause)
      .Done();
}

Decoded Decode(const json& j, Job& out) {
  if (Decoded e = CheckKind(j, "Job")) return e;
  return ObjectDecoder(j)("metadata", out.metadata)("spec", out.spec)("status", out.status).Done();
}

Decoded Decode(const json& j, SecretEnvForwarding& out) {
  return DecodeEnum(j, kSecretEnvForwardingNames, out);
}

Decoded Decode(const json& j, ResourcePolicy& out) {
  return ObjectDecoder(j)("defaults", out.defaults)("min", out.min)("max", out.max).Done();
}

Decoded Decode(const json& j, JobClassSpec& out) {
  return ObjectDecoder(j)("controllerName", out.controllerName)("parametersRef", out.parametersRef)(
             "resources", out.resources)("secretEnvForwarding", out.secretEnvForwarding)(
             "ttlSecondsAfterFinished", out.ttlSecondsAfterFinished)(
             "startTimeoutSeconds", out.startTimeoutSeconds)("queueing", out.queueing)
      .Done();
}

Decoded Decode(const json& j, JobClass& out) {
  if (Decoded e = CheckKind(j, "JobClass")) return e;
  return ObjectDecoder(j)("metadata", out.metadata)("spec", out.spec).Done();
}

Decoded Decode(const json& j, SecretKeyReference& out) {
  return ObjectDecoder(j)("namespace", out.namespace_)("name", out.name)("key", out.key).Done();
}

// "cannot decode Job ci/hello-x: spec.task.image: expected a string, got number"
std::string DescribeDecodeError(const char* what, const json& j, const DecodeError& e) {
  std::string msg = std::string("cannot decode ") + what;
  if (j.is_object()) {
    auto meta = j.find("metadata");
    if (meta != j.end() && meta->is_object()) {
      auto ns = meta->find("namespace");
      auto name = meta->find("name");
      if (name != meta->end() && name->is_string()) {
        msg += ' ';
        if (ns != meta->end() && ns->is_string() && !ns->get_ref<const std::string&>().empty()) {
          msg += ns->get_ref<const std::string&>() + "/";
        }
        msg += name->get_ref<const std::string&>();
      }
    }
  }
  msg += ": ";
  if (!e.path.empty()) msg += e.path + ": ";
  return msg + e.what;
}

json KindHeader(const char* kind) {
  json j = json::object();
  j["apiVersion"] = kApiVersion;
  j["kind"] = kind;
  return j;
}

json ParametersToJson(const char* kind, const ObjectMeta& metadata, json spec) {
  json j = KindHeader(kind);
  j["metadata"] = metadata;
  j["spec"] = std::move(spec);
  return j;
}

// ---------------------------------------------------------------------------------------------
// Time

StatusOr<Time> ParseTime(std::string_view text) {
  auto t = base::ParseTime(text);
  if (!t.ok()) return t.status();
  return std::chrono::floor<std::chrono::seconds>(*t);
}

std::string FormatTime(Time t) {
  using namespace std::chrono;
  const sys_days day_point = floor<days>(t);
  const year_month_day date(day_point);
  const hh_mm_ss<seconds> clock(t - day_point);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(date.year()),
                static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                static_cast<int>(clock.hours().count()), static_cast<int>(clock.minutes().count()),
                static_cast<int>(clock.seconds().count()));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Encoding (ADL hooks)

void to_json(json& j, const Quantity& v) { j = v.str(); }

void to_json(json& j, const OwnerReference& v) {
  j = json::object();
  j["apiVersion"] = v.apiVersion;
  j["kind"] = v.kind;
  j["name"] = v.name;
  j["uid"] = v.uid;
  PutTrue(j, "controller", v.controller);
  PutTrue(j, "blockOwnerDeletion", v.blockOwnerDeletion);
}

void to_json(json& j, const ObjectMeta& v) {
  j = json::object();
  PutString(j, "name", v.name);
  PutString(j, "generateName", v.generateName);
  PutString(j, "namespace", v.namespace_);
  PutString(j, "uid", v.uid);
  PutString(j, "resourceVersion", v.resourceVersion);
  PutNonZero(j, "generation", v.generation);
  PutOptional(j, "creationTimestamp", v.creationTimestamp);
  PutOptional(j, "deletionTimestamp", v.deletionTimestamp);
  PutNonEmpty(j, "labels", v.labels);
  PutNonEmpty(j, "annotations", v.annotations);
  PutNonEmpty(j, "finalizers", v.finalizers);
  PutNonEmpty(j, "ownerReferences", v.ownerReferences);
}

void to_json(json& j, const ResourceList& v) {
  j = json::object();
  PutOptional(j, "cpu", v.cpu);
  PutOptional(j, "memory", v.memory);
}

void to_json(json& j, const ResourceRequirements& v) {
  j = json::object();
  if (!v.requests.empty()) j["requests"] = v.requests;
  if (!v.limits.empty()) j["limits"] = v.limits;
}

void to_json(json& j, const KeySelector& v) {
  j = json::object();
  j["name"] = v.name;
  j["key"] = v.key;
  PutTrue(j, "optional", v.optional);
}

void to_json(json& j, const EnvVarSource& v) {
  j = json::object();
  PutOptional(j, "secretKeyRef", v.secretKeyRef);
  PutOptional(j, "configMapKeyRef", v.configMapKeyRef);
}

void to_json(json& j, const EnvVar& v) {
  j = json::object();
  j["name"] = v.name;
  PutOptional(j, "value", v.value);
  PutOptional(j, "valueFrom", v.valueFrom);
}

void to_json(json& j, const LocalObjectReference& v) { j = json{{"name", v.name}}; }

void to_json(json& j, const TaskSpec& v) {
  j = json::object();
  j["image"] = v.image;
  PutNonEmpty(j, "imagePullSecrets", v.imagePullSecrets);
  PutNonEmpty(j, "command", v.command);
  PutNonEmpty(j, "args", v.args);
  PutString(j, "workingDir", v.workingDir);
  PutNonEmpty(j, "env", v.env);
}

void to_json(json& j, DesiredState v) { j = EnumToString(kDesiredStateNames, v); }

void to_json(json& j, const JobSpec& v) {
  j = json::object();
  PutString(j, "jobClassName", v.jobClassName);
  j["task"] = v.task;
  PutOptional(j, "resources", v.resources);
  PutOptional(j, "activeDeadlineSeconds", v.activeDeadlineSeconds);
  PutOptional(j, "ttlSecondsAfterFinished", v.ttlSecondsAfterFinished);
  j["desiredState"] = v.desiredState;
}

void to_json(json& j, ConditionStatus v) { j = EnumToString(kConditionStatusNames, v); }

// metav1.Condition requires type, status, lastTransitionTime, reason and message (may be "").
void to_json(json& j, const Condition& v) {
  j = json::object();
  j["type"] = v.type;
  j["status"] = v.status;
  PutNonZero(j, "observedGeneration", v.observedGeneration);
  j["lastTransitionTime"] = v.lastTransitionTime;
  j["reason"] = v.reason;
  j["message"] = v.message;
}

void to_json(json& j, const ParametersRef& v) {
  j = json::object();
  j["group"] = v.group;
  j["kind"] = v.kind;
  j["name"] = v.name;
  PutString(j, "uid", v.uid);
}

void to_json(json& j, const TtlPolicy& v) {
  j = json::object();
  PutOptional(j, "default", v.defaultSeconds);
  PutOptional(j, "maximum", v.maximumSeconds);
}

void to_json(json& j, const ResolvedJobClass& v) {
  j = json::object();
  j["name"] = v.name;
  PutString(j, "uid", v.uid);
  j["controllerName"] = v.controllerName;
  PutOptional(j, "parametersRef", v.parametersRef);
  PutOptional(j, "backendSnapshot", v.backendSnapshot);
  PutOptional(j, "ttlSecondsAfterFinished", v.ttlSecondsAfterFinished);
  PutOptional(j, "startTimeoutSeconds", v.startTimeoutSeconds);
}

void to_json(json& j, const ExecutionReference& v) { j = json{{"type", v.type}, {"id", v.id}}; }

void to_json(json& j, const ExecutionStatus& v) {
  j = json::object();
  j["adapter"] = v.adapter;
  PutNonEmpty(j, "references", v.references);
}

void to_json(json& j, const JobResult& v) {
  j = json::object();
  PutOptional(j, "exitCode", v.exitCode);
  PutString(j, "reason", v.reason);
}

void to_json(json& j, const JobStatus& v) {
  j = json::object();
  PutNonZero(j, "observedGeneration", v.observedGeneration);
  PutNonEmpty(j, "conditions", v.conditions);
  PutOptional(j, "resolvedJobClass", v.resolvedJobClass);
  PutOptional(j, "effectiveResources", v.effectiveResources);
  PutOptional(j, "execution", v.execution);
  PutOptional(j, "ttlSecondsAfterFinished", v.ttlSecondsAfterFinished);
  PutOptional(j, "startTime", v.startTime);
  PutOptional(j, "completionTime", v.completionTime);
  PutOptional(j, "result", v.result);
  PutNonZero(j, "resultUnknownEpisode", v.resultUnknownEpisode);
  PutString(j, "resultUnknownCause", v.resultUnknownCause);
}

void to_json(json& j, const Job& v) {
  j = KindHeader("Job");
  j["metadata"] = v.metadata;
  j["spec"] = v.spec;
  if (v.status != JobStatus{}) j["status"] = v.status;
}

void to_json(json& j, SecretEnvForwarding v) { j = EnumToString(kSecretEnvForwardingNames, v); }

void to_json(json& j, const ResourcePolicy& v) {
  j = json::object();
  if (!v.defaults.empty()) j["defaults"] = v.defaults;
  if (!v.min.empty()) j["min"] = v.min;
  if (!v.max.empty()) j["max"] = v.max;
}

void to_json(json& j, const JobClassSpec& v) {
  j = json::object();
  j["controllerName"] = v.controllerName;
  PutOptional(j, "parametersRef", v.parametersRef);
  if (v.resources != ResourcePolicy{}) j["resources"] = v.resources;
  j["secretEnvForwarding"] = v.secretEnvForwarding;
  PutOptional(j, "ttlSecondsAfterFinished", v.ttlSecondsAfterFinished);
  PutOptional(j, "startTimeoutSeconds", v.startTimeoutSeconds);
  if (v.queueing) {
    json q = json::object();
    if (v.queueing->required) q["required"] = true;
    if (!v.queueing->defaultLocalQueue.empty()) {
      q["defaultLocalQueue"] = v.queueing->defaultLocalQueue;
    }
    j["queueing"] = std::move(q);
  }
}

void to_json(json& j, const JobClass& v) {
  j = KindHeader("JobClass");
  j["metadata"] = v.metadata;
  j["spec"] = v.spec;
}

void to_json(json& j, const SecretKeyReference& v) {
  j = json::object();
  PutString(j, "namespace", v.namespace_);
  j["name"] = v.name;
  PutString(j, "key", v.key);
}

// ---------------------------------------------------------------------------------------------
// Decoding (ADL hooks)

void from_json(const json& j, Quantity& v) { DecodeOrThrow(j, v, "Quantity"); }
void from_json(const json& j, OwnerReference& v) { DecodeOrThrow(j, v, "OwnerReference"); }
void from_json(const json& j, ObjectMeta& v) { DecodeOrThrow(j, v, "ObjectMeta"); }
void from_json(const json& j, ResourceList& v) { DecodeOrThrow(j, v, "ResourceList"); }
void from_json(const json& j, ResourceRequirements& v) {
  DecodeOrThrow(j, v, "ResourceRequirements");
}
void from_json(const json& j, KeySelector& v) { DecodeOrThrow(j, v, "KeySelector"); }
void from_json(const json& j, EnvVarSource& v) { DecodeOrThrow(j, v, "EnvVarSource"); }
void from_json(const json& j, EnvVar& v) { DecodeOrThrow(j, v, "EnvVar"); }
void from_json(const json& j, LocalObjectReference& v) {
  DecodeOrThrow(j, v, "LocalObjectReference");
}
void from_json(const json& j, TaskSpec& v) { DecodeOrThrow(j, v, "TaskSpec"); }
void from_json(const json& j, DesiredState& v) { DecodeOrThrow(j, v, "DesiredState"); }
void from_json(const json& j, JobSpec& v) { DecodeOrThrow(j, v, "JobSpec"); }
void from_json(const json& j, ConditionStatus& v) { DecodeOrThrow(j, v, "ConditionStatus"); }
void from_json(const json& j, Condition& v) { DecodeOrThrow(j, v, "Condition"); }
void from_json(const json& j, ParametersRef& v) { DecodeOrThrow(j, v, "ParametersRef"); }
void from_json(const json& j, TtlPolicy& v) { DecodeOrThrow(j, v, "TtlPolicy"); }
void from_json(const json& j, ResolvedJobClass& v) { DecodeOrThrow(j, v, "ResolvedJobClass"); }
void from_json(const json& j, ExecutionReference& v) { DecodeOrThrow(j, v, "ExecutionReference"); }
void from_json(const json& j, ExecutionStatus& v) { DecodeOrThrow(j, v, "ExecutionStatus"); }
void from_json(const json& j, JobResult& v) { DecodeOrThrow(j, v, "JobResult"); }
void from_json(const json& j, JobStatus& v) { DecodeOrThrow(j, v, "JobStatus"); }
void from_json(const json& j, Job& v) { DecodeOrThrow(j, v, "Job"); }
void from_json(const json& j, SecretEnvForwarding& v) {
  DecodeOrThrow(j, v, "SecretEnvForwarding");
}
void from_json(const json& j, ResourcePolicy& v) { DecodeOrThrow(j, v, "ResourcePolicy"); }
void from_json(const json& j, JobClassSpec& v) { DecodeOrThrow(j, v, "JobClassSpec"); }
void from_json(const json& j, JobClass& v) { DecodeOrThrow(j, v, "JobClass"); }
void from_json(const json& j, SecretKeyReference& v) { DecodeOrThrow(j, v, "SecretKeyReference"); }

// ---------------------------------------------------------------------------------------------
// Entry points

json ToJson(const Job& job) { return job; }
json ToJson(const JobClass& jobClass) { return jobClass; }
json ToJson(const ObjectMeta& metadata) { return metadata; }
json StatusToJson(const JobStatus& status) { return status; }

StatusOr<Job> JobFromJson(const json& j) { return DecodeValue<Job>(j, "Job"); }
StatusOr<JobStatus> JobStatusFromJson(const json& j) {
  return DecodeValue<JobStatus>(j, "Job status");
}
StatusOr<JobClass> JobClassFromJson(const json& j) { return DecodeValue<JobClass>(j, "JobClass"); }
StatusOr<ObjectMeta> ObjectMetaFromJson(const json& j) {
  return DecodeValue<ObjectMeta>(j, "metadata");
}

}  // namespace ayatori::api

namespace nlohmann {

void adl_serializer<ayatori::api::Time>::to_json(json& j, const ayatori::api::Time& t) {
  j = ayatori::api::FormatTime(t);
}

void adl_serializer<ayatori::api::Time>::from_json(const json& j, ayatori::api::Time& t) {
  if (!j.is_string()) {
    throw json::type_error::create(
        302, std::string("expected an RFC 3339 time string, got ") + j.type_name(), &j);
  }
  ayatori::StatusOr<ayatori::api::Time> parsed =
      ayatori::api::ParseTime(j.get_ref<const std::string&>());
  if (!parsed.ok()) throw json::type_error::create(302, parsed.status().message(), &j);
  t = *parsed;
}

}  // namespace nlohmann
