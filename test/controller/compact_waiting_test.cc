// Large waiting Jobs are cached compact (CompactJobForCache keeps what their wait reads), and the
// reconciler decides anything but a wait on the whole task, read from the API server: adapter
// Validate reads all of it. JobReconciler over a FakeKubeClient, the in-process test adapter
// (whose Validate refuses a Job with the literal env AYATORI_TEST_REJECT, which a compact copy
// drops), and a cache that serves Jobs as the production cache does.
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <random>
#include <string>

#include "adapters/registry.h"
#include "adapters/testing/in_process_adapter.h"
#include "api/json.h"
#include "controller/cached_job.h"
#include "controller/controller.h"
#include "controller/kinds.h"
#include "controller/reconciler.h"
#include "kube/testing/fake_clock.h"
#include "kube/testing/fake_kube_client.h"
#include "obs/metrics.h"
#include "test/controller/fake_cluster_cache.h"

namespace ayatori::controller {
namespace {

constexpr const char* kNs = "team-a";

// "<status>/<reason>" of the Job's Accepted condition, "" without one.
std::string Accepted(const api::Job& job) {
  const api::Condition* c = api::FindCondition(job.status.conditions, api::kConditionAccepted);
  if (c == nullptr) return "";
  return std::string(c->status == api::ConditionStatus::kTrue    ? "True"
                     : c->status == api::ConditionStatus::kFalse ? "False"
                                                                 : "Unknown") +
         "/" + c->reason;
}

// The FakeClusterCache, except that Jobs come as the Job informer keeps them: compact, marked
// so, and read without recording an action (the test counts the reconciler's reads).
class CompactingJobCache final : public ClusterCache {
 public:
  CompactingJobCache(const ClusterCache& inner, const kube::testing::FakeKubeClient& client)
      : inner_(inner), client_(client) {}

  JobCopy GetJobCopy(const std::string& ns, const std::string& name) const override {
    auto j = client_.Peek(kJobs, ns, name);
    if (!j) return {};
    auto job = api::JobFromJson(*j);
    if (!job.ok()) return {};
    bool complete = false;
    api::Job compact = CompactJobForCache(std::move(*job), &complete);
    return {std::make_shared<const api::Job>(std::move(compact)), complete};
  }
  std::shared_ptr<const api::Job> GetJob(const std::string& ns,
                                         const std::string& name) const override {
    return GetJobCopy(ns, name).job;
  }
  std::shared_ptr<const api::JobClass> GetJobClass(const std::string& name) const override {
    return inner_.GetJobClass(name);
  }
  std::vector<std::shared_ptr<const api::JobClass>> ListJobClasses() const override {
    return inner_.ListJobClasses();
  }
  std::shared_ptr<const nlohmann::json> GetParameters(const std::string& kind,
                                                      const std::string& name) const override {
    return inner_.GetParameters(kind, name);
  }
  std::string NamespaceDefaultJobClass(const std::string& ns) const override {
    return inner_.NamespaceDefaultJobClass(ns);
  }
  std::shared_ptr<const kube::ObjectMetadata> GetSecret(const std::string& ns,
                                                        const std::string& name) const override {
    return inner_.GetSecret(ns, name);
  }
  std::shared_ptr<const kube::ObjectMetadata> GetConfigMap(const std::string& ns,
                                                           const std::string& name) const override {
    return inner_.GetConfigMap(ns, name);
  }
  std::shared_ptr<const BackendSnapshot> GetBackendSnapshot(
      const std::string& name) const override {
    return inner_.GetBackendSnapshot(name);
  }

 private:
  const ClusterCache& inner_;
  const kube::testing::FakeKubeClient& client_;
};

// Incompressible text of `n` characters (a flood need not be kind to deflate).
std::string Noise(std::mt19937& rng, size_t n) {
  static constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::uniform_int_distribution<size_t> pick(0, kChars.size() - 1);
  std::string s(n, ' ');
  for (char& c : s) c = kChars[pick(rng)];
  return s;
}

// A task as large as the CRD admits (docs/api.md § Limits at a glance: argv 256 KiB, env
// 256 KiB), plus one Secret reference.
nlohmann::json MaximalTask(std::mt19937& rng, bool reject) {
  nlohmann::json args = nlohmann::json::array();
  for (int i = 0; i < 31; ++i) args.push_back(Noise(rng, 8192));
  nlohmann::json env = nlohmann::json::array();
  if (reject) env.push_back({{"name", "AYATORI_TEST_REJECT"}, {"value", "on the whole task"}});
  for (int i = 0; i < 31; ++i) {
    env.push_back({{"name", "PAD_" + std::to_string(i)}, {"value", Noise(rng, 8000)}});
  }
  env.push_back({{"name", "TOKEN"},
                 {"valueFrom", {{"secretKeyRef", {{"name", "token"}, {"key", "value"}}}}}});
  return {{"image", "registry.invalid/task:1"},
          {"command", {"/bin/sh", "-c"}},
          {"args", args},
          {"workingDir", "/workspace"},
          {"env", env}};
}

class CompactWaitingTest : public ::testing::Test {
 protected:
  CompactWaitingTest()
      : adapter_(std::make_shared<adapters::InProcessTestAdapter>()),
        compacting_(cache_, client_),
        reconciler_(client_, compacting_, registry_, clock_, metrics_, nullptr, {}) {
    EXPECT_TRUE(registry_.Register(adapters::TestDescriptor(), adapter_).ok());
    cache_.ServeBackendSnapshotsFrom(&client_, kDefaultControllerNamespace);
    // The test backend takes Secret values from the controller: the class must allow it, and
    // the resolver reads the Secret's keys.
    nlohmann::json secret = {{"apiVersion", "v1"},
                             {"kind", "Secret"},
                             {"metadata", {{"name", "token"}, {"namespace", kNs}}},
                             {"data", {{"value", "c2VjcmV0"}}}};
    auto created = client_.Create(kSecrets, kNs, secret, {});
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    cache_.AddSecret(kNs, "token",
                     created.ok() ? (*created)["metadata"].value("resourceVersion", "") : "");
  }

