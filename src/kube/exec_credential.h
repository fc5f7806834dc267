// kubeconfig exec credential plugins (client.authentication.k8s.io v1 and v1beta1), run the way
// kubectl runs them: no shell, argv as written, the process environment plus the listed env,
// KUBERNETES_EXEC_INFO describing the request (and the cluster when provideClusterInfo is set).
// The plugin's ExecCredential is cached until its expirationTimestamp and asked again when that
// passes or when the server answers 401 (Invalidate). Everything read from the plugin is bounded
// (stdout size, stderr quoted in errors, a timeout), and no error ever quotes its stdout, which
// holds the credential.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ayatori/status.h"

namespace ayatori::kube {

enum class ExecInteractiveMode { kNever, kIfAvailable, kAlways };

// users[].user.exec as written in the kubeconfig.
struct ExecConfig {
  std::string apiVersion;  // client.authentication.k8s.io/v1 or /v1beta1
  std::string command;     // a path, or a name looked up in $PATH
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string installHint;  // shown when the command cannot be started
  bool provideClusterInfo = false;
  ExecInteractiveMode interactiveMode = ExecInteractiveMode::kIfAvailable;
  std::string user;  // the kubeconfig user's name, for messages
  // The cluster, passed in KUBERNETES_EXEC_INFO when provideClusterInfo is set.
  std::string server, caPem, tlsServerName, proxyUrl;
  bool insecureSkipTlsVerify = false;
};

// What the plugin answered (secrets: never log).
struct ExecCredential {
  std::string token;
  std::string clientCertPem, clientKeyPem;
  std::optional<std::chrono::system_clock::time_point> expiry;  // none = until a 401
};

struct ExecLimits {
  std::chrono::milliseconds timeout{std::chrono::minutes(1)};
  size_t maxStdoutBytes = 1 << 20;
  size_t maxQuotedStderrBytes = 512;
};

// Parses the plugin's stdout; errors never quote it.
StatusOr<ExecCredential> ParseExecCredential(std::string_view stdoutText,
                                             const std::string& apiVersion);

// Runs the plugin once (no cache).
StatusOr<ExecCredential> RunExecPlugin(const ExecConfig& config, const ExecLimits& limits);

// The cached credential of one exec user, shared by every client built from one RestConfig.
// Thread-safe; one plugin run at a time.
class ExecCredentialProvider {
 public:
  using Runner = std::function<StatusOr<ExecCredential>(const ExecConfig&)>;
  using Now = std::function<std::chrono::system_clock::time_point()>;

  explicit ExecCredentialProvider(ExecConfig config, ExecLimits limits = {});
  // For unit tests: a Fake runner and clock.
  ExecCredentialProvider(ExecConfig config, Runner runner, Now now);

  // The cached credential, or a fresh one from the plugin when there is none or it expired.
  StatusOr<ExecCredential> Get();
  // Forgets the cached credential if it is still `token` (the server refused it with 401);
  // the next Get runs the plugin again.
  void Invalidate(const std::string& token);

  const ExecConfig& config() const { return config_; }

 private:
  const ExecConfig config_;
  Runner runner_;
  Now now_;
  std::mutex mu_;
  std::optional<ExecCredential> cached_;
};

}  // namespace ayatori::kube
