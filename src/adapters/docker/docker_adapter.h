// The Docker Engine adapter (controllerName execution.ayatori.ddupan.top/docker): one container
// per Job, named ayatori-<uid> and labelled with the Job's namespace, name and UID, driven through
// the Engine HTTP API. Parameters come from the JobClass's DockerExecutionParameters.
//
//   Ensure   look up by UID label (adopt), else pull per pullPolicy (with the Job's
//            imagePullSecrets; ImagePuller, adapters/docker/image_puller.h), create (409 on the
//            deterministic name -> adopt), start. Once Start() ran, a pull runs in the background:
//            Ensure answers kPending/ImagePulling (nothing created, the Job says it waits for the
//            image) and notify wakes the Job when the pull ended; its next Ensure creates the
//            container or reports the failure
//   Observe  inspect; engine unreachable, 5xx or timeout -> Unknown/BackendUnreachable, never
//   Failed Cancel   rename to ayatori-<uid>-cancelled (the durable "we stopped it" mark), then
//            POST /stop?t=<stopGracePeriodSeconds> (SIGTERM, SIGKILL after the grace period)
//   Delete   DELETE /containers/{id}?force=1 of everything with the UID label; 404 is fine
//   Start    one /events stream per engine (not per Job) calls notify on container changes
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stop_token>
#include <string>

#include "adapters/adapter.h"
#include "adapters/common/log_source.h"
#include "adapters/docker/container.h"
#include "adapters/docker/engine.h"
#include "adapters/docker/events.h"
#include "adapters/docker/image_puller.h"
#include "adapters/docker/parameters.h"
#include "adapters/docker/tls_secret.h"
#include "api/types.h"

namespace ayatori::adapters::docker {

struct DockerAdapterOptions {
  // Used when the parameters name no endpoint.
  std::string defaultEndpoint = "unix:///var/run/docker.sock";
  // Reads the Secret that the parameters' tlsSecretRef names (SecretTlsSource); required when a
  // class names one.
  TlsSource tlsSource;
  // The controller's namespace: a tlsSecretRef elsewhere is refused at every call unless the
  // parameters say allowCrossNamespaceSecretRefs: true (adapters::SecretNamespaceRefusal; the
  // controller refuses such Jobs at acceptance too). Empty: not checked (adapter tests).
  std::string secretNamespace;
  // Client TLS for tcp:// endpoints of parameters that name no tlsSecretRef. Empty = none: such
  // an endpoint is plain HTTP, accepted only with `insecure: true`.
  TlsMaterial tls;
  // Highest Engine API version used; an older engine's own version is used instead.
  std::string maxApiVersion = "1.41";
  std::chrono::milliseconds connectTimeout{5000};
  std::chrono::milliseconds requestTimeout{30000};
  std::chrono::milliseconds pullTimeout{std::chrono::minutes(10)};
  // Extra time allowed for POST /stop beyond the stop grace period.
  std::chrono::milliseconds stopSlack{30000};
  // Reconnect backoff of the events stream (doubles from 100ms up to this).
  std::chrono::milliseconds maxEventsBackoff{10000};
};

class DockerAdapter final : public Adapter, public LogSource {
 public:
  explicit DockerAdapter(DockerAdapterOptions options = {});
  ~DockerAdapter() override;

  std::string Name() const override { return "docker"; }
  Status Start(std::function<void(const std::string&, const std::string&)> notify) override;
  void Stop() override;
  // AcceptanceRefusal as a status: kFailedPrecondition for NotEnforceable, kInvalidArgument for
  // the other reasons.
  Status Validate(const ExecutionRequest& request) override;
  // The parameters and the request (ValidateRequest, HostNetworkAllowed), without the engine
  // except for a runtime the class names. BackendRejected: parameters or a request Docker cannot
  // run; InsecureEndpoint: plain HTTP to the engine, also with the adapter's default endpoint
  // (InsecureEndpointRefusal); NotEnforceable: a runtime the engine does not list (CheckRuntime).
  std::optional<Refusal> AcceptanceRefusal(const ExecutionRequest& request) override;
  // endpoint (the default one when the parameters name none), networkMode, runtime: where the
  // container lives and the isolation it was accepted with. tlsSecretRef, pullPolicy,
  // extraLabels and stopGracePeriodSeconds are read at each call.
  std::map<std::string, std::string> PinnedParameters(
      const nlohmann::json& parameters) const override;
  Observation Ensure(const ExecutionRequest& request) override;
  Observation Observe(const ExecutionKey& key) override;
  Observation Cancel(const ExecutionKey& key) override;
  Status Delete(const ExecutionKey& key) override;