  void AddClass(const std::string& name) {
    api::JobClass c;
    c.metadata.name = name;
    c.metadata.uid = name + "-uid";
    c.spec.controllerName = adapters::kControllerTest;
    c.spec.secretEnvForwarding = api::SecretEnvForwarding::kAllowed;
    cache_.AddJobClass(c);
  }
  void CreateJob(const std::string& name, const std::string& className, bool reject) {
    nlohmann::json manifest = {
        {"apiVersion", api::kApiVersion},
        {"kind", "Job"},
        {"metadata", {{"name", name}, {"namespace", kNs}}},
        {"spec", {{"jobClassName", className}, {"task", MaximalTask(rng_, reject)}}}};
    auto created = client_.Create(kJobs, kNs, manifest, {});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }
  api::Job Get(const std::string& name) const {
    auto j = client_.Peek(kJobs, kNs, name);
    if (!j) return {};
    auto job = api::JobFromJson(*j);
    return job.ok() ? *job : api::Job{};
  }
  size_t JobReads(const std::string& name) const {
    size_t n = 0;
    for (const auto& a : client_.Actions()) {
      if (a.verb == "get" && a.resource == kJobs.GroupResource() && a.name == name) ++n;
    }
    return n;
  }
  // Rounds until one asks for nothing more (at most 5).
  void Settle(const std::string& name) {
    for (int i = 0; i < 5; ++i) {
      ReconcileResult r = reconciler_.Reconcile(kNs, name);
      ASSERT_TRUE(r.error.ok()) << r.error.ToString();
      if (!r.requeueAfter && !r.backoff) return;
    }
  }

  std::mt19937 rng_{26};
  kube::testing::FakeKubeClient client_;
  kube::testing::FakeClock clock_;
  obs::Registry metrics_;
  testing::FakeClusterCache cache_;
  adapters::AdapterRegistry registry_;
  std::shared_ptr<adapters::InProcessTestAdapter> adapter_;
  CompactingJobCache compacting_;
  JobReconciler reconciler_;
};

TEST_F(CompactWaitingTest, AWaitIsDecidedOnTheCompactCopyWithoutReadingTheJob) {
  CreateJob("waits", "absent", false);
  ASSERT_FALSE(compacting_.GetJobCopy(kNs, "waits").taskComplete);
  client_.ClearActions();
  for (int i = 0; i < 3; ++i) Settle("waits");
  const api::Job job = Get("waits");
  EXPECT_EQ(Accepted(job), "False/JobClassNotFound");
  EXPECT_EQ(JobReads("waits"), 0u) << "a waiting round read the whole Job";
}

TEST_F(CompactWaitingTest, AcceptanceIsDecidedOnTheWholeTask) {
  AddClass("test");
  // The compact copy has no literal env: decided on it, Validate would accept the Job.
  CreateJob("refused", "test", true);
  const auto copy = compacting_.GetJobCopy(kNs, "refused");
  ASSERT_FALSE(copy.taskComplete);
  for (const auto& e : copy.job->spec.task.env) ASSERT_NE(e.name, "AYATORI_TEST_REJECT");
  Settle("refused");
  const api::Job refused = Get("refused");
  EXPECT_EQ(Accepted(refused), "False/BackendRejected");
  EXPECT_EQ(adapter_->Creations(refused.metadata.uid), 0);
  EXPECT_GE(JobReads("refused"), 1u);

  // A Job that may run is accepted, and its execution gets the whole task.
  CreateJob("accepted", "test", false);
  Settle("accepted");
  const api::Job accepted = Get("accepted");
  EXPECT_EQ(Accepted(accepted), "True/Valid");
  EXPECT_EQ(adapter_->Creations(accepted.metadata.uid), 1);
  EXPECT_EQ(adapter_->EnvOf(accepted.metadata.uid).count("PAD_30"), 1u);
}

TEST_F(CompactWaitingTest, AWaitingMaximalJobCostsAFewKiBInTheCache) {
  CreateJob("maximal", "absent", false);
  auto j = client_.Peek(kJobs, kNs, "maximal");
  ASSERT_TRUE(j);
  auto job = api::JobFromJson(*j);
  ASSERT_TRUE(job.ok());
  auto whole = CachedJob::Encode(*job, true);
  bool complete = true;
  auto compact = CachedJob::Encode(CompactJobForCache(*job, &complete), complete);
  ASSERT_TRUE(whole.ok() && compact.ok());
  EXPECT_FALSE(complete);
  // The waits read the same things from both copies.
  EXPECT_EQ(compact->waitsOn(), whole->waitsOn());
  std::cout << "waiting maximal Job: JSON " << j->dump().size() << " bytes, cached whole "
            << whole->encodedBytes() << " bytes, cached compact " << compact->encodedBytes()
            << " bytes\n";
  EXPECT_GT(whole->encodedBytes(), 256u * 1024);
  EXPECT_LT(compact->encodedBytes(), 2u * 1024);
}

}  // namespace
}  // namespace ayatori::controller
