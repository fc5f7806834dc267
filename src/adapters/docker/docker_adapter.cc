#include "adapters/docker/docker_adapter.h"

#include <condition_variable>
#include <mutex>
#include <set>
#include <stop_token>
#include <thread>

#include "adapters/docker/container.h"
#include "adapters/docker/engine_errors.h"
#include "adapters/docker/json_get.h"
#include "adapters/docker/stream.h"
#include "adapters/registry.h"
#include "adapters/task_messages.h"
#include "base/url.h"

namespace ayatori::adapters::docker {

namespace {

using nlohmann::json;

std::string UidFilter(const std::string& uid) {
  json filters = {{"label", {std::string(api::kJobUidLabel) + "=" + uid}}};
  return base::PercentEncode(filters.dump());
}

// How long an engine's runtime list is trusted before it is asked again.
constexpr std::chrono::seconds kRuntimesKept{10};

}  // namespace

DockerAdapter::DockerAdapter(DockerAdapterOptions options)
    : options_(std::move(options)), puller_(options_.pullTimeout) {}

DockerAdapter::~DockerAdapter() { Stop(); }

std::shared_ptr<EngineClient> DockerAdapter::ClientFor(const std::string& endpoint,
                                                       const std::string& tlsName,
                                                       const TlsMaterial& tls, Status& error) {
  const std::string key = tlsName.empty() ? endpoint : endpoint + " tls:" + tlsName;
  std::unique_ptr<EventWatcher> replaced;
  std::shared_ptr<EngineClient> client;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = clients_.find(key);
    if (it == clients_.end() || !(it->second.tls == tls)) {
      auto parsed = ParseEngineEndpoint(endpoint, !tls.empty());
      if (!parsed.ok()) {
        error = parsed.status();
        return nullptr;
      }
      // New, or the Secret was rotated: a new client, and a watcher that uses it.
      auto fresh = std::make_shared<EngineClient>(
          *parsed, tls, options_.maxApiVersion,
          EngineTimeouts{options_.connectTimeout, options_.requestTimeout});
      clients_[key] = Client{fresh, tls};
      if (auto w = watchers_.find(key); w != watchers_.end()) {
        replaced = std::move(w->second);
        watchers_.erase(w);
      }
      it = clients_.find(key);
    }
    client = it->second.client;
    // Every engine the adapter talks to is watched once Start() ran, not only the default one.
    if (notify_ && watchers_.count(key) == 0) {
      watchers_[key] = std::make_unique<EventWatcher>(client, notify_, options_.maxEventsBackoff);
    }
  }
  if (replaced) replaced->Stop();  // outside the lock: it joins the watcher's thread
  return client;
}

namespace {

// The endpoint the parameters name, or the adapter's default.
std::string EndpointOf(const DockerExecutionParameters& params, const std::string& fallback) {
  return params.endpoint.empty() ? fallback : params.endpoint;
}

}  // namespace

StatusOr<DockerAdapter::Target> DockerAdapter::TargetFor(const nlohmann::json& parameters) {
  auto params = ParseDockerParameters(parameters);
  if (!params.ok()) return params.status();
  if (!options_.secretNamespace.empty()) {
    if (auto refused = SecretNamespaceRefusal("", parameters, options_.secretNamespace)) {
      return Status(StatusCode::kInvalidArgument, refused->message);
    }
  }
  const std::string endpoint = EndpointOf(*params, options_.defaultEndpoint);
  TlsMaterial tls = options_.tls;
  std::string tlsName;
  if (params->tlsSecretRef) {
    if (!options_.tlsSource) {
      return Status(StatusCode::kInvalidArgument,
                    "docker engine TLS: this controller cannot read tlsSecretRef Secrets");
    }
    auto loaded = options_.tlsSource(*params->tlsSecretRef);
    if (!loaded.ok()) return Status(StatusCode::kUnavailable, loaded.status().message());
    tls = std::move(*loaded);
    tlsName = params->tlsSecretRef->namespace_ + "/" + params->tlsSecretRef->name;
  }
  // Checked at every call, not only at acceptance: parameters edited since must not send a
  // create request (forwarded Secret values) in the clear.
  if (IsPlainNetworkEndpoint(endpoint, !tls.empty()) && !params->insecure) {
    return Status(StatusCode::kInvalidArgument,
                  "the docker endpoint of the parameters is plain HTTP: set tlsSecretRef (or "
                  "insecure: true) in the DockerExecutionParameters");
  }
  Status error;
  auto client = ClientFor(endpoint, tlsName, tls, error);
  if (client == nullptr) return error;
  return Target{std::move(client), std::move(*params), tls.keyPem};
}

