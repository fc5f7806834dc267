// execd-standin: the part of OpenSandbox's execd (the daemon inside each sandbox) that Ayatori's
// OpenSandbox adapter uses, with the real daemon's wire format, for tests on machines where the
// official execd image cannot be had. What it implements, and how it differs from the real one,
// is in docs/opensandbox.md § execd stand-in; the Python SDK check (test/opensandbox/sdk_check.py)
// shows that the official client accepts it.
//
//   GET    /ping                       200, empty body
//   POST   /command                    background commands only; text/event-stream reply
//   GET    /command/status/{id}        status JSON
//   GET    /command/{id}/logs?cursor=  merged stdout+stderr from a byte offset
//   DELETE /command?id=                SIGTERM to the process group, SIGKILL after 3 s
//
// Linked statically (it is copied into sandbox images of any libc); numeric addresses only.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "test/opensandbox/execd_standin/http_server.h"

extern char** environ;

namespace execd_standin {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::system_clock;

// One command's record; the table lives in memory only, like the real daemon's.
struct Command {
  std::string id;
  std::string content;
  std::string outputPath;
  pid_t pgid = 0;
  Clock::time_point startedAt;
  bool running = true;
  int exitCode = 0;
  std::string error;
  Clock::time_point finishedAt;
};

std::mutex mu;
std::condition_variable finished;  // notified whenever a command stops
std::map<std::string, std::shared_ptr<Command>> commands;

int64_t Millis(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// Go's time.RFC3339Nano in UTC: fractional seconds with trailing zeros removed.
std::string Rfc3339(Clock::time_point t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(ns / 1000000000);
  long frac = static_cast<long>(ns % 1000000000);
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &utc);
  std::string out = buf;
  if (frac != 0) {
    char f[16];
    snprintf(f, sizeof(f), ".%09ld", frac);
    std::string fs = f;
    while (fs.back() == '0') fs.pop_back();
    out += fs;
  }
  return out + "Z";
}

Response JsonReply(int status, const json& body) {
  return Response{status, {{"Content-Type", "application/json; charset=utf-8"}}, body.dump()};
}

Reply Error(int status, const char* code, const std::string& message) {
  return Reply{JsonReply(status, {{"code", code}, {"message", message}}), nullptr};
}

std::string NewId() {
  unsigned char bytes[16];
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
  char hex[33];
  for (size_t i = 0; i < 16; ++i) snprintf(hex + (2 * i), 3, "%02x", bytes[i]);
  return std::string(hex, 32);
}

// The name Go's syscall package gives a signal (what ExitError.Error() prints after "signal: ").
std::string SignalName(int sig) {
  switch (sig) {
    case SIGHUP:
      return "hangup";
    case SIGINT:
      return "interrupt";
    case SIGQUIT:
      return "quit";
    case SIGILL:
      return "illegal instruction";
    case SIGTRAP:
      return "trace/breakpoint trap";
    case SIGABRT:
      return "aborted";
    case SIGBUS:
      return "bus error";
    case SIGFPE:
      return "floating point exception";
    case SIGKILL:
      return "killed";
    case SIGUSR1:
      return "user defined signal 1";
    case SIGSEGV:
      return "segmentation fault";
    case SIGUSR2:
      return "user defined signal 2";
    case SIGPIPE:
      return "broken pipe";
    case SIGALRM:
      return "alarm clock";
    case SIGTERM:
      return "terminated";
    default:
      return "signal " + std::to_string(sig);
  }
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string FindShell() {
  const char* path = getenv("PATH");
  std::string p = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t colon = p.find(':', start);
    std::string dir =
        p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty() && access((dir + "/bash").c_str(), X_OK) == 0) return dir + "/bash";
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "/bin/sh";
}

// The daemon's environment, then the EXECD_ENVS file (KEY=VALUE lines), then the request's envs.
std::vector<std::string> CommandEnv(const json& envs) {
  std::map<std::string, std::string> env;
  std::vector<std::string> order;
  auto put = [&](const std::string& kv) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return;
    std::string k = kv.substr(0, eq);
    if (env.count(k) == 0) order.push_back(k);
    env[k] = kv.substr(eq + 1);
  };
  for (char** e = environ; *e != nullptr; ++e) put(*e);
  if (const char* file = getenv("EXECD_ENVS"); file != nullptr) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line[0] == '#') continue;
      put(line);
    }
  }
  if (envs.is_object()) {
    for (const auto& [k, v] : envs.items()) {
      if (v.is_string()) put(k + "=" + v.get<std::string>());
    }
  }
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const auto& k : order) out.push_back(k + "=" + env[k]);
  return out;
}

