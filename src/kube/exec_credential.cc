#include "kube/exec_credential.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "base/time.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace ayatori::kube {
namespace {

std::string Where(const ExecConfig& c) {
  return "kubeconfig user \"" + c.user + "\": exec plugin " + c.command;
}

// The end of a pipe, closed when it goes out of scope.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  void Close() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

// KUBERNETES_EXEC_INFO: what client-go passes (spec.interactive, and spec.cluster when asked).
std::string ExecInfo(const ExecConfig& c, bool interactive) {
  nlohmann::json info = {{"apiVersion", c.apiVersion},
                         {"kind", "ExecCredential"},
                         {"spec", {{"interactive", interactive}}}};
  if (c.provideClusterInfo) {
    nlohmann::json cluster = {{"server", c.server}};
    if (!c.tlsServerName.empty()) cluster["tls-server-name"] = c.tlsServerName;
    if (c.insecureSkipTlsVerify) cluster["insecure-skip-tls-verify"] = true;
    if (!c.caPem.empty()) cluster["certificate-authority-data"] = base::Base64Encode(c.caPem);
    if (!c.proxyUrl.empty()) cluster["proxy-url"] = c.proxyUrl;
    info["spec"]["cluster"] = cluster;
  }
  return info.dump();
}

// environ, then the listed env (which wins), then KUBERNETES_EXEC_INFO.
std::vector<std::string> PluginEnv(const ExecConfig& c, bool interactive) {
  std::map<std::string, std::string> env;
  std::vector<std::string> order;
  auto put = [&](const std::string& k, const std::string& v) {
    if (env.find(k) == env.end()) order.push_back(k);
    env[k] = v;
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    put(kv.substr(0, eq), kv.substr(eq + 1));
  }
  for (const auto& [k, v] : c.env) put(k, v);
  put("KUBERNETES_EXEC_INFO", ExecInfo(c, interactive));
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const auto& k : order) out.push_back(k + "=" + env[k]);
  return out;
}

// The first bytes of the plugin's stderr, one line, for an error message.
std::string Quote(std::string s, size_t max) {
  bool cut = s.size() > max;
  if (cut) s.resize(max);
  for (char& ch : s) {
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
    if (static_cast<unsigned char>(ch) < 0x20) ch = '?';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.empty()) return "";
  return "; its stderr: \"" + s + (cut ? "...\"" : "\"");
}

}  // namespace

