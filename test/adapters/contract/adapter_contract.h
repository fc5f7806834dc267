// The adapter contract suite (src/adapters/adapter.h): the promises every backend keeps, as one
// set of value-parameterised GoogleTest cases that each backend instantiates in its own test
// folder with a BackendFixture, so that each instantiation runs in its backend's CTest tier with
// its fixtures (the in-process adapter as unit; Docker, Kubernetes and OpenSandbox as e2e against
// the real backend). The cases: Ensure idempotent by UID, a lost Ensure answer adopted, every
// Observe state the backend reaches, Cancel and Delete repeatable, and no Secret value in
// anything an adapter returns. Backend-specific behaviour stays in each backend's own tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/adapter.h"

namespace ayatori::adapters::contract {

// The tasks a contract case asks a backend to run.
enum class Task {
  kSucceeds,          // exits 0 promptly
  kFailsWithExit3,    // exits 3 promptly
  kSleeps,            // runs until cancelled or deleted (minutes at least)
  kExceedsItsMemory,  // is killed for exceeding its memory limit (AdapterContractOomTest only)
};

// What a backend's instantiation provides. One fixture per test case: made by the factory in the
// case's SetUp, torn down (every execution it made removed) in its TearDown.
class BackendFixture {
 public:
  virtual ~BackendFixture() = default;
  // Called once before the case; may use ASSERT_* (the case stops when it fails).
  virtual void SetUp() {}
  // Removes every execution of the requests it made; may use EXPECT_*.
  virtual void TearDown() {}

  // The adapter under test, started if the backend needs it (watches, event streams).
  virtual Adapter& AdapterUnderTest() = 0;
  // An adapter as a restarted controller has it: a new one with no memory of earlier calls, on
  // the same backend (the in-process backend lives in its adapter, so it answers the same one).
  virtual std::shared_ptr<Adapter> Restarted() = 0;
  // A request for `task` with a fresh UID, which TearDown cleans up.
  virtual ExecutionRequest Request(Task task) = 0;
  // Puts `value` into `request` as a Secret value, the way this backend receives one. The
  // default: resolved env, for the backends the controller resolves Secrets for (Docker,
  // OpenSandbox, in-process); Kubernetes, whose kubelet reads them, puts a secretKeyRef to a real
  // Secret holding it.
  virtual void PlantSecret(ExecutionRequest& request, const std::string& name,
                           const std::string& value) {
    request.resolvedEnv.push_back({name, SensitiveString(value)});
  }
  // Executions the backend holds for the Job `uid`, counted on the backend itself (containers
  // by label, batch Jobs by label, sandboxes by metadata), not through the adapter.
  virtual int CountExecutions(const std::string& uid) = 0;
  // True when the backend holds nothing of the Job `uid` any more, not even what is on its way
  // out (Kubernetes: the batch Job and its pods).
  virtual bool HoldsNothingOf(const std::string& uid) { return CountExecutions(uid) == 0; }
  // Leaves the backend with the execution of `request` created while the caller never got the
  // answer of the Ensure that created it (a lost response, or a crash right after the create).
  virtual void CreateWithLostAnswer(const ExecutionRequest& request) = 0;

  // How long a case waits for the backend to reach a state, and how often it looks.
  virtual std::chrono::milliseconds Deadline() const { return std::chrono::seconds(60); }
  virtual std::chrono::milliseconds Poll() const { return std::chrono::milliseconds(100); }
};

// Makes a fresh fixture for one case.
using BackendFixtureFactory = std::function<std::unique_ptr<BackendFixture>()>;

// The name of an instantiation's parameter in test names ("Docker/AdapterContractTest.X/docker").
struct Backend {
  std::string name;
  BackendFixtureFactory make;
};
std::string BackendName(const ::testing::TestParamInfo<Backend>& info);
void PrintTo(const Backend& backend, std::ostream* os);

// The cases every backend runs. Instantiate with
//   INSTANTIATE_TEST_SUITE_P(Docker, AdapterContractTest,
//                            ::testing::Values(Backend{"docker", [] { return ...; }}),
//                            BackendName);
class AdapterContractTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override;
  void TearDown() override;

  BackendFixture& Fixture() { return *fixture_; }
  Adapter& AdapterUnderTest() { return fixture_->AdapterUnderTest(); }
  // Observes `key` until `done` holds or the fixture's deadline passes; the last observation.
  Observation ObserveUntil(const ExecutionKey& key,
                           const std::function<bool(const Observation&)>& done);
  // Ensure, then observe until the execution stopped.
  Observation RunToTheEnd(const ExecutionRequest& request);

 private:
  std::unique_ptr<BackendFixture> fixture_;
};

// The memory-limit case, for the backends that report an OOM kill (Docker's cgroup limit,
// Kubernetes' container status, the in-process backend); OpenSandbox's server does not say why
// a sandbox's process died, so it does not instantiate this one.
class AdapterContractOomTest : public AdapterContractTest {};

// The command line that runs `task` in an image with a POSIX shell, sleep, head and tail
// (busybox), for the backends that run a command.
std::vector<std::string> ShellCommand(Task task);

// The key the controller keeps for `request` after `observed`: UID, namespace/name, the
// references observed and the parameters.
ExecutionKey KeyOf(const ExecutionRequest& request, const Observation& observed = {});

}  // namespace ayatori::adapters::contract