Status DockerAdapter::Start(std::function<void(const std::string&, const std::string&)> notify) {
  if (!notify)
    return Status(StatusCode::kInvalidArgument, "docker adapter: Start needs a notify function");
  {
    std::lock_guard<std::mutex> lock(mu_);
    notify_ = std::move(notify);
  }
  puller_.SetNotify(notify_);
  Status error;
  if (ClientFor(options_.defaultEndpoint, "", options_.tls, error) == nullptr) return error;
  return Status::Ok();
}

void DockerAdapter::Stop() {
  std::map<std::string, std::unique_ptr<EventWatcher>> watchers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    watchers.swap(watchers_);
    notify_ = nullptr;
  }
  puller_.SetNotify(nullptr);
  for (auto& [endpoint, watcher] : watchers) watcher->Stop();
}

Status DockerAdapter::Validate(const ExecutionRequest& request) {
  auto refused = AcceptanceRefusal(request);
  if (!refused) return Status::Ok();
  return Status(refused->reason == Refusal::kNotEnforceable ? StatusCode::kFailedPrecondition
                                                            : StatusCode::kInvalidArgument,
                refused->message);
}

std::optional<Refusal> DockerAdapter::AcceptanceRefusal(const ExecutionRequest& request) {
  auto rejected = [](const Status& st) { return Refusal{Refusal::kBackendRejected, st.message()}; };
  auto params = ParseDockerParameters(request.parameters);
  if (!params.ok()) return rejected(params.status());
  // At acceptance the descriptor refused these first, for the parameters as written; the adapter
  // knows its own default endpoint and TLS, and refuses under the same reason.
  if (auto refused =
          InsecureEndpointRefusal(*params, options_.defaultEndpoint, !options_.tls.empty())) {
    return refused;
  }
  const bool tls = params->tlsSecretRef.has_value() || !options_.tls.empty();
  if (auto parsed = ParseEngineEndpoint(EndpointOf(*params, options_.defaultEndpoint), tls);
      !parsed.ok()) {
    return rejected(parsed.status());
  }
  if (auto st = ValidateRequest(request, *params); !st.ok()) return rejected(st);
  if (auto st = HostNetworkAllowed(*params); !st.ok()) return rejected(st);
  if (params->runtime.empty()) return std::nullopt;
  // The class asks for an isolation this engine cannot give: not the Job's fault, nor a broken
  // parameters object; the administrator registers the runtime or names another.
  if (auto st = CheckRuntime(request.parameters, params->runtime); !st.ok()) {
    return Refusal{Refusal::kNotEnforceable, st.message()};
  }
  return std::nullopt;
}

Status DockerAdapter::CheckRuntime(const nlohmann::json& parameters, const std::string& runtime) {
  // An engine that cannot be asked now is not a refusal: the create names the runtime too, and
  // the engine refuses one it does not have (BackendRejected), never running the task under
  // its default runtime instead.
  auto target = TargetFor(parameters);
  if (!target.ok()) return Status::Ok();
  const std::string endpoint = EndpointOf(target->params, options_.defaultEndpoint);
  const auto now = std::chrono::steady_clock::now();
  std::set<std::string> names;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = runtimes_.find(endpoint);
        it != runtimes_.end() && now - it->second.at < kRuntimesKept) {
      names = it->second.names;
      cached = true;
    }
  }
  if (!cached) {
    auto r = target->client->Call("GET", "/info");
    if (!r.ok() || r->status != 200) return Status::Ok();
    auto info = json::parse(r->body, nullptr, false);
    const json* list = GetObject(info, "Runtimes");
    if (list == nullptr) return Status::Ok();
    for (const auto& [name, value] : list->items()) names.insert(name);
    std::lock_guard<std::mutex> lock(mu_);
    runtimes_[endpoint] = Runtimes{now, names};
  }
  if (names.contains(runtime)) return Status::Ok();
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  return Status(StatusCode::kFailedPrecondition,
                "the class's DockerExecutionParameters name the OCI runtime \"" + runtime +
                    "\", which the engine does not have (it has: " + known +
                    "); register it with dockerd (--add-runtime, or runtimes in daemon.json) or "
                    "name another: a Job never runs under a runtime its class did not name");
}

