#include "test/adapters/kubernetes/controller_e2e/controller_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace ayatori::testing {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

ControllerProcess::~ControllerProcess() { Kill(); }

Status ControllerProcess::Start(const std::string& binary, const std::vector<std::string>& args,
                                const std::string& logPath, std::chrono::milliseconds timeout) {
  if (Running()) return {StatusCode::kFailedPrecondition, "the controller already runs"};
  logPath_ = logPath;
  metricsPort_ = 0;
  struct stat st {};
  const size_t offset = stat(logPath.c_str(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;

  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<std::string> argvStrings = {binary};
  argvStrings.insert(argvStrings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argvStrings) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();

  pid_t pid = fork();
  if (pid < 0) return {StatusCode::kInternal, std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the test died between fork and prctl
    int in = open("/dev/null", O_RDONLY);
    int out = open(logPath_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;

  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::string log = Log();
    std::string mine = log.size() > offset ? log.substr(offset) : "";
    if (mine.find("\"msg\":\"controller ready\"") != std::string::npos) {
      std::istringstream lines(mine);
      for (std::string line; std::getline(lines, line);) {
        if (line.find("serving metrics and health") == std::string::npos) continue;
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object()) metricsPort_ = j.value("port", 0);
      }
      return Status::Ok();
    }
    if (!Running()) {
      return {StatusCode::kInternal,
              "ayatori-controller exited during startup; its output:\n" + mine};
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return {StatusCode::kDeadlineExceeded,
              "ayatori-controller did not log \"controller ready\" in time; its output:\n" + mine};
    }
    std::this_thread::sleep_for(20ms);
  }
}

bool ControllerProcess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    pid_ = -1;
    return false;
  }
  return true;
}

void ControllerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

bool ControllerProcess::Stop(std::chrono::milliseconds timeout) {
  if (!Running()) return true;
  kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!Running()) return true;
    std::this_thread::sleep_for(20ms);
  }
  Kill();
  return false;
}

std::string ControllerProcess::Log() const {
  std::ifstream in(logPath_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace ayatori::testing
