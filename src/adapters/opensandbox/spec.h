// The pure half of the OpenSandbox adapter (docs/opensandbox.md): parameters, what a request may
// ask for, the sandbox create body, the guarded task command and its probe (the at-most-once
// design), and what sandbox and command answers mean. No I/O, so all of it is unit-tested.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/common/observations.h"
#include "adapters/opensandbox/parameters.h"
#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::adapters::opensandbox {

inline constexpr const char* kAdapterName = "opensandbox";
inline constexpr const char* kSandboxReferenceType = "Sandbox";
inline constexpr const char* kCommandReferenceType = "Command";
// execd's port inside every sandbox (the SDKs' DEFAULT_EXECD_PORT).
inline constexpr int kExecdPort = 44772;
// The guarded command exits with this code, without running the task, when the task was already
// started in the sandbox (TaskCommand).
inline constexpr int kGuardExitCode = 125;
// The task's command exits with this code, without running the task, when the execd that received
// it belongs to another Job's sandbox (its AYATORI_JOB_UID differs): in host network mode every
// sandbox's execd claims the same port, so a second live sandbox's endpoint reaches the first.
inline constexpr int kForeignSandboxExitCode = 124;

// Observation reasons of this backend (Observation::reason); the shared ones are in
// adapters/common/observations.h.
inline constexpr const char* kReasonSandboxGone = "SandboxGone";        // deleted by someone else
inline constexpr const char* kReasonSandboxExpired = "SandboxExpired";  // the server's timeout
inline constexpr const char* kReasonSandboxFailed = "SandboxFailed";    // its container stopped
inline constexpr const char* kReasonCommandLost = "CommandLost";        // execd no longer knows it
// A retry found the task started by an earlier request but could not identify its command.
inline constexpr const char* kReasonCommandNotIdentified = "CommandNotIdentified";

// The parameters fields this adapter enforces. Any other field in the parameters' spec is refused
// (ParseParameters), so a parameter added to the CRD before the adapter knows it never passes
// silently.
const std::vector<std::string>& EnforcedParameterFields();

// The OpenSandboxExecutionParameters object ({"spec": {...}}) as the class references it, or as
// an accepted Job's calls get it, with the pinned fields laid over (strings: "true"/"false" for
// useServerProxy).
StatusOr<OpenSandboxExecutionParameters> ParseParameters(const nlohmann::json& parameters);

// The fields pinned at acceptance (Adapter::PinnedParameters): `endpoint` (the server that holds
// the Job's sandbox; without a trailing slash, as the adapter uses it) and `useServerProxy`
// ("true"/"false": the route to the sandbox's execd, which may be the only one that reaches it).
// Empty when the parameters do not parse (Validate refused them).
std::map<std::string, std::string> PinnedFields(const nlohmann::json& parameters);

// InsecureEndpoint (adapters/common/observations.h) when `params` name an http:// endpoint without
// insecure: true; nullopt otherwise. Checked at acceptance (the descriptor) and at every call
// (TargetFor).
std::optional<Refusal> InsecureEndpointRefusal(const OpenSandboxExecutionParameters& params);

// NotEnforceable when the parameters object ({"spec": {...}}) sets a securityProfile field other
// than runAsUser, runAsGroup and runAsRoot (the shared profile's other fields are the server's
// configuration, which a sandbox create request cannot carry); nullopt otherwise.
std::optional<Refusal> SecurityProfileRefusal(const nlohmann::json& parameters);

// The shell command that makes the task's working directory (when it sets one) and gives it to
// the task's uid/gid: run by execd as itself (root) right before the task, which runs as the
// profile's ids and could not create it. Empty when nothing is needed (no workingDir, or root).
std::string PrepareWorkingDirCommand(const ExecutionRequest& request,
                                     const SecurityProfile& profile);

// Checks, without any server round trip, that the request can be honoured as asked: parameters,
// a command to run, resource limits the server parses (it silently drops values it cannot),
// sandbox metadata within the server's label rules, timeouts within its range.
Status ValidateRequest(const ExecutionRequest& request,
                       const OpenSandboxExecutionParameters& params);

