#include "adapters/kubernetes/batch_job.h"

#include <string>
#include <utility>

#include "api/json.h"

namespace ayatori::adapters::kubernetes {

namespace {

using nlohmann::json;

constexpr std::string_view kReservedPrefix = "execution.ayatori.ddupan.top/";

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// A label value or the name part of a key: <= 63, [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?.
bool IsQualifiedNamePart(std::string_view s, bool allowEmpty) {
  if (s.empty()) return allowEmpty;
  if (s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// DNS-1123 subdomain: <= 253, lowercase alphanumerics, '-' and '.', alphanumeric at both ends.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  auto lowerAlnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lowerAlnum(s.front()) || !lowerAlnum(s.back())) return false;
  for (char c : s) {
    if (!lowerAlnum(c) && c != '-' && c != '.') return false;
  }
  return true;
}

// Label and annotation keys: [prefix/]name.
bool IsQualifiedKey(std::string_view key) {
  auto slash = key.find('/');
  if (slash == std::string_view::npos) return IsQualifiedNamePart(key, false);
  return IsDnsSubdomain(key.substr(0, slash)) && IsQualifiedNamePart(key.substr(slash + 1), false);
}

// Keys this adapter or the batch Job controller sets itself.
bool IsReservedKey(std::string_view key) {
  return key.starts_with(kReservedPrefix) || key.starts_with("batch.kubernetes.io/") ||
         key == "controller-uid" || key == "job-name" || key == kManagedByLabel;
}

json ResourceListJson(const api::ResourceList& list) {
  json out = json::object();
  if (list.cpu) out["cpu"] = list.cpu->str();
  if (list.memory) out["memory"] = list.memory->str();
  return out;
}

json KeySelectorJson(const api::KeySelector& ref) {
  json out = {{"name", ref.name}, {"key", ref.key}};
  if (ref.optional) out["optional"] = true;
  return out;
}

json EnvVarJson(const api::EnvVar& var) {
  json out = {{"name", var.name}};
  if (var.value) {
    out["value"] = *var.value;
  } else if (var.valueFrom) {
    json from = json::object();
    if (var.valueFrom->secretKeyRef)
      from["secretKeyRef"] = KeySelectorJson(*var.valueFrom->secretKeyRef);
    if (var.valueFrom->configMapKeyRef) {
      from["configMapKeyRef"] = KeySelectorJson(*var.valueFrom->configMapKeyRef);
    }
    out["valueFrom"] = std::move(from);
  }
  return out;
}

json TolerationJson(const Toleration& t) {
  json out = json::object();
  if (!t.key.empty()) out["key"] = t.key;
  if (!t.operator_.empty()) out["operator"] = t.operator_;
  if (!t.value.empty()) out["value"] = t.value;
  if (!t.effect.empty()) out["effect"] = t.effect;
  if (t.tolerationSeconds) out["tolerationSeconds"] = *t.tolerationSeconds;
  return out;
}

bool IsAyatoriEnv(std::string_view name) {
  return name == "AYATORI_JOB_NAMESPACE" || name == "AYATORI_JOB_NAME" || name == "AYATORI_JOB_UID";
}

Status ValidateSecurityProfile(const SecurityProfile& profile) {
  const std::string where = "KubernetesExecutionParameters spec.securityProfile.";
  if (auto st = ValidateIds(profile, where); !st.ok()) return st;
  const SecurityProfile p = WithDefaults(profile, RestrictedSecurityProfile());
  if (*p.tmpSizeMiB < 1 || *p.tmpSizeMiB > 1048576) {
    return Status(StatusCode::kInvalidArgument, where + "tmpSizeMiB must be 1-1048576");
  }
  for (const auto& cap : p.addCapabilities) {
    // A capability name starts with a letter.
    if (!IsCapabilityName(cap) || cap.front() < 'A' || cap.front() > 'Z' ||
        cap.starts_with("CAP_") || cap == "ALL") {
      return Status(StatusCode::kInvalidArgument,
                    where + "addCapabilities: \"" + cap +
                        "\" is not a capability name such as NET_BIND_SERVICE (upper case, "
                        "without CAP_; ALL is not allowed)");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string BatchJobName(std::string_view jobUid) { return "ayj-" + std::string(jobUid); }

std::string ManagedSelector() { return std::string(api::kJobUidLabel); }

std::string SelectorForUid(std::string_view jobUid) {
  return std::string(api::kJobUidLabel) + "=" + std::string(jobUid);
}

StatusOr<KubernetesExecutionParameters> ParseParameters(const json& parameters) {
  if (parameters.is_null() || (parameters.is_object() && parameters.empty())) {
    return KubernetesExecutionParameters{};
  }
  auto params = KubernetesExecutionParametersFromJson(parameters);
  if (!params.ok()) return params.status();
  if (params->imagePullFailureTimeoutSeconds <= 0) {
    return Status(StatusCode::kInvalidArgument,
                  "KubernetesExecutionParameters spec.imagePullFailureTimeoutSeconds must be > 0");
  }
  if (params->automountServiceAccountToken && params->serviceAccountName.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "KubernetesExecutionParameters spec.automountServiceAccountToken: true needs "
                  "spec.serviceAccountName (the token of a namespace's default ServiceAccount is "
                  "never mounted)");
  }
  if (auto st = ValidateSecurityProfile(params->securityProfile); !st.ok()) return st;
  return params;
}

Status ValidateRequest(const ExecutionRequest& request,
                       const KubernetesExecutionParameters& params) {
  const auto& meta = request.job.metadata;
  if (meta.uid.empty() || meta.namespace_.empty() || meta.name.empty()) {
    return Status(StatusCode::kInvalidArgument, "the Job has no uid, namespace or name");
  }
  if (request.job.spec.task.image.empty()) {
    return Status(StatusCode::kInvalidArgument, "spec.task.image is empty");
  }
  if (!IsQualifiedNamePart(meta.uid, false)) {
    return Status(StatusCode::kInvalidArgument, "the Job uid is not a valid label value");
  }
  // Refused at acceptance already (descriptor.cc, NotEnforceable); parameters edited since then
  // must not have the ask silently dropped either.
  const SecurityProfile& sec = params.securityProfile;
  for (const auto& [field, set] : {std::pair{"pidsLimit", sec.pidsLimit.has_value()},
                                   std::pair{"openFilesLimit", sec.openFilesLimit.has_value()},
                                   std::pair{"logMaxBytes", sec.logMaxBytes.has_value()}}) {
    if (set) {
      return Status(StatusCode::kInvalidArgument,
                    std::string("KubernetesExecutionParameters spec.securityProfile.") + field +
                        " is a node setting that a pod cannot carry: remove it and set it on the "
                        "nodes (kubelet)");
    }
  }
  for (const auto& [key, value] : params.extraLabels) {
    if (!IsQualifiedKey(key)) {
      return Status(StatusCode::kInvalidArgument,
                    "KubernetesExecutionParameters spec.extraLabels: \"" + key +
                        "\" is not a valid label key");
    }
    if (!IsQualifiedNamePart(value, true)) {
      return Status(StatusCode::kInvalidArgument,
                    "KubernetesExecutionParameters spec.extraLabels[" + key + "]: \"" + value +
                        "\" is not a valid label value (<= 63 characters, alphanumerics, '-', "
                        "'_', '.')");
    }
    if (IsReservedKey(key)) {
      return Status(StatusCode::kInvalidArgument,
                    "KubernetesExecutionParameters spec.extraLabels: \"" + key +
                        "\" is set by Ayatori or the Job controller and cannot be overridden");
    }
  }
  for (const auto& [key, value] : params.extraAnnotations) {
    if (!IsQualifiedKey(key)) {
      return Status(StatusCode::kInvalidArgument,
                    "KubernetesExecutionParameters spec.extraAnnotations: \"" + key +
                        "\" is not a valid annotation key");
    }
    if (IsReservedKey(key)) {
      return Status(StatusCode::kInvalidArgument,
                    "KubernetesExecutionParameters spec.extraAnnotations: \"" + key +
                        "\" is set by Ayatori and cannot be overridden");
    }
  }
  for (const auto& [key, value] : params.nodeSelector) {
    if (!IsQualifiedKey(key) || !IsQualifiedNamePart(value, true)) {
      return Status(StatusCode::kInvalidArgument,
                    "KubernetesExecutionParameters spec.nodeSelector: \"" + key + "=" + value +
                        "\" is not a valid label key and value");
    }
  }
  return Status::Ok();
}

namespace {

// The labels of the batch Job and its pod: the class's extra labels, then ours (they win).
json BatchJobLabels(const api::ObjectMeta& meta, const KubernetesExecutionParameters& params) {
  json labels = json::object();
  for (const auto& [k, v] : params.extraLabels) labels[k] = v;
  labels[api::kJobUidLabel] = meta.uid;
  labels[api::kJobNamespaceLabel] = meta.namespace_;
  if (IsQualifiedNamePart(meta.name, false)) labels[api::kJobNameLabel] = meta.name;
  labels[kManagedByLabel] = kManagedByValue;
  return labels;
}

// The task's env as declared, then the correlation identity (a task's own AYATORI_JOB_* lose).
json TaskEnv(const api::TaskSpec& task, const api::ObjectMeta& meta) {
  json env = json::array();
  for (const auto& var : task.env) {
    if (IsAyatoriEnv(var.name)) continue;  // ours below are the correlation identity
    env.push_back(EnvVarJson(var));
  }
  env.push_back({{"name", "AYATORI_JOB_NAMESPACE"}, {"value", meta.namespace_}});
  env.push_back({{"name", "AYATORI_JOB_NAME"}, {"value", meta.name}});
  env.push_back({{"name", "AYATORI_JOB_UID"}, {"value", meta.uid}});
  return env;
}

struct ScratchVolumes {
  json volumes;
  json mounts;
};

// A writable, size-bounded /tmp in memory (it counts against limits.memory), and the working
// directory when the root filesystem is read-only (the task could not write there otherwise).
ScratchVolumes ScratchVolumesFor(const api::TaskSpec& task, const SecurityProfile& sec) {
  const std::string tmpSize = std::to_string(*sec.tmpSizeMiB) + "Mi";
  ScratchVolumes out{json::array({{{"name", kTmpVolume},
                                   {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", tmpSize}}}}}),
                     json::array({{{"name", kTmpVolume}, {"mountPath", "/tmp"}}})};
  if (*sec.readOnlyRootFilesystem && !task.workingDir.empty() && task.workingDir != "/tmp" &&
      !task.workingDir.starts_with("/tmp/")) {
    out.volumes.push_back(
        {{"name", kWorkdirVolume}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", tmpSize}}}});
    out.mounts.push_back({{"name", kWorkdirVolume}, {"mountPath", task.workingDir}});
  }
  return out;
}

// Kubernetes expands $(VAR) in a container's command and args and turns $$ into $; Docker and
// OpenSandbox pass argv as it is. Every $ doubled, the kubelet hands the task the argv it asked
// for, as the other backends do (docs/api.md, task.command).
json VerbatimArgv(const std::vector<std::string>& argv) {
  json out = json::array();
  for (const std::string& arg : argv) {
    std::string escaped;
    escaped.reserve(arg.size());
    for (char c : arg) {
      escaped += c;
      if (c == '$') escaped += '$';
    }
    out.push_back(std::move(escaped));
  }
  return out;
}

json TaskContainer(const ExecutionRequest& request, const SecurityProfile& sec, json mounts) {
  const auto& task = request.job.spec.task;
  json container = {{"name", kContainerName},
                    {"image", task.image},
                    {"env", TaskEnv(task, request.job.metadata)}};
  container["securityContext"] = {
      {"allowPrivilegeEscalation", *sec.allowPrivilegeEscalation},
      {"capabilities", {{"drop", json::array({"ALL"})}}},
      {"readOnlyRootFilesystem", *sec.readOnlyRootFilesystem},
  };
  if (!sec.addCapabilities.empty()) {
    container["securityContext"]["capabilities"]["add"] = sec.addCapabilities;
  }
  container["volumeMounts"] = std::move(mounts);
  if (!task.command.empty()) container["command"] = VerbatimArgv(task.command);
  if (!task.args.empty()) container["args"] = VerbatimArgv(task.args);
  if (!task.workingDir.empty()) container["workingDir"] = task.workingDir;
  json resources = json::object();
  if (!request.resources.requests.empty()) {
    resources["requests"] = ResourceListJson(request.resources.requests);
  }
  if (!request.resources.limits.empty()) {
    resources["limits"] = ResourceListJson(request.resources.limits);
  }
  if (!resources.empty()) container["resources"] = std::move(resources);
  return container;
}

// Where and as whom the pod runs: the class's node settings and the security profile.
json TaskPodSpec(const ExecutionRequest& request, const KubernetesExecutionParameters& params,
                 const SecurityProfile& sec) {
  const auto& task = request.job.spec.task;
  ScratchVolumes scratch = ScratchVolumesFor(task, sec);
  json podSecurity = {
      {"runAsUser", sec.runAsUser},
      {"runAsGroup", sec.runAsGroup},
      {"seccompProfile", {{"type", *sec.seccompProfile}}},
  };
  // runAsNonRoot: the kubelet refuses to start a container that would run as uid 0 anyway.
  if (!sec.runAsRoot) podSecurity["runAsNonRoot"] = true;
  json podSpec = {
      {"restartPolicy", "Never"},
      // The task's env is exactly what it declared; no Service variables of the namespace.
      {"enableServiceLinks", false},
      // No API credentials for the task unless the class names a ServiceAccount and asks.
      {"automountServiceAccountToken",
       params.automountServiceAccountToken && !params.serviceAccountName.empty()},
      {"securityContext", std::move(podSecurity)},
      {"containers", json::array({TaskContainer(request, sec, std::move(scratch.mounts))})},
      {"volumes", std::move(scratch.volumes)},
  };
  if (!task.imagePullSecrets.empty()) {
    json secrets = json::array();
    for (const auto& s : task.imagePullSecrets) secrets.push_back({{"name", s.name}});
    podSpec["imagePullSecrets"] = std::move(secrets);
  }
  if (!params.serviceAccountName.empty()) podSpec["serviceAccountName"] = params.serviceAccountName;
  if (!params.nodeSelector.empty()) podSpec["nodeSelector"] = params.nodeSelector;
  if (!params.tolerations.empty()) {
    json tolerations = json::array();
    for (const auto& t : params.tolerations) tolerations.push_back(TolerationJson(t));
    podSpec["tolerations"] = std::move(tolerations);
  }
  if (!params.runtimeClassName.empty()) podSpec["runtimeClassName"] = params.runtimeClassName;
  if (!params.priorityClassName.empty()) podSpec["priorityClassName"] = params.priorityClassName;
  return podSpec;
}

}  // namespace

json BuildBatchJob(const ExecutionRequest& request, const KubernetesExecutionParameters& params) {
  const auto& meta = request.job.metadata;
  const json labels = BatchJobLabels(meta, params);
  json annotations = json::object();
  for (const auto& [k, v] : params.extraAnnotations) annotations[k] = v;
  annotations[kJobNameAnnotation] = meta.name;
  json podAnnotations = annotations;
  if (!request.acceptance.empty()) annotations[kAcceptanceAnnotation] = request.acceptance;
  if (!meta.resourceVersion.empty()) {
    annotations[kConfirmedVersionAnnotation] = meta.resourceVersion;
  }

  const SecurityProfile sec = WithDefaults(params.securityProfile, RestrictedSecurityProfile());
  json batchSpec = {
      // One execution per Ayatori Job: no retries (a retry is a new Ayatori Job) and no
      // replacement pod while a failed one is still terminating.
      {"backoffLimit", 0},
      {"completions", 1},
      {"parallelism", 1},
      {"podReplacementPolicy", "Failed"},
      {"template",
       {
           {"metadata", {{"labels", labels}, {"annotations", podAnnotations}}},
           {"spec", TaskPodSpec(request, params, sec)},
       }},
  };
  if (const auto& deadline = request.job.spec.activeDeadlineSeconds) {
    // A backstop behind the controller's own deadline (counted from the task's start): should
    // the controller be down, the Job controller still ends the pod. The margin covers the
    // time batch/v1 counts before the task starts (scheduling, image pull) and the stop.
    batchSpec["activeDeadlineSeconds"] = *deadline + kActiveDeadlineMarginSeconds;
  }

  return {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata",
       {
           {"name", BatchJobName(meta.uid)},
           {"namespace", meta.namespace_},
           {"labels", labels},
           {"annotations", annotations},
           {"ownerReferences", json::array({{
                                   {"apiVersion", api::kApiVersion},
                                   {"kind", "Job"},
                                   {"name", meta.name},
                                   {"uid", meta.uid},
                                   {"controller", true},
                                   {"blockOwnerDeletion", true},
                               }})},
       }},
      {"spec", std::move(batchSpec)},
  };
}

bool IsOwnedBy(const json& batchJob, std::string_view jobUid) {
  const json* meta = batchJob.contains("metadata") ? &batchJob["metadata"] : nullptr;
  if (meta == nullptr || !meta->is_object()) return false;
  auto labels = meta->find("labels");
  if (labels == meta->end() || !labels->is_object()) return false;
  auto uidLabel = labels->find(api::kJobUidLabel);
  if (uidLabel == labels->end() || !uidLabel->is_string() || *uidLabel != jobUid) return false;
  auto owners = meta->find("ownerReferences");
  if (owners == meta->end() || !owners->is_array()) return false;
  for (const auto& ref : *owners) {
    if (!ref.is_object()) continue;
    if (ref.value("controller", false) && ref.value("uid", "") == jobUid &&
        ref.value("kind", "") == "Job" && ref.value("apiVersion", "") == api::kApiVersion) {
      return true;
    }
  }
  return false;
}

}  // namespace ayatori::adapters::kubernetes
