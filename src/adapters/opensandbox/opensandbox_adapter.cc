#include "adapters/opensandbox/opensandbox_adapter.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include "adapters/common/job_environment.h"
#include "adapters/common/redaction.h"
#include "adapters/common/registry_auth.h"
#include "adapters/common/secret_reader.h"
#include "adapters/registry.h"
#include "adapters/task_messages.h"
#include "api/json.h"
#include "ayatori/json_get.h"
#include "base/base64.h"
#include "base/url.h"

namespace ayatori::adapters::opensandbox {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// The execd the server pointed at serves another Job's sandbox: the task did not start and, while
// that sandbox lives, cannot start in its own.
Observation ForeignExecd(const std::string& sandboxId) {
  return Failed(kReasonBackendRejected,
                "the execd endpoint of sandbox " + (sandboxId.empty() ? "" : sandboxId + " ") +
                    "answers for another Job's sandbox (host network mode runs one sandbox at a "
                    "time); the task was not started");
}

std::vector<api::ExecutionReference> References(const std::string& sandboxId,
                                                const std::string& commandId) {
  std::vector<api::ExecutionReference> refs;
  if (!sandboxId.empty()) refs.push_back({kSandboxReferenceType, sandboxId});
  if (!commandId.empty()) refs.push_back({kCommandReferenceType, commandId});
  return refs;
}

std::string ReferenceId(const std::vector<api::ExecutionReference>& refs, const char* type) {
  for (const auto& r : refs) {
    if (r.type == type) return r.id;
  }
  return "";
}

// The first kMaxProbeOutputBytes of a command's output, where the guard writes its lines.
StatusOr<std::string> OutputHead(const ServerClient& client, const ExecdTarget& execd,
                                 const std::string& commandId) {
  std::string head;
  auto read = client.ReadOutput(execd, commandId, 0, kMaxProbeOutputBytes, [&](std::string_view d) {
    head.append(d);
    return true;
  });
  if (!read.ok()) return read.status();
  return head;
}

// A 404 from the server that really says "no such sandbox" (a wrong endpoint also gives 404s).
bool IsSandboxNotFound(const kube::HttpResponse& r) {
  return r.status == 404 && ErrorCode(r.body).find("SANDBOX_NOT_FOUND") != std::string::npos;
}

std::string ServerError(const std::string& what, const kube::HttpResponse& r) {
  return "opensandbox server: " + what + ": " + ErrorMessage(r.status, r.body);
}

// The answer to a create the server did not accept (any status but 200, 201, 202).
Observation CreateRefused(const kube::HttpResponse& r) {
  const std::string code = ErrorCode(r.body);
  if (code.find("IMAGE_PULL") != std::string::npos) {
    return Failed(kReasonImagePullFailed, ServerError("creating the sandbox", r));
  }
  if (r.status == 400 || r.status == 409 || r.status == 422) {
    return Failed(kReasonBackendRejected, ServerError("creating the sandbox", r));
  }
  if (r.status == 500 && !code.empty() && code.find("UNKNOWN") == std::string::npos) {
    // A definite provisioning failure (start, execd distribution, bootstrap): nothing runs.
    return Failed(kReasonBackendRejected, ServerError("creating the sandbox", r));
  }
  // Anything else (an outage, a server error it does not name) is no verdict: the next Ensure
  // lists by UID before it creates.
  return Unreachable(ServerError("creating the sandbox", r));
}

}  // namespace

ApiKeySource SecretApiKeySource(KubeClient& client, std::chrono::seconds ttl) {
  auto reader = std::make_shared<CachedSecretReader<SensitiveString>>(client, ttl);
  return [reader](const api::SecretKeyReference& ref) -> StatusOr<SensitiveString> {
    const std::string secretName = ref.namespace_ + "/" + ref.name;
    return reader->Read(
        ref.namespace_, ref.name, secretName + "/" + ref.key,
        [&](const json& secret) -> StatusOr<SensitiveString> {
          std::string encoded = GetString(SecretData(secret), ref.key.c_str());
          auto decoded = base::Base64Decode(encoded);
          if (encoded.empty() || !decoded.ok()) {
            return Status(StatusCode::kFailedPrecondition,
                          "Secret " + secretName + " has no key \"" + ref.key +
                              "\" holding the OpenSandbox API key");
          }
          return SensitiveString(std::move(*decoded));
        },
        [&](const Status& getError) {
          return Status(getError.code(), "reading the OpenSandbox API key from Secret " +
                                             secretName + ": " + getError.message());
        });
  };
}