std::map<std::string, std::string> DockerAdapter::PinnedParameters(
    const nlohmann::json& parameters) const {
  auto params = ParseDockerParameters(parameters);
  if (!params.ok()) return {};  // Validate refused these parameters: the Job is not accepted
  return {{"endpoint", EndpointOf(*params, options_.defaultEndpoint)},
          {"networkMode", params->networkMode},
          {"runtime", params->runtime}};
}

StatusOr<std::optional<nlohmann::json>> DockerAdapter::Inspect(EngineClient& client,
                                                               const std::string& id) {
  auto r = client.Call("GET", "/containers/" + base::PercentEncode(id) + "/json");
  if (!r.ok()) return r.status();
  if (r->status == 404) return std::optional<json>();
  if (r->status != 200) return EngineError("inspect container", *r);
  auto doc = json::parse(r->body, nullptr, false);
  if (!doc.is_object())
    return Status(StatusCode::kInternal, "docker engine: inspect answer is not JSON");
  return std::optional<json>(std::move(doc));
}

StatusOr<std::optional<nlohmann::json>> DockerAdapter::FindContainer(
    EngineClient& client, const std::string& uid,
    const std::vector<api::ExecutionReference>& references) {
  // The reference is a shortcut; the UID label is the authority.
  for (const auto& ref : references) {
    if (ref.type != kContainerReferenceType || ref.id.empty()) continue;
    auto found = Inspect(client, ref.id);
    if (!found.ok()) return found.status();
    if (*found && GetLabel(**found, api::kJobUidLabel) == uid) {
      return found;
    }
  }
  auto r = client.Call("GET", "/containers/json?all=1&filters=" + UidFilter(uid));
  if (!r.ok()) return r.status();
  if (r->status != 200) return EngineError("list containers", *r);
  auto list = json::parse(r->body, nullptr, false);
  if (!list.is_array())
    return Status(StatusCode::kInternal, "docker engine: container list is not an array");
  if (list.empty()) return std::optional<json>();
  // There is never more than one (deterministic name); should there be, the oldest is the one.
  const json* oldest = &list[0];
  for (const auto& c : list) {
    if (GetInt(c, "Created") < GetInt(*oldest, "Created")) oldest = &c;
  }
  return Inspect(client, GetString(*oldest, "Id"));
}

Observation DockerAdapter::Observed(EngineClient& client, const nlohmann::json& inspect,
                                    bool resultUnknown) {
  Observation o = ObservationFromInspect(inspect, resultUnknown);
  if (o.phase != ExecutionPhase::kFailed || o.reason != kReasonProcessFailed || !o.exitCode ||
      !EngineRefusedCommand(*o.exitCode)) {
    return o;
  }
  const json* host = GetObject(inspect, "HostConfig");
  if (host == nullptr || !GetBool(*host, "Init")) return o;
  // The last lines of stderr, bounded: a task that printed more is not looked at further.
  auto r = client.Call(
      "GET",
      "/containers/" + base::PercentEncode(GetString(inspect, "Id")) + "/logs?stderr=1&tail=3", "",
      {}, std::chrono::milliseconds(0), BodyLimit{size_t{64} * 1024, false});
  if (!r.ok() || r->status != 200) return o;
  std::string stderrTail;
  LogDemuxer demux([&](LogStream, std::string_view bytes) { stderrTail.append(bytes); });
  if (!demux.Feed(r->body).ok()) return o;
  if (auto detail = InitExecFailure(stderrTail)) {
    o.reason = kReasonStartFailed;
    o.message = TaskCouldNotStartMessage(*detail);
  }
  return o;
}

Observation DockerAdapter::StartAndObserve(EngineClient& client, const std::string& uid,
                                           const std::string& id, bool resultUnknown) {
  auto r = client.Call("POST", "/containers/" + base::PercentEncode(id) + "/start");
  if (!r.ok()) return EngineUnreachable(r.status());
  // 204 started, 304 already started; otherwise the engine records why in State.Error and
  // State.ExitCode, which the inspect below reports (StartFailed or StartNotConfirmed), or the
  // container is gone.
  auto found = FindContainer(client, uid, {{kContainerReferenceType, id}});
  if (!found.ok()) return EngineUnreachable(found.status());
  if (!*found) return Absent();
  return Observed(client, **found, resultUnknown);
}

// Engine messages may quote parts of the request they answer; none of a Secret goes back up.
Observation DockerAdapter::Ensure(const ExecutionRequest& request) {
  Redactor redactor;
  redactor.AddRequest(request);
  return redactor.Redacted(EnsureExecution(request, redactor));
}

