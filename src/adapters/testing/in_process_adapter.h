// An in-process execution backend for tests and for walking the controller through scenarios by
// hand (the binary ayatori-controller-test of test/CMakeLists.txt; never the product;
// controllerName execution.ayatori.ddupan.top/test). Executions live in memory, keyed by Job UID,
// and outlive a controller instance inside one test process, so "restart the controller" tests see
// the same backend.
//
// A Job drives its execution through env vars of its task:
//   AYATORI_TEST_RUN_SECONDS=N   the process starts at once and exits after N seconds
//   AYATORI_TEST_EXIT_CODE=N     its exit code (default 0)
//   AYATORI_TEST_FAIL_REASON=R   fail before starting with reason R (e.g. ImagePullFailed)
// Without AYATORI_TEST_RUN_SECONDS an execution stays pending until the test calls
// StartExecution / FinishExecution.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "adapters/adapter.h"
#include "ayatori/clock.h"

namespace ayatori::adapters {

inline constexpr const char* kControllerTest = "execution.ayatori.ddupan.top/test";

// controllerName .../test, no parameters, Secret values resolved by the controller (so tests see
// them in EnvOf). It claims every enforcement: it runs nothing, so nothing escapes a limit.
AdapterDescriptor TestDescriptor();

class InProcessTestAdapter final : public Adapter {
 public:
  explicit InProcessTestAdapter(const Clock& clock = SystemClock::Instance());
  ~InProcessTestAdapter() override;

  std::string Name() const override { return "test"; }
  Status Start(std::function<void(const std::string&, const std::string&)> notify) override;
  void Stop() override;
  Status Validate(const ExecutionRequest& request) override;
  Observation Ensure(const ExecutionRequest& request) override;
  Observation Observe(const ExecutionKey& key) override;
  Observation Cancel(const ExecutionKey& key) override;
  Status Delete(const ExecutionKey& key) override;

  // Test controls.
  void StartExecution(const std::string& uid);
  void FinishExecution(const std::string& uid, int exitCode, const std::string& reason = "");
  // While unreachable every call answers kUnknown / kUnavailable and changes nothing.
  void SetUnreachable(bool unreachable);
  // The next Ensure creates the execution but answers kUnknown, as if the response was lost.
  void LoseNextEnsureResponse();
  // Makes Cancel leave the execution running (a backend slow to stop).
  void SetIgnoreCancel(bool ignore);

  int EnsureCalls(const std::string& uid) const;
  int Creations(const std::string& uid) const;  // executions ever created for this UID
  int TotalCreations() const;
  bool Exists(const std::string& uid) const;
  bool IsRunning(const std::string& uid) const;
  // Env the execution was created with (values revealed: for tests only).
  std::map<std::string, std::string> EnvOf(const std::string& uid) const;

 private:
  struct Execution {
    std::string namespace_, name;
    std::string id;
    ExecutionPhase phase = ExecutionPhase::kPending;
    std::optional<api::Time> startedAt, finishedAt;
    std::optional<std::chrono::system_clock::time_point> autoFinishAt;
    int exitCode = 0;
    std::string failReason;
    std::map<std::string, std::string> env;
  };
  Observation ObserveLocked(const std::string& uid);
  void AdvanceLocked(Execution& e);
  void TimerLoop();
  void NotifyLater(const Execution& e);

  const Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Execution> executions_;
  std::map<std::string, int> ensureCalls_, creations_;
  bool unreachable_ = false, loseNextEnsure_ = false, ignoreCancel_ = false;
  int nextId_ = 1;
  std::function<void(const std::string&, const std::string&)> notify_;
  bool stopping_ = false;
  std::thread timer_;
};

}  // namespace ayatori::adapters
