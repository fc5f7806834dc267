// JobEnvironment: how a task's environment is assembled from the spec's literal values and the
// Secret and ConfigMap values the controller resolved (ExecutionRequest::resolvedEnv), the same
// for every backend that passes an environment to the task.
#pragma once

#include <vector>

#include "adapters/adapter.h"
#include "ayatori/status.h"

namespace ayatori::adapters {

// Env vars every execution gets (docs/design.md § Correlation).
inline constexpr const char* kEnvJobNamespace = "AYATORI_JOB_NAMESPACE";
inline constexpr const char* kEnvJobName = "AYATORI_JOB_NAME";
inline constexpr const char* kEnvJobUid = "AYATORI_JOB_UID";

// The execution's environment: the spec's env in order (each value resolved by the controller, or
// the spec's literal), then anything else the controller resolved, then AYATORI_JOB_NAMESPACE,
// AYATORI_JOB_NAME and AYATORI_JOB_UID (which a user cannot override). kFailedPrecondition when a
// reference was not resolved.
StatusOr<std::vector<ResolvedEnvVar>> JobEnvironment(const ExecutionRequest& request);

}  // namespace ayatori::adapters
