#include "adapters/opensandbox/spec.h"

#include <algorithm>
#include <array>
#include <set>

#include "adapters/common/job_environment.h"
#include "adapters/common/redaction.h"
#include "adapters/common/registry_auth.h"
#include "adapters/task_messages.h"
#include "api/json.h"
#include "ayatori/json_get.h"

namespace ayatori::adapters::opensandbox {

namespace {

using nlohmann::json;

// Docker's lower bounds (the server's Docker runtime passes these to the engine as they are).
constexpr int64_t kMinMemoryBytes = int64_t{6} * 1024 * 1024;
constexpr int64_t kMinCpuMilli = 10;
// The server refuses timeouts below 60 s (pydantic: 422).
constexpr int64_t kMinSandboxTimeout = 60;
constexpr size_t kMaxLabelValue = 63;

Status Invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Kubernetes label name/value syntax, which the server applies to metadata keys and values:
// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63 characters.
bool IsLabelName(std::string_view s) {
  if (s.empty() || s.size() > kMaxLabelValue || !IsAlnum(s.front()) || !IsAlnum(s.back())) {
    return false;
  }
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string_view part = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (part.empty() || part.size() > 63 || !IsAlnum(part.front()) || !IsAlnum(part.back())) {
      return false;
    }
    for (char c : part) {
      if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && c != '-') return false;
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

bool IsMetadataKey(std::string_view k) {
  size_t slash = k.find('/');
  if (slash == std::string_view::npos) return IsLabelName(k);
  return IsDnsSubdomain(k.substr(0, slash)) && IsLabelName(k.substr(slash + 1));
}

bool IsMetadataValue(std::string_view v) { return v.empty() || IsLabelName(v); }

constexpr std::string_view kReservedPrefixes[] = {"execution.ayatori.ddupan.top/",
                                                  "opensandbox.io/"};

// Go's names of the signals execd reports as "signal: <name>" (syscall's signal table).
struct SignalName {
  const char* name;
  int number;
};
constexpr std::array<SignalName, 15> kSignals = {{{"hangup", 1},
                                                  {"interrupt", 2},
                                                  {"quit", 3},
                                                  {"illegal instruction", 4},
                                                  {"trace/breakpoint trap", 5},
                                                  {"aborted", 6},
                                                  {"bus error", 7},
                                                  {"floating point exception", 8},
                                                  {"killed", 9},
                                                  {"user defined signal 1", 10},
                                                  {"segmentation fault", 11},
                                                  {"user defined signal 2", 12},
                                                  {"broken pipe", 13},
                                                  {"alarm clock", 14},
                                                  {"terminated", 15}}};

std::optional<int> SignalNumber(std::string_view error) {
  constexpr std::string_view kPrefix = "signal: ";
  if (error.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view name = error.substr(kPrefix.size());
  if (size_t p = name.find(" (core dumped)"); p != std::string_view::npos) name = name.substr(0, p);
  for (const auto& s : kSignals) {
    if (name == s.name) return s.number;
  }
  return std::nullopt;
}

std::optional<api::Time> ParseTimeField(const json& j, const char* key) {
  std::string text = GetString(j, key);
  if (text.empty()) return std::nullopt;
  auto t = api::ParseTime(text);
  if (!t.ok()) return std::nullopt;
  return *t;
}

std::string Excerpt(std::string s) {
  if (s.size() > 300) s = s.substr(0, 300) + "...";
  return s;
}

}  // namespace

const std::vector<std::string>& EnforcedParameterFields() {
  static const std::vector<std::string> kFields = {"endpoint",
                                                   "apiKeySecretRef",
                                                   "sandboxTimeoutSeconds",
                                                   "sandboxTimeoutMarginSeconds",
                                                   "pollIntervalSeconds",
                                                   "useServerProxy",
                                                   "extraMetadata",
                                                   "insecure",
                                                   "caBundle",
                                                   "securityProfile"};
  return kFields;
}

StatusOr<OpenSandboxExecutionParameters> ParseParameters(const nlohmann::json& parameters) {
  if (parameters.is_null()) {
    return Invalid(
        "the JobClass names no OpenSandboxExecutionParameters (the endpoint is required)");
  }
  // A pinned useServerProxy comes back as a string (backend snapshots hold strings).
  nlohmann::json normalized = parameters;
  if (auto spec = normalized.find("spec"); normalized.is_object() && spec != normalized.end()) {
    auto proxy = spec->is_object() ? spec->find("useServerProxy") : spec->end();
    if (spec->is_object() && proxy != spec->end() && proxy->is_string()) {
      const std::string v = proxy->get<std::string>();
      if (v != "true" && v != "false") {
        return Invalid("OpenSandboxExecutionParameters spec.useServerProxy \"" + v +
                       "\" must be true or false");
      }
      *proxy = v == "true";
    }
  }
  if (const json* spec = GetObject(normalized, "spec")) {
    const auto& known = EnforcedParameterFields();
    for (const auto& [k, v] : spec->items()) {
      // Not the adapter's: the controller's acceptance check (adapters::SecretNamespaceRefusal).
      if (k == "allowCrossNamespaceSecretRefs") continue;
      if (std::find(known.begin(), known.end(), k) == known.end()) {
        return Invalid("OpenSandboxExecutionParameters spec." + k +
                       " is not supported by this controller's OpenSandbox adapter");
      }
    }
  }
  auto p = OpenSandboxExecutionParametersFromJson(normalized);
  if (!p.ok()) return p.status();
  const std::string& e = p->endpoint;
  if (e.rfind("http://", 0) != 0 && e.rfind("https://", 0) != 0) {
    return Invalid("OpenSandboxExecutionParameters spec.endpoint \"" + e +
                   "\" must be an http:// or https:// URL such as http://127.0.0.1:8080/v1");
  }
  while (!p->endpoint.empty() && p->endpoint.back() == '/') p->endpoint.pop_back();
  if (auto st =
          ValidateIds(p->securityProfile, "OpenSandboxExecutionParameters spec.securityProfile.");
      !st.ok()) {
    return st;
  }
  if (!p->caBundle.empty()) {
    if (e.rfind("https://", 0) != 0) {
      return Invalid(
          "OpenSandboxExecutionParameters spec.caBundle is only used with an https:// endpoint");
    }
    if (p->caBundle.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return Invalid(
          "OpenSandboxExecutionParameters spec.caBundle must hold PEM certificates "
          "(-----BEGIN CERTIFICATE-----)");
    }
  }
  return p;
}

std::optional<Refusal> SecurityProfileRefusal(const nlohmann::json& parameters) {
  const json* spec = GetObject(parameters, "spec");
  const json* profile = spec != nullptr ? GetObject(*spec, "securityProfile") : nullptr;
  if (profile == nullptr) return std::nullopt;
  for (const auto& [field, value] : profile->items()) {
    if (value.is_null() || field == "runAsUser" || field == "runAsGroup" || field == "runAsRoot") {
      continue;
    }
    return Refusal{"NotEnforceable",
                   "OpenSandboxExecutionParameters spec.securityProfile." + field +
                       " is not enforced by the adapter for execution.ayatori.ddupan.top/"
                       "opensandbox: the sandbox create API cannot carry it (the OpenSandbox "
                       "server's own [docker] settings decide it); only runAsUser, runAsGroup "
                       "and runAsRoot are (execd runs the task with those ids)"};
  }
  return std::nullopt;
}

std::optional<Refusal> InsecureEndpointRefusal(const OpenSandboxExecutionParameters& params) {
  if (params.endpoint.rfind("http://", 0) != 0 || params.insecure) return std::nullopt;
  // The message never quotes the endpoint (backend configuration stays out of Job status).
  return Refusal{kReasonInsecureEndpoint,
                 "the OpenSandboxExecutionParameters spec.endpoint is plain HTTP (http://): the "
                 "sandbox create request carries the task's environment, forwarded Secret values "
                 "included, and the API key. Use an https:// endpoint (spec.caBundle for a private "
                 "CA), or set spec.insecure: true to accept plain HTTP (a loopback-only server, "
                 "an encrypted tunnel)"};
}

std::map<std::string, std::string> PinnedFields(const nlohmann::json& parameters) {
  auto p = ParseParameters(parameters);
  if (!p.ok()) return {};
  return {{"endpoint", p->endpoint}, {"useServerProxy", p->useServerProxy ? "true" : "false"}};
}

Status ValidateRequest(const ExecutionRequest& request,
                       const OpenSandboxExecutionParameters& params) {
  const auto& task = request.job.spec.task;
  if (task.command.empty()) {  // refused at acceptance first (runsImageEntrypoint = false)
    return Invalid(
        "OpenSandbox runs the task as a command in a sandbox, not the image's entrypoint: "
        "spec.task.command is required");
  }
  if (task.image.empty()) return Invalid("spec.task.image is required");
  if (params.sandboxTimeoutSeconds != 0 && params.sandboxTimeoutSeconds < kMinSandboxTimeout) {
    return Invalid("OpenSandboxExecutionParameters sandboxTimeoutSeconds " +
                   std::to_string(params.sandboxTimeoutSeconds) +
                   " is below the server's minimum of 60 (0 means no timeout)");
  }
  if (params.sandboxTimeoutMarginSeconds < 0 || params.pollIntervalSeconds < 1) {
    return Invalid(
        "OpenSandboxExecutionParameters sandboxTimeoutMarginSeconds must be >= 0 and "
        "pollIntervalSeconds >= 1");
  }
  for (const auto& [k, v] : params.extraMetadata) {
    for (std::string_view prefix : kReservedPrefixes) {
      if (std::string_view(k).substr(0, prefix.size()) == prefix) {
        return Invalid(
            "OpenSandboxExecutionParameters extraMetadata must not use the reserved "
            "prefix " +
            std::string(prefix) + " (" + k + ")");
      }
    }
    if (!IsMetadataKey(k)) {
      return Invalid("OpenSandboxExecutionParameters extraMetadata key \"" + k +
                     "\" is not a label key, which the server requires");
    }
    if (!IsMetadataValue(v)) {
      std::string message = "OpenSandboxExecutionParameters extraMetadata[" + k + "] \"";
      message += v;
      message +=
          "\" is not a label value (at most 63 of [A-Za-z0-9-_.]), which the server requires";
      return Invalid(message);
    }
  }
  if (!IsMetadataValue(request.job.metadata.uid) || request.job.metadata.uid.empty()) {
    return Invalid("Job UID \"" + request.job.metadata.uid + "\" is not a sandbox metadata value");
  }
  const auto& r = request.resources;
  if (r.limits.cpu && r.limits.cpu->MilliValue() < kMinCpuMilli) {
    return Invalid("limits.cpu " + r.limits.cpu->str() + " is below the minimum of 10m");
  }
  if (r.limits.memory && r.limits.memory->Value() < kMinMemoryBytes) {
    return Invalid("limits.memory " + r.limits.memory->str() + " is below the minimum of 6Mi");
  }
  if (auto ref = ParseImageReference(task.image); !ref.ok()) return ref.status();
  return Status::Ok();
}

std::optional<int64_t> SandboxTimeoutSeconds(const ExecutionRequest& request,
                                             const OpenSandboxExecutionParameters& params) {
  if (const auto& d = request.job.spec.activeDeadlineSeconds) {
    return std::max(kMinSandboxTimeout, *d + params.sandboxTimeoutMarginSeconds);
  }
  if (params.sandboxTimeoutSeconds > 0) return params.sandboxTimeoutSeconds;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> SandboxMetadata(
    const ExecutionRequest& request, const OpenSandboxExecutionParameters& params) {
  std::vector<std::pair<std::string, std::string>> m(params.extraMetadata.begin(),
                                                     params.extraMetadata.end());
  const auto& meta = request.job.metadata;
  m.emplace_back(api::kJobUidLabel, meta.uid);
  if (IsMetadataValue(meta.namespace_)) m.emplace_back(api::kJobNamespaceLabel, meta.namespace_);
  if (IsMetadataValue(meta.name)) m.emplace_back(api::kJobNameLabel, meta.name);
  return m;
}

std::string UidMetadataQuery(std::string_view uid) {
  // The server decodes the parameter, then parses it as a query string itself: "key=value"
  // percent-encoded once more. UIDs and the key need no escaping beyond '/' and '='.
  return "execution.ayatori.ddupan.top%2Fjob-uid%3D" + std::string(uid);
}

StatusOr<std::optional<ImageAuth>> SelectImageAuth(const ExecutionRequest& request) {
  if (request.imagePullConfigs.empty()) return std::optional<ImageAuth>();
  auto ref = ParseImageReference(request.job.spec.task.image);
  if (!ref.ok()) return ref.status();
  auto creds = SelectRegistryCredentials(request.imagePullConfigs, *ref);
  if (!creds.ok()) return creds.status();
  if (!*creds) return std::optional<ImageAuth>();
  if ((*creds)->username.empty() || (*creds)->password.reveal().empty()) {
    return Invalid("the imagePullSecrets entry for registry " + ref->registry +
                   " has no username and password; the OpenSandbox server accepts only those");
  }
  return std::optional<ImageAuth>(ImageAuth{(*creds)->username, (*creds)->password});
}

StatusOr<nlohmann::json> BuildCreateBody(const ExecutionRequest& request,
                                         const OpenSandboxExecutionParameters& params,
                                         const std::optional<ImageAuth>& auth) {
  if (auto st = ValidateRequest(request, params); !st.ok()) return st;
  json body = json::object();
  json image = {{"uri", request.job.spec.task.image}};
  if (auth) image["auth"] = {{"username", auth->username}, {"password", auth->password.reveal()}};
  body["image"] = std::move(image);
  // The sandbox idles; the task runs as an execd command (TaskCommand), which is what gives it a
  // status, an exit code and logs of its own.
  body["entrypoint"] = json::array({"tail", "-f", "/dev/null"});
  if (auto t = SandboxTimeoutSeconds(request, params)) {
    body["timeout"] = *t;
  } else {
    body["timeout"] = nullptr;  // manual cleanup: the controller deletes it
  }
  // Requests are not sent: the Docker runtime ignores them, and on Kubernetes the server then
  // uses the limits for both.
  json limits = json::object();
  const auto& r = request.resources;
  if (r.limits.cpu) limits["cpu"] = std::to_string(r.limits.cpu->MilliValue()) + "m";
  if (r.limits.memory) limits["memory"] = std::to_string(r.limits.memory->Value());
  body["resourceLimits"] = std::move(limits);
  auto env = JobEnvironment(request);
  if (!env.ok()) return env.status();
  json e = json::object();
  for (const auto& v : *env) e[v.name] = v.value.reveal();
  body["env"] = std::move(e);
  json metadata = json::object();
  for (const auto& [k, v] : SandboxMetadata(request, params)) metadata[k] = v;
  body["metadata"] = std::move(metadata);
  return body;
}

std::string ShellQuote(std::string_view word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string MarkerPath(std::string_view uid) { return "/tmp/.ayatori-task-" + std::string(uid); }

std::string GuardLine(std::string_view uid) {
  return "ayatori: the task of Job UID " + std::string(uid) +
         " was already started in this sandbox; not starting it again";
}

std::string ForeignSandboxLine(std::string_view uid) {
  return "ayatori: this execd belongs to another Job's sandbox, not to Job UID " +
         std::string(uid) + "; not starting the task here";
}

namespace {

// "the sandbox's AYATORI_JOB_UID (BuildCreateBody sets it) is not `uid`" as a shell condition.
std::string ForeignCondition(std::string_view uid) {
  return "[ \"$AYATORI_JOB_UID\" != " + ShellQuote(uid) + " ]";
}

}  // namespace

std::string TaskCommand(const ExecutionRequest& request) {
  const auto& task = request.job.spec.task;
  const std::string& uid = request.job.metadata.uid;
  const std::string m = ShellQuote(MarkerPath(uid));
  std::string argv;
  for (const auto& part : {std::cref(task.command), std::cref(task.args)}) {
    for (const auto& a : part.get()) argv += " " + ShellQuote(a);
  }
  std::string s;
  s += "if " + ForeignCondition(uid) + "; then echo " + ShellQuote(ForeignSandboxLine(uid)) +
       " >&2; exit " + std::to_string(kForeignSandboxExitCode) + "; fi; ";
  // set -C makes ">" fail on an existing file (O_EXCL): only one command gets past this line.
  s += "if (set -C; : >" + m + ") 2>/dev/null; then ";
  // execd sends the command's output to <tmp>/<command id>.output: recording that path lets a
  // retry that lost this command's id find it (ProbeCommand). $$ is this shell; readlink runs in
  // the command substitution's subshell because busybox sh runs applets in its own process, where
  // a redirection of readlink's output would also move this shell's fd 1.
  s += "o=$(readlink /proc/$$/fd/1 2>/dev/null); echo \"$o\" >>" + m + "; ";
  if (!task.workingDir.empty()) {
    const std::string wd = ShellQuote(task.workingDir);
    s += "mkdir -p -- " + wd + " 2>/dev/null; cd -- " + wd + " || exit 126; ";
  }
  s += "exec" + argv + "; fi; ";
  s += "echo " + ShellQuote(GuardLine(request.job.metadata.uid)) + " >&2; exit " +
       std::to_string(kGuardExitCode);
  return s;
}

std::string PrepareWorkingDirCommand(const ExecutionRequest& request,
                                     const SecurityProfile& profile) {
  const std::string& dir = request.job.spec.task.workingDir;
  if (dir.empty() || profile.runAsUser == 0) return "";
  const std::string wd = ShellQuote(dir);
  return "mkdir -p -- " + wd + " && chown " + std::to_string(profile.runAsUser) + ":" +
         std::to_string(profile.runAsGroup) + " -- " + wd;
}

std::string ProbeCommand(std::string_view uid) {
  const std::string m = ShellQuote(MarkerPath(uid));
  return "if " + ForeignCondition(uid) + "; then printf foreign; elif [ -e " + m +
         " ]; then printf started:; cat " + m + "; else printf absent; fi";
}

ProbeResult ParseProbeOutput(std::string_view output) {
  ProbeResult r;
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) {
    output.remove_suffix(1);
  }
  if (output == "absent") {
    r.kind = ProbeResult::Kind::kAbsent;
    return r;
  }
  if (output == "foreign") {
    r.kind = ProbeResult::Kind::kForeign;
    return r;
  }
  constexpr std::string_view kStarted = "started:";
  if (output.substr(0, kStarted.size()) != kStarted) return r;
  std::string_view path = output.substr(kStarted.size());
  constexpr std::string_view kSuffix = ".output";
  size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (base.size() > kSuffix.size() && base.substr(base.size() - kSuffix.size()) == kSuffix) {
    std::string_view id = base.substr(0, base.size() - kSuffix.size());
    if (std::all_of(id.begin(), id.end(), [](char c) { return IsAlnum(c) || c == '-'; })) {
      r.kind = ProbeResult::Kind::kStarted;
      r.commandId = std::string(id);
      return r;
    }
  }
  r.kind = ProbeResult::Kind::kStartedUnidentified;
  return r;
}

std::optional<Observation> ObservationFromSandbox(const nlohmann::json& sandbox) {
  const json* status = GetObject(sandbox, "status");
  const std::string state = status != nullptr ? GetString(*status, "state") : "";
  const std::string reason = status != nullptr ? GetString(*status, "reason") : "";
  const std::string message = status != nullptr ? GetString(*status, "message") : "";
  std::string detail =
      state + (reason.empty() ? "" : "/" + reason) + (message.empty() ? "" : ": " + message);
  Observation o;
  if (state == "Running" || state == "Paused" || state == "Pausing" || state == "Resuming") {
    return std::nullopt;
  }
  if (state == "Pending") {
    o.phase = ExecutionPhase::kPending;
    o.message = "sandbox " + detail;
    return o;
  }
  if (state == "Terminated" || state == "Failed" || state == "Stopping") {
    o.phase = ExecutionPhase::kFailed;
    o.reason = kReasonSandboxFailed;
    o.message = "The task's sandbox stopped before the task finished (" + detail + ")";
    return o;
  }
  o.phase = ExecutionPhase::kUnknown;
  o.reason = kReasonUnexpectedState;
  o.message = "The task's sandbox is in state " + (detail.empty() ? std::string("(none)") : detail);
  return o;
}

Observation ObservationFromCommandStatus(const nlohmann::json& status) {
  Observation o;
  o.startedAt = ParseTimeField(status, "started_at");
  const auto running = status.find("running");
  if (!status.is_object() || running == status.end() || !running->is_boolean()) {
    o.phase = ExecutionPhase::kUnknown;
    o.reason = kReasonUnexpectedState;
    o.message = "The sandbox's execd reports the task's command without \"running\"";
    return o;
  }
  if (running->get<bool>()) {
    o.phase = ExecutionPhase::kRunning;
    return o;
  }
  o.finishedAt = ParseTimeField(status, "finished_at");
  const auto code = status.find("exit_code");
  const std::string error = GetString(status, "error");
  if (code == status.end() || !code->is_number_integer()) {
    o.phase = ExecutionPhase::kUnknown;
    o.reason = kReasonUnexpectedState;
    o.message = "The sandbox's execd reports the task finished without an exit code";
    return o;
  }
  const int64_t exitCode = code->get<int64_t>();
  if (exitCode == 0) {
    o.phase = ExecutionPhase::kSucceeded;
    o.exitCode = 0;
    o.message = TaskExitedMessage(0);
    return o;
  }
  o.phase = ExecutionPhase::kFailed;
  o.reason = kReasonProcessFailed;
  if (exitCode < 0) {
    if (auto sig = SignalNumber(error)) o.exitCode = 128 + *sig;
    o.message = TaskKilledBySignalMessage(error);
    return o;
  }
  o.exitCode = static_cast<int32_t>(std::min<int64_t>(exitCode, 255));
  o.message = TaskExitedMessage(*o.exitCode);
  if (exitCode == 255 && error.rfind("fork/exec", 0) == 0) {
    o.reason = kReasonStartFailed;
    o.message = TaskCouldNotStartMessage(error);
  }
  return o;
}

std::string ErrorCode(const std::string& body) {
  auto doc = json::parse(body, nullptr, false);
  return GetString(doc, "code");
}

std::string ErrorMessage(int httpStatus, const std::string& body) {
  auto doc = json::parse(body, nullptr, false);
  std::string text;
  if (doc.is_object()) {
    std::string code = GetString(doc, "code");
    std::string message = GetString(doc, "message");
    if (!code.empty() || !message.empty()) {
      text = code.empty() ? message : code + ": " + message;
    } else if (auto d = doc.find("detail"); d != doc.end()) {
      // FastAPI's validation errors: {"detail": [{"loc": [...], "msg": "..."}]} or a string.
      if (d->is_string()) {
        text = d->get<std::string>();
      } else if (d->is_array()) {
        for (const auto& item : *d) {
          if (!text.empty()) text += "; ";
          std::string loc;
          if (auto l = item.find("loc"); l != item.end() && l->is_array()) {
            for (const auto& part : *l) {
              if (!loc.empty()) loc += ".";
              loc += part.is_string() ? part.get<std::string>() : part.dump();
            }
          }
          text += (loc.empty() ? "" : loc + ": ") + GetString(item, "msg");
        }
      }
    }
  }
  if (text.empty()) text = Excerpt(body);
  return "HTTP " + std::to_string(httpStatus) + (text.empty() ? "" : ": " + text);
}

StatusOr<std::string> ExecdBaseUrl(const nlohmann::json& endpointAnswer) {
  std::string endpoint = GetString(endpointAnswer, "endpoint");
  if (endpoint.empty()) {
    return Status(StatusCode::kInternal, "the endpoint answer has no \"endpoint\"");
  }
  if (endpoint.rfind("http://", 0) != 0 && endpoint.rfind("https://", 0) != 0) {
    endpoint = "http://" + endpoint;
  }
  while (endpoint.back() == '/') endpoint.pop_back();
  return endpoint;
}

std::vector<std::pair<std::string, std::string>> EndpointHeaders(
    const nlohmann::json& endpointAnswer) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (const json* h = GetObject(endpointAnswer, "headers")) {
    for (const auto& [k, v] : h->items()) {
      if (v.is_string()) headers.emplace_back(k, v.get<std::string>());
    }
  }
  return headers;
}

}  // namespace ayatori::adapters::opensandbox
