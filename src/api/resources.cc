#include "api/resources.h"

#include <string>

namespace ayatori::api {
namespace {

using QuantityField = std::optional<Quantity> ResourceList::*;

struct ResourceName {
  const char* name;
  QuantityField field;
};
constexpr ResourceName kResources[] = {{"cpu", &ResourceList::cpu},
                                       {"memory", &ResourceList::memory}};

Status Invalid(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

// Checks one resolved value ("requests.cpu 100m") against the class bounds.
Status CheckBounds(const std::string& what, const Quantity& value, const ResourcePolicy& policy,
                   QuantityField field) {
  if (value.IsNegative()) return Invalid(what + " " + value.str() + " must not be negative");
  const std::optional<Quantity>& min = policy.min.*field;
  const std::optional<Quantity>& max = policy.max.*field;
  if (min && value < *min) {
    return Invalid(what + " " + value.str() + " is below the minimum " + min->str() +
                   " allowed by JobClass");
  }
  if (max && value > *max) {
    return Invalid(what + " " + value.str() + " exceeds the maximum " + max->str() +
                   " allowed by JobClass");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ResourceRequirements> ResolveResources(
    const std::optional<ResourceRequirements>& jobResources, const ResourcePolicy& classPolicy) {
  const ResourceRequirements job = jobResources.value_or(ResourceRequirements{});
  ResourceRequirements out;
  for (const ResourceName& r : kResources) {
    const std::string name = r.name;
    std::optional<Quantity>& request = out.requests.*r.field;
    std::optional<Quantity>& limit = out.limits.*r.field;
    const bool limit_from_class = !(job.limits.*r.field);
    limit = job.limits.*r.field ? job.limits.*r.field : classPolicy.defaults.limits.*r.field;
    request = job.requests.*r.field;
    if (!request) {
      request = classPolicy.defaults.requests.*r.field;
      if (!request || (limit && *request > *limit)) request = limit;
    }

    // The limit first: when the request was copied from it, the user wrote the limit.
    if (limit) {
      if (Status s = CheckBounds("limits." + name, *limit, classPolicy, r.field); !s.ok()) {
        return s;
      }
    } else if (const auto& max = classPolicy.max.*r.field) {
      return Invalid("limits." + name + " must be set: JobClass allows at most " + max->str());
    }
    if (request) {
      if (Status s = CheckBounds("requests." + name, *request, classPolicy, r.field); !s.ok()) {
        return s;
      }
    } else if (const auto& min = classPolicy.min.*r.field) {
      return Invalid("requests." + name + " must be set: JobClass requires at least " + min->str());
    }
    if (request && limit && *request > *limit) {
      return Invalid("requests." + name + " " + request->str() + " exceeds limits." + name + " " +
                     limit->str() + (limit_from_class ? " (the JobClass default limit)" : ""));
    }
  }
  return out;
}

}  // namespace ayatori::api
