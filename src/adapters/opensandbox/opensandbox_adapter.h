// The OpenSandbox adapter (controllerName execution.ayatori.ddupan.top/opensandbox): one sandbox
// per Job, found by its metadata (the Job UID), with the task run once as an execd background
// command. The design, the failure handling and the at-most-once argument are in
// docs/opensandbox.md.
//
//   Ensure   find the sandbox by Job UID (adopt), else create it (image auth from the Job's
//            pull Secrets, env, limits, timeout = deadline + margin); then find the task's
//            command (the probe, when a retry does not know it) or run it once (TaskCommand).
//            References: Sandbox + Command.
//   Observe  the sandbox (gone -> SandboxGone/SandboxExpired, stopped -> SandboxFailed), then the
//            command's status; server or execd unreachable -> Unknown, never Failed
//   Cancel   interrupt the command, delete the sandbox, confirm it is gone (404)
//   Delete   delete every sandbox with the Job's UID; 404 is fine
//   Start    one poller thread for all running commands (50 ms, backing off to
//            pollIntervalSeconds) that calls notify when one stops or cannot be read
//            (CommandPoller, command_poller.h)
//   Logs     the command's output read by cursor (command_output.h)
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/common/job_environment.h"
#include "adapters/common/log_source.h"
#include "adapters/common/redaction.h"
#include "adapters/opensandbox/client.h"
#include "adapters/opensandbox/command_output.h"
#include "adapters/opensandbox/command_poller.h"
#include "adapters/opensandbox/spec.h"
#include "api/types.h"
#include "ayatori/kube_client.h"
#include "kube/http.h"

namespace ayatori::adapters::opensandbox {

// The most read of a probe's output, or of a task's output to find the guard's line.
inline constexpr size_t kMaxProbeOutputBytes = size_t{64} << 10;

// Reads the API key that OpenSandboxExecutionParameters' apiKeySecretRef names.
using ApiKeySource = std::function<StatusOr<SensitiveString>(const api::SecretKeyReference&)>;

// An ApiKeySource that GETs the Secret through `client` and keeps each value for `ttl`, so a
// rotated key is picked up without a GET per request.
ApiKeySource SecretApiKeySource(KubeClient& client,
                                std::chrono::seconds ttl = std::chrono::seconds(30));

struct OpenSandboxAdapterOptions {
  // Null: libcurl (kube::NewCurlTransport, plain HTTP or system-trusted TLS).
  std::shared_ptr<kube::HttpTransport> transport;
  ApiKeySource apiKey;  // required when a class names apiKeySecretRef
  // The controller's namespace: an apiKeySecretRef elsewhere is refused at every call unless the
  // parameters say allowCrossNamespaceSecretRefs: true (adapters::SecretNamespaceRefusal; the
  // controller refuses such Jobs at acceptance too). Empty: not checked (adapter tests).
  std::string secretNamespace;
  ClientTimeouts timeouts;
  // How long a new sandbox's execd may take to answer /ping (the SDKs wait 30 s).
  std::chrono::milliseconds execdReadyTimeout{30000};
  // First poll of a running command after it was seen running; doubles up to the class's
  // pollIntervalSeconds.
  std::chrono::milliseconds firstPoll{50};
  // Overrides pollIntervalSeconds (tests).
  std::optional<std::chrono::milliseconds> maxPoll;
};

class OpenSandboxAdapter final : public Adapter, public LogSource {
 public:
  explicit OpenSandboxAdapter(OpenSandboxAdapterOptions options);
  ~OpenSandboxAdapter() override;

  std::string Name() const override { return kAdapterName; }
  Status Start(std::function<void(const std::string&, const std::string&)> notify) override;
  void Stop() override;
  // Every refusal is kInvalidArgument (parameters that do not decode, ValidateRequest's checks
  // of the image, limits, timeouts, extraMetadata and UID, a pull Secret the server cannot use),
  // so the default Adapter::AcceptanceRefusal is right and is not overridden: each is
  // BackendRejected, as docs/api.md says. The reasons of its own docs/api.md lists for
  // OpenSandbox are given before the adapter is asked: InsecureEndpoint by the descriptor's
  // refuseParameters, CommandRequired by its runsImageEntrypoint (adapters::RefusedAtAcceptance),
  // SecretNamespaceNotAllowed and ImagePullSecretInvalid by the controller's resolver.
  Status Validate(const ExecutionRequest& request) override;
  // endpoint and useServerProxy (PinnedFields in spec.h): the server that holds the sandbox and
  // the route to its execd. The API key, timeouts, poll interval and extraMetadata are read at
  // each call: the sandbox is found by the Job UID's metadata, never by extraMetadata.
  std::map<std::string, std::string> PinnedParameters(
      const nlohmann::json& parameters) const override {
    return PinnedFields(parameters);
  }
  Observation Ensure(const ExecutionRequest& request) override;
  Observation Observe(const ExecutionKey& key) override;
  Observation Cancel(const ExecutionKey& key) override;
  Status Delete(const ExecutionKey& key) override;

  // The command's merged stdout and stderr (execd keeps both in one file): the last
  // min(tailBytes, kMaxLogsTailBytes) bytes, read by cursor in kLogChunkBytes pieces through a
  // window of that size, never the whole output at once.
  StatusOr<std::string> Logs(const ExecutionKey& key, size_t tailBytes) override;
  // execd keeps a command's output as one text without times: tailLines is applied here (to
  // the last kMaxLogsTailBytes of the output), sinceSeconds and timestamps are not
  // (docs/kubectl-ayatori.md, "Logs"). The output is read by cursor and handed to the sink as it
  // arrives; follow polls for what is new since the last read and the command's state until it
  // ends.
  Status StreamLogs(const ExecutionKey& key, const LogOptions& options,
                    const LogSink& sink) override;

