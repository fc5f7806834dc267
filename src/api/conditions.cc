#include "api/conditions.h"

#include <algorithm>

namespace ayatori::api {

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  auto it = std::find_if(conditions.begin(), conditions.end(),
                         [&](const Condition& c) { return c.type == type; });
  return it == conditions.end() ? nullptr : &*it;
}

bool IsConditionStatus(const std::vector<Condition>& conditions, std::string_view type,
                       ConditionStatus status) {
  const Condition* c = FindCondition(conditions, type);
  return c != nullptr && c->status == status;
}

bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type) {
  return IsConditionStatus(conditions, type, ConditionStatus::kTrue);
}

bool SetCondition(std::vector<Condition>& conditions, Condition desired, Time now) {
  auto it = std::find_if(conditions.begin(), conditions.end(),
                         [&](const Condition& c) { return c.type == desired.type; });
  if (it == conditions.end()) {
    desired.lastTransitionTime = now;
    conditions.push_back(std::move(desired));
    return true;
  }
  desired.lastTransitionTime = it->status == desired.status ? it->lastTransitionTime : now;
  if (*it == desired) return false;
  *it = std::move(desired);
  return true;
}

bool RemoveCondition(std::vector<Condition>& conditions, std::string_view type) {
  auto old = conditions.size();
  std::erase_if(conditions, [&](const Condition& c) { return c.type == type; });
  return conditions.size() != old;
}

std::string ToString(ConditionStatus status) {
  switch (status) {
    case ConditionStatus::kTrue:
      return "True";
    case ConditionStatus::kFalse:
      return "False";
    case ConditionStatus::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

std::string ToString(DesiredState state) {
  return state == DesiredState::kCancelled ? "Cancelled" : "Running";
}

std::optional<int32_t> ApplyTtlPolicy(std::optional<int32_t> requested,
                                      const std::optional<TtlPolicy>& policy) {
  if (!policy) return requested;
  std::optional<int32_t> ttl = requested ? requested : policy->defaultSeconds;
  if (ttl && policy->maximumSeconds && *ttl > *policy->maximumSeconds) {
    ttl = policy->maximumSeconds;
  }
  // A maximum without a default still bounds a Job that asks for nothing: "keep forever" is
  // more than any maximum.
  if (!ttl && policy->maximumSeconds) ttl = policy->maximumSeconds;
  return ttl;
}

}  // namespace ayatori::api
