#include "adapters/opensandbox/descriptor.h"

#include "adapters/opensandbox/spec.h"
#include "api/types.h"

namespace ayatori::adapters::opensandbox {

AdapterDescriptor Descriptor() {
  AdapterDescriptor d;
  d.controllerName = kControllerName;
  d.parameters = ParametersKind{api::kGroup, api::kVersion, kParametersKind,
                                "opensandboxexecutionparameters", EnforcedParameterFields()};
  d.parametersRequiredBecause = "it holds the server endpoint";
  d.resolvesEnvReferences = false;
  d.runsImageEntrypoint = false;  // execd runs a command line: spec.task.command is required
  d.enforces = {.memoryLimit = true,
                .cpuLimit = true,
                .egressDeny = false,
                .isolation = true,
                .imagePullAuth = true};
  d.parametersAsk = [](const nlohmann::json&) {
    Enforcement ask;
    ask.isolation = true;  // a sandbox of its own
    return ask;
  };
  // Plain HTTP to the server is refused as InsecureEndpoint unless the parameters say insecure.
  // Parameters that do not decode are Validate's to refuse (BackendRejected).
  d.refuseParameters = [](const nlohmann::json& parameters) -> std::optional<Refusal> {
    if (auto refusal = SecurityProfileRefusal(parameters)) return refusal;
    auto params = ParseParameters(parameters);
    if (!params.ok()) return std::nullopt;
    return InsecureEndpointRefusal(*params);
  };
  return d;
}

}  // namespace ayatori::adapters::opensandbox
