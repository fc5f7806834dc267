#include "ayatori/adapter.h"

namespace ayatori {

const char* ExecutionPhaseName(ExecutionPhase phase) {
  switch (phase) {
    case ExecutionPhase::kAbsent:
      return "Absent";
    case ExecutionPhase::kPending:
      return "Pending";
    case ExecutionPhase::kRunning:
      return "Running";
    case ExecutionPhase::kSucceeded:
      return "Succeeded";
    case ExecutionPhase::kFailed:
      return "Failed";
    case ExecutionPhase::kCancelled:
      return "Cancelled";
    case ExecutionPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

nlohmann::json WithPinnedParameters(nlohmann::json parameters,
                                    const std::map<std::string, std::string>& pinned) {
  if (pinned.empty()) return parameters;
  if (!parameters.is_object()) parameters = nlohmann::json::object();
  nlohmann::json& spec = parameters["spec"];
  if (!spec.is_object()) spec = nlohmann::json::object();
  for (const auto& [field, value] : pinned) spec[field] = value;
  return parameters;
}

}  // namespace ayatori
