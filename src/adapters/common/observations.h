// The Observations every adapter reports, built one way (src/adapters/adapter.h defines
// Observation), and the reasons more than one backend gives (docs/api.md § Conditions and
// reasons). A backend's own reasons stay in its folder.
#pragma once

#include <string>

#include "adapters/adapter.h"

namespace ayatori::adapters {

// Failed: the task's process ended with a non-zero exit code.
inline constexpr const char* kReasonProcessFailed = "ProcessFailed";
// Failed: the task exceeded its memory limit.
inline constexpr const char* kReasonOOMKilled = "OOMKilled";
// Failed: the image could not be pulled (no such image, credentials refused).
inline constexpr const char* kReasonImagePullFailed = "ImagePullFailed";
// Failed: the backend refused the execution as asked for; another try would be refused too.
inline constexpr const char* kReasonBackendRejected = "BackendRejected";
// Failed: the task's command could not run (not found, not executable).
inline constexpr const char* kReasonStartFailed = "StartFailed";
// Unknown: the backend could not be reached or did not answer.
inline constexpr const char* kReasonBackendUnreachable = "BackendUnreachable";
// Unknown: the backend answered with an error of its own (5xx, throttled).
inline constexpr const char* kReasonBackendError = "BackendError";
// Unknown: the backend refused the call for lack of permission (RBAC, quota); may change.
inline constexpr const char* kReasonForbidden = "Forbidden";
// Unknown: the backend reports a state the adapter does not know.
inline constexpr const char* kReasonUnexpectedState = "UnexpectedBackendState";
// Acceptance refused: the backend would be spoken to in plain HTTP without `insecure: true`.
inline constexpr const char* kReasonInsecureEndpoint = "InsecureEndpoint";

// Nothing exists for the Job on the backend.
Observation Absent();
// On its way (`reason` empty) or waiting for something the backend names.
Observation Pending(std::string reason = "", std::string message = "");
Observation Running();
Observation Failed(std::string reason, std::string message);
Observation Cancelled(std::string message);
// The state of the execution is not known (`reason` says why).
Observation Unknown(std::string reason, std::string message);
// Unknown/BackendUnreachable. `message` must not name the backend's address: the Job API never
// shows backend configuration (docs/api.md).
Observation Unreachable(std::string message);

}  // namespace ayatori::adapters
