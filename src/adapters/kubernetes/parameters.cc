#include "adapters/kubernetes/parameters.h"

#include <utility>

namespace ayatori::adapters::kubernetes {

using json = nlohmann::json;
using api::Decoded;

Decoded Decode(const json& j, Toleration& out) {
  return api::ObjectDecoder(j)("key", out.key)("operator", out.operator_)("value", out.value)(
             "effect", out.effect)("tolerationSeconds", out.tolerationSeconds)
      .Done();
}

Decoded Decode(const json& j, SecurityProfile& out) {
  return api::ObjectDecoder(j)("runAsUser", out.runAsUser)("runAsGroup", out.runAsGroup)(
             "runAsRoot", out.runAsRoot)("addCapabilities", out.addCapabilities)(
             "allowPrivilegeEscalation", out.allowPrivilegeEscalation)(
             "seccompProfile", out.seccompProfile)("pidsLimit", out.pidsLimit)(
             "openFilesLimit", out.openFilesLimit)("logMaxBytes", out.logMaxBytes)(
             "readOnlyRootFilesystem", out.readOnlyRootFilesystem)("tmpSizeMiB", out.tmpSizeMiB)
      .Done();
}

Decoded Decode(const json& j, KubernetesExecutionParameters& out) {
  return api::DecodeParameters(j, kParametersKind, out, [&out](const json& spec) {
    return api::ObjectDecoder(spec)("serviceAccountName", out.serviceAccountName)(
               "nodeSelector", out.nodeSelector)("tolerations", out.tolerations)(
               "runtimeClassName", out.runtimeClassName)(
               "priorityClassName", out.priorityClassName)("extraLabels", out.extraLabels)(
               "extraAnnotations", out.extraAnnotations)("imagePullFailureTimeoutSeconds",
                                                         out.imagePullFailureTimeoutSeconds)(
               "automountServiceAccountToken", out.automountServiceAccountToken)(
               "securityProfile", out.securityProfile)
        .Done();
  });
}

void to_json(json& j, const Toleration& v) {
  j = json::object();
  api::PutString(j, "key", v.key);
  api::PutString(j, "operator", v.operator_);
  api::PutString(j, "value", v.value);
  api::PutString(j, "effect", v.effect);
  api::PutOptional(j, "tolerationSeconds", v.tolerationSeconds);
}

void to_json(json& j, const SecurityProfile& v) {
  j = json::object();
  j["runAsUser"] = v.runAsUser;
  j["runAsGroup"] = v.runAsGroup;
  j["runAsRoot"] = v.runAsRoot;
  api::PutNonEmpty(j, "addCapabilities", v.addCapabilities);
  j["allowPrivilegeEscalation"] = v.allowPrivilegeEscalation;
  j["seccompProfile"] = v.seccompProfile;
  api::PutOptional(j, "pidsLimit", v.pidsLimit);
  api::PutOptional(j, "openFilesLimit", v.openFilesLimit);
  api::PutOptional(j, "logMaxBytes", v.logMaxBytes);
  j["readOnlyRootFilesystem"] = v.readOnlyRootFilesystem;
  j["tmpSizeMiB"] = v.tmpSizeMiB;
}

void from_json(const json& j, Toleration& v) { api::DecodeOrThrow(j, v, "Toleration"); }

void to_json(json& j, const KubernetesExecutionParameters& v) {
  json spec = json::object();
  api::PutString(spec, "serviceAccountName", v.serviceAccountName);
  api::PutNonEmpty(spec, "nodeSelector", v.nodeSelector);
  api::PutNonEmpty(spec, "tolerations", v.tolerations);
  api::PutString(spec, "runtimeClassName", v.runtimeClassName);
  api::PutString(spec, "priorityClassName", v.priorityClassName);
  api::PutNonEmpty(spec, "extraLabels", v.extraLabels);
  api::PutNonEmpty(spec, "extraAnnotations", v.extraAnnotations);
  spec["imagePullFailureTimeoutSeconds"] = v.imagePullFailureTimeoutSeconds;
  spec["automountServiceAccountToken"] = v.automountServiceAccountToken;
  spec["securityProfile"] = v.securityProfile;
  j = api::ParametersToJson(kParametersKind, v.metadata, std::move(spec));
}

void from_json(const json& j, KubernetesExecutionParameters& v) {
  api::DecodeOrThrow(j, v, kParametersKind);
}

json ToJson(const KubernetesExecutionParameters& params) { return params; }

StatusOr<KubernetesExecutionParameters> KubernetesExecutionParametersFromJson(const json& j) {
  return api::DecodeValue<KubernetesExecutionParameters>(j, kParametersKind);
}

}  // namespace ayatori::adapters::kubernetes