void Finish(const std::shared_ptr<Command>& c, int exitCode, const std::string& error) {
  {
    std::lock_guard lock(mu);
    c->running = false;
    c->exitCode = exitCode;
    c->error = error;
    c->finishedAt = Clock::now();
  }
  finished.notify_all();
}

void Reap(const std::shared_ptr<Command>& c, pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    int code = WEXITSTATUS(status);
    Finish(c, code, code == 0 ? "" : "exit status " + std::to_string(code));
  } else if (WIFSIGNALED(status)) {
    std::string e = "signal: " + SignalName(WTERMSIG(status));
    if (WCOREDUMP(status)) e += " (core dumped)";
    Finish(c, -1, e);
  } else {
    Finish(c, -1, "unknown wait status");
  }
}

// Kills the command's process group when its timeout passes first.
void Watchdog(std::shared_ptr<Command> c, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu);
  if (!finished.wait_for(lock, timeout, [&] { return !c->running; })) {
    kill(-c->pgid, SIGKILL);
  }
}

// Starts the command; the caller has registered it. On a start failure the command is recorded
// as finished with exit code 255 and the OS error (as the real daemon reports it).
void Spawn(const std::shared_ptr<Command>& c, const json& req) {
  std::string shell = FindShell();
  std::vector<std::string> env = CommandEnv(req.value("envs", json::object()));
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string dashC = "-c";
  std::string content = c->content;
  std::vector<char*> argv = {shell.data(), dashC.data(), content.data(), nullptr};
  std::string cwd = req.value("cwd", std::string());
  const bool hasUid = req.contains("uid");
  const uid_t uid = hasUid ? req["uid"].get<uid_t>() : 0;
  const bool hasGid = req.contains("gid");
  const gid_t gid = hasGid ? req["gid"].get<gid_t>() : 0;

  int out = open(c->outputPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) return Finish(c, 255, "open " + c->outputPath + ": " + strerror(errno));
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int errPipe[2];
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    close(out);
    return Finish(c, 255, std::string("pipe: ") + strerror(errno));
  }
  pid_t pid = fork();
  if (pid == 0) {
    // Child: async-signal-safe calls only until exec.
    setpgid(0, 0);
    dup2(devnull, 0);
    dup2(out, 1);
    dup2(out, 2);
    int err = 0;
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) err = errno;
    // Like execd (Go's syscall.Credential): no supplementary groups of execd's own.
    if (err == 0 && hasUid && setgroups(0, nullptr) != 0) err = errno;
    if (err == 0 && hasGid && setgid(gid) != 0) err = errno;
    if (err == 0 && hasUid && setuid(uid) != 0) err = errno;
    if (err == 0) {
      signal(SIGPIPE, SIG_DFL);
      execve(argv[0], argv.data(), envp.data());
      err = errno;
    }
    ssize_t ignored = write(errPipe[1], &err, sizeof(err));
    (void)ignored;
    _exit(127);
  }
  close(errPipe[1]);
  close(out);
  close(devnull);
  if (pid < 0) {
    close(errPipe[0]);
    return Finish(c, 255, std::string("fork/exec ") + shell + ": " + strerror(errno));
  }
  {
    std::lock_guard lock(mu);
    c->pgid = pid;
  }
  int childErr = 0;
  ssize_t n;
  while ((n = read(errPipe[0], &childErr, sizeof(childErr))) < 0 && errno == EINTR) {
  }
  close(errPipe[0]);
  if (n == sizeof(childErr)) {
    int status = 0;
    waitpid(pid, &status, 0);
    std::string what = strerror(childErr);
    for (auto& ch : what) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return Finish(c, 255, "fork/exec " + shell + ": " + what);
  }
  std::thread(Reap, c, pid).detach();
  if (req.contains("timeout")) {
    std::thread(Watchdog, c, std::chrono::milliseconds(req["timeout"].get<int64_t>())).detach();
  }
}

