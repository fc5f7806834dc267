// The ayatori-controller binary as a child process of an end-to-end test: started with a
// kubeconfig and flags, its output appended to a log file, ready once it logged "controller
// ready". The child gets PR_SET_PDEATHSIG=SIGKILL, so it dies with the test process even when
// the test is killed (CTest timeout) and no destructor runs; the destructor SIGKILLs it too.
#pragma once

#include <sys/types.h>

#include <chrono>
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

  // Runs `binary` with `argv` (without argv[0]), stdout and stderr appended to `logPath`, and
  // waits up to `timeout` for the log line "controller ready" of this instance. Fails with the
  // log when the process exits first or the line never comes.
  Status Start(const std::string& binary, const std::vector<std::string>& args,
               const std::string& logPath, std::chrono::milliseconds timeout);
  // SIGKILL, as a crash: the controller gets no chance to clean anything up.
  void Kill();
  // SIGTERM, then SIGKILL after `timeout`; true when it exited by itself.
  bool Stop(std::chrono::milliseconds timeout);
  bool Running();
  pid_t pid() const { return pid_; }
  // Port of /metrics, from this instance's "serving metrics and health" log line (0 if unknown).
  int metricsPort() const { return metricsPort_; }
  // Everything every instance started through this object wrote to the log file.
  std::string Log() const;
  const std::string& logPath() const { return logPath_; }

 private:
  pid_t pid_ = -1;
  int metricsPort_ = 0;
  std::string logPath_;
};

}  // namespace ayatori::testing
