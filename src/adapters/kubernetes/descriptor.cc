#include "adapters/kubernetes/descriptor.h"

#include "adapters/kubernetes/parameters.h"
#include "api/types.h"

namespace ayatori::adapters::kubernetes {

AdapterDescriptor Descriptor() {
  AdapterDescriptor d;
  d.controllerName = kControllerName;
  d.parameters = ParametersKind{
      api::kGroup,
      api::kVersion,
      kParametersKind,
      "kubernetesexecutionparameters",
      {"serviceAccountName", "nodeSelector", "tolerations", "runtimeClassName", "priorityClassName",
       "extraLabels", "extraAnnotations", "imagePullFailureTimeoutSeconds"}};
  d.resolvesEnvReferences = true;
  d.recordsAcceptance = true;  // an annotation of the batch Job, found in the watch cache
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
  return d;
}

}  // namespace ayatori::adapters::kubernetes
