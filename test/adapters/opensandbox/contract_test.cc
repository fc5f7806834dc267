// The adapter contract suite (test/adapters/contract/adapter_contract.h) on the OpenSandbox
// adapter, against the real opensandbox-server of the "opensandbox" fixture on the project's
// dockerd, with the execd stand-in in every sandbox. Host network mode: one sandbox at a time
// (RESOURCE_LOCK opensandbox); each case checks that none is left before and after it.
#include <string>
#include <vector>

#include "adapters/opensandbox/opensandbox_adapter.h"
#include "api/quantity.h"
#include "test/adapters/contract/adapter_contract.h"
#include "test/adapters/docker/e2e_support.h"
#include "test/adapters/opensandbox/answer_losing_transport.h"
#include "test/adapters/opensandbox/e2e_server.h"
#include "test/support/wait.h"

namespace ayatori::adapters::contract {
namespace {

using opensandbox::AnswerLosingTransport;
using opensandbox::OpenSandboxAdapter;

class OpenSandboxBackend final : public BackendFixture {
 public:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(server_.Connect());
    faults_ = std::make_shared<AnswerLosingTransport>(server_.transport());
    adapter_ = server_.NewAdapter(faults_);
    ASSERT_EQ(CountExecutions(""), 0) << "a sandbox is left from an earlier test";
  }
  void TearDown() override {
    if (!adapter_) return;
    for (const auto& key : made_) EXPECT_TRUE(adapter_->Delete(key).ok());
    EXPECT_TRUE(testing::Eventually([&] { return CountExecutions("") == 0; },
                                    std::chrono::seconds(30), Poll()))
        << "sandboxes are left after the test";
  }

  Adapter& AdapterUnderTest() override { return *adapter_; }
  std::shared_ptr<Adapter> Restarted() override { return server_.NewAdapter(faults_); }

  // kExceedsItsMemory is not instantiated here (no AdapterContractOomTest, below).
  ExecutionRequest Request(Task task) override {
    ExecutionRequest r;
    r.job.metadata.namespace_ = "e2e-opensandbox";
    r.job.metadata.name = "contract";
    r.job.metadata.uid = docker::e2e::NewUid();
    r.job.spec.task.image = server_.workloadImage();
    r.job.spec.task.command = ShellCommand(task);
    r.resources.limits.cpu = api::Quantity::MustParse("500m");
    r.resources.limits.memory = api::Quantity::MustParse("256Mi");
    r.parameters = server_.Parameters();
    made_.push_back(KeyOf(r));
    return r;
  }

  // Sandboxes the server lists for the Job `uid`, or all of them for "".
  int CountExecutions(const std::string& uid) override { return server_.CountSandboxes(uid); }

  // The answer of POST /v1/sandboxes is lost after the server created the sandbox.
  void CreateWithLostAnswer(const ExecutionRequest& request) override {
    faults_->LoseNext("POST", "/v1/sandboxes");
    const Observation lost = adapter_->Ensure(request);
    ASSERT_EQ(faults_->lostCount(), 1);
    EXPECT_EQ(lost.phase, ExecutionPhase::kUnknown) << lost.message;
  }

 private:
  opensandbox::e2e::TestServer server_;
  std::shared_ptr<AnswerLosingTransport> faults_;
  std::shared_ptr<OpenSandboxAdapter> adapter_;
  std::vector<ExecutionKey> made_;
};

// No AdapterContractOomTest: the server does not say why a sandbox's process died.
INSTANTIATE_TEST_SUITE_P(OpenSandbox, AdapterContractTest,
                         ::testing::Values(Backend{
                             "opensandbox", [] { return std::make_unique<OpenSandboxBackend>(); }}),
                         BackendName);

}  // namespace
}  // namespace ayatori::adapters::contract