  StatusOr<std::string> Logs(const ExecutionKey& key, size_t tailBytes) override;
  Status StreamLogs(const ExecutionKey& key, const LogOptions& options,
                    const LogSink& sink) override;

 private:
  struct Target {
    std::shared_ptr<EngineClient> client;
    DockerExecutionParameters params;
    SensitiveString tlsKey;  // the client's private key (PEM), for the Redactor
  };
  // The calls behind the public ones, which report what they learn of the Secret values in play
  // (the target's key, the container's env) to `redactor`; the public ones apply it to the
  // message they return (Redactor in adapters/common/redaction.h; RedactAnswer).
  Observation EnsureExecution(const ExecutionRequest& request, Redactor& redactor);
  Observation ObserveExecution(const ExecutionKey& key, Redactor& redactor);
  Observation CancelExecution(const ExecutionKey& key, Redactor& redactor);
  Status DeleteExecution(const ExecutionKey& key, Redactor& redactor);
  Status StreamExecutionLogs(const ExecutionKey& key, const LogOptions& options,
                             const LogSink& sink, Redactor& redactor);
  // kFailedPrecondition (NotEnforceable at acceptance) when the engine's runtime list (GET /info,
  // kept for a few seconds) lacks `runtime`; OK when it has it or cannot be asked now.
  Status CheckRuntime(const nlohmann::json& parameters, const std::string& runtime);
  // The engine client of the parameters. kInvalidArgument: the parameters can never work;
  // anything else (the TLS Secret cannot be read) may pass.
  StatusOr<Target> TargetFor(const nlohmann::json& parameters);
  // One client per endpoint and TLS Secret; replaced (with its event watcher) when the Secret's
  // material changed.
  std::shared_ptr<EngineClient> ClientFor(const std::string& endpoint, const std::string& tlsName,
                                          const TlsMaterial& tls, Status& error);
  // The container of `uid` as GET /containers/{id}/json returns it; nullopt when there is none.
  StatusOr<std::optional<nlohmann::json>> AwaitStartOf(EngineClient& client, nlohmann::json inspect,
                                                       const std::stop_token& stop);
  StatusOr<std::optional<nlohmann::json>> FindContainer(
      EngineClient& client, const std::string& uid,
      const std::vector<api::ExecutionReference>& references);
  StatusOr<std::optional<nlohmann::json>> Inspect(EngineClient& client, const std::string& id);
  // ObservationFromInspect, and a task whose command could not run under init (exit 126/127
  // with docker-init's report on stderr, InitExecFailure) reported as StartFailed.
  Observation Observed(EngineClient& client, const nlohmann::json& inspect, bool resultUnknown);
  // A container found for the Job: started if it never was (MayStart), then Observed.
  Observation Adopt(EngineClient& client, const std::string& uid, const nlohmann::json& inspect,
                    bool resultUnknown);
  // POST /containers/create of `body` under the Job's deterministic name, then its start.
  Observation Create(EngineClient& client, const ExecutionRequest& request,
                     const nlohmann::json& body);
  // The create's 409 (`conflict`): the name is taken, by this Job's container (adopted once it
  // shows) or by another's.
  Observation AdoptAfterConflict(EngineClient& client, const std::string& uid, bool resultUnknown,
                                 const HttpResponse& conflict);
  // Starts a created container and reports what it then is.
  Observation StartAndObserve(EngineClient& client, const std::string& uid, const std::string& id,
                              bool resultUnknown);

  DockerAdapterOptions options_;
  std::mutex mu_;
  struct Client {
    std::shared_ptr<EngineClient> client;
    TlsMaterial tls;
  };
  std::map<std::string, Client> clients_;                          // by ClientKey
  NotifyFn notify_;                                                // set by Start
  std::map<std::string, std::unique_ptr<EventWatcher>> watchers_;  // by ClientKey
  // The engines' runtime lists (GET /info Runtimes), by endpoint, for a short while.
  struct Runtimes {
    std::chrono::steady_clock::time_point at;
    std::set<std::string> names;
  };
  std::map<std::string, Runtimes> runtimes_;
  ImagePuller puller_;
};

}  // namespace ayatori::adapters::docker