// Seconds of the sandbox's server-side timeout, nullopt for none (manual cleanup): with
// activeDeadlineSeconds, the deadline plus sandboxTimeoutMarginSeconds (at least 60, the server's
// minimum); else sandboxTimeoutSeconds when set.
std::optional<int64_t> SandboxTimeoutSeconds(const ExecutionRequest& request,
                                             const OpenSandboxExecutionParameters& params);

// The metadata every sandbox of the Job carries: the class's extraMetadata, then the Job's UID
// (the lookup key), namespace and name (the name only when it fits a label value).
std::vector<std::pair<std::string, std::string>> SandboxMetadata(
    const ExecutionRequest& request, const OpenSandboxExecutionParameters& params);

// The query string value that lists the Job's sandboxes: GET /sandboxes?metadata=<this>.
std::string UidMetadataQuery(std::string_view uid);

struct ImageAuth {
  std::string username;
  SensitiveString password;
};

// The image.auth of the create request from the Job's dockerconfigjson imagePullSecrets: nullopt
// with no Secrets (anonymous pull); kInvalidArgument when no entry matches the image's registry or
// the entry has only an identity token (the server takes username and password): never anonymous
// then.
StatusOr<std::optional<ImageAuth>> SelectImageAuth(const ExecutionRequest& request);

// POST /v1/sandboxes. Holds env and registry credentials: never log it.
StatusOr<nlohmann::json> BuildCreateBody(const ExecutionRequest& request,
                                         const OpenSandboxExecutionParameters& params,
                                         const std::optional<ImageAuth>& auth);

// A word for sh, single-quoted: 'it'\''s'.
std::string ShellQuote(std::string_view word);

// The file whose exclusive creation admits the task once per sandbox.
std::string MarkerPath(std::string_view uid);

// The shell text execd runs for the task (execd runs it with bash -c, or sh -c without bash):
// creates MarkerPath exclusively (set -C), records in it the path of its own output file (execd
// names that file after the command id), enters workingDir and execs the task's argv; when the
// marker exists already it prints a line naming the Job UID and exits kGuardExitCode without
// running the task. So a command POSTed twice runs the task once.
std::string TaskCommand(const ExecutionRequest& request);

// A command that prints what the marker says, for a retry that does not know whether the task was
// started: "absent", or "started:" followed by the recorded output path; "foreign" when it runs in
// another Job's sandbox.
std::string ProbeCommand(std::string_view uid);

struct ProbeResult {
  enum class Kind {
    kAbsent,
    kStarted,
    kStartedUnidentified,
    kForeign,
    kMalformed
  } kind = Kind::kMalformed;
  std::string commandId;  // kStarted: the id of the command that started the task
};
ProbeResult ParseProbeOutput(std::string_view output);

// The line the guarded command prints when it refuses to start the task a second time.
std::string GuardLine(std::string_view uid);
// The line it prints when it finds itself in another Job's sandbox.
std::string ForeignSandboxLine(std::string_view uid);

// A sandbox (GET /v1/sandboxes/{id} or a list item) that is not running the command: Failed for
// Terminated/Failed, Pending for Pending, Unknown for states the adapter does not know; nullopt
// for Running and Paused (the command's status says more).
std::optional<Observation> ObservationFromSandbox(const nlohmann::json& sandbox);

// GET /command/status/{id} -> Running, Succeeded, or Failed with the exit code (a signal death,
// exit_code -1 on the wire, is reported as 128 + the signal number, as a shell would).
Observation ObservationFromCommandStatus(const nlohmann::json& status);

// The "code" and "message" of an error body in either shape the server uses ({"code","message"}
// or FastAPI's {"detail": ...}), else an excerpt of the body.
std::string ErrorMessage(int httpStatus, const std::string& body);

std::string ErrorCode(const std::string& body);

// The execd base URL from an endpoint answer ({"endpoint": "host:port[/path]"}): "http://" +
// endpoint. kInternal when the answer has no usable endpoint.
StatusOr<std::string> ExecdBaseUrl(const nlohmann::json& endpointAnswer);
// The request headers an endpoint answer asks for ({"headers": {...}}).
std::vector<std::pair<std::string, std::string>> EndpointHeaders(
    const nlohmann::json& endpointAnswer);

}  // namespace ayatori::adapters::opensandbox
