// A child process of a benchmark program (ayatori-controller, kube-controller-manager) with its
// output in a log file, and ayatori-controller's metrics and health endpoints on a free port.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kube/http.h"

extern char** environ;  // NOLINT: POSIX, for posix_spawn

namespace ayatori::bench {

// A free TCP port on 127.0.0.1 (free when asked; the caller binds it soon after).
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// argv[0] is the binary; stdout and stderr go to logFile (truncated). Stopped (SIGTERM, SIGKILL
// after 30 s) when destroyed.
class ChildProcess {
 public:
  ChildProcess(std::vector<std::string> args, const std::string& logFile) {
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, logFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, args[0].c_str(), &actions, nullptr, argv.data(), environ) != 0) {
      pid_ = 0;
    }
    posix_spawn_file_actions_destroy(&actions);
    started_ = std::chrono::steady_clock::now();
  }
  ~ChildProcess() { Stop(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  int pid() const { return pid_; }
  std::chrono::steady_clock::time_point started() const { return started_; }
  bool Alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      return false;
    }
    return true;
  }
  void Signal(int sig) const {
    if (pid_ > 0) kill(pid_, sig);
  }
  // SIGTERM, then SIGKILL after `grace`; reaps the process.
  void Stop(std::chrono::seconds grace = std::chrono::seconds(30)) {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a child's exit
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }

 private:
  pid_t pid_ = 0;
  std::chrono::steady_clock::time_point started_;
};

// The flags every benchmark gives ayatori-controller (its kubeconfig, JSON logs), then `extra`.
inline std::vector<std::string> ControllerFlags(const std::string& kubeconfig,
                                                const std::vector<std::string>& extra = {}) {
  std::vector<std::string> flags = {"--kubeconfig=" + kubeconfig, "--log-format=json"};
  flags.insert(flags.end(), extra.begin(), extra.end());
  return flags;
}

// ayatori-controller with --metrics-address on a free port of 127.0.0.1 and `flags`.
class ControllerProcess {
 public:
  ControllerProcess(const std::string& binary, const std::vector<std::string>& flags,
                    const std::string& logFile)
      : port_(FreePort()), process_(Args(binary, flags, port_), logFile) {
    kube::RestConfig plain;
    plain.server = "http://127.0.0.1:" + std::to_string(port_);
    http_ = kube::NewCurlTransport(plain, {});
  }

  int pid() const { return process_.pid(); }
  std::chrono::steady_clock::time_point started() const { return process_.started(); }
  bool Alive() { return process_.Alive(); }
  void Signal(int sig) const { process_.Signal(sig); }
  void Stop() { process_.Stop(); }
  // Status and body of GET path, status 0 when the request failed.
  std::pair<int, std::string> Get(const std::string& path) {
    kube::HttpRequest r;
    r.method = "GET";
    r.url = "http://127.0.0.1:" + std::to_string(port_) + path;
    r.timeout = std::chrono::seconds(5);
    auto resp = http_->Do(r);
    if (!resp.ok()) return {0, ""};
    return {resp->status, resp->body};
  }
  // Polls GET `path` every `interval` until it answers 200: true then, false when the process
  // ended or `deadline` passed first.
  bool WaitServing(const std::string& path, std::chrono::steady_clock::time_point deadline,
                   std::chrono::milliseconds interval) {
    while (std::chrono::steady_clock::now() < deadline && Alive()) {
      if (Get(path).first == 200) return true;
      std::this_thread::sleep_for(interval);  // poll interval
    }
    return false;
  }
  // Polls /metrics every `interval` until `done` accepts its text, and returns that text; nullopt
  // when the process ended or `deadline` passed first.
  std::optional<std::string> WaitMetrics(std::chrono::steady_clock::time_point deadline,
                                         std::chrono::milliseconds interval,
                                         const std::function<bool(const std::string&)>& done) {
    while (std::chrono::steady_clock::now() < deadline && Alive()) {
      auto [code, text] = Get("/metrics");
      if (code == 200 && done(text)) return text;
      std::this_thread::sleep_for(interval);  // poll interval
    }
    return std::nullopt;
  }

 private:
  static std::vector<std::string> Args(const std::string& binary,
                                       const std::vector<std::string>& flags, int port) {
    std::vector<std::string> args = {binary, "--metrics-address=127.0.0.1:" + std::to_string(port)};
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
  }

  int port_;
  ChildProcess process_;
  std::unique_ptr<kube::HttpTransport> http_;
};

}  // namespace ayatori::bench
