#include "adapters/kubernetes/descriptor.h"

#include <optional>
#include <string>

#include "adapters/kubernetes/parameters.h"
#include "adapters/registry.h"
#include "api/types.h"

namespace ayatori::adapters::kubernetes {

namespace {

std::optional<Refusal> RefuseNodeSettings(const nlohmann::json& parameters) {
  if (!parameters.is_object()) return std::nullopt;
  auto spec = parameters.find("spec");
  if (spec == parameters.end() || !spec->is_object()) return std::nullopt;
  auto profile = spec->find("securityProfile");
  if (profile == spec->end() || !profile->is_object()) return std::nullopt;
  // Per-node settings of the kubelet (podPidsLimit, the container runtime's open-files limit,
  // containerLogMaxSize): a pod cannot ask for them, so a class that does is refused.
  static constexpr const char* kNodeSettings[][2] = {
      {"pidsLimit", "the kubelet's podPidsLimit"},
      {"openFilesLimit", "the container runtime's RLIMIT_NOFILE"},
      {"logMaxBytes", "the kubelet's containerLogMaxSize"},
  };
  for (const auto& [field, where] : kNodeSettings) {
    auto it = profile->find(field);
    if (it == profile->end() || it->is_null()) continue;
    std::string name = "the class";
    if (auto meta = parameters.find("metadata"); meta != parameters.end() && meta->is_object()) {
      name = std::string(kParametersKind) + " \"" + meta->value("name", "") + "\"";
    }
    return Refusal{kReasonNotEnforceable, name + " sets spec.securityProfile." + field +
                                              ", which the adapter for " + kControllerName +
                                              " does not enforce per pod: it is a node setting (" +
                                              where + "); remove it and set it on the nodes"};
  }
  return std::nullopt;
}

}  // namespace

AdapterDescriptor Descriptor() {
  AdapterDescriptor d;
  d.controllerName = kControllerName;
  d.parameters = ParametersKind{
      api::kGroup,
      api::kVersion,
      kParametersKind,
      "kubernetesexecutionparameters",
      {"serviceAccountName", "nodeSelector", "tolerations", "runtimeClassName", "priorityClassName",
       "extraLabels", "extraAnnotations", "imagePullFailureTimeoutSeconds",
       "automountServiceAccountToken", "securityProfile"}};
  d.resolvesEnvReferences = true;
  d.recordsAcceptance = true;  // an annotation of the batch Job, found in the watch cache
  d.placedByFlavors = true;    // spec.nodeSelector and spec.tolerations go into the pod template
  d.enforces = {.memoryLimit = true,
                .cpuLimit = true,
                .egressDeny = false,
                .isolation = true,
                .imagePullAuth = true};
  d.parametersAsk = [](const nlohmann::json&) {
    Enforcement ask;
    ask.isolation = true;  // a pod of its own, whatever the runtimeClassName
    return ask;
  };
  d.refuseParameters = RefuseNodeSettings;
  return d;
}

}  // namespace ayatori::adapters::kubernetes
