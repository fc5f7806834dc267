// How the Kubernetes adapter describes itself to the controller (src/adapters/adapter.h).
#pragma once

#include "adapters/adapter.h"

namespace ayatori::adapters::kubernetes {

inline constexpr const char* kControllerName = "execution.ayatori.ddupan.top/kubernetes";

// controllerName .../kubernetes, KubernetesExecutionParameters, env references and
// imagePullSecrets passed to the pod (the kubelet resolves them), enforces memory and cpu limits,
// a pod boundary and per-request image auth. Not egress deny: that is the cluster's
// NetworkPolicy and CNI, which this adapter neither creates nor can check.
AdapterDescriptor Descriptor();

}  // namespace ayatori::adapters::kubernetes
