// The adapter contract suite (test/adapters/contract/adapter_contract.h) on the OpenSandbox
// adapter, against the real opensandbox-server of the "opensandbox" fixture on the project's
// dockerd, with the execd stand-in in every sandbox. Host network mode: one sandbox at a time
// (RESOURCE_LOCK opensandbox); each case checks that none is left before and after it.
#include <cstdlib>
#include <string>
#include <vector>

#include "adapters/opensandbox/client.h"
#include "adapters/opensandbox/opensandbox_adapter.h"
#include "adapters/opensandbox/spec.h"
#include "api/quantity.h"
#include "test/adapters/contract/adapter_contract.h"
#include "test/adapters/docker/e2e_support.h"
#include "test/adapters/opensandbox/answer_losing_transport.h"
#include "test/support/wait.h"

namespace ayatori::adapters::contract {
namespace {

using nlohmann::json;
using opensandbox::AnswerLosingTransport;
using opensandbox::OpenSandboxAdapter;

class OpenSandboxBackend final : public BackendFixture {
 public:
  void SetUp() override {
    const char* dir = std::getenv("AYATORI_OPENSANDBOX_DIR");
    ASSERT_NE(dir, nullptr) << "AYATORI_OPENSANDBOX_DIR is not set (run through ctest)";
    auto env = docker::e2e::ReadEnvFile(std::string(dir) + "/env.sh");
    domain_ = env["AYATORI_OSB_DOMAIN"];
    apiKey_ = env["AYATORI_OSB_API_KEY"];
    workload_ = env["AYATORI_OSB_WORKLOAD_IMAGE"];
    ASSERT_FALSE(domain_.empty() || apiKey_.empty() || workload_.empty());
    real_ = kube::NewCurlTransport(kube::RestConfig{}, {});
    faults_ = std::make_shared<AnswerLosingTransport>(real_);
    adapter_ = NewAdapter();
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
  std::shared_ptr<Adapter> Restarted() override { return NewAdapter(); }

  ExecutionRequest Request(Task task) override {
    ExecutionRequest r;
    r.job.metadata.namespace_ = "e2e-opensandbox";
    r.job.metadata.name = "contract";
    r.job.metadata.uid = docker::e2e::NewUid();
    r.job.spec.task.image = workload_;
    switch (task) {
      case Task::kSucceeds:
        r.job.spec.task.command = {"/bin/sh", "-c", "exit 0"};
        break;
      case Task::kFailsWithExit3:
        r.job.spec.task.command = {"/bin/sh", "-c", "exit 3"};
        break;
      case Task::kSleeps:
      case Task::kExceedsItsMemory:  // not instantiated here (AdapterContractOomTest)
        r.job.spec.task.command = {"/bin/sleep", "300"};
        break;
    }
    r.resources.limits.cpu = api::Quantity::MustParse("500m");
    r.resources.limits.memory = api::Quantity::MustParse("256Mi");
    r.parameters = {
        {"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
        {"kind", "OpenSandboxExecutionParameters"},
        {"metadata", {{"name", "e2e"}}},
        {"spec",
         {{"endpoint", "http://" + domain_ + "/v1"},
          {"insecure", true},  // the test server listens on loopback only
          {"apiKeySecretRef", {{"namespace", "ayatori-system"}, {"name", "osb"}, {"key", "k"}}}}}};
    made_.push_back(KeyOf(r));
    return r;
  }

  void PlantSecret(ExecutionRequest& request, const std::string& name,
                   const std::string& value) override {
    request.resolvedEnv.push_back({name, SensitiveString(value)});
  }

  // Sandboxes the server lists for the Job `uid`, or all of them for "".
  int CountExecutions(const std::string& uid) override {
    opensandbox::ServerClient c(*real_, "http://" + domain_ + "/v1", SensitiveString(apiKey_), {});
    auto r = c.Call("GET", uid.empty() ? "/sandboxes?pageSize=200"
                                       : "/sandboxes?pageSize=200&metadata=" +
                                             opensandbox::UidMetadataQuery(uid));
    if (!r.ok() || r->status != 200) {
      ADD_FAILURE() << "listing sandboxes: " << (r.ok() ? r->body : r.status().ToString());
      return -1;
    }
    return static_cast<int>(json::parse(r->body)["items"].size());
  }

  // The answer of POST /v1/sandboxes is lost after the server created the sandbox.
  void CreateWithLostAnswer(const ExecutionRequest& request) override {
    faults_->LoseNext("POST", "/v1/sandboxes");
    const Observation lost = adapter_->Ensure(request);
    ASSERT_EQ(faults_->lostCount(), 1);
    EXPECT_EQ(lost.phase, ExecutionPhase::kUnknown) << lost.message;
  }

 private:
  // A fresh adapter: what a restarted controller has (no memory of earlier calls).
  std::shared_ptr<OpenSandboxAdapter> NewAdapter() {
    opensandbox::OpenSandboxAdapterOptions o;
    o.transport = faults_;
    const std::string key = apiKey_;
    o.apiKey = [key](const api::SecretKeyReference&) -> StatusOr<SensitiveString> {
      return SensitiveString(key);
    };
    return std::make_shared<OpenSandboxAdapter>(o);
  }

  std::string domain_, apiKey_, workload_;
  std::shared_ptr<kube::HttpTransport> real_;
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
