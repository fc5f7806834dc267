// A round that starts from a cache copy older than this controller's own last write
// (JobTables::CacheBehindOwnWrite): it must not decide on it, because every write it would
// make carries the old resourceVersion and earns a 409 Conflict, a wasted request per Job whenever
// the watch lags (seen under ASan's slowdown as 7 writes for a successful Job); it reads the Job
// instead. JobReconciler over a FakeKubeClient, the in-process test adapter, and a cache that can
// be held at an old copy.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "adapters/registry.h"
#include "adapters/testing/in_process_adapter.h"
#include "api/json.h"
#include "controller/kinds.h"
#include "controller/reconciler.h"
#include "kube/testing/fake_clock.h"
#include "kube/testing/fake_kube_client.h"
#include "obs/metrics.h"
#include "test/controller/fake_cluster_cache.h"
#include "test/support/counting_kube_client.h"

namespace ayatori::controller {
namespace {

constexpr const char* kNs = "team-a";

// The FakeClusterCache, except that GetJob can be held at one copy, as an informer whose watch
// has not delivered the latest events yet.
class LaggingJobCache final : public ClusterCache {
 public:
  explicit LaggingJobCache(const ClusterCache& inner) : inner_(inner) {}
  void HoldAt(api::Job job) { held_ = std::make_shared<const api::Job>(std::move(job)); }
  void CatchUp() { held_.reset(); }

  std::shared_ptr<const api::Job> GetJob(const std::string& ns,
                                         const std::string& name) const override {
    return held_ ? held_ : inner_.GetJob(ns, name);
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
  std::shared_ptr<const api::Job> held_;
};

class OwnWriteTest : public ::testing::Test {
 protected:
  OwnWriteTest()
      : adapter_(std::make_shared<adapters::InProcessTestAdapter>()),
        counting_(client_),
        lagging_(cache_),
        reconciler_(counting_, lagging_, registry_, clock_, metrics_, nullptr, {}) {
    EXPECT_TRUE(registry_.Register(adapters::TestDescriptor(), adapter_).ok());
    cache_.ServeJobsFrom(&client_);
    cache_.ServeBackendSnapshotsFrom(&client_, kDefaultControllerNamespace);
    api::JobClass c;
    c.metadata.name = "test";
    c.metadata.uid = "class-uid";
    c.spec.controllerName = adapters::kControllerTest;
    cache_.AddJobClass(c);
  }

  api::Job CreateJob(const std::string& name) {
    nlohmann::json manifest = {
        {"apiVersion", api::kApiVersion},
        {"kind", "Job"},
        {"metadata", {{"name", name}, {"namespace", kNs}}},
        {"spec", {{"jobClassName", "test"}, {"task", {{"image", "registry.invalid/task:1"}}}}}};
    auto created = client_.Create(kJobs, kNs, manifest, {});
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return Get(name);
  }
  api::Job Get(const std::string& name) {
    auto j = client_.Get(kJobs, kNs, name);
    if (!j.ok()) return {};
    auto job = api::JobFromJson(*j);
    return job.ok() ? *job : api::Job{};
  }
  uint64_t Writes(const std::string& name) const { return counting_.Writes(kJobs, kNs, name); }

