// The ayatori-controller binary (or any program) as a child process of a test, with its stdout
// and stderr appended to a log file. The one guard of such a child for every test tier
// (test/controller's binary test, the docker and Kubernetes end-to-end tests).
//
// The child gets PR_SET_PDEATHSIG=SIGKILL, so it dies with the test process even when the test
// is killed (CTest timeout) and no destructor runs: a controller left behind would keep
// reconciling the control plane under the next test. The destructor SIGKILLs and reaps it too.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "ayatori/status.h"

namespace ayatori::testing {

class ControllerProcess {
 public:
  ControllerProcess() = default;
  ~ControllerProcess();  // SIGKILL and reap
  ControllerProcess(const ControllerProcess&) = delete;
  ControllerProcess& operator=(const ControllerProcess&) = delete;

  // Runs `argv` (argv[0] is a path) with stdout and stderr appended to `logPath`; returns once
  // the child exists, without waiting for anything it logs. Refused while an earlier instance
  // started through this object still runs.
  Status Spawn(const std::vector<std::string>& argv, const std::string& logPath);
  // Spawns `binary` with `args` (without argv[0]) and waits up to `timeout` for this instance's
  // JSON log line "controller ready" (so pass --log-format=json). Fails with this instance's
  // output when the process exits first or the line never comes.
  Status Start(const std::string& binary, const std::vector<std::string>& args,
               const std::string& logPath, std::chrono::milliseconds timeout);

  bool Running();
  void Signal(int signal);
  // Waits for the child to exit; false on timeout. exitStatus() is then its raw wait status.
  bool Wait(std::chrono::milliseconds timeout);
  // Raw wait status of the last instance, -1 while it runs or when unknown.
  int exitStatus() const { return status_; }
  // SIGKILL, as a crash: the controller gets no chance to clean anything up. Reaps the child.
  void Kill();
  // SIGTERM, then SIGKILL after `timeout`; true when it exited by itself within `timeout`.
  bool Stop(std::chrono::milliseconds timeout);

  // Pid of the last instance (kept after it exited, for messages); -1 before the first Spawn.
  pid_t pid() const { return pid_; }
  // Port of /metrics, from this instance's "serving metrics and health" log line (0 if unknown;
  // known after Start).
  int metricsPort() const { return metricsPort_; }
  // Everything every instance started through this object wrote to the log file.
  std::string Log() const;
  const std::string& logPath() const { return logPath_; }

 private:
  // What this instance wrote (the log file from where it stood at Spawn).
  std::string Output() const;
  // Adds a test failure when this (exited) instance's output holds a sanitizer report (builds
  // with AYATORI_SANITIZE; the child inherits the test's halt_on_error options).
  void FailOnSanitizerReport() const;

  pid_t pid_ = -1;
  bool exited_ = true;  // no instance runs (none started, or the last one was reaped)
  int status_ = -1;
  int metricsPort_ = 0;
  std::string logPath_;
  size_t logOffset_ = 0;
};

// $AYATORI_BINARY_DIR/cmd/ayatori-controller/ayatori-controller ("" and a test failure when the
// variable is unset).
std::string ControllerBinaryPath();
// $AYATORI_BINARY_DIR/test/ayatori-controller-test: the same main with the in-process test backend
// (controllerName execution.ayatori.ddupan.top/test) registered (test/CMakeLists.txt).
std::string TestControllerBinaryPath();

}  // namespace ayatori::testing
