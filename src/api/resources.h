// Effective resources of a Job: the Job's own requests/limits completed from its JobClass
// defaults and checked against the class bounds (a LimitRange for one Job).
#pragma once

#include <optional>

#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::api {

// For cpu and memory independently:
//   limit   = the Job's limit, else the class default limit (may stay unset);
//   request = the Job's request, else the class default request, else the limit (Kubernetes
//             behaviour). A class default request above the limit is lowered to the limit: the user
//             did not choose it and should not be blamed for it.
// Then every value must be >= 0 and within the class min/max, and request <= limit. A class min
// requires a request and a class max requires a limit (as LimitRange does), else a Job could
// escape the bound by leaving the value unset.
// Errors are kInvalidArgument with messages for the Job's author, e.g.
//   "limits.memory 4Gi exceeds the maximum 2Gi allowed by JobClass".
StatusOr<ResourceRequirements> ResolveResources(
    const std::optional<ResourceRequirements>& jobResources, const ResourcePolicy& classPolicy);

}  // namespace ayatori::api
