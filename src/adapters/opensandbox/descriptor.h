// How the OpenSandbox adapter describes itself to the controller (src/adapters/adapter.h).
#pragma once

#include "adapters/adapter.h"

namespace ayatori::adapters::opensandbox {

inline constexpr const char* kControllerName = "execution.ayatori.ddupan.top/opensandbox";

// controllerName .../opensandbox, OpenSandboxExecutionParameters (the fields of
// EnforcedParameterFields in spec.h), Secret values resolved by the controller, enforces memory
// and cpu limits (resourceLimits), a sandbox boundary and per-request image auth (image.auth).
// Not egress deny: sandboxes run in host network mode, where the server refuses networkPolicy.
AdapterDescriptor Descriptor();

}  // namespace ayatori::adapters::opensandbox
