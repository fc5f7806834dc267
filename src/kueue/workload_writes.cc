#include "kueue/workload_writes.h"

#include <utility>

#include "api/conditions.h"
#include "api/json.h"

namespace ayatori::kueue {

using nlohmann::json;

namespace {

// Cut at a UTF-8 character boundary: the API server refuses invalid UTF-8.
std::string Capped(const std::string& message) {
  if (message.size() <= kMaxConditionMessageBytes) return message;
  size_t end = kMaxConditionMessageBytes;
  while (end > 0 && (static_cast<unsigned char>(message[end]) & 0xC0) == 0x80) --end;
  return message.substr(0, end);
}

api::Condition Desired(api::ConditionStatus status, const std::string& type,
                       const std::string& reason, const std::string& message) {
  api::Condition c;
  c.type = type;
  c.status = status;
  c.reason = reason;
  c.message = Capped(message);
  return c;
}

// `conditions` with the condition of `type` set as metav1 does (time kept when unchanged).
api::Condition Set(std::vector<api::Condition>& conditions, api::Condition desired, api::Time now) {
  const std::string type = desired.type;
  api::SetCondition(conditions, std::move(desired), now);
  for (const api::Condition& c : conditions) {
    if (c.type == type) return c;
  }
  return {};  // not reached: SetCondition adds it
}

}  // namespace

std::string ConditionFieldManager(const std::string& type) { return "ayatori-" + type; }

json ConditionApply(const WorkloadState& current, api::ConditionStatus status,
                    const std::string& type, const std::string& reason, const std::string& message,
                    api::Time now) {
  std::vector<api::Condition> conditions = current.conditions;
  api::Condition set = Set(conditions, Desired(status, type, reason, message), now);
  return {
      {"apiVersion", kApiVersion},
      {"kind", "Workload"},
      {"metadata", {{"name", current.metadata.name}, {"namespace", current.metadata.namespace_}}},
      {"status", {{"conditions", json::array({json(set)})}}}};
}

json ReservationCleared(json workload, const std::string& evictionReason,
                        const std::string& message, api::Time now) {
  auto state = ReadWorkload(workload);
  std::vector<api::Condition> conditions =
      state.ok() ? state->conditions : std::vector<api::Condition>{};
  const bool requeueNow = evictionReason == "Preempted" || evictionReason == "NodeFailures";
  Set(conditions,
      Desired(api::ConditionStatus::kFalse, kConditionQuotaReserved, "Pending", message), now);
  Set(conditions,
      Desired(api::ConditionStatus::kFalse, kConditionAdmitted, "NoReservation",
              "The workload has no reservation"),
      now);
  Set(conditions,
      requeueNow ? Desired(api::ConditionStatus::kTrue, kConditionRequeued, evictionReason, message)
                 : Desired(api::ConditionStatus::kFalse, kConditionRequeued,
                           evictionReason.empty() ? "Evicted" : evictionReason, message),
      now);
  json& status = workload["status"];
  if (!status.is_object()) status = json::object();
  status.erase("admission");
  status["conditions"] = conditions;
  return workload;
}

std::optional<json> ResourceInUseRemoval(const WorkloadState& current) {
  const auto& finalizers = current.metadata.finalizers;
  for (size_t i = 0; i < finalizers.size(); ++i) {
    if (finalizers[i] != kResourceInUseFinalizer) continue;
    const std::string path = "/metadata/finalizers/" + std::to_string(i);
    return json::array({{{"op", "test"}, {"path", path}, {"value", kResourceInUseFinalizer}},
                        {{"op", "remove"}, {"path", path}}});
  }
  return std::nullopt;
}

}  // namespace ayatori::kueue