std::chrono::milliseconds GraceFromEnv() {
  // EXECD_API_GRACE_SHUTDOWN: how long the real daemon keeps a command's event stream open after
  // its last event ("1s" by default; Go durations "500ms", "2s").
  const char* v = getenv("EXECD_API_GRACE_SHUTDOWN");
  if (v == nullptr || *v == '\0') return std::chrono::milliseconds(1000);
  char* end = nullptr;
  double n = strtod(v, &end);
  std::string unit = end != nullptr ? end : "";
  if (unit == "ms") return std::chrono::milliseconds(static_cast<int64_t>(n));
  if (unit == "s" || unit.empty()) return std::chrono::milliseconds(static_cast<int64_t>(n * 1000));
  return std::chrono::milliseconds(1000);
}

std::string Frame(const json& event) { return event.dump() + "\n\n"; }

Reply RunCommand(const Request& r, const std::string& tmpDir, std::chrono::milliseconds grace) {
  json req = json::parse(r.body, nullptr, false);
  if (!req.is_object()) {
    return Error(400, "INVALID_REQUEST_BODY",
                 "error parsing request, MAYBE invalid body format. body is not a JSON object");
  }
  auto invalid = [](const std::string& what) {
    return Error(400, "INVALID_REQUEST_BODY", "invalid request, validation error " + what);
  };
  if (!req.contains("command") || !req["command"].is_string() ||
      req["command"].get<std::string>().empty()) {
    return invalid("command is required");
  }
  if (req.contains("cwd") && !req["cwd"].is_string()) return invalid("cwd must be a string");
  if (req.contains("envs") && !req["envs"].is_object()) return invalid("envs must be an object");
  for (const char* k : {"uid", "gid"}) {
    if (req.contains(k) && (!req[k].is_number_integer() || req[k].get<int64_t>() < 0)) {
      return invalid(std::string(k) + " must be a non-negative integer");
    }
  }
  if (req.contains("gid") && !req.contains("uid")) return invalid("gid requires uid");
  if (req.contains("timeout") &&
      (!req["timeout"].is_number_integer() || req["timeout"].get<int64_t>() < 1)) {
    return invalid("timeout must be at least 1 (milliseconds)");
  }
  std::string cwd = req.value("cwd", std::string());
  if (!cwd.empty() && !IsDirectory(cwd)) {
    return invalid("cwd " + cwd + " is not an existing directory");
  }
  if (!req.value("background", false)) {
    return Error(400, "INVALID_REQUEST_BODY",
                 "the execd stand-in runs background commands only (background: true)");
  }

  auto c = std::make_shared<Command>();
  c->id = NewId();
  c->content = req["command"].get<std::string>();
  c->outputPath = tmpDir + "/" + c->id + ".output";
  c->startedAt = Clock::now();
  {
    std::lock_guard lock(mu);
    commands[c->id] = c;
  }
  const auto begin = std::chrono::steady_clock::now();
  Spawn(c, req);
  const auto spawnMs = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - begin);

  Reply reply;
  reply.response.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  const std::string id = c->id;
  reply.stream = [id, spawnMs, grace](const ChunkWriter& write) {
    if (!write(Frame({{"type", "init"}, {"text", id}, {"timestamp", Millis(Clock::now())}}))) {
      return;
    }
    if (!write(Frame({{"type", "execution_complete"},
                      {"execution_time", spawnMs.count()},
                      {"timestamp", Millis(Clock::now())}}))) {
      return;
    }
    // Like the real daemon, the stream ends only after the grace period.
    std::this_thread::sleep_for(grace);
  };
  return reply;
}

std::shared_ptr<Command> Lookup(const std::string& id) {
  std::lock_guard lock(mu);
  auto it = commands.find(id);
  return it == commands.end() ? nullptr : it->second;
}

Reply Status(const std::string& id) {
  auto c = Lookup(id);
  if (!c) return Error(404, "INVALID_REQUEST_BODY", "command not found: " + id);
  std::lock_guard lock(mu);
  json body = {{"id", c->id}};
  if (!c->content.empty()) body["content"] = c->content;
  body["running"] = c->running;
  if (!c->running) body["exit_code"] = c->exitCode;
  if (!c->error.empty()) body["error"] = c->error;
  body["started_at"] = Rfc3339(c->startedAt);
  if (!c->running) body["finished_at"] = Rfc3339(c->finishedAt);
  return Reply{JsonReply(200, body), nullptr};
}

