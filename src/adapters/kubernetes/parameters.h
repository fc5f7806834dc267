// KubernetesExecutionParameters (cluster-scoped, the parameters kind of controllerName
// .../kubernetes): its typed model and JSON codec, with the rules of api/json.h (unknown fields
// ignored, null = absent, errors with the path of the value). Its CRD is
// config/crd/execution.ayatori.ddupan.top_kubernetesexecutionparameters.yaml.
//
//   spec.serviceAccountName, runtimeClassName, priorityClassName   T
//   spec.nodeSelector, extraLabels, extraAnnotations               {T: T}
//   spec.tolerations        [{key, operator, value, effect, tolerationSeconds: int64}]
//   spec.imagePullFailureTimeoutSeconds                            int64 (absent = 300; always
//                                                                  written)
//   spec.automountServiceAccountToken                              bool (absent = false)
//   spec.securityProfile    {runAsUser, runAsGroup: int64 (65534), runAsRoot: bool (false),
//                            addCapabilities: [T], allowPrivilegeEscalation: bool (false),
//                            seccompProfile: RuntimeDefault|Unconfined, pidsLimit,
//                            openFilesLimit, logMaxBytes: int64 (absent; refused on this
//                            backend), readOnlyRootFilesystem: bool (true), tmpSizeMiB: int64 (64)}
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "adapters/common/security_profile.h"
#include "api/json_codec.h"
#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::adapters::kubernetes {

inline constexpr const char* kParametersKind = "KubernetesExecutionParameters";

// core/v1 Toleration, copied into the pod spec.
struct Toleration {
  std::string key;
  std::string operator_;  // "operator" on the wire: Exists | Equal
  std::string value;
  std::string effect;
  std::optional<int64_t> tolerationSeconds;
  bool operator==(const Toleration&) const = default;
};

struct KubernetesExecutionParameters {
  api::ObjectMeta metadata;
  std::string serviceAccountName;
  std::map<std::string, std::string> nodeSelector;
  std::vector<Toleration> tolerations;
  std::string runtimeClassName;
  std::string priorityClassName;
  std::map<std::string, std::string> extraLabels;
  std::map<std::string, std::string> extraAnnotations;
  int64_t imagePullFailureTimeoutSeconds = 300;
  // The pod gets the ServiceAccount's token only when the parameters name a serviceAccountName
  // and set this; otherwise automountServiceAccountToken: false.
  bool automountServiceAccountToken = false;
  // The shared profile (adapters/common/security_profile.h) from the restricted defaults. What a
  // pod cannot carry (pidsLimit, openFilesLimit, logMaxBytes: kubelet settings of the node) is
  // refused at acceptance as NotEnforceable (descriptor.cc), never dropped.
  SecurityProfile securityProfile = RestrictedSecurityProfile();
  bool operator==(const KubernetesExecutionParameters&) const = default;
};

// The whole object, with apiVersion and kind.
nlohmann::json ToJson(const KubernetesExecutionParameters& params);
// kInvalidArgument naming the object and the path of a wrong value; a present kind or apiVersion
// that does not match is an error too.
StatusOr<KubernetesExecutionParameters> KubernetesExecutionParametersFromJson(
    const nlohmann::json& j);

// Codec hooks (api/json_codec.h; nlohmann's ADL hooks throw json::type_error on bad input).
api::Decoded Decode(const nlohmann::json& j, Toleration& out);
api::Decoded Decode(const nlohmann::json& j, KubernetesExecutionParameters& out);
void to_json(nlohmann::json& j, const Toleration& v);
void from_json(const nlohmann::json& j, Toleration& v);
void to_json(nlohmann::json& j, const KubernetesExecutionParameters& v);
void from_json(const nlohmann::json& j, KubernetesExecutionParameters& v);

}  // namespace ayatori::adapters::kubernetes
