// How the Docker adapter describes itself to the controller (src/adapters/adapter.h).
#pragma once

#include <string>

#include "adapters/adapter.h"

namespace ayatori::adapters::docker {

inline constexpr const char* kControllerName = "execution.ayatori.ddupan.top/docker";

// controllerName .../docker, DockerExecutionParameters, Secret values resolved by the controller,
// enforces memory and cpu limits, egress deny (networkMode none), a container boundary and
// per-request registry auth. A non-empty `endpointOverride` replaces spec.endpoint of every
// DockerExecutionParameters (--docker-endpoint: a controller next to a local dockerd).
AdapterDescriptor Descriptor(const std::string& endpointOverride = "");

}  // namespace ayatori::adapters::docker