Observation DockerAdapter::Observe(const ExecutionKey& key) {
  Redactor redactor;
  return redactor.Redacted(ObserveExecution(key, redactor));
}

Observation DockerAdapter::Cancel(const ExecutionKey& key) {
  Redactor redactor;
  return redactor.Redacted(CancelExecution(key, redactor));
}

Status DockerAdapter::Delete(const ExecutionKey& key) {
  Redactor redactor;
  return redactor.Redacted(DeleteExecution(key, redactor));
}

Status DockerAdapter::StreamLogs(const ExecutionKey& key, const LogOptions& options,
                                 const LogSink& sink) {
  Redactor redactor;
  return redactor.Redacted(StreamExecutionLogs(key, options, sink, redactor));
}

Observation DockerAdapter::EnsureExecution(const ExecutionRequest& request, Redactor& redactor) {
  auto target = TargetFor(request.parameters);
  if (!target.ok()) {
    // Parameters that can never work fail the Job; a TLS Secret that cannot be read now may be
    // fixed by its administrator, and the Job waits for that.
    if (target.status().code() == StatusCode::kInvalidArgument) {
      return Failed(kReasonBackendRejected, target.status().message());
    }
    return Unreachable(target.status().message());
  }
  redactor.Add(target->tlsKey.reveal());
  if (auto st = ValidateRequest(request, target->params); !st.ok()) {
    return Failed(kReasonBackendRejected, st.message());
  }
  std::vector<api::ExecutionReference> refs;
  if (request.job.status.execution) refs = request.job.status.execution->references;
  auto found = FindContainer(*target->client, request.job.metadata.uid, refs);
  if (!found.ok()) return EngineUnreachable(found.status());
  if (*found)
    return Adopt(*target->client, request.job.metadata.uid, **found, request.resultUnknown);
  // A Job whose cancellation was requested never gets a new execution.
  if (request.job.spec.desiredState == api::DesiredState::kCancelled) return Absent();

  if (auto failure =
          puller_.Ensure(target->client, EndpointOf(target->params, options_.defaultEndpoint),
                         request, target->params.pullPolicy)) {
    return *failure;
  }
  auto body = BuildCreateBody(request, target->params);
  if (!body.ok()) return Failed(kReasonBackendRejected, body.status().message());
  // Last, right before the create (after a pull that may have taken minutes): the controller's
  // fresh read of the Job.
  if (!request.CreateConfirmed()) return NotCreated();
  return Create(*target->client, request, *body);
}

Observation DockerAdapter::Adopt(EngineClient& client, const std::string& uid,
                                 const nlohmann::json& inspect, bool resultUnknown) {
  // Created but never started (a lost response between create and start, or a start the engine
  // could not finish, e.g. because it was killed during it): start it now. Starting is
  // idempotent (304 when it runs already); if the engine keeps refusing, the answer stays
  // Unknown/StartNotConfirmed and the next Ensure tries again.
  if (MayStart(inspect)) {
    return StartAndObserve(client, uid, GetString(inspect, "Id"), resultUnknown);
  }
  return Observed(client, inspect, resultUnknown);
}

Observation DockerAdapter::Create(EngineClient& client, const ExecutionRequest& request,
                                  const nlohmann::json& body) {
  const std::string& uid = request.job.metadata.uid;
  auto r = client.Call("POST", "/containers/create?name=" + base::PercentEncode(ContainerName(uid)),
                       body.dump());
  if (!r.ok()) return EngineUnreachable(r.status());
  switch (r->status) {
    case 201: {
      auto created = json::parse(r->body, nullptr, false);
      std::string id = GetString(created, "Id");
      if (id.empty()) return Unreachable("docker engine: create answer has no container Id");
      return StartAndObserve(client, uid, id, request.resultUnknown);
    }
    case 409:
      return AdoptAfterConflict(client, uid, request.resultUnknown, *r);
    case 404:
      return Failed(kReasonImagePullFailed,
                    "The engine could not create the task's container: " + EngineErrorMessage(*r));
    case 400:
      return Failed(kReasonBackendRejected,
                    "The engine refused the task's container: " + EngineErrorMessage(*r));
    default:
      return EngineUnreachable(EngineError("create container", *r));
  }
}

