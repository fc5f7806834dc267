#include "adapters/adapter.h"

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

Observation NotCreated() {
  Observation o;
  o.phase = ExecutionPhase::kAbsent;
  o.reason = kReasonCreateNotConfirmed;
  o.message = "the Job changed before its execution was created; nothing was created";
  return o;
}

size_t LastLinesOffset(std::string_view text, int64_t lines) {
  if (lines <= 0) return text.size();
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;  // the last line's own newline
  for (int64_t n = 0; end > 0; --end) {
    if (text[end - 1] == '\n' && ++n == lines) return end;
  }
  return 0;
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
