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
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "adapters/docker/container.h"
#include "adapters/docker/logs.h"
#include "adapters/opensandbox/client.h"
#include "adapters/opensandbox/spec.h"
#include "api/types.h"
#include "ayatori/adapter.h"
#include "ayatori/kube_client.h"
#include "kube/http.h"

namespace ayatori::adapters::opensandbox {

// Most of a command's output kept by Logs and by StreamLogs' tailLines window.
inline constexpr size_t kMaxLogsTailBytes = size_t{16} << 20;
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

class OpenSandboxAdapter final : public Adapter, public docker::LogSource {
 public:
  explicit OpenSandboxAdapter(OpenSandboxAdapterOptions options);
  ~OpenSandboxAdapter() override;

  std::string Name() const override { return kAdapterName; }
  Status Start(std::function<void(const std::string&, const std::string&)> notify) override;
  void Stop() override;
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
  // Where a Job's command output is read.
  struct OutputSource {
    Target target;
    ExecdTarget execd;
    std::string commandId;
  };
  // What Observe learnt about a command that is still running, for the poller.
  struct Watch {
    std::string ns, name;
    std::string commandId;
    ExecdTarget execd;
    // The sandbox and the server that reports on it, checked at the longest interval: a server
    // outage is then seen (Unknown) while the command runs, not only after it ended.
    std::string sandboxId;
    std::string endpoint;
    SensitiveString apiKey;
    std::shared_ptr<kube::HttpTransport> transport;
    std::chrono::milliseconds interval{0};
    std::chrono::milliseconds maxInterval{0};
    std::chrono::steady_clock::time_point next;
  };

  StatusOr<Target> TargetFor(const nlohmann::json& parameters);
  // The transport for a server: options.transport when set (tests), else libcurl trusting the
  // parameters' caBundle only (the system store without one); one per distinct caBundle.
  std::shared_ptr<kube::HttpTransport> TransportFor(const OpenSandboxExecutionParameters& params);
  StatusOr<OutputSource> OutputOf(const ExecutionKey& key, docker::Redactor& redactor);
  // Reads the output from `cursor` to its current end, kLogChunkBytes per request, handing it
  // to `onData` (false: stop); returns the cursor after what was handed over.
  static StatusOr<uint64_t> ReadOutputFrom(const OutputSource& source, uint64_t cursor,
                                           const std::function<bool(std::string_view)>& onData);
  // The last `maxBytes` of the whole output into `window` (held: at most maxBytes plus one
  // read); returns the cursor at its end.
  static StatusOr<uint64_t> ReadTail(const OutputSource& source, size_t maxBytes,
                                     std::string& window);
  // The calls behind the public ones, which report the Secret values in play (the API key) to
  // `redactor`; the public ones apply it to the message they return (docker::Redactor).
  Observation EnsureExecution(const ExecutionRequest& request, docker::Redactor& redactor);
  Observation ObserveExecution(const ExecutionKey& key, docker::Redactor& redactor);
  Observation CancelExecution(const ExecutionKey& key, docker::Redactor& redactor);
  Status DeleteExecution(const ExecutionKey& key, docker::Redactor& redactor);
  StatusOr<std::string> LogsTail(const ExecutionKey& key, size_t tailBytes,
                                 docker::Redactor& redactor);
  Status StreamExecutionLogs(const ExecutionKey& key, const LogOptions& options,
                             const LogSink& sink, docker::Redactor& redactor);
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
  // Runs a short command and returns its output once it has finished.
  StatusOr<std::string> RunToCompletion(const ServerClient& client, const ExecdTarget& execd,
                                        const std::string& command);
  // The command's observation; Unknown when execd cannot be read.
  Observation ObserveCommand(const ServerClient& client, const ExecdTarget& execd,
                             const std::string& uid, const std::string& commandId);
  Observation ObserveSandboxAndCommand(const Target& target, const std::string& uid,
                                       const nlohmann::json& sandbox, const std::string& commandId);
  Observation SandboxGone(const std::string& sandboxId, const std::string& body);
  void RememberSandbox(const nlohmann::json& sandbox);
  void WatchCommand(const std::string& uid, const std::string& ns, const std::string& name,
                    const std::string& sandboxId, const std::string& commandId,
                    const ExecdTarget& execd, const Target& target);
  void Forget(const std::string& uid, const std::string& sandboxId);
  // A Redactor with the values Ensure was given for `uid` (empty when none, or when this process
  // has not run an Ensure of it since it started).
  docker::Redactor TaskValues(const std::string& uid);
  void PollLoop();

  OpenSandboxAdapterOptions options_;
  std::shared_ptr<kube::HttpTransport> transport_;                            // without a caBundle
  std::map<std::string, std::shared_ptr<kube::HttpTransport>> caTransports_;  // by caBundle

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::function<void(const std::string&, const std::string&)> notify_;
  std::thread poller_;
  std::map<std::string, Watch> watches_;                                    // by Job UID
  std::map<std::string, ExecdTarget> execdTargets_;                         // by sandbox id
  std::map<std::string, std::chrono::system_clock::time_point> expiresAt_;  // by sandbox id
  // The env values and registry credentials of each Job's Ensure, by Job UID, until its Delete:
  // the server is not sent them again, but its answers to later calls may still quote them
  // (unlike a Docker container's inspect, a sandbox does not give them back to redact with).
  std::map<std::string, docker::Redactor> taskValues_;
};

// The adapter for a controller: libcurl transport, API keys read from Secrets through `client`.
std::shared_ptr<OpenSandboxAdapter> NewOpenSandboxAdapter(KubeClient& client,
                                                          const std::string& secretNamespace);

}  // namespace ayatori::adapters::opensandbox
