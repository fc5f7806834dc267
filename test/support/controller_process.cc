#include "test/support/controller_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
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

#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::testing {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

ControllerProcess::~ControllerProcess() { Kill(); }

Status ControllerProcess::Spawn(const std::vector<std::string>& argv, const std::string& logPath) {
  if (argv.empty()) return {StatusCode::kInvalidArgument, "no program to run"};
  if (Running()) return {StatusCode::kFailedPrecondition, argv[0] + " already runs"};
  logPath_ = logPath;
  metricsPort_ = 0;
  struct stat st {};
  logOffset_ = stat(logPath.c_str(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;

  // Everything the child needs is prepared before fork: after it only async-signal-safe calls
  // (the test process has threads).
  std::vector<std::string> argvStrings = argv;
  std::vector<char*> args;
  args.reserve(argvStrings.size() + 1);
  for (auto& a : argvStrings) args.push_back(a.data());
  args.push_back(nullptr);
  const char* logFile = logPath_.c_str();
  const pid_t parent = getpid();

  pid_t pid = fork();
  if (pid < 0) return {StatusCode::kInternal, std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the test died between fork and prctl
    int in = open("/dev/null", O_RDONLY);
    int out = open(logFile, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    if (in > 2) close(in);
    if (out > 2) close(out);
    execv(args[0], args.data());
    _exit(127);
  }
  pid_ = pid;
  exited_ = false;
  status_ = -1;
  return Status::Ok();
}

Status ControllerProcess::Start(const std::string& binary, const std::vector<std::string>& args,
                                const std::string& logPath, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args.begin(), args.end());
  if (Status s = Spawn(argv, logPath); !s.ok()) return s;
  bool ready = Eventually(
      [&] {
        return !Running() || Output().find("\"msg\":\"controller ready\"") != std::string::npos;
      },
      timeout);
  const std::string mine = Output();
  if (!ready || mine.find("\"msg\":\"controller ready\"") == std::string::npos) {
    if (!Running()) {
      return {StatusCode::kInternal, binary + " exited during startup; its output:\n" + mine};
    }
    return {StatusCode::kDeadlineExceeded, binary + " did not log \"controller ready\" within " +
                                               std::to_string(timeout.count()) +
                                               " ms; its output:\n" + mine};
  }
  std::istringstream lines(mine);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("serving metrics and health") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) metricsPort_ = j.value("port", 0);
  }
  return Status::Ok();
}

bool ControllerProcess::Running() {
  if (pid_ <= 0 || exited_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    status_ = status;
    exited_ = true;
    FailOnSanitizerReport();
    return false;
  }
  if (r < 0 && errno == ECHILD) {  // reaped by someone else: gone, status unknown
    exited_ = true;
    return false;
  }
  return true;
}

void ControllerProcess::Signal(int signal) {
  if (Running()) kill(pid_, signal);
}

bool ControllerProcess::Wait(std::chrono::milliseconds timeout) {
  return Eventually([&] { return !Running(); }, timeout);
}

void ControllerProcess::Kill() {
  if (!Running()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  pid_t r = -1;
  while ((r = waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  status_ = r == pid_ ? status : -1;
  exited_ = true;
  FailOnSanitizerReport();
}

void ControllerProcess::FailOnSanitizerReport() const {
  // Every sanitizer ends its report with "SUMMARY: <Name>Sanitizer: ..."; the instance exited
  // (halt_on_error) and the test fails with the report, whatever the test checks next.
  const std::string out = Output();
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("SUMMARY: ") && line.find("Sanitizer") != std::string::npos) {
      ADD_FAILURE() << "pid " << pid_ << " reported a sanitizer finding; its output:\n" << out;
      return;
    }
  }
}

bool ControllerProcess::Stop(std::chrono::milliseconds timeout) {
  if (!Running()) return true;
  kill(pid_, SIGTERM);
  if (Wait(timeout)) return true;
  Kill();
  return false;
}

std::string ControllerProcess::Log() const {
  std::ifstream in(logPath_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ControllerProcess::Output() const {
  std::string log = Log();
  return log.size() > logOffset_ ? log.substr(logOffset_) : "";
}

std::string ControllerBinaryPath() {
  std::string dir = RequiredEnv("AYATORI_BINARY_DIR");
  return dir.empty() ? "" : dir + "/cmd/ayatori-controller/ayatori-controller";
}

std::string TestControllerBinaryPath() {
  std::string dir = RequiredEnv("AYATORI_BINARY_DIR");
  return dir.empty() ? "" : dir + "/test/ayatori-controller-test";
}

}  // namespace ayatori::testing
