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

namespace {

// Whether the plugin gets the terminal (stdin and stderr), from its interactiveMode.
StatusOr<bool> Interactive(const ExecConfig& c) {
  const bool terminal = isatty(STDIN_FILENO) == 1;
  switch (c.interactiveMode) {
    case ExecInteractiveMode::kNever:
      return false;
    case ExecInteractiveMode::kIfAvailable:
      return terminal;
    case ExecInteractiveMode::kAlways:
      if (!terminal) {
        return Status(StatusCode::kFailedPrecondition,
                      Where(c) + ": interactiveMode is Always but stdin is not a terminal");
      }
      return true;
  }
  return false;
}

// Pointers into `strings`, ending with nullptr, for argv and envp.
std::vector<char*> NullTerminated(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The plugin's stdout and stderr, each a pipe whose write end the child gets.
struct PluginPipes {
  Fd outR, outW, errR, errW;
};

Status OpenPipes(const ExecConfig& c, PluginPipes& p) {
  int outPipe[2], errPipe[2];
  if (pipe2(outPipe, O_CLOEXEC) != 0) {
    return Status(StatusCode::kInternal, Where(c) + ": pipe: " + std::strerror(errno));
  }
  p.outR.fd = outPipe[0];
  p.outW.fd = outPipe[1];
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    return Status(StatusCode::kInternal, Where(c) + ": pipe: " + std::strerror(errno));
  }
  p.errR.fd = errPipe[0];
  p.errW.fd = errPipe[1];
  return Status::Ok();
}

// Starts the plugin with its stdout (and, unless interactive, stdin from /dev/null and stderr)
// on `pipes`; closes the write ends in this process.
StatusOr<pid_t> SpawnPlugin(const ExecConfig& c, bool interactive, PluginPipes& pipes) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!interactive) {
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&fa, pipes.outW.fd, STDOUT_FILENO);
  // An interactive plugin talks to the user on stderr; otherwise it is kept for the error.
  if (!interactive) posix_spawn_file_actions_adddup2(&fa, pipes.errW.fd, STDERR_FILENO);
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
  std::vector<std::string> envS = PluginEnv(c, interactive);
  std::vector<char*> argv = NullTerminated(argvS), envp = NullTerminated(envS);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, c.command.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return Status(StatusCode::kFailedPrecondition,
                  Where(c) + ": cannot run it: " + std::strerror(rc) +
                      (c.installHint.empty() ? "" : "\n" + c.installHint));
  }
  pipes.outW.Close();
  pipes.errW.Close();
  return pid;
}

// What the plugin printed, and why reading stopped early (if it did).
struct PluginOutput {
  std::string out, err;
  bool tooLarge = false, timedOut = false;
};

// Reads the plugin's stdout (all of it, up to maxStdoutBytes) and the start of its stderr until
// both close or limits.timeout passes.
PluginOutput ReadPluginOutput(PluginPipes& pipes, const ExecLimits& limits) {
  PluginOutput o;
  const auto deadline = std::chrono::steady_clock::now() + limits.timeout;
  char buf[65536];
  while (pipes.outR.fd >= 0 || pipes.errR.fd >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      o.timedOut = true;
      break;
    }
    pollfd fds[2] = {{pipes.outR.fd, POLLIN, 0}, {pipes.errR.fd, POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        (i == 0 ? pipes.outR : pipes.errR).Close();
        continue;
      }
      if (i == 0) {
        o.out.append(buf, static_cast<size_t>(got));
      } else if (o.err.size() < limits.maxQuotedStderrBytes + 1) {
        o.err.append(buf, std::min(static_cast<size_t>(got), limits.maxQuotedStderrBytes + 1));
      }
    }
    if (o.out.size() > limits.maxStdoutBytes) {
      o.tooLarge = true;
      break;
    }
  }
  return o;
}

// The error for a plugin that was stopped or did not exit 0 (wstatus from waitpid), ok otherwise.
Status PluginFailure(const ExecConfig& c, const ExecLimits& limits, const PluginOutput& o,
                     int wstatus, const std::string& quoted) {
  if (o.timedOut) {
    return Status(StatusCode::kFailedPrecondition,
                  Where(c) + ": gave no answer within " +
                      std::to_string(limits.timeout.count() / 1000) + "s; stopped" + quoted);
  }
  if (o.tooLarge) {
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
  return Status::Ok();
}

}  // namespace

StatusOr<ExecCredential> RunExecPlugin(const ExecConfig& c, const ExecLimits& limits) {
  auto interactive = Interactive(c);
  if (!interactive.ok()) return interactive.status();
  PluginPipes pipes;
  if (Status s = OpenPipes(c, pipes); !s.ok()) return s;
  auto pid = SpawnPlugin(c, *interactive, pipes);
  if (!pid.ok()) return pid.status();
  const PluginOutput o = ReadPluginOutput(pipes, limits);
  if (o.tooLarge || o.timedOut) kill(*interactive ? *pid : -*pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(*pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  const std::string quoted = Quote(o.err, limits.maxQuotedStderrBytes);
  if (Status s = PluginFailure(c, limits, o, wstatus, quoted); !s.ok()) return s;
  auto cred = ParseExecCredential(o.out, c.apiVersion);
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