OpenSandboxAdapter::OpenSandboxAdapter(OpenSandboxAdapterOptions options)
    : options_(std::move(options)),
      transport_(options_.transport),
      poller_(options_.timeouts, options_.firstPoll) {
  if (!transport_) {
    kube::CurlTransportOptions curl;
    curl.connectTimeout = milliseconds(5000);
    transport_ = kube::NewCurlTransport(kube::RestConfig{}, curl);
  }
}

OpenSandboxAdapter::~OpenSandboxAdapter() { Stop(); }

Status OpenSandboxAdapter::Start(
    std::function<void(const std::string&, const std::string&)> notify) {
  if (!notify) {
    return Status(StatusCode::kInvalidArgument,
                  "opensandbox adapter: Start needs a notify function");
  }
  poller_.Start(std::move(notify));
  return Status::Ok();
}

void OpenSandboxAdapter::Stop() { poller_.Stop(); }

StatusOr<OpenSandboxAdapter::Target> OpenSandboxAdapter::TargetFor(
    const nlohmann::json& parameters) {
  auto params = ParseParameters(parameters);
  if (!params.ok()) return params.status();
  // Refused at acceptance already; parameters edited since then must not downgrade a Job's
  // calls to plain HTTP either.
  if (auto refusal = InsecureEndpointRefusal(*params)) {
    return Status(StatusCode::kFailedPrecondition, refusal->reason + ": " + refusal->message);
  }
  if (!options_.secretNamespace.empty()) {
    if (auto refused = SecretNamespaceRefusal("", parameters, options_.secretNamespace)) {
      return Status(StatusCode::kInvalidArgument, refused->message);
    }
  }
  SensitiveString key;
  if (params->apiKeySecretRef) {
    if (!options_.apiKey) {
      return Status(StatusCode::kFailedPrecondition,
                    "the parameters name an API key Secret but the adapter cannot read Secrets");
    }
    auto k = options_.apiKey(*params->apiKeySecretRef);
    if (!k.ok()) return k.status();
    key = std::move(*k);
  }
  auto transport = TransportFor(*params);
  auto client = std::make_unique<ServerClient>(*transport, params->endpoint, std::move(key),
                                               options_.timeouts);
  return Target{std::move(*params), std::move(transport), std::move(client)};
}

std::shared_ptr<kube::HttpTransport> OpenSandboxAdapter::TransportFor(
    const OpenSandboxExecutionParameters& params) {
  if (options_.transport || params.caBundle.empty()) return transport_;
  std::lock_guard lock(mu_);
  auto& t = caTransports_[params.caBundle];
  if (!t) {
    kube::RestConfig config;
    config.caPem = params.caBundle;  // only these CAs are trusted (kube/http.h)
    kube::CurlTransportOptions curl;
    curl.connectTimeout = milliseconds(5000);
    t = kube::NewCurlTransport(config, curl);
  }
  return t;
}

Status OpenSandboxAdapter::Validate(const ExecutionRequest& request) {
  auto params = ParseParameters(request.parameters);
  if (!params.ok()) return params.status();
  if (auto st = ValidateRequest(request, *params); !st.ok()) return st;
  // A pull Secret without a matching entry would make the pull anonymous: refuse up front.
  if (auto auth = SelectImageAuth(request); !auth.ok()) return auth.status();
  return Status::Ok();
}

StatusOr<std::optional<nlohmann::json>> OpenSandboxAdapter::FindSandbox(
    const ServerClient& client, const std::string& uid,
    const std::vector<api::ExecutionReference>& references) {
  const std::string ref = ReferenceId(references, kSandboxReferenceType);
  if (!ref.empty()) {
    auto r = client.Call("GET", "/sandboxes/" + base::PercentEncode(ref));
    if (!r.ok()) return r.status();
    if (IsSandboxNotFound(*r)) return std::optional<json>();
    if (r->status != 200) return Status(StatusCode::kServerError, ServerError("get sandbox", *r));
    auto doc = json::parse(r->body, nullptr, false);
    if (!doc.is_object()) return Status(StatusCode::kInternal, "sandbox answer is not JSON");
    const json* meta = GetObject(doc, "metadata");
    // The reference is a shortcut; the UID in the metadata is the authority.
    if (meta != nullptr && GetString(*meta, api::kJobUidLabel) == uid) {
      return std::optional<json>(std::move(doc));
    }
  }
  auto r = client.Call("GET", "/sandboxes?metadata=" + UidMetadataQuery(uid) + "&pageSize=200");
  if (!r.ok()) return r.status();
  if (r->status != 200) return Status(StatusCode::kServerError, ServerError("list sandboxes", *r));
  auto doc = json::parse(r->body, nullptr, false);
  const json* items = doc.is_object() && doc.contains("items") ? &doc["items"] : nullptr;
  if (items == nullptr || !items->is_array()) {
    return Status(StatusCode::kInternal, "sandbox list answer has no items");
  }
  // One sandbox per Job; were there more (a lost create answer raced a retry), the oldest is it.
  const json* oldest = nullptr;
  for (const auto& item : *items) {
    const json* meta = GetObject(item, "metadata");
    if (meta == nullptr || GetString(*meta, api::kJobUidLabel) != uid) continue;
    if (oldest == nullptr || GetString(item, "createdAt") < GetString(*oldest, "createdAt")) {
      oldest = &item;
    }
  }
  if (oldest == nullptr) return std::optional<json>();
  return std::optional<json>(*oldest);
}

