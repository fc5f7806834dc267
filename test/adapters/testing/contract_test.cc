// The adapter contract suite (test/adapters/contract/adapter_contract.h) on the in-process test
// adapter: the controller's unit tests rely on it behaving as the real backends do.
#include <atomic>
#include <string>

#include "adapters/testing/in_process_adapter.h"
#include "test/adapters/contract/adapter_contract.h"

namespace ayatori::adapters::contract {
namespace {

api::EnvVar Env(std::string name, std::string value) {
  return {std::move(name), std::move(value), std::nullopt};
}

class InProcessBackend final : public BackendFixture {
 public:
  Adapter& AdapterUnderTest() override { return *adapter_; }
  // The backend lives in the adapter: a restarted controller would find the same executions.
  std::shared_ptr<Adapter> Restarted() override { return adapter_; }

  ExecutionRequest Request(Task task) override {
    static std::atomic<int> next{0};
    ExecutionRequest r;
    r.job.metadata.namespace_ = "contract";
    r.job.metadata.uid = "uid-" + std::to_string(++next);
    r.job.metadata.name = "job-" + std::to_string(next);
    r.job.spec.task.image = "busybox";
    auto& env = r.job.spec.task.env;
    switch (task) {
      case Task::kSucceeds:
        env = {Env("AYATORI_TEST_RUN_SECONDS", "0")};
        break;
      case Task::kFailsWithExit3:
        env = {Env("AYATORI_TEST_RUN_SECONDS", "0"), Env("AYATORI_TEST_EXIT_CODE", "3")};
        break;
      case Task::kSleeps:
        env = {Env("AYATORI_TEST_RUN_SECONDS", "3600")};
        break;
      case Task::kExceedsItsMemory:
        env = {Env("AYATORI_TEST_FAIL_REASON", "OOMKilled")};
        break;
    }
    return r;
  }

  int CountExecutions(const std::string& uid) override {
    return adapter_->Exists(uid) ? adapter_->Creations(uid) : 0;
  }

  void CreateWithLostAnswer(const ExecutionRequest& request) override {
    adapter_->LoseNextEnsureResponse();
    const Observation lost = adapter_->Ensure(request);
    EXPECT_EQ(lost.reason, "EnsureResponseLost");
    EXPECT_TRUE(lost.references.empty());
  }

  std::chrono::milliseconds Deadline() const override { return std::chrono::seconds(5); }
  std::chrono::milliseconds Poll() const override { return std::chrono::milliseconds(5); }

 private:
  std::shared_ptr<InProcessTestAdapter> adapter_ = std::make_shared<InProcessTestAdapter>();
};

const Backend kInProcess{"inprocess", [] { return std::make_unique<InProcessBackend>(); }};

INSTANTIATE_TEST_SUITE_P(InProcess, AdapterContractTest, ::testing::Values(kInProcess),
                         BackendName);
INSTANTIATE_TEST_SUITE_P(InProcess, AdapterContractOomTest, ::testing::Values(kInProcess),
                         BackendName);

}  // namespace
}  // namespace ayatori::adapters::contract
