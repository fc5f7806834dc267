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

}  // namespace ayatori