StatusOr<ExecCredential> ParseExecCredential(std::string_view stdoutText,
                                             const std::string& apiVersion) {
  auto bad = [](const std::string& what) {
    return Status(StatusCode::kFailedPrecondition, "its output " + what);
  };
  nlohmann::json j = nlohmann::json::parse(stdoutText, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("is not a JSON ExecCredential object");
  const auto* kind = j.contains("kind") && j["kind"].is_string() ? &j["kind"] : nullptr;
  if (kind == nullptr || kind->get<std::string>() != "ExecCredential") {
    return bad("has kind other than ExecCredential");
  }
  if (!j.contains("apiVersion") || !j["apiVersion"].is_string() ||
      j["apiVersion"].get<std::string>() != apiVersion) {
    return bad("has apiVersion other than " + apiVersion + " (the kubeconfig's exec.apiVersion)");
  }
  if (!j.contains("status") || !j["status"].is_object()) return bad("has no status");
  const nlohmann::json& st = j["status"];
  ExecCredential cred;
  auto str = [&](const char* key, std::string* out) -> bool {
    if (!st.contains(key)) return true;
    if (!st[key].is_string()) return false;
    *out = st[key].get<std::string>();
    return true;
  };
  std::string expiry;
  if (!str("token", &cred.token) || !str("clientCertificateData", &cred.clientCertPem) ||
      !str("clientKeyData", &cred.clientKeyPem) || !str("expirationTimestamp", &expiry)) {
    return bad("has a status field that is not a string");
  }
  if (cred.clientCertPem.empty() != cred.clientKeyPem.empty()) {
    return bad("has only one of status.clientCertificateData and status.clientKeyData");
  }
  if (cred.token.empty() && cred.clientCertPem.empty()) {
    return bad("has neither status.token nor status.clientCertificateData");
  }
  if (!expiry.empty()) {
    auto expires = base::ParseTime(expiry);
    if (!expires.ok()) return bad("has a status.expirationTimestamp that is not RFC 3339");
    cred.expiry = *expires;
  }
  return cred;
}

StatusOr<ExecCredential> RunExecPlugin(const ExecConfig& c, const ExecLimits& limits) {
  const bool terminal = isatty(STDIN_FILENO) == 1;
  bool interactive = false;
  switch (c.interactiveMode) {
    case ExecInteractiveMode::kNever:
      break;
    case ExecInteractiveMode::kIfAvailable:
      interactive = terminal;
      break;
    case ExecInteractiveMode::kAlways:
      if (!terminal) {
        return Status(StatusCode::kFailedPrecondition,
                      Where(c) + ": interactiveMode is Always but stdin is not a terminal");
      }
      interactive = true;
      break;
  }
  int outPipe[2], errPipe[2];
  if (pipe2(outPipe, O_CLOEXEC) != 0) {
    return Status(StatusCode::kInternal, Where(c) + ": pipe: " + std::strerror(errno));
  }
  Fd outR(outPipe[0]), outW(outPipe[1]);
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    return Status(StatusCode::kInternal, Where(c) + ": pipe: " + std::strerror(errno));
  }
  Fd errR(errPipe[0]), errW(errPipe[1]);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!interactive) {
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&fa, outW.fd, STDOUT_FILENO);
  // An interactive plugin talks to the user on stderr; otherwise it is kept for the error.
  if (!interactive) posix_spawn_file_actions_adddup2(&fa, errW.fd, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so a timeout ends its children too; not when interactive, where it
  // must stay in the terminal's foreground group to read from it.
  if (!interactive) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }

  std::vector<std::string> argvS{c.command};
  argvS.insert(argvS.end(), c.args.begin(), c.args.end());
  std::vector<char*> argv;
  argv.reserve(argvS.size() + 1);
  for (auto& a : argvS) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envS = PluginEnv(c, interactive);
  std::vector<char*> envp;
  envp.reserve(envS.size() + 1);
  for (auto& e : envS) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, c.command.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return Status(StatusCode::kFailedPrecondition,
                  Where(c) + ": cannot run it: " + std::strerror(rc) +
                      (c.installHint.empty() ? "" : "\n" + c.installHint));
  }
  outW.Close();
  errW.Close();

  std::string out, err;
  bool tooLarge = false, timedOut = false;
  const auto deadline = std::chrono::steady_clock::now() + limits.timeout;
  char buf[65536];
  while (outR.fd >= 0 || errR.fd >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    pollfd fds[2] = {{outR.fd, POLLIN, 0}, {errR.fd, POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        (i == 0 ? outR : errR).Close();
        continue;
      }
      if (i == 0) {
        out.append(buf, static_cast<size_t>(got));
      } else if (err.size() < limits.maxQuotedStderrBytes + 1) {
        err.append(buf, std::min(static_cast<size_t>(got), limits.maxQuotedStderrBytes + 1));
      }
    }
    if (out.size() > limits.maxStdoutBytes) {
      tooLarge = true;
      break;
    }
  }
  if (tooLarge || timedOut) kill(interactive ? pid : -pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  const std::string quoted = Quote(err, limits.maxQuotedStderrBytes);
  if (timedOut) {
    return Status(StatusCode::kFailedPrecondition,
                  Where(c) + ": gave no answer within " +
                      std::to_string(limits.timeout.count() / 1000) + "s; stopped" + quoted);
  }
  if (tooLarge) {
    return Status(StatusCode::kFailedPrecondition, Where(c) + ": printed more than " +
                                                       std::to_string(limits.maxStdoutBytes) +
                                                       " bytes; stopped" + quoted);
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    std::string how = WIFEXITED(wstatus)
                          ? "exited with status " + std::to_string(WEXITSTATUS(wstatus))
                          : "was killed by signal " + std::to_string(WTERMSIG(wstatus));
    return Status(StatusCode::kFailedPrecondition,
                  Where(c) + ": " + how + quoted +
                      (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 127 && !c.installHint.empty()
                           ? "\n" + c.installHint
                           : ""));
  }
  auto cred = ParseExecCredential(out, c.apiVersion);
  if (!cred.ok()) {
    return Status(StatusCode::kFailedPrecondition,
                  Where(c) + ": " + cred.status().message() + quoted);
  }
  return cred;
}

ExecCredentialProvider::ExecCredentialProvider(ExecConfig config, ExecLimits limits)
    : config_(std::move(config)),
      runner_([limits](const ExecConfig& c) { return RunExecPlugin(c, limits); }),
      now_([] { return std::chrono::system_clock::now(); }) {}

ExecCredentialProvider::ExecCredentialProvider(ExecConfig config, Runner runner, Now now)
    : config_(std::move(config)), runner_(std::move(runner)), now_(std::move(now)) {}

StatusOr<ExecCredential> ExecCredentialProvider::Get() {
  std::lock_guard lock(mu_);
  if (cached_ && (!cached_->expiry || now_() < *cached_->expiry)) return *cached_;
  auto cred = runner_(config_);
  if (!cred.ok()) return cred.status();
  cached_ = *cred;
  return cred;
}

void ExecCredentialProvider::Invalidate(const std::string& token) {
  std::lock_guard lock(mu_);
  if (cached_ && cached_->token == token) cached_.reset();
}

}  // namespace ayatori::kube