Observation DockerAdapter::AdoptAfterConflict(EngineClient& client, const std::string& uid,
                                              bool resultUnknown, const HttpResponse& conflict) {
  // Created by an earlier Ensure whose answer was lost, or by a concurrent one: adopt it. The
  // engine reserves the name before the container becomes visible, so a concurrent create may
  // need a moment to show up.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (true) {
    auto again = FindContainer(client, uid, {});
    if (!again.ok()) return EngineUnreachable(again.status());
    if (*again) return Adopt(client, uid, **again, resultUnknown);
    if (std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Unreachable(
      "docker engine: the name " + ContainerName(uid) +
      " is taken by a container without this Job's UID label: " + EngineErrorMessage(conflict));
}

Observation DockerAdapter::ObserveExecution(const ExecutionKey& key, Redactor& redactor) {
  auto target = TargetFor(key.parameters);
  if (!target.ok()) return Unreachable("docker adapter: " + target.status().message());
  redactor.Add(target->tlsKey.reveal());
  auto found = FindContainer(*target->client, key.uid, key.references);
  if (!found.ok()) return EngineUnreachable(found.status());
  if (!*found) return Absent();
  redactor.AddContainerEnv(**found);
  return Observed(*target->client, **found, key.resultUnknown);
}

Observation DockerAdapter::CancelExecution(const ExecutionKey& key, Redactor& redactor) {
  auto target = TargetFor(key.parameters);
  if (!target.ok()) return Unreachable("docker adapter: " + target.status().message());
  redactor.Add(target->tlsKey.reveal());
  EngineClient& client = *target->client;
  auto found = FindContainer(client, key.uid, key.references);
  if (!found.ok()) return EngineUnreachable(found.status());
  if (!*found) return Absent();
  redactor.AddContainerEnv(**found);
  Observation before = Observed(client, **found, key.resultUnknown);
  // It ended by itself first: its true result, or an end whose result the engine lost (nothing
  // to stop, and marking it cancelled now would report a cancel that stopped nothing).
  if (IsStopped(before.phase) || before.ended) return before;
  const std::string id = GetString(**found, "Id");
  const std::string path = "/containers/" + base::PercentEncode(id);

  // Mark first, then stop: a crash in between leaves a mark and a running container, which the
  // next Cancel stops; never a stopped container that looks as if it failed by itself.
  if (GetString(**found, "Name") != "/" + CancelledContainerName(key.uid)) {
    auto r = client.Call(
        "POST", path + "/rename?name=" + base::PercentEncode(CancelledContainerName(key.uid)));
    if (!r.ok()) return EngineUnreachable(r.status());
    if (r->status == 404) return Absent();
    if (r->status != 204 && r->status != 200)
      return EngineUnreachable(EngineError("rename container", *r));
  }
  if (before.phase == ExecutionPhase::kRunning) {
    const int64_t grace = target->params.stopGracePeriodSeconds;
    auto r = client.Call("POST", path + "/stop?t=" + std::to_string(grace), "", {},
                         std::chrono::seconds(grace) + options_.stopSlack);
    if (!r.ok()) return EngineUnreachable(r.status());
    if (r->status >= 500) return EngineUnreachable(EngineError("stop container", *r));
  }
  auto after = Inspect(client, id);
  if (!after.ok()) return EngineUnreachable(after.status());
  if (!*after) return Absent();
  return Observed(client, **after, key.resultUnknown);
}

Status DockerAdapter::DeleteExecution(const ExecutionKey& key, Redactor& redactor) {
  auto target = TargetFor(key.parameters);
  if (!target.ok()) return target.status();
  redactor.Add(target->tlsKey.reveal());
  EngineClient& client = *target->client;
  std::vector<std::string> ids;
  for (const auto& ref : key.references) {
    if (ref.type == kContainerReferenceType && !ref.id.empty()) ids.push_back(ref.id);
  }
  auto r = client.Call("GET", "/containers/json?all=1&filters=" + UidFilter(key.uid));
  if (!r.ok()) return r.status();
  if (r->status != 200) return EngineError("list containers", *r);
  auto list = json::parse(r->body, nullptr, false);
  if (list.is_array()) {
    for (const auto& c : list) ids.push_back(GetString(c, "Id"));
  }
  for (const auto& id : ids) {
    if (id.empty()) continue;
    auto d = client.Call("DELETE", "/containers/" + base::PercentEncode(id) + "?force=1&v=1");
    if (!d.ok()) return d.status();
    // 404: already gone; 409: a removal is already in progress.
    if (d->status == 204 || d->status == 200 || d->status == 404 || d->status == 409) continue;
    return EngineError("remove container", *d);
  }
  return Status::Ok();
}

StatusOr<std::string> DockerAdapter::Logs(const ExecutionKey& key, size_t tailBytes) {
  TailBuffer tail(tailBytes);
  Status st = StreamLogs(key, LogOptions{}, [&](std::string_view bytes) {
    tail.Append(bytes);
    return true;
  });
  if (!st.ok()) return st;
  return tail.str();
}

// Until the container of `inspect` has left the "created" state (started, or removed: its
// inspect answer then says why there is nothing to follow); nullopt when `stop` came first.
// Polled: the engine's events stream would need a second connection per follower, and a
// container waits in "created" only for the moments between the adapter's create and start
// (or until the controller adopts a container whose start a crash interrupted).
StatusOr<std::optional<nlohmann::json>> DockerAdapter::AwaitStartOf(EngineClient& client,
                                                                    nlohmann::json inspect,
                                                                    const std::stop_token& stop) {
  constexpr auto kPollInterval = std::chrono::milliseconds(100);
  std::mutex mu;
  std::condition_variable_any stopped;
  auto created = [](const nlohmann::json& container) {
    const nlohmann::json* state = GetObject(container, "State");
    return state != nullptr && GetString(*state, "Status") == "created";
  };
  while (created(inspect)) {
    std::unique_lock lock(mu);
    stopped.wait_for(lock, stop, kPollInterval, [] { return false; });
    if (stop.stop_requested()) return std::optional<nlohmann::json>();
    auto again = Inspect(client, GetString(inspect, "Id"));
    if (!again.ok()) return again.status();
    if (!*again)
      return Status(StatusCode::kNotFound, "the container was removed before it started");
    inspect = std::move(**again);
  }
  return std::optional<nlohmann::json>(std::move(inspect));
}

// The engine applies every option itself (GET /containers/{id}/logs: follow, tail, since,
// timestamps); with follow it ends the stream when the container stops.
Status DockerAdapter::StreamExecutionLogs(const ExecutionKey& key, const LogOptions& options,
                                          const LogSink& sink, Redactor& redactor) {
  auto target = TargetFor(key.parameters);
  if (!target.ok()) return target.status();
  redactor.Add(target->tlsKey.reveal());
  EngineClient& client = *target->client;
  auto found = FindContainer(client, key.uid, key.references);
  if (!found.ok()) return found.status();
  if (!*found) return Status(StatusCode::kNotFound, "no container for Job UID " + key.uid);
  redactor.AddContainerEnv(**found);
  if (options.follow) {
    // The engine does not follow a container that was created but not started: it answers its
    // (empty) log at once, and a follower would end before the task printed anything.
    auto started = AwaitStartOf(client, std::move(**found), options.stop);
    if (!started.ok()) return started.status();
    if (!*started) return Status::Ok();  // the reader left first
    *found = std::move(*started);
  }
  std::string query = "stdout=1&stderr=1";
  if (options.follow) query += "&follow=1";
  if (options.timestamps) query += "&timestamps=1";
  if (options.tailLines) query += "&tail=" + std::to_string(*options.tailLines);
  if (options.sinceSeconds) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const int64_t nowSeconds = std::chrono::duration_cast<std::chrono::seconds>(now).count();
    query += "&since=" + std::to_string(nowSeconds - *options.sinceSeconds);
  }
  bool readerLeft = false;
  LogDemuxer demux([&](LogStream, std::string_view bytes) {
    if (!readerLeft && !sink(bytes)) readerLeft = true;
  });
  Status decode;
  long httpStatus = 0;
  std::string errorBody;
  StreamStop stop;
  // A reader that left ends the stream now, not at the container's next output.
  std::stop_callback readerLeftNow(options.stop, [&stop] { stop.Cancel(); });
  Status st = client.Stream(
      "/containers/" + base::PercentEncode(GetString(**found, "Id")) + "/logs?" + query,
      [&](long code) { httpStatus = code; },
      [&](std::string_view data) {
        if (httpStatus != 200) {
          errorBody.append(data);
          return errorBody.size() < 4096;
        }
        decode = demux.Feed(data);
        return decode.ok() && !readerLeft;
      },
      stop);
  if (readerLeft) return Status::Ok();
  if (!st.ok()) return st;
  if (httpStatus == 404)
    return Status(StatusCode::kNotFound, "the container of Job UID " + key.uid + " is gone");
  if (httpStatus != 200) return EngineError("container logs", HttpResponse{httpStatus, errorBody});
  if (!decode.ok()) return decode;
  return demux.Finish();
}

}  // namespace ayatori::adapters::docker
