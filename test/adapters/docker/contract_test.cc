// The adapter contract suite (test/adapters/contract/adapter_contract.h) on the Docker adapter,
// against the fixture's real dockerd with the local images of hack/images/build.sh.
#include <string>
#include <vector>

#include "adapters/docker/container.h"
#include "adapters/docker/docker_adapter.h"
#include "adapters/docker/engine.h"
#include "adapters/docker/parameters.h"
#include "test/adapters/contract/adapter_contract.h"
#include "test/adapters/docker/e2e_support.h"

namespace ayatori::adapters::contract {
namespace {

constexpr const char* kBusybox = "ayatori.local/busybox:1";

class DockerBackend final : public BackendFixture {
 public:
  void SetUp() override { endpoint_ = docker::e2e::FixtureEndpoint(); }
  void TearDown() override {
    for (const auto& key : made_) EXPECT_TRUE(adapter_.Delete(key).ok());
  }

  Adapter& AdapterUnderTest() override { return adapter_; }
  std::shared_ptr<Adapter> Restarted() override {
    return std::make_shared<docker::DockerAdapter>();
  }

  ExecutionRequest Request(Task task) override {
    std::vector<std::string> command;
    switch (task) {
      case Task::kSucceeds:
        command = {"/bin/sh", "-c", "exit 0"};
        break;
      case Task::kFailsWithExit3:
        command = {"/bin/sh", "-c", "exit 3"};
        break;
      case Task::kSleeps:
        command = {"/bin/sleep", "300"};
        break;
      case Task::kExceedsItsMemory:
        // The main process is the one killed (see Task::kExceedsItsMemory in adapter_contract.cc).
        command = {"/bin/sh", "-c", "exec tail /dev/zero"};
        break;
    }
    // A short grace period: sleep as PID 1 ignores SIGTERM, so a stop waits it out.
    ExecutionRequest r = docker::e2e::MakeRequest(
        endpoint_, "contract", kBusybox, std::move(command), {}, {{"stopGracePeriodSeconds", 1}});
    if (task == Task::kExceedsItsMemory) {
      r.resources.limits.memory = api::Quantity::MustParse("16Mi");
    }
    made_.push_back(KeyOf(r));
    return r;
  }

  int CountExecutions(const std::string& uid) override {
    return docker::e2e::CountContainers(endpoint_, uid);
  }

  // What a crash between the create and the start leaves: a created container with the Job's
  // name and labels that nobody started, its ID known only to the engine.
  void CreateWithLostAnswer(const ExecutionRequest& request) override {
    auto params = docker::ParseDockerParameters(request.parameters);
    ASSERT_TRUE(params.ok()) << params.status().ToString();
    auto body = docker::BuildCreateBody(request, *params);
    ASSERT_TRUE(body.ok()) << body.status().ToString();
    auto ep = docker::ParseEngineEndpoint(endpoint_, false);
    ASSERT_TRUE(ep.ok()) << ep.status().ToString();
    docker::EngineClient client(*ep, {}, "1.41", {});
    auto created = client.Call(
        "POST", "/containers/create?name=" + docker::ContainerName(request.job.metadata.uid),
        body->dump());
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    ASSERT_EQ(created->status, 201) << created->body;
  }

 private:
  std::string endpoint_;
  docker::DockerAdapter adapter_;
  std::vector<ExecutionKey> made_;
};

const Backend kDocker{"docker", [] { return std::make_unique<DockerBackend>(); }};

INSTANTIATE_TEST_SUITE_P(Docker, AdapterContractTest, ::testing::Values(kDocker), BackendName);
INSTANTIATE_TEST_SUITE_P(Docker, AdapterContractOomTest, ::testing::Values(kDocker), BackendName);

}  // namespace
}  // namespace ayatori::adapters::contract