StatusOr<ExecdTarget> OpenSandboxAdapter::ExecdFor(const Target& target,
                                                   const std::string& sandboxId) {
  {
    std::lock_guard lock(mu_);
    if (auto it = execdTargets_.find(sandboxId); it != execdTargets_.end()) return it->second;
  }
  auto r = target.client->Call("GET",
                               "/sandboxes/" + base::PercentEncode(sandboxId) + "/endpoints/" +
                                   std::to_string(kExecdPort) +
                                   (target.params.useServerProxy ? "?use_server_proxy=true" : ""));
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    return Status(StatusCode::kServerError, ServerError("execd endpoint", *r));
  }
  auto doc = json::parse(r->body, nullptr, false);
  auto base = ExecdBaseUrl(doc);
  if (!base.ok()) return base.status();
  ExecdTarget t{*base, EndpointHeaders(doc)};
  std::lock_guard lock(mu_);
  execdTargets_[sandboxId] = t;
  return t;
}

Status OpenSandboxAdapter::WaitForExecd(const ServerClient& client, const ExecdTarget& execd) {
  const auto deadline = std::chrono::steady_clock::now() + options_.execdReadyTimeout;
  Status last(StatusCode::kUnavailable, "no answer");
  while (true) {
    auto r = client.Execd(execd, "GET", "/ping", "", milliseconds(2000));
    if (r.ok() && r->status == 200) return Status::Ok();
    last = r.ok()
               ? Status(StatusCode::kUnavailable, "execd /ping: HTTP " + std::to_string(r->status))
               : r.status();
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return Status(StatusCode::kUnavailable,
                "the sandbox's execd did not answer /ping in time: " + last.message());
}

StatusOr<std::string> OpenSandboxAdapter::RunToCompletion(const ServerClient& client,
                                                          const ExecdTarget& execd,
                                                          const std::string& command) {
  auto id = client.RunBackground(execd, command);
  if (!id.ok()) return id.status();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    auto r = client.Execd(execd, "GET", "/command/status/" + base::PercentEncode(*id));
    if (!r.ok()) return r.status();
    auto doc = json::parse(r->body, nullptr, false);
    if (r->status == 200 && doc.is_object() && doc.value("running", true) == false) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status(StatusCode::kDeadlineExceeded, "the probe command did not finish in 10 s");
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  // The probe prints one short line; more than this is not its output.
  std::string out;
  auto read = client.ReadOutput(execd, *id, 0, kMaxProbeOutputBytes, [&](std::string_view d) {
    out.append(d);
    return true;
  });
  if (!read.ok()) return read.status();
  return out;
}

Observation OpenSandboxAdapter::RunOrFind(const Target& target, const ExecutionRequest& request,
                                          const std::string& sandboxId, bool created) {
  const ServerClient& client = *target.client;
  const std::string& uid = request.job.metadata.uid;
  auto execd = ExecdFor(target, sandboxId);
  if (!execd.ok()) return Unreachable(execd.status().message());
  if (Status st = WaitForExecd(client, *execd); !st.ok()) return Unreachable(st.message());

  CommandStep step;
  if (!created) step = FindStartedTask(client, *execd, request, sandboxId);
  if (step.answer) return *step.answer;
  if (step.commandId.empty()) step = StartTask(target, *execd, request, sandboxId);
  if (step.answer) return *step.answer;
  Observation o = ObserveCommand(client, *execd, uid, step.commandId);
  if (o.phase == ExecutionPhase::kUnknown && o.reason == kReasonCommandLost) {
    // Just started: execd registers a command asynchronously; it is running.
    o = Observation{};
    o.phase = ExecutionPhase::kRunning;
  }
  o.references = References(sandboxId, step.commandId);
  WatchIfRunning(o, uid, request.job.metadata.namespace_, request.job.metadata.name, sandboxId,
                 step.commandId, target);
  return o;
}

OpenSandboxAdapter::CommandStep OpenSandboxAdapter::FindStartedTask(const ServerClient& client,
                                                                    const ExecdTarget& execd,
                                                                    const ExecutionRequest& request,
                                                                    const std::string& sandboxId) {
  for (int attempt = 0;; ++attempt) {
    auto out = RunToCompletion(client, execd, ProbeCommand(request.job.metadata.uid));
    if (!out.ok()) {
      return {"", Unreachable("probing sandbox " + sandboxId + ": " + out.status().message())};
    }
    ProbeResult probe = ParseProbeOutput(*out);
    if (probe.kind == ProbeResult::Kind::kAbsent) return {};
    if (probe.kind == ProbeResult::Kind::kForeign) return {"", ForeignExecd(sandboxId)};
    if (probe.kind == ProbeResult::Kind::kStarted) {
      return IdentifyStartedTask(client, execd, request, sandboxId, probe.commandId);
    }
    // The marker exists but names no command yet (the started command records it a moment
    // after creating the marker), or names it in a form we cannot read.
    if (attempt >= 3) {
      return {"", Unknown(kReasonCommandNotIdentified,
                          "the task was started in sandbox " + sandboxId +
                              " by an earlier request whose answer was lost; its command cannot "
                              "be identified")};
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
}

OpenSandboxAdapter::CommandStep OpenSandboxAdapter::IdentifyStartedTask(
    const ServerClient& client, const ExecdTarget& execd, const ExecutionRequest& request,
    const std::string& sandboxId, const std::string& commandId) {
  auto r = client.Execd(execd, "GET", "/command/status/" + base::PercentEncode(commandId));
  if (!r.ok()) return {"", Unreachable(r.status().message())};
  auto status = json::parse(r->body, nullptr, false);
  // The command the marker names must be this Job's task, as execd recorded it.
  if (r->status == 200 && GetString(status, "content") == TaskCommand(request)) {
    return {commandId, std::nullopt};
  }
  return {"", Unknown(kReasonCommandNotIdentified,
                      "the task was started in sandbox " + sandboxId +
                          " by an earlier request whose answer was lost, and execd does not know "
                          "the command the sandbox recorded (" +
                          commandId + ")")};
}

OpenSandboxAdapter::CommandStep OpenSandboxAdapter::StartTask(const Target& target,
                                                              const ExecdTarget& execd,
                                                              const ExecutionRequest& request,
                                                              const std::string& sandboxId) {
  const ServerClient& client = *target.client;
  // The task runs as the profile's ids; its working directory is made for it first (as execd,
  // root): the task could not create it under a directory that only root may write.
  const SecurityProfile& sec = target.params.securityProfile;
  if (const std::string prepare = PrepareWorkingDirCommand(request, sec); !prepare.empty()) {
    auto out = RunToCompletion(client, execd, prepare);
    if (!out.ok()) {
      return {"", Unreachable("preparing the working directory in sandbox " + sandboxId + ": " +
                              out.status().message())};
    }
  }
  std::optional<std::pair<int64_t, int64_t>> runAs;
  if (sec.runAsUser != 0 || sec.runAsGroup != 0) runAs = {{sec.runAsUser, sec.runAsGroup}};
  auto id = client.RunBackground(execd, TaskCommand(request), runAs);
  if (id.ok()) return {*id, std::nullopt};
  if (id.status().code() == StatusCode::kFailedPrecondition) {
    return {"", Failed(kReasonBackendRejected, id.status().message())};
  }
  // The command may have started: the next Ensure's probe finds out.
  return {"",
          Unreachable("starting the task in sandbox " + sandboxId + ": " + id.status().message())};
}

Observation OpenSandboxAdapter::ObserveCommand(const ServerClient& client, const ExecdTarget& execd,
                                               const std::string& uid,
                                               const std::string& commandId) {
  auto r = client.Execd(execd, "GET", "/command/status/" + base::PercentEncode(commandId));
  if (!r.ok()) return Unreachable("execd: " + r.status().message());
  if (r->status == 404) {
    return Unknown(kReasonCommandLost, "execd no longer knows command " + commandId +
                                           " (its daemon or sandbox restarted)");
  }
  if (r->status != 200) {
    return Unreachable("execd command status: " + ErrorMessage(r->status, r->body));
  }
  auto doc = json::parse(r->body, nullptr, false);
  Observation o = ObservationFromCommandStatus(doc);
  if (o.phase == ExecutionPhase::kFailed && o.exitCode == kForeignSandboxExitCode) {
    auto head = OutputHead(client, execd, commandId);
    if (!head.ok()) return Unreachable("execd: " + head.status().message());
    if (head->find(ForeignSandboxLine(uid)) != std::string::npos) return ForeignExecd("");
  }
  if (o.phase == ExecutionPhase::kFailed && o.exitCode == kGuardExitCode) {
    // A second start refused by the guard: the task runs (or ran) under another command.
    auto head = OutputHead(client, execd, commandId);
    if (!head.ok()) return Unreachable("execd: " + head.status().message());
    if (head->find(GuardLine(uid)) != std::string::npos) {
      return Unknown(kReasonCommandNotIdentified,
                     "command " + commandId +
                         " was a second start of the task, refused; the first one is not known");
    }
  }
  return o;
}

void OpenSandboxAdapter::RememberSandbox(const nlohmann::json& sandbox) {
  const std::string id = GetString(sandbox, "id");
  const std::string expires = GetString(sandbox, "expiresAt");
  if (id.empty() || expires.empty()) return;
  auto t = api::ParseTime(expires);
  if (!t.ok()) return;
  std::lock_guard lock(mu_);
  expiresAt_[id] = *t;
}

Observation OpenSandboxAdapter::SandboxGone(const std::string& sandboxId) {
  std::optional<std::chrono::system_clock::time_point> expires;
  {
    std::lock_guard lock(mu_);
    if (auto it = expiresAt_.find(sandboxId); it != expiresAt_.end()) expires = it->second;
  }
  Observation o;
  o.phase = ExecutionPhase::kFailed;
  if (expires && *expires <= std::chrono::system_clock::now()) {
    o.reason = kReasonSandboxExpired;
    o.message = "The task's sandbox " + sandboxId +
                " expired (the server's timeout) before the task finished";
  } else {
    o.reason = kReasonSandboxGone;
    o.message = "The task's sandbox " + sandboxId +
                " no longer exists (deleted, or expired after its timeout) and the task's result "
                "was not seen";
  }
  return o;
}

Observation OpenSandboxAdapter::ObserveSandboxAndCommand(const Target& target,
                                                         const std::string& uid,
                                                         const nlohmann::json& sandbox,
                                                         const std::string& commandId) {
  const std::string sandboxId = GetString(sandbox, "id");
  RememberSandbox(sandbox);
  if (auto o = ObservationFromSandbox(sandbox)) {
    o->references = References(sandboxId, commandId);
    return *o;
  }
  auto execd = ExecdFor(target, sandboxId);
  if (!execd.ok()) return Unreachable(execd.status().message());
  Observation o = ObserveCommand(*target.client, *execd, uid, commandId);
  o.references = References(sandboxId, commandId);
  return o;
}

// Server messages may quote the request they answer; none of a Secret goes back up.
Observation OpenSandboxAdapter::Ensure(const ExecutionRequest& request) {
  Redactor redactor;
  redactor.AddRequest(request);
  if (!redactor.empty()) {
    std::lock_guard lock(mu_);
    taskValues_[request.job.metadata.uid] = redactor;
  }
  return redactor.Redacted(EnsureExecution(request, redactor));
}

Observation OpenSandboxAdapter::Observe(const ExecutionKey& key) {
  Redactor redactor = TaskValues(key.uid);
  return redactor.Redacted(ObserveExecution(key, redactor));
}

Observation OpenSandboxAdapter::Cancel(const ExecutionKey& key) {
  Redactor redactor = TaskValues(key.uid);
  return redactor.Redacted(CancelExecution(key, redactor));
}

Status OpenSandboxAdapter::Delete(const ExecutionKey& key) {
  Redactor redactor = TaskValues(key.uid);
  Status s = DeleteExecution(key, redactor);
  if (s.ok()) {
    std::lock_guard lock(mu_);
    taskValues_.erase(key.uid);
  }
  return redactor.Redacted(s);
}

StatusOr<std::string> OpenSandboxAdapter::Logs(const ExecutionKey& key, size_t tailBytes) {
  Redactor redactor = TaskValues(key.uid);
  auto output = OutputOf(key, redactor);
  if (!output.ok()) return redactor.Redacted(output.status());
  return redactor.Redacted(TailOutput(*output, tailBytes));
}

Status OpenSandboxAdapter::StreamLogs(const ExecutionKey& key, const LogOptions& options,
                                      const LogSink& sink) {
  Redactor redactor = TaskValues(key.uid);
  auto output = OutputOf(key, redactor);
  if (!output.ok()) return redactor.Redacted(output.status());
  return redactor.Redacted(
      StreamOutput(*output, options, sink, [&] { return IsStopped(Observe(key).phase); }));
}

Observation OpenSandboxAdapter::EnsureExecution(const ExecutionRequest& request,
                                                Redactor& redactor) {
  auto target = TargetFor(request.parameters);
  if (!target.ok()) {
    if (target.status().code() == StatusCode::kInvalidArgument) {
      return Failed(kReasonBackendRejected, target.status().message());
    }
    return Unreachable(target.status().message());
  }
  redactor.Add(target->client->apiKey().reveal());
  if (Status st = ValidateRequest(request, target->params); !st.ok()) {
    return Failed(kReasonBackendRejected, st.message());
  }
  std::vector<api::ExecutionReference> refs;
  if (request.job.status.execution) refs = request.job.status.execution->references;
  auto found = FindSandbox(*target->client, request.job.metadata.uid, refs);
  if (!found.ok()) return Unreachable(found.status().message());
  if (*found) return EnsureInSandbox(*target, request, **found);
  if (!ReferenceId(refs, kSandboxReferenceType).empty()) {
    // It existed (we persisted it) and is gone: never a second one.
    return SandboxGone(ReferenceId(refs, kSandboxReferenceType));
  }
  // A Job whose cancellation was requested never gets a new execution.
  if (request.job.spec.desiredState == api::DesiredState::kCancelled) return Absent();
  return CreateSandbox(*target, request);
}

Observation OpenSandboxAdapter::EnsureInSandbox(const Target& target,
                                                const ExecutionRequest& request,
                                                const nlohmann::json& sandbox) {
  const auto& meta = request.job.metadata;
  const std::string sandboxId = GetString(sandbox, "id");
  RememberSandbox(sandbox);
  std::string commandId;
  if (request.job.status.execution) {
    commandId = ReferenceId(request.job.status.execution->references, kCommandReferenceType);
  }
  if (!commandId.empty()) {
    Observation o = ObserveSandboxAndCommand(target, meta.uid, sandbox, commandId);
    WatchIfRunning(o, meta.uid, meta.namespace_, meta.name, sandboxId, commandId, target);
    return o;
  }
  if (auto o = ObservationFromSandbox(sandbox)) {
    // Not running: no command can be started or found in it. Pending has nothing to refer to
    // yet (the next Ensure looks again).
    if (o->phase == ExecutionPhase::kPending) {
      return Unreachable("sandbox " + sandboxId + " is pending");
    }
    o->references = References(sandboxId, "");
    return *o;
  }
  if (request.job.spec.desiredState == api::DesiredState::kCancelled) {
    // Cancelled before its task was known to run: Cancel removes the sandbox.
    Observation o;
    o.phase = ExecutionPhase::kPending;
    return o;
  }
  return RunOrFind(target, request, sandboxId, false);
}

Observation OpenSandboxAdapter::CreateSandbox(const Target& target,
                                              const ExecutionRequest& request) {
  auto auth = SelectImageAuth(request);
  if (!auth.ok()) return Failed(kReasonImagePullFailed, auth.status().message());
  auto body = BuildCreateBody(request, target.params, *auth);
  if (!body.ok()) {
    return Failed(kReasonBackendRejected, body.status().message());
  }
  // Last, right before the create: the controller's fresh read of the Job.
  if (!request.CreateConfirmed()) return NotCreated();
  auto r = target.client->Call("POST", "/sandboxes", body->dump(), options_.timeouts.create);
  if (!r.ok()) {
    // The server may have created it: the next Ensure lists by UID before creating.
    return Unreachable("creating the sandbox: " + r.status().message());
  }
  if (r->status != 202 && r->status != 200 && r->status != 201) return CreateRefused(*r);
  auto created = json::parse(r->body, nullptr, false);
  const std::string sandboxId = GetString(created, "id");
  if (sandboxId.empty()) return Unreachable("the create answer names no sandbox id");
  RememberSandbox(created);
  if (auto o = ObservationFromSandbox(created)) {
    if (o->phase != ExecutionPhase::kPending) {
      o->references = References(sandboxId, "");
      return *o;
    }
    // Asynchronous runtimes (Kubernetes) create in Pending: the next Ensure finds it running.
    return Unreachable("sandbox " + sandboxId + " is pending");
  }
  return RunOrFind(target, request, sandboxId, true);
}

Observation OpenSandboxAdapter::ObserveExecution(const ExecutionKey& key, Redactor& redactor) {
  auto target = TargetFor(key.parameters);
  if (!target.ok()) return Unreachable("opensandbox adapter: " + target.status().message());
  redactor.Add(target->client->apiKey().reveal());
  const std::string sandboxRef = ReferenceId(key.references, kSandboxReferenceType);
  const std::string commandId = ReferenceId(key.references, kCommandReferenceType);
  auto found = FindSandbox(*target->client, key.uid, key.references);
  if (!found.ok()) return Unreachable(found.status().message());
  if (!*found) {
    if (sandboxRef.empty()) return Absent();
    Observation o = SandboxGone(sandboxRef);
    o.references = key.references;
    return o;
  }
  if (commandId.empty()) {
    Observation o = ObservationFromSandbox(**found).value_or(
        Unknown(kReasonCommandNotIdentified, "no command is recorded for this Job's sandbox"));
    o.references = key.references;
    return o;
  }
  Observation o = ObserveSandboxAndCommand(*target, key.uid, **found, commandId);
  WatchIfRunning(o, key.uid, key.namespace_, key.name, GetString(**found, "id"), commandId,
                 *target);
  if (IsStopped(o.phase)) poller_.Forget(key.uid);
  return o;
}

Observation OpenSandboxAdapter::CancelExecution(const ExecutionKey& key, Redactor& redactor) {
  auto target = TargetFor(key.parameters);
  if (!target.ok()) return Unreachable("opensandbox adapter: " + target.status().message());
  redactor.Add(target->client->apiKey().reveal());
  const ServerClient& client = *target->client;
  auto found = FindSandbox(client, key.uid, key.references);
  if (!found.ok()) return Unreachable(found.status().message());
  if (!*found) {
    Forget(key.uid, ReferenceId(key.references, kSandboxReferenceType));
    return Absent();
  }
  const std::string sandboxId = GetString(**found, "id");
  Observation stopped;  // what the command's last read said, when it was interrupted
  if (!ReferenceId(key.references, kCommandReferenceType).empty() &&
      !ObservationFromSandbox(**found)) {
    if (auto answer = InterruptCommand(*target, key, sandboxId, stopped)) return *answer;
  }
  auto d = client.Call("DELETE", "/sandboxes/" + base::PercentEncode(sandboxId));
  if (!d.ok()) return Unreachable("deleting the sandbox: " + d.status().message());
  if (d->status != 204 && d->status != 200 && !IsSandboxNotFound(*d)) {
    return Unreachable(ServerError("delete sandbox", *d));
  }
  auto g = client.Call("GET", "/sandboxes/" + base::PercentEncode(sandboxId));
  if (!g.ok()) return Unreachable("confirming the delete: " + g.status().message());
  Observation o;
  o.references = key.references;
  o.startedAt = stopped.startedAt;
  if (IsSandboxNotFound(*g)) {
    Forget(key.uid, sandboxId);
    o.phase = ExecutionPhase::kCancelled;
    o.exitCode = stopped.exitCode;
    o.message = TaskStoppedMessage("(its command was interrupted and its sandbox deleted)");
    return o;
  }
  o.phase = ExecutionPhase::kRunning;  // still stopping
  return o;
}

std::optional<Observation> OpenSandboxAdapter::InterruptCommand(const Target& target,
                                                                const ExecutionKey& key,
                                                                const std::string& sandboxId,
                                                                Observation& stopped) {
  const ServerClient& client = *target.client;
  const std::string commandId = ReferenceId(key.references, kCommandReferenceType);
  auto execd = ExecdFor(target, sandboxId);
  if (!execd.ok()) return Unreachable(execd.status().message());
  Observation before = ObserveCommand(client, *execd, key.uid, commandId);
  if (before.phase == ExecutionPhase::kUnknown && before.reason == kReasonBackendUnreachable) {
    return before;
  }
  // It ended by itself first: its true result (the sandbox is removed by Delete).
  if (IsStopped(before.phase)) {
    before.references = key.references;
    return before;
  }
  stopped.startedAt = before.startedAt;
  // SIGTERM to the command's process group, SIGKILL after execd's grace period. A 500 says it
  // is no longer running: the sandbox delete below settles it either way.
  auto r = client.Execd(*execd, "DELETE", "/command?id=" + base::PercentEncode(commandId), "",
                        milliseconds(15000));
  if (!r.ok()) return Unreachable("interrupting the command: " + r.status().message());
  auto after = ObserveCommand(client, *execd, key.uid, commandId);
  if (after.phase == ExecutionPhase::kSucceeded) {
    after.references = key.references;
    return after;  // it finished between our two reads
  }
  stopped.exitCode = after.exitCode;
  return std::nullopt;
}

Status OpenSandboxAdapter::DeleteExecution(const ExecutionKey& key, Redactor& redactor) {
  auto target = TargetFor(key.parameters);
  if (!target.ok()) return target.status();
  redactor.Add(target->client->apiKey().reveal());
  const ServerClient& client = *target->client;
  std::vector<std::string> ids;
  if (auto ref = ReferenceId(key.references, kSandboxReferenceType); !ref.empty()) {
    ids.push_back(ref);
  }
  auto r = client.Call("GET", "/sandboxes?metadata=" + UidMetadataQuery(key.uid) + "&pageSize=200");
  if (!r.ok()) return r.status();
  if (r->status != 200) return Status(StatusCode::kServerError, ServerError("list sandboxes", *r));
  auto doc = json::parse(r->body, nullptr, false);
  if (doc.is_object() && doc.contains("items") && doc["items"].is_array()) {
    for (const auto& item : doc["items"]) ids.push_back(GetString(item, "id"));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (const auto& id : ids) {
    if (id.empty()) continue;
    auto d = client.Call("DELETE", "/sandboxes/" + base::PercentEncode(id));
    if (!d.ok()) return d.status();
    if (d->status == 204 || d->status == 200 || IsSandboxNotFound(*d)) {
      Forget(key.uid, id);
      continue;
    }
    return Status(StatusCode::kServerError, ServerError("delete sandbox", *d));
  }
  return Status::Ok();
}

StatusOr<CommandOutput> OpenSandboxAdapter::OutputOf(const ExecutionKey& key, Redactor& redactor) {
  auto target = TargetFor(key.parameters);
  if (!target.ok()) return target.status();
  redactor.Add(target->client->apiKey().reveal());
  const std::string commandId = ReferenceId(key.references, kCommandReferenceType);
  auto found = FindSandbox(*target->client, key.uid, key.references);
  if (!found.ok()) return found.status();
  if (!*found || commandId.empty()) {
    return Status(StatusCode::kNotFound, "no sandbox command for Job UID " + key.uid);
  }
  auto execd = ExecdFor(*target, GetString(**found, "id"));
  if (!execd.ok()) return execd.status();
  return CommandOutput{std::move(target->transport), std::move(target->client), std::move(*execd),
                       commandId};
}

void OpenSandboxAdapter::WatchIfRunning(const Observation& observed, const std::string& uid,
                                        const std::string& ns, const std::string& name,
                                        const std::string& sandboxId, const std::string& commandId,
                                        const Target& target) {
  if (observed.phase != ExecutionPhase::kRunning) return;
  auto execd = ExecdFor(target, sandboxId);
  if (!execd.ok()) return;
  PolledCommand c;
  c.ns = ns;
  c.name = name;
  c.commandId = commandId;
  c.execd = std::move(*execd);
  c.sandboxId = sandboxId;
  c.endpoint = target.client->endpoint();
  c.apiKey = target.client->apiKey();
  c.transport = target.transport;
  c.maxInterval = options_.maxPoll.value_or(
      milliseconds(std::max<int64_t>(1, target.params.pollIntervalSeconds) * 1000));
  poller_.Watch(uid, std::move(c));
}

Redactor OpenSandboxAdapter::TaskValues(const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = taskValues_.find(uid);
  return it == taskValues_.end() ? Redactor() : it->second;
}

void OpenSandboxAdapter::Forget(const std::string& uid, const std::string& sandboxId) {
  poller_.Forget(uid);
  if (sandboxId.empty()) return;
  std::lock_guard lock(mu_);
  execdTargets_.erase(sandboxId);
  expiresAt_.erase(sandboxId);
}

std::shared_ptr<OpenSandboxAdapter> NewOpenSandboxAdapter(KubeClient& client,
                                                          const std::string& secretNamespace) {
  OpenSandboxAdapterOptions options;
  options.apiKey = SecretApiKeySource(client);
  options.secretNamespace = secretNamespace;
  return std::make_shared<OpenSandboxAdapter>(std::move(options));
}

}  // namespace ayatori::adapters::opensandbox