  kube::testing::FakeKubeClient client_;
  kube::testing::FakeClock clock_;
  obs::Registry metrics_;
  testing::FakeClusterCache cache_;
  adapters::AdapterRegistry registry_;
  std::shared_ptr<adapters::InProcessTestAdapter> adapter_;
  ayatori::testing::WriteCountingKubeClient counting_;
  LaggingJobCache lagging_;
  JobReconciler reconciler_;
};

TEST_F(OwnWriteTest, ARoundFromACopyOlderThanItsOwnWriteWritesNothing) {
  const api::Job before = CreateJob("lagging");
  ASSERT_EQ(reconciler_.Reconcile(kNs, "lagging").error.ToString(), Status::Ok().ToString());
  const uint64_t written = Writes("lagging");
  ASSERT_GE(written, 1u) << "the first round wrote nothing (finalizer, acceptance)";
  const std::string after = Get("lagging").metadata.resourceVersion;
  ASSERT_NE(after, before.metadata.resourceVersion);

  // The watch has not delivered the round's writes: the cache still has the Job as created.
  lagging_.HoldAt(before);
  ReconcileResult stale = reconciler_.Reconcile(kNs, "lagging");
  EXPECT_TRUE(stale.error.ok()) << "a round decided on a copy its own write replaced: "
                                << stale.error.ToString();
  EXPECT_EQ(Writes("lagging"), written) << "a round wrote although nothing had changed";
  EXPECT_EQ(Get("lagging").metadata.resourceVersion, after);
  // What has changed since is acted on although the cache still lags: the task started.
  adapter_->StartExecution(Get("lagging").metadata.uid);
  ReconcileResult started = reconciler_.Reconcile(kNs, "lagging");
  EXPECT_TRUE(started.error.ok()) << started.error.ToString();
  EXPECT_EQ(Writes("lagging"), written + 1) << "the start was not reported from a fresh read";
  ASSERT_TRUE(Get("lagging").status.startTime.has_value());

  // Once the cache has caught up, rounds go on as before.
  lagging_.CatchUp();
  ReconcileResult fresh = reconciler_.Reconcile(kNs, "lagging");
  EXPECT_TRUE(fresh.error.ok()) << fresh.error.ToString();
}

TEST_F(OwnWriteTest, AChangeByAnotherWriterIsNotMistakenForALaggingCache) {
  CreateJob("edited");
  ASSERT_TRUE(reconciler_.Reconcile(kNs, "edited").error.ok());
  // Someone else writes the Job (a label): the cache that shows this version is current.
  auto patched = client_.Patch(kJobs, kNs, "edited", PatchType::kMerge,
                               {{"metadata", {{"labels", {{"team", "a"}}}}}}, {});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  adapter_->StartExecution(Get("edited").metadata.uid);
  const uint64_t written = Writes("edited");
  ReconcileResult r = reconciler_.Reconcile(kNs, "edited");
  EXPECT_TRUE(r.error.ok()) << r.error.ToString();
  EXPECT_GT(Writes("edited"), written) << "the start was not reported: the round was skipped";
}

// The write that removes the finalizer of a deleted Job answers at the resourceVersion the Job had
// (kube-apiserver deletes it and returns its last stored state), and the cache keeps showing that
// version with the finalizer until the deletion's event arrives. A round queued meanwhile (by the
// deletion's MODIFIED event) must not act on it: seen in CI as a 7th write for a successful Job, a
// second finalizer patch answered NotFound.
TEST_F(OwnWriteTest, ARoundAfterTheFinalizerRemovalThatDeletedTheJobWritesNothing) {
  CreateJob("deleted");
  ASSERT_TRUE(reconciler_.Reconcile(kNs, "deleted").error.ok());
  ASSERT_TRUE(client_.Delete(kJobs, kNs, "deleted", {}).ok());
  // Rounds until the finalizer is gone: the last one writes the status (Cancelled) and removes
  // the finalizer.
  api::Job lastCopy;
  for (int round = 0; round < 5 && client_.Get(kJobs, kNs, "deleted").ok(); ++round) {
    lastCopy = Get("deleted");
    ReconcileResult r = reconciler_.Reconcile(kNs, "deleted");
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
  }
  ASSERT_FALSE(client_.Get(kJobs, kNs, "deleted").ok()) << "the finalizer was not removed";
  const uint64_t written = Writes("deleted");
  // The copy the finalizer patch replaced: the status its round wrote last, at the
  // resourceVersion the patch carried as its precondition.
  std::optional<kube::testing::Action> lastStatus, lastPatch;
  for (const auto& action : client_.Actions()) {
    if (action.name != "deleted") continue;
    if (action.verb == "update" && action.subresource == "status") lastStatus = action;
    if (action.verb == "patch") lastPatch = action;
  }
  ASSERT_TRUE(lastStatus && lastPatch);
  auto status = api::JobFromJson(lastStatus->body);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  lastCopy.status = status->status;
  lastCopy.metadata.resourceVersion =
      lastPatch->body.at("metadata").at("resourceVersion").get<std::string>();
  ASSERT_TRUE(lastCopy.metadata.deletionTimestamp.has_value());
  ASSERT_FALSE(lastCopy.metadata.finalizers.empty());

  // The watch has not delivered the deletion: the cache shows the copy the last write replaced.
  lagging_.HoldAt(lastCopy);
  ReconcileResult stale = reconciler_.Reconcile(kNs, "deleted");
  EXPECT_TRUE(stale.error.ok()) << stale.error.ToString();
  EXPECT_EQ(Writes("deleted"), written)
      << "a round wrote to a Job its own finalizer removal deleted; last write: "
      << counting_.WriteLog(kJobs, kNs, "deleted").back();
}

}  // namespace
}  // namespace ayatori::controller
