#include "adapters/docker/container.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "adapters/common/registry_auth.h"
#include "adapters/docker/engine.h"
#include "adapters/docker/json_get.h"
#include "adapters/task_messages.h"
#include "api/json.h"

namespace ayatori::adapters::docker {

namespace {

using nlohmann::json;

// Docker's lower bounds (daemon/daemon_unix.go): 6 MB for Memory and MemoryReservation, 0.01 CPU.
constexpr int64_t kMinMemoryBytes = int64_t{6} * 1024 * 1024;
constexpr int64_t kMinCpuMilli = 10;

constexpr std::string_view kReservedLabelPrefix = "execution.ayatori.ddupan.top/";

Status Invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

bool IsValidUid(std::string_view uid) {
  if (uid.empty() || uid.size() > 200 || uid.front() == '.' || uid.front() == '-' ||
      uid.front() == '_') {
    return false;
  }
  for (char c : uid) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

// The limits a profile may not go below: a value that small is a typo, not a policy.
constexpr int64_t kMinOpenFiles = 16;
constexpr int64_t kMinLogBytes = 4096;

Status ValidateProfile(const SecurityProfile& profile) {
  const std::string where = "DockerExecutionParameters securityProfile.";
  if (auto st = ValidateIds(profile, where); !st.ok()) return st;
  const SecurityProfile sp = WithDefaults(profile, DockerDefaultSecurityProfile());
  for (const auto& cap : sp.addCapabilities) {
    if (!IsCapabilityName(cap)) {
      return Invalid(where + "addCapabilities: \"" + cap +
                     "\" is not a capability name such as NET_BIND_SERVICE");
    }
  }
  if (*sp.pidsLimit < 1) return Invalid(where + "pidsLimit must be at least 1");
  if (*sp.tmpSizeMiB < 1) return Invalid(where + "tmpSizeMiB must be at least 1");
  if (*sp.openFilesLimit < kMinOpenFiles) {
    return Invalid(where + "openFilesLimit must be at least " + std::to_string(kMinOpenFiles));
  }
  if (*sp.logMaxBytes < kMinLogBytes) {
    return Invalid(where + "logMaxBytes must be at least " + std::to_string(kMinLogBytes));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<DockerExecutionParameters> ParseDockerParameters(const nlohmann::json& parameters) {
  DockerExecutionParameters p;
  if (!parameters.is_null()) {
    auto decoded = DockerExecutionParametersFromJson(parameters);
    if (!decoded.ok()) return decoded.status();
    p = std::move(*decoded);
  }
  const json* spec = GetObject(parameters, "spec");
  if (spec == nullptr || GetString(*spec, "endpoint").empty()) p.endpoint.clear();
  if (p.networkMode.empty()) p.networkMode = "none";
  return p;
}

std::optional<Refusal> InsecureEndpointRefusal(const DockerExecutionParameters& params,
                                               const std::string& defaultEndpoint,
                                               bool adapterTls) {
  const std::string& endpoint = params.endpoint.empty() ? defaultEndpoint : params.endpoint;
  if (params.tlsSecretRef && endpoint.starts_with("http://")) {
    return Refusal{kReasonInsecureEndpoint,
                   "the docker endpoint of the parameters is http:// (plain HTTP) but they name a "
                   "tlsSecretRef: use tcp:// or https://"};
  }
  const bool tls = params.tlsSecretRef.has_value() || adapterTls;
  if (IsPlainNetworkEndpoint(endpoint, tls) && !params.insecure) {
    return Refusal{kReasonInsecureEndpoint,
                   "the docker endpoint of the JobClass's parameters is plain HTTP (tcp:// without "
                   "tlsSecretRef, or http://), which would carry the container's environment "
                   "(forwarded Secret values included) unencrypted: set tlsSecretRef in the "
                   "DockerExecutionParameters, or insecure: true to accept that"};
  }
  return std::nullopt;
}

Status ValidateRequest(const ExecutionRequest& request, const DockerExecutionParameters& p) {
  const auto& meta = request.job.metadata;
  if (!IsValidUid(meta.uid)) {
    return Invalid("Job UID \"" + meta.uid + "\" cannot name a Docker container");
  }
  if (auto ref = ParseImageReference(request.job.spec.task.image); !ref.ok()) return ref.status();
  if (p.networkMode != "none" && p.networkMode != "host") {
    return Invalid("DockerExecutionParameters networkMode \"" + p.networkMode +
                   "\" is not supported: use none (no network) or host");
  }
  if (auto st = ValidateProfile(p.securityProfile); !st.ok()) return st;
  const std::string& workingDir = request.job.spec.task.workingDir;
  if (!workingDir.empty() &&
      (workingDir.front() != '/' || workingDir.find(',') != std::string::npos)) {
    return Invalid("workingDir \"" + workingDir + "\" must be an absolute path without commas");
  }
  for (char c : p.runtime) {
    if (!IsNameChar(c)) {
      return Invalid("DockerExecutionParameters runtime \"" + p.runtime +
                     "\" is not a runtime name");
    }
  }
  for (const auto& [k, v] : p.extraLabels) {
    if (std::string_view(k).substr(0, kReservedLabelPrefix.size()) == kReservedLabelPrefix) {
      return Invalid("DockerExecutionParameters extraLabels must not use the reserved prefix " +
                     std::string(kReservedLabelPrefix) + " (" + k + ")");
    }
  }
  const auto& r = request.resources;
  if (r.limits.cpu && r.limits.cpu->MilliValue() < kMinCpuMilli) {
    return Invalid("limits.cpu " + r.limits.cpu->str() + " is below Docker's minimum of 10m");
  }
  if (r.requests.cpu && r.requests.cpu->MilliValue() <= 0) {
    return Invalid("requests.cpu " + r.requests.cpu->str() + " must be positive");
  }
  if (r.limits.memory && r.limits.memory->Value() < kMinMemoryBytes) {
    return Invalid("limits.memory " + r.limits.memory->str() + " is below Docker's minimum of 6Mi");
  }
  if (r.requests.memory && r.requests.memory->Value() < kMinMemoryBytes) {
    return Invalid("requests.memory " + r.requests.memory->str() +
                   " is below Docker's minimum of 6Mi");
  }
  if (r.requests.memory && r.limits.memory && *r.requests.memory > *r.limits.memory) {
    return Invalid("requests.memory " + r.requests.memory->str() + " exceeds limits.memory " +
                   r.limits.memory->str());
  }
  return Status::Ok();
}

Status HostNetworkAllowed(const DockerExecutionParameters& p) {
  if (p.networkMode == "host" && !p.allowHostNetwork) {
    return Invalid(
        "DockerExecutionParameters networkMode host shares the engine host's network with the "
        "task (no egress control): set allowHostNetwork: true to ask for it on purpose");
  }
  return Status::Ok();
}

std::string ContainerName(std::string_view uid) { return "ayatori-" + std::string(uid); }

std::string CancelledContainerName(std::string_view uid) {
  return ContainerName(uid) + "-cancelled";
}

void AddSecurityProfile(const DockerExecutionParameters& p, const std::string& workingDir,
                        nlohmann::json& host) {
  const SecurityProfile sp = WithDefaults(p.securityProfile, DockerDefaultSecurityProfile());
  host["CapDrop"] = json::array({"ALL"});
  host["CapAdd"] = sp.addCapabilities;
  json securityOpt = json::array();
  if (!*sp.allowPrivilegeEscalation) securityOpt.push_back("no-new-privileges");
  if (sp.seccompProfile == SeccompProfile::kUnconfined) securityOpt.push_back("seccomp=unconfined");
  host["SecurityOpt"] = std::move(securityOpt);
  host["PidsLimit"] = *sp.pidsLimit;
  host["ReadonlyRootfs"] = *sp.readOnlyRootFilesystem;
  // tmpfs pages are charged to the container's memory cgroup: each mount can use up to its size
  // of limits.memory (docs/security.md).
  // Owned by the task's user: the engine copies the mode of the directory it covers (a directory
  // the image lacks is created 0755 for root) and ignores a mode= option. noexec is the engine's
  // default for tmpfs, written out here so that it shows.
  const std::string tmpfs = "rw,nosuid,nodev,noexec,uid=" + std::to_string(sp.runAsUser) +
                            ",gid=" + std::to_string(sp.runAsGroup) +
                            ",size=" + std::to_string(*sp.tmpSizeMiB) + "m";
  json mounts = json::object();
  mounts["/tmp"] = tmpfs;
  if (*sp.readOnlyRootFilesystem && !workingDir.empty() && workingDir != "/" &&
      workingDir != "/tmp" && !workingDir.starts_with("/tmp/")) {
    mounts[workingDir] = tmpfs;
  }
  host["Tmpfs"] = std::move(mounts);
  host["Ulimits"] = json::array(
      {{{"Name", "nofile"}, {"Soft", *sp.openFilesLimit}, {"Hard", *sp.openFilesLimit}}});
  host["Init"] = p.init;
  host["LogConfig"] = {
      {"Type", "json-file"},
      {"Config", {{"max-size", std::to_string(*sp.logMaxBytes)}, {"max-file", "1"}}}};
}

namespace {

// The Job's effective resources as HostConfig fields of `host`: limits cap (memory without swap
// beyond it), requests weigh (CpuShares, at least Docker's minimum of 2) and reserve.
void AddResources(const api::ResourceRequirements& r, json& host) {
  if (r.limits.cpu) host["NanoCpus"] = r.limits.cpu->MilliValue() * 1000000;
  if (r.limits.memory) {
    host["Memory"] = r.limits.memory->Value();
    host["MemorySwap"] = r.limits.memory->Value();
  }
  if (r.requests.cpu)
    host["CpuShares"] = std::max<int64_t>(2, r.requests.cpu->MilliValue() * 1024 / 1000);
  if (r.requests.memory) host["MemoryReservation"] = r.requests.memory->Value();
}

}  // namespace

StatusOr<nlohmann::json> BuildCreateBody(const ExecutionRequest& request,
                                         const DockerExecutionParameters& p) {
  if (auto st = ValidateRequest(request, p); !st.ok()) return st;
  const auto& meta = request.job.metadata;
  const auto& task = request.job.spec.task;
  json body = json::object();
  body["Image"] = task.image;
  if (!task.command.empty()) body["Entrypoint"] = task.command;
  if (!task.args.empty()) body["Cmd"] = task.args;
  if (!task.workingDir.empty()) body["WorkingDir"] = task.workingDir;

  auto vars = JobEnvironment(request);
  if (!vars.ok()) return vars.status();
  json env = json::array();
  for (const auto& v : *vars) env.push_back(v.name + "=" + v.value.reveal());
  body["Env"] = std::move(env);

  json labels = json::object();
  for (const auto& [k, v] : p.extraLabels) labels[k] = v;
  labels[api::kJobUidLabel] = meta.uid;
  labels[api::kJobNamespaceLabel] = meta.namespace_;
  labels[api::kJobNameLabel] = meta.name;
  body["Labels"] = std::move(labels);
  body["StopTimeout"] = p.stopGracePeriodSeconds;
  // The container's user is a field of the container, not of its HostConfig.
  body["User"] = std::to_string(p.securityProfile.runAsUser) + ":" +
                 std::to_string(p.securityProfile.runAsGroup);
  body["Tty"] = false;
  body["OpenStdin"] = false;
  body["AttachStdin"] = false;
  body["AttachStdout"] = false;
  body["AttachStderr"] = false;

  json host = json::object();
  host["NetworkMode"] = p.networkMode;
  if (!p.runtime.empty()) host["Runtime"] = p.runtime;
  host["AutoRemove"] = false;
  host["RestartPolicy"] = {{"Name", "no"}};
  AddSecurityProfile(p, task.workingDir, host);
  AddResources(request.resources, host);
  body["HostConfig"] = std::move(host);
  return body;
}

std::optional<api::Time> ParseEngineTime(std::string_view text) {
  auto t = api::ParseTime(text);
  if (!t.ok()) return std::nullopt;
  // Go's zero time "0001-01-01T00:00:00Z" means "never".
  if (std::chrono::year_month_day(std::chrono::floor<std::chrono::days>(*t)).year() <=
      std::chrono::year(1)) {
    return std::nullopt;
  }
  return *t;
}

bool EngineRefusedCommand(int64_t exitCode) { return exitCode == 126 || exitCode == 127; }

bool StartFailedForMemory(std::string_view error) {
  // runc: "container init was OOM-killed (memory limit too low?)". The task's own memory limit
  // is too small for it to start: the user's to fix, and retrying would not help.
  return error.find("OOM-killed") != std::string_view::npos;
}

std::optional<std::string> InitExecFailure(std::string_view stderrTail) {
  constexpr std::string_view kTini = "[FATAL tini (";
  const size_t at = stderrTail.rfind(kTini);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view line = stderrTail.substr(at);
  line = line.substr(0, line.find('\n'));
  const size_t exec = line.find(")] exec ");
  if (exec == std::string_view::npos || line.find(" failed: ", exec) == std::string_view::npos) {
    return std::nullopt;
  }
  return std::string(line.substr(exec + 3, 512));
}

bool MayStart(const nlohmann::json& inspect) {
  const json* state = GetObject(inspect, "State");
  if (state == nullptr || GetString(*state, "Status") != "created") return false;
  const std::string uid = GetLabel(inspect, api::kJobUidLabel);
  if (!uid.empty() && GetString(inspect, "Name") == "/" + CancelledContainerName(uid)) return false;
  const std::string error = GetString(*state, "Error");
  return error.empty() ||
         (!EngineRefusedCommand(GetInt(*state, "ExitCode")) && !StartFailedForMemory(error));
}

namespace {

// The container's engine state, as the engine reports it.
namespace {

// A container that never ran: pending, cancelled before its start, or a failed start.
void ObserveCreated(Observation& o, const std::string& error, int64_t exitCode,
                    bool cancelledByUs) {
  o.startedAt.reset();
  if (cancelledByUs) {
    o.phase = ExecutionPhase::kCancelled;
    o.message = "The task was cancelled before it started";
  } else if (error.empty()) {
    o.phase = ExecutionPhase::kPending;
  } else if (EngineRefusedCommand(exitCode)) {
    o.phase = ExecutionPhase::kFailed;
    o.reason = kReasonStartFailed;
    o.message = TaskCouldNotStartMessage(error);
  } else if (StartFailedForMemory(error)) {
    o.phase = ExecutionPhase::kFailed;
    o.reason = kReasonOOMKilled;
    o.message = TaskCouldNotStartMessage(error);
  } else {
    // The engine's own start failed (exit code 128), e.g. after it was killed during a start:
    // its containerd still holds the task of the interrupted start and every new start answers
    // "task <id>: already exists" or "id already in use". dockerd then shows the container as
    // never started although the interrupted start may have run the process. Not a failure of
    // the task, and not provably anything else: Unknown, and Ensure starts it again.
    o.phase = ExecutionPhase::kUnknown;
    o.reason = kReasonStartNotConfirmed;
    o.message =
        "The engine shows the task's container as never started, but its last start "
        "failed inside the engine (" +
        error +
        "); an engine crash during a start leaves this state and the task may have "
        "run; the start is retried";
  }
}

// A container whose process ended: its exit code, unless we stopped it.
void ObserveExited(Observation& o, int64_t exitCode, bool oomKilled, bool cancelledByUs) {
  o.exitCode = static_cast<int32_t>(exitCode);
  if (exitCode == 0) {  // the main process says it succeeded, whatever a child hit
    o.phase = ExecutionPhase::kSucceeded;
    o.message = TaskExitedMessage(0);
  } else if (cancelledByUs) {
    o.phase = ExecutionPhase::kCancelled;
    o.message = TaskStoppedMessage("on request (exit code " + std::to_string(exitCode) + ")");
  } else if (oomKilled) {
    o.phase = ExecutionPhase::kFailed;
    o.reason = kReasonOOMKilled;
    o.message = TaskOomKilledMessage(exitCode);
  } else {
    o.phase = ExecutionPhase::kFailed;
    o.reason = kReasonProcessFailed;
    o.message = TaskExitedMessage(exitCode);
  }
}

}  // namespace

Observation EngineObservation(const nlohmann::json& inspect) {
  Observation o;
  const std::string id = GetString(inspect, "Id");
  if (!id.empty()) o.references.push_back({kContainerReferenceType, id});
  const json* state = GetObject(inspect, "State");
  if (state == nullptr) {
    o.phase = ExecutionPhase::kUnknown;
    o.reason = kReasonUnexpectedState;
    o.message = "The engine's inspect answer has no State";
    return o;
  }
  const std::string status = GetString(*state, "Status");
  const bool oomKilled = GetBool(*state, "OOMKilled");
  const int64_t exitCode = GetInt(*state, "ExitCode");
  const std::string error = GetString(*state, "Error");
  o.startedAt = ParseEngineTime(GetString(*state, "StartedAt"));
  auto finishedAt = ParseEngineTime(GetString(*state, "FinishedAt"));
  const std::string uid = GetLabel(inspect, api::kJobUidLabel);
  const bool cancelledByUs =
      !uid.empty() && GetString(inspect, "Name") == "/" + CancelledContainerName(uid);

  if (status == "created") {
    ObserveCreated(o, error, exitCode, cancelledByUs);
    return o;
  }
  if (status == "running" || status == "paused" || status == "restarting") {
    o.phase = ExecutionPhase::kRunning;
    return o;
  }
  if (status == "exited" || status == "dead" || (status == "removing" && finishedAt)) {
    o.finishedAt = finishedAt;
    ObserveExited(o, exitCode, oomKilled, cancelledByUs);
    return o;
  }
  o.phase = ExecutionPhase::kUnknown;
  o.reason = kReasonUnexpectedState;
  o.message = "The engine reports the task's container in state \"" + status + "\"";
  return o;
}

Observation WithLostExitStatus(Observation o, bool resultUnknown) {
  if (!resultUnknown || o.phase != ExecutionPhase::kFailed || o.reason != kReasonProcessFailed ||
      o.exitCode != 255) {
    return o;
  }
  Observation lost;
  lost.phase = ExecutionPhase::kUnknown;
  lost.ended = true;
  lost.reason = kReasonExitStatusLost;
  lost.startedAt = o.startedAt;
  lost.references = std::move(o.references);
  lost.message =
      "The engine reports the task ended with exit code 255" +
      (o.finishedAt ? " at " + api::FormatTime(*o.finishedAt) : std::string()) +
      " while its result was unknown; an engine that lost a task's exit status (its containerd "
      "restarted) reports 255, so the task's true result is unknown";
  return lost;
}

}  // namespace

Observation ObservationFromInspect(const nlohmann::json& inspect, bool resultUnknown) {
  return WithLostExitStatus(EngineObservation(inspect), resultUnknown);
}

}  // namespace ayatori::adapters::docker
