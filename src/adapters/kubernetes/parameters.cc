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
