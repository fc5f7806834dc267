// The messages of an execution's end, one style for every adapter (docs/api.md § Conditions and
// reasons): a sentence that starts with a capital letter and names the task (not the container,
// pod or sandbox that ran it), details after a colon or in parentheses, no final period. The
// state machine copies them into the Succeeded condition, so a user reads the same words for the
// same fact whichever backend ran the Job. Header-only: the state machine uses it too.
#pragma once

#include <cstdint>
#include <string>

namespace ayatori::adapters {

// Completed (code 0) and ProcessFailed.
inline std::string TaskExitedMessage(int64_t exitCode) {
  return "The task exited with code " + std::to_string(exitCode);
}

// OOMKilled.
inline std::string TaskOomKilledMessage(int64_t exitCode) {
  return "The task exceeded its memory limit and was killed (exit code " +
         std::to_string(exitCode) + ")";
}

// ProcessFailed without an exit code of its own: ended by a signal nobody asked for.
inline std::string TaskKilledBySignalMessage(const std::string& signal) {
  return "The task was killed by a signal (" + signal + ")";
}

// StartFailed: the backend says the task's command cannot run (not found, not executable).
inline std::string TaskCouldNotStartMessage(const std::string& detail) {
  return "The task could not start: " + detail;
}

// Cancelled as the adapter reports it (the state machine writes its own message for a cancel it
// asked for; this one reads as ExecutionStopped if nobody did).
inline std::string TaskStoppedMessage(const std::string& by) {
  return "The task was stopped " + by;
}

}  // namespace ayatori::adapters