Reply Logs(const std::string& id, const std::map<std::string, std::string>& query) {
  auto c = Lookup(id);
  if (!c) return Error(400, "INVALID_REQUEST_BODY", "command not found: " + id);
  int64_t cursor = 0;
  if (auto it = query.find("cursor"); it != query.end()) {
    char* end = nullptr;
    long long n = strtoll(it->second.c_str(), &end, 10);
    if (end != it->second.c_str() && *end == '\0' && n > 0) cursor = n;  // else 0, as the daemon
  }
  std::string content;
  if (int fd = open(c->outputPath.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    char buf[65536];
    off_t off = cursor;
    ssize_t n;
    while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
      content.append(buf, static_cast<size_t>(n));
      off += n;
    }
    close(fd);
  }
  Reply reply;
  reply.response.headers = {{"Content-Type", "text/plain; charset=utf-8"},
                            {"EXECD-COMMANDS-TAIL-CURSOR",
                             std::to_string(cursor + static_cast<int64_t>(content.size()))}};
  reply.response.body = std::move(content);
  return reply;
}

Reply Interrupt(const std::map<std::string, std::string>& query) {
  auto it = query.find("id");
  if (it == query.end() || it->second.empty()) {
    return Error(400, "MISSING_QUERY", "missing query parameter id");
  }
  auto c = Lookup(it->second);
  std::unique_lock lock(mu);
  if (!c || !c->running || c->pgid == 0) {
    return Error(500, "RUNTIME_ERROR",
                 "error interruptting code context. command " + it->second + " is not running");
  }
  kill(-c->pgid, SIGTERM);
  if (!finished.wait_for(lock, std::chrono::seconds(3), [&] { return !c->running; })) {
    kill(-c->pgid, SIGKILL);
    finished.wait_for(lock, std::chrono::seconds(5), [&] { return !c->running; });
  }
  return Reply{Response{200, {}, ""}, nullptr};
}

int Main(int argc, char** argv) {
  int port = 44772;
  std::string host = "127.0.0.1";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--port" || a == "--host") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--host") {
        host = v;
      } else {
        char* end = nullptr;
        long p = strtol(v.c_str(), &end, 10);
        if (end == v.c_str() || *end != '\0' || p < 1 || p > 65535) {
          std::cerr << "execd-standin: --port must be 1-65535, got " << v << "\n";
          return 2;
        }
        port = static_cast<int>(p);
      }
    } else {
      std::cerr << "usage: execd [--host 127.0.0.1] [--port 44772]\n";
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  const char* tmp = getenv("TMPDIR");
  const std::string tmpDir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  const auto grace = GraceFromEnv();

  Handler handler = [&](const Request& r) -> Reply {
    const std::string& p = r.path;
    if (p == "/ping" && r.method == "GET") return Reply{Response{200, {}, ""}, nullptr};
    if (p == "/command" && r.method == "POST") return RunCommand(r, tmpDir, grace);
    if (p == "/command" && r.method == "DELETE") return Interrupt(r.query);
    const std::string statusPrefix = "/command/status/";
    if (r.method == "GET" && p.rfind(statusPrefix, 0) == 0 && p.size() > statusPrefix.size()) {
      return Status(p.substr(statusPrefix.size()));
    }
    const std::string logsSuffix = "/logs";
    if (r.method == "GET" && p.rfind("/command/", 0) == 0 && p.size() > 9 + logsSuffix.size() &&
        p.compare(p.size() - logsSuffix.size(), logsSuffix.size(), logsSuffix) == 0) {
      std::string id = p.substr(9, p.size() - 9 - logsSuffix.size());
      if (id.find('/') == std::string::npos) return Logs(id, r.query);
    }
    return Reply{Response{404, {}, "404 page not found"}, nullptr};
  };
  std::string error;
  if (!Serve(host, port, handler, error)) {
    std::cerr << "execd-standin: " << error << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace execd_standin

int main(int argc, char** argv) { return execd_standin::Main(argc, argv); }
