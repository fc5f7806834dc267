// The pure half of the Docker adapter: DockerExecutionParameters from the class's parameters
// JSON, the container create body for a request, and the Observation for a container inspect.
// No I/O here, so all of it is unit-tested.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/common/job_environment.h"
#include "adapters/common/observations.h"
#include "adapters/common/redaction.h"
#include "adapters/docker/parameters.h"
#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::adapters::docker {

inline constexpr const char* kAdapterName = "docker";
inline constexpr const char* kContainerReferenceType = "Container";

// Observation reasons of this backend (Observation::reason); the shared ones are in
// adapters/common/observations.h.
// Unknown: the engine shows a never-started container whose start failed inside the engine.
inline constexpr const char* kReasonStartNotConfirmed = "StartNotConfirmed";
// The engine reports an end whose exit status it lost (ObservationFromInspect).
inline constexpr const char* kReasonExitStatusLost = "ExitStatusLost";

// The parameters JSON is the DockerExecutionParameters object ({"spec": {...}}, decoded by
// docker::DockerExecutionParametersFromJson; null = all defaults). `endpoint` stays empty when the
// JSON names none, so that the adapter's default endpoint applies.
StatusOr<DockerExecutionParameters> ParseDockerParameters(const nlohmann::json& parameters);

// InsecureEndpoint: the engine endpoint of `params` (`defaultEndpoint` when they name none) would
// be spoken to in plain HTTP, which carries the container's environment (forwarded Secret values
// included) unencrypted: http://, or tcp:// with neither a tlsSecretRef nor `adapterTls` (client
// TLS of the adapter's own, DockerAdapterOptions::tls), unless the parameters say insecure: true;
// and http:// with a tlsSecretRef, insecure or not (TLS asked for where there is none). nullopt
// otherwise. The message does not show the endpoint: the Job API never shows backend
// configuration. Pure.
std::optional<Refusal> InsecureEndpointRefusal(const DockerExecutionParameters& params,
                                               const std::string& defaultEndpoint, bool adapterTls);

// Checks that a request can be honoured (parameters, resources Docker can express, UID usable as
// a container name). Pure; no engine round trip.
Status ValidateRequest(const ExecutionRequest& request, const DockerExecutionParameters& p);

// kInvalidArgument: networkMode host without allowHostNetwork: true. Checked at acceptance
// (DockerAdapter::Validate) only: networkMode is pinned then, and a later edit of the parameters
// (allowHostNetwork is read at each call) does not change the network an accepted Job was
// accepted with.
Status HostNetworkAllowed(const DockerExecutionParameters& p);

// "ayatori-<uid>": deterministic, so a second create for the same Job conflicts (409).
std::string ContainerName(std::string_view uid);
// The name a container gets when we stop it on request (Cancel). Docker labels cannot change
// after create; the name can, so it durably records that the stop was ours.
std::string CancelledContainerName(std::string_view uid);

// The parameters' securityProfile and init as HostConfig fields of `host` (docs/security.md;
// runAsUser:runAsGroup is the container's User, which BuildCreateBody sets): CapDrop ["ALL"] +
// addCapabilities -> CapAdd;
//   allowPrivilegeEscalation false -> SecurityOpt no-new-privileges; seccompProfile Unconfined
//   -> seccomp=unconfined; pidsLimit -> PidsLimit; readOnlyRootFilesystem -> ReadonlyRootfs;
//   Tmpfs /tmp (and `workingDir` on a read-only root) of tmpSizeMiB; openFilesLimit -> Ulimits
//   nofile; init -> Init; logMaxBytes -> LogConfig json-file max-size, max-file 1.
void AddSecurityProfile(const DockerExecutionParameters& p, const std::string& workingDir,
                        nlohmann::json& host);

// The body of POST /containers/create. Holds resolved env values (Secrets): never log it.
//   command -> Entrypoint (replaces the image's; empty keeps it), args -> Cmd (replaces the
//   image's CMD; with a command set the image's CMD is not used either, as in Kubernetes),
//   limits.cpu -> NanoCpus, limits.memory -> Memory = MemorySwap (no swap),
//   requests.cpu -> CpuShares (milli * 1024 / 1000, at least 2),
//   requests.memory -> MemoryReservation, networkMode/runtime from the parameters, and the
//   security profile (AddSecurityProfile).
StatusOr<nlohmann::json> BuildCreateBody(const ExecutionRequest& request,
                                         const DockerExecutionParameters& p);

// dockerd's verdict on a failed start (daemon/start.go, translateContainerdStartErr): exit code
// 127 (the command does not exist) or 126 (it cannot be executed) mean the task's own command
// cannot run, and the start answered 400. Any other failed start gets 128: the engine's own
// trouble, which a later start may overcome.
bool EngineRefusedCommand(int64_t exitCode);

// A failed start whose error says the container's init was OOM-killed (runc: "container init was
// OOM-killed (memory limit too low?)"): the task's memory limit is too small to start it.
bool StartFailedForMemory(std::string_view error);

// With init (HostConfig.Init), the engine starts the container even when the task's command
// cannot run: docker-init (tini) reports the failed exec on stderr ("[FATAL tini (7)] exec
// /x failed: No such file or directory") and exits 127 (not found) or 126 (not executable).
// The detail of that report when the last lines of stderr in `stderrTail` hold one; nullopt
// otherwise.
std::optional<std::string> InitExecFailure(std::string_view stderrTail);

// A container Ensure may (re)start: `created`, not cancelled by us, and no start was refused for
// the task's own command (EngineRefusedCommand) or memory limit (StartFailedForMemory).
bool MayStart(const nlohmann::json& inspect);

// GET /containers/{id}/json -> what the adapter reports:
//   created -> Pending; Failed/StartFailed if the engine refused the task's command (126, 127);
//              Failed/OOMKilled if its init was OOM-killed during the start (limit too low);
//              Unknown/StartNotConfirmed if the engine's own start failed (128: e.g. containerd
//              kept the task of a start interrupted by an engine crash; the process may have
//              run); Cancelled if we cancelled it before it started
//   running, paused, restarting -> Running (startedAt)
//   exited, dead -> exit 0: Succeeded (success wins over a concurrent cancel or a child OOM);
//                   stopped by our Cancel: Cancelled; OOMKilled: Failed/OOMKilled;
//                   exit 255 while `resultUnknown`: Unknown/ExitStatusLost (below);
//                   else Failed/ProcessFailed; with exitCode, startedAt, finishedAt
//
// `resultUnknown`: the Job is in a ResultUnknown episode (ExecutionKey::resultUnknown): at its
// last look the controller could not confirm the task's state, e.g. the engine was down.
// containerd gives a task whose exit status it lost exit code 255: when the engine crashed and
// its containerd with it, a task that ended meanwhile may have lost its shim, and the engine then
// records "exited 255" at its restart (seen on dockerd 20.10 with a task that exits 3;
// docs/operations.md "dockerd was restarted"). Such an end is not a result: the true exit code
// is not known. A task that really exits 255 unseen in such an episode is reported the same way
// (an operator confirms the loss); outside one, 255 is the task's own exit code. Every look at
// the container (Ensure finding it, Observe, Cancel) maps it here, so all report the same.
Observation ObservationFromInspect(const nlohmann::json& inspect, bool resultUnknown);

// Docker's RFC 3339 timestamps with nanoseconds; nullopt for the zero time "0001-01-01T00:00:00Z"
// or anything unparsable.
std::optional<api::Time> ParseEngineTime(std::string_view text);

}  // namespace ayatori::adapters::docker
