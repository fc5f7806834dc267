// Resolving a Job before it is accepted (DESIGN.md § Decisions): which JobClass (explicit name,
// namespace default, cluster default), which adapter and parameters, the effective resources,
// and whether every Secret/ConfigMap reference can be satisfied. Reads only the cache: no values
// of Secrets or ConfigMaps are read here.
#pragma once

#include <string>

#include "adapters/registry.h"
#include "controller/cluster_cache.h"
#include "statemachine/statemachine.h"

namespace ayatori::controller {

// Whether the class's adapter resolves env references itself (Kubernetes: the kubelet does) or
// needs the controller to read the values and forward them (Docker, OpenSandbox).
bool AdapterPassesReferences(const std::string& controllerName);

// The JobClass name a Job would use: spec.jobClassName, else the namespace default, else the one
// cluster default. On failure returns a kPending resolution in `failure`.
std::string ChooseJobClassName(const api::Job& job, const ClusterCache& cache,
                               statemachine::Resolution* failure);

statemachine::Resolution ResolveJob(const api::Job& job, const ClusterCache& cache,
                                    const adapters::AdapterRegistry& registry);

}  // namespace ayatori::controller
