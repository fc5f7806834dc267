#include "adapters/docker/descriptor.h"

#include "adapters/docker/container.h"
#include "adapters/docker/parameters.h"
#include "api/types.h"

namespace ayatori::adapters::docker {

AdapterDescriptor Descriptor(const std::string& endpointOverride) {
  AdapterDescriptor d;
  d.controllerName = kControllerName;
  d.parameters = ParametersKind{
      api::kGroup,
      api::kVersion,
      kParametersKind,
      "dockerexecutionparameters",
      {"endpoint", "networkMode", "runtime", "pullPolicy", "extraLabels", "stopGracePeriodSeconds",
       "tlsSecretRef", "insecure", "allowHostNetwork", "init", "securityProfile"}};
  d.resolvesEnvReferences = false;
  d.enforces = {.memoryLimit = true,
                .cpuLimit = true,
                .egressDeny = true,
                .isolation = true,
                .imagePullAuth = true};
  d.parametersAsk = [](const nlohmann::json& parameters) {
    Enforcement ask;
    const auto spec = parameters.is_object() ? parameters.value("spec", nlohmann::json::object())
                                             : nlohmann::json::object();
    // networkMode defaults to none: no network unless the parameters say host (which also needs
    // allowHostNetwork: true); then egress is not denied, and a class that asks for it refused.
    ask.egressDeny = !spec.is_object() || spec.value("networkMode", "none") == "none";
    ask.isolation = true;  // a container of its own, whatever the runtime
    return ask;
  };
  // Plain HTTP to the engine is refused as InsecureEndpoint. Without an override, parameters that
  // name no endpoint use the adapter's default, the local unix socket, which is never plain HTTP.
  d.refuseParameters = [](const nlohmann::json& parameters) -> std::optional<Refusal> {
    auto params = ParseDockerParameters(parameters);
    // Parameters that do not decode are the adapter's to refuse (Validate: BackendRejected).
    if (!params.ok()) return std::nullopt;
    return InsecureEndpointRefusal(*params, DockerExecutionParameters{}.endpoint, false);
  };
  if (!endpointOverride.empty()) d.specOverrides["endpoint"] = endpointOverride;
  return d;
}

}  // namespace ayatori::adapters::docker
