#include "adapters/common/observations.h"

#include <utility>

namespace ayatori::adapters {

namespace {

Observation Make(ExecutionPhase phase, std::string reason, std::string message) {
  Observation o;
  o.phase = phase;
  o.reason = std::move(reason);
  o.message = std::move(message);
  return o;
}

}  // namespace

Observation Absent() { return Make(ExecutionPhase::kAbsent, "", ""); }

Observation Pending(std::string reason, std::string message) {
  return Make(ExecutionPhase::kPending, std::move(reason), std::move(message));
}

Observation Running() { return Make(ExecutionPhase::kRunning, "", ""); }

Observation Failed(std::string reason, std::string message) {
  return Make(ExecutionPhase::kFailed, std::move(reason), std::move(message));
}

Observation Cancelled(std::string message) {
  return Make(ExecutionPhase::kCancelled, "", std::move(message));
}

Observation Unknown(std::string reason, std::string message) {
  return Make(ExecutionPhase::kUnknown, std::move(reason), std::move(message));
}

Observation Unreachable(std::string message) {
  return Unknown(kReasonBackendUnreachable, std::move(message));
}

}  // namespace ayatori::adapters