 private:
  struct Target {
    OpenSandboxExecutionParameters params;
    std::shared_ptr<kube::HttpTransport> transport;  // the client's (per caBundle)
    std::unique_ptr<ServerClient> client;
  };
  // What a step of Ensure found of the task's command: its id (empty: none was started), or the
  // answer Ensure gives when the step cannot go on.
  struct CommandStep {
    std::string commandId;
    std::optional<Observation> answer;
  };

  StatusOr<Target> TargetFor(const nlohmann::json& parameters);
  // The transport for a server: options.transport when set (tests), else libcurl trusting the
  // parameters' caBundle only (the system store without one); one per distinct caBundle.
  std::shared_ptr<kube::HttpTransport> TransportFor(const OpenSandboxExecutionParameters& params);
  StatusOr<CommandOutput> OutputOf(const ExecutionKey& key, Redactor& redactor);
  // The calls behind the public ones, which report the Secret values in play (the API key) to
  // `redactor`; the public ones return their answer Redactor::Redacted.
  Observation EnsureExecution(const ExecutionRequest& request, Redactor& redactor);
  Observation ObserveExecution(const ExecutionKey& key, Redactor& redactor);
  Observation CancelExecution(const ExecutionKey& key, Redactor& redactor);
  Status DeleteExecution(const ExecutionKey& key, Redactor& redactor);
  // Ensure's steps: in the Job's sandbox that exists, and creating the one that does not.
  Observation EnsureInSandbox(const Target& target, const ExecutionRequest& request,
                              const nlohmann::json& sandbox);
  Observation CreateSandbox(const Target& target, const ExecutionRequest& request);
  // Cancel's step while the command may run: interrupts it. An answer when Cancel is decided
  // (the command ended by itself, or execd is unreachable); else `stopped` holds what was seen.
  std::optional<Observation> InterruptCommand(const Target& target, const ExecutionKey& key,
                                              const std::string& sandboxId, Observation& stopped);
  // The Job's sandbox: by the reference when there is one, else by metadata (the oldest when
  // there are several). nullopt when there is none.
  StatusOr<std::optional<nlohmann::json>> FindSandbox(
      const ServerClient& client, const std::string& uid,
      const std::vector<api::ExecutionReference>& references);
  StatusOr<ExecdTarget> ExecdFor(const Target& target, const std::string& sandboxId);
  Status WaitForExecd(const ServerClient& client, const ExecdTarget& execd);
  // The task's command in a running sandbox: found again (the probe), or started now. A sandbox
  // this call created (`created`) needs no probe: nothing else runs commands in it.
  Observation RunOrFind(const Target& target, const ExecutionRequest& request,
                        const std::string& sandboxId, bool created);
  // Whether an earlier Ensure (whose answer, or whose status write, was lost) started the task:
  // the marker says, and names the command that did.
  CommandStep FindStartedTask(const ServerClient& client, const ExecdTarget& execd,
                              const ExecutionRequest& request, const std::string& sandboxId);
  // The command a marker names, if execd recorded it as this Job's task.
  static CommandStep IdentifyStartedTask(const ServerClient& client, const ExecdTarget& execd,
                                         const ExecutionRequest& request,
                                         const std::string& sandboxId,
                                         const std::string& commandId);
  CommandStep StartTask(const Target& target, const ExecdTarget& execd,
                        const ExecutionRequest& request, const std::string& sandboxId);
  // Runs a short command and returns its output once it has finished.
  static StatusOr<std::string> RunToCompletion(const ServerClient& client, const ExecdTarget& execd,
                                               const std::string& command);
  // The command's observation; Unknown when execd cannot be read.
  static Observation ObserveCommand(const ServerClient& client, const ExecdTarget& execd,
                                    const std::string& uid, const std::string& commandId);
  Observation ObserveSandboxAndCommand(const Target& target, const std::string& uid,
                                       const nlohmann::json& sandbox, const std::string& commandId);
  Observation SandboxGone(const std::string& sandboxId);
  void RememberSandbox(const nlohmann::json& sandbox);
  // Hands a command seen running to the poller.
  void WatchIfRunning(const Observation& observed, const std::string& uid, const std::string& ns,
                      const std::string& name, const std::string& sandboxId,
                      const std::string& commandId, const Target& target);
  void Forget(const std::string& uid, const std::string& sandboxId);
  // A Redactor with the values Ensure was given for `uid` (empty when none, or when this process
  // has not run an Ensure of it since it started).
  Redactor TaskValues(const std::string& uid);

  OpenSandboxAdapterOptions options_;
  std::shared_ptr<kube::HttpTransport> transport_;  // without a caBundle
  CommandPoller poller_;

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<kube::HttpTransport>> caTransports_;  // by caBundle
  std::map<std::string, ExecdTarget> execdTargets_;                           // by sandbox id
  std::map<std::string, std::chrono::system_clock::time_point> expiresAt_;    // by sandbox id
  // The env values and registry credentials of each Job's Ensure, by Job UID, until its Delete:
  // the server is not sent them again, but its answers to later calls may still quote them
  // (unlike a Docker container's inspect, a sandbox does not give them back to redact with).
  std::map<std::string, Redactor> taskValues_;
};

// The adapter for a controller: libcurl transport, API keys read from Secrets through `client`.
std::shared_ptr<OpenSandboxAdapter> NewOpenSandboxAdapter(KubeClient& client,
                                                          const std::string& secretNamespace);

}  // namespace ayatori::adapters::opensandbox
