// metav1.Condition helpers with Kubernetes semantics: lastTransitionTime changes only when the
// status changes; reason, message and observedGeneration are updated in place.
#pragma once

#include <string_view>
#include <vector>

#include "api/types.h"

namespace ayatori::api {

// Sets (adds or updates) the condition of `desired.type`. lastTransitionTime is set to `now` when
// the condition is new or its status changes, else kept. Returns true if anything changed.
bool SetCondition(std::vector<Condition>& conditions, Condition desired, Time now);

// Removes the condition of `type`; returns true if one was removed.
bool RemoveCondition(std::vector<Condition>& conditions, std::string_view type);

bool IsConditionStatus(const std::vector<Condition>& conditions, std::string_view type,
                       ConditionStatus status);

}  // namespace ayatori::api
