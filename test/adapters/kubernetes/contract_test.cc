// The adapter contract suite (test/adapters/contract/adapter_contract.h) on the Kubernetes
// adapter, against the e2e tier of the test control plane (fixture kubee2e): a real
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok, whose Stages
// (hack/testenv/kwok-stages.yaml) run each pod for TESTENV_RUN_FOR, exit with TESTENV_EXIT_CODE
// and OOM-kill it with TESTENV_OOM=1.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>

#include "adapters/kubernetes/batch_job.h"
#include "adapters/kubernetes/kubernetes_adapter.h"
#include "kube/config.h"
#include "kube/resource.h"
#include "kube/rest_client.h"
#include "test/adapters/contract/adapter_contract.h"
#include "test/adapters/kubernetes/e2e_support.h"
#include "test/support/testenv.h"

namespace ayatori::adapters::contract {
namespace {

using nlohmann::json;

api::EnvVar Env(std::string name, std::string value) {
  return {std::move(name), std::move(value), std::nullopt};
}

class KubernetesBackend final : public BackendFixture {
 public:
  void SetUp() override {
    client_ = ayatori::testing::NewTestenvClient();
    ASSERT_NE(client_, nullptr);
    ns_ = testing::CreateTestNamespace("kcontract");
    adapter_ = std::make_unique<kubernetes::KubernetesAdapter>(*client_);
    const Status started = adapter_->Start([](const std::string&, const std::string&) {});
    ASSERT_TRUE(started.ok()) << started.ToString();
  }
  // The test namespace holds what the case made; the adapter's watches end here.
  void TearDown() override {
    if (adapter_) adapter_->Stop();
  }

  Adapter& AdapterUnderTest() override { return *adapter_; }
  std::shared_ptr<Adapter> Restarted() override {
    return std::make_shared<kubernetes::KubernetesAdapter>(*client_);
  }

  ExecutionRequest Request(Task task) override {
    static std::atomic<int> next{0};
    ExecutionRequest r;
    r.job.metadata.namespace_ = ns_;
    r.job.metadata.name = "job-" + std::to_string(++next);
    r.job.metadata.uid = ayatori::testing::OwnerJobUid(*client_, ns_, r.job.metadata.name);
    r.job.spec.task.image = "busybox:1.36";
    r.job.spec.task.command = {"/bin/sh", "-c", "true"};
    r.resources.requests.cpu = api::Quantity::MustParse("100m");
    r.resources.limits.memory = api::Quantity::MustParse("64Mi");
    r.parameters = json::object();
    auto& env = r.job.spec.task.env;
    switch (task) {
      case Task::kSucceeds:
        env = {Env("TESTENV_RUN_FOR", "1s")};
        break;
      case Task::kFailsWithExit3:
        env = {Env("TESTENV_RUN_FOR", "1s"), Env("TESTENV_EXIT_CODE", "3")};
        break;
      case Task::kSleeps:
        env = {Env("TESTENV_RUN_FOR", "1h")};
        break;
      case Task::kExceedsItsMemory:
        env = {Env("TESTENV_OOM", "1")};
        break;
    }
    return r;
  }

  // The kubelet resolves Secret references itself: the value lives in a real Secret that the
  // request names, as a Job's env secretKeyRef does.
  void PlantSecret(ExecutionRequest& request, const std::string& name,
                   const std::string& value) override {
    const std::string secret = "contract-" + request.job.metadata.name;
    json body = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", secret}}},
                 {"stringData", {{"token", value}}}};
    auto created = client_->Create(kube::SecretsResource(), ns_, body, {});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    request.job.spec.task.env.push_back(
        {name, std::nullopt, api::EnvVarSource{api::KeySelector{secret, "token", false}, {}}});
  }

  int CountExecutions(const std::string& uid) override {
    return Count(kubernetes::BatchJobsResource(), uid);
  }
  // The batch Job goes first; its pods follow (the garbage collector, or the adapter's delete).
  bool HoldsNothingOf(const std::string& uid) override {
    return Count(kubernetes::BatchJobsResource(), uid) == 0 &&
           Count(kubernetes::PodsResource(), uid) == 0;
  }

  // The first Ensure's create reached the API server; its answer did not reach the controller.
  void CreateWithLostAnswer(const ExecutionRequest& request) override {
    auto created = client_->Create(kubernetes::BatchJobsResource(), ns_,
                                   kubernetes::BuildBatchJob(request, {}), {});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

 private:
  // Objects of `resource` in the test namespace carrying the Job `uid`'s label.
  int Count(const ResourceRef& resource, const std::string& uid) {
    ListOptions lo;
    lo.labelSelector = kubernetes::SelectorForUid(uid);
    auto list = client_->List(resource, ns_, lo);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    return list.ok() ? static_cast<int>(list->items.size()) : -1;
  }

  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<kubernetes::KubernetesAdapter> adapter_;
  std::string ns_;
};

const Backend kKubernetes{"kubernetes", [] { return std::make_unique<KubernetesBackend>(); }};

INSTANTIATE_TEST_SUITE_P(Kubernetes, AdapterContractTest, ::testing::Values(kKubernetes),
                         BackendName);
INSTANTIATE_TEST_SUITE_P(Kubernetes, AdapterContractOomTest, ::testing::Values(kKubernetes),
                         BackendName);

}  // namespace
}  // namespace ayatori::adapters::contract
