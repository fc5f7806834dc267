// A real Kueue v0.17.0 (fixture "kueue", hack/testenv/testenv.sh kueue-up) beside the test
// control plane admits Workloads made by BuildWorkload for real Ayatori Jobs: the first within
// the quota, the second held with Kueue's message until the first is Finished. Nothing of the
// controller runs: this checks the Workload contract (src/kueue/workload.h) against Kueue itself.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "api/json.h"
#include "kueue/workload.h"
#include "test/adapters/kubernetes/e2e_support.h"
#include "test/integration/crd_kubectl.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::kueue {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

const ResourceRef kFlavors{kGroup, kVersion, "resourceflavors", false};
const ResourceRef kClusterQueues{kGroup, kVersion, "clusterqueues", false};
const ResourceRef kLocalQueues{kGroup, kVersion, "localqueues", true};
const ResourceRef kWorkloads{kGroup, kVersion, "workloads", true};
const ResourceRef kJobs{api::kGroup, api::kVersion, "jobs", true};

// Kueue admits within a second or two of a change; the deadline allows for a
// loaded machine.
constexpr milliseconds kAdmissionDeadline = seconds(60);
constexpr milliseconds kPoll{200};
constexpr const char* kHostLabel = "ayatori.ddupan.top/host";

class KueueE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::InstallCrds());
    client_ = testing::NewTestenvClient();
    ASSERT_NE(client_, nullptr);
    ns_ = testing::CreateTestNamespace("kueue");
    flavor_ = testing::UniqueName("docker-a");
    queue_ = testing::UniqueName("ayatori");
    CreateQueues();
  }

  void TearDown() override {
    if (client_ == nullptr) return;
    // The finalizer is the owner's to remove (src/kueue/workload.h); then the queues can go.
    for (const std::string& name : workloads_) {
      (void)client_->Patch(kWorkloads, ns_, name, PatchType::kMerge,
                           {{"metadata", {{"finalizers", nullptr}}}}, {});
      (void)client_->Delete(kWorkloads, ns_, name, {});
    }
    (void)client_->Delete(kLocalQueues, ns_, queue_, {});
    (void)client_->Delete(kClusterQueues, "", queue_, {});
    (void)client_->Delete(kFlavors, "", flavor_, {});
  }

  // One flavor (a Docker host) with room for one task at a time: pods 1.
  void CreateQueues() {
    Must(client_->Create(kFlavors, "",
                         {{"apiVersion", kApiVersion},
                          {"kind", "ResourceFlavor"},
                          {"metadata", {{"name", flavor_}}},
                          {"spec", {{"nodeLabels", {{kHostLabel, flavor_}}}}}},
                         {}));
    const json quotas = json::array({{{"name", "cpu"}, {"nominalQuota", "4"}},
                                     {{"name", "memory"}, {"nominalQuota", "8Gi"}},
                                     {{"name", "pods"}, {"nominalQuota", "1"}}});
    Must(client_->Create(
        kClusterQueues, "",
        {{"apiVersion", kApiVersion},
         {"kind", "ClusterQueue"},
         {"metadata", {{"name", queue_}}},
         {"spec",
          {{"namespaceSelector", json::object()},
           {"resourceGroups",
            json::array(
                {{{"coveredResources", {"cpu", "memory", "pods"}},
                  {"flavors", json::array({{{"name", flavor_}, {"resources", quotas}}})}}})}}}},
        {}));
    Must(client_->Create(kLocalQueues, ns_,
                         {{"apiVersion", kApiVersion},
                          {"kind", "LocalQueue"},
                          {"metadata", {{"name", queue_}, {"namespace", ns_}}},
                          {"spec", {{"clusterQueue", queue_}}}},
                         {}));
    EXPECT_TRUE(
        testing::Eventually([&] { return ClusterQueueActive(); }, kAdmissionDeadline, kPoll))
        << "ClusterQueue " << queue_ << " did not become Active";
  }

  bool ClusterQueueActive() {
    auto cq = client_->Get(kClusterQueues, "", queue_);
    if (!cq.ok()) return false;
    for (const json& c : cq->value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "Active") return c.value("status", "") == "True";
    }
    return false;
  }

  // A real Ayatori Job labelled for the queue (nothing runs it), as read back from the API, with
  // the effective resources acceptance would have resolved.
  api::Job CreateJob(const std::string& name) {
    const json job = {{"apiVersion", api::kApiVersion},
                      {"kind", "Job"},
                      {"metadata", {{"name", name}, {"labels", {{kQueueNameLabel, queue_}}}}},
                      {"spec", {{"task", {{"image", "busybox:1.36"}, {"command", {"true"}}}}}}};
    auto created = client_->Create(kJobs, ns_, job, {});
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    if (!created.ok()) return {};
    auto decoded = api::JobFromJson(*created);
    EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
    if (!decoded.ok()) return {};
    decoded->status.effectiveResources = api::ResourceRequirements{
        {api::Quantity::MustParse("100m"), api::Quantity::MustParse("64Mi")}, {}};
    return *decoded;
  }

  // The Workload of a new Job, created; returns its name.
  std::string CreateWorkloadFor(const std::string& jobName) {
    WorkloadOptions options;
    options.nodeSelector = {{kHostLabel, flavor_}};
    auto wl = BuildWorkload(CreateJob(jobName), options);
    EXPECT_TRUE(wl.ok()) << wl.status().ToString();
    if (!wl.ok()) return "";
    Must(client_->Create(kWorkloads, ns_, *wl, {}));
    workloads_.push_back((*wl)["metadata"]["name"]);
    return workloads_.back();
  }

  StatusOr<WorkloadState> Read(const std::string& name) {
    auto wl = client_->Get(kWorkloads, ns_, name);
    if (!wl.ok()) return wl.status();
    return ReadWorkload(*wl);
  }

  // Waits until `accept` holds for the Workload; returns its last state read.
  WorkloadState WaitFor(const std::string& name,
                        const std::function<bool(const WorkloadState&)>& accept) {
    WorkloadState last;
    testing::Eventually(
        [&] {
          auto s = Read(name);
          if (!s.ok()) return false;
          last = *s;
          return accept(last);
        },
        kAdmissionDeadline, kPoll);
    return last;
  }

  // Finished=True/Succeeded by PUT of the status with its resourceVersion (a merge patch would
  // replace Kueue's conditions), again after a conflict with Kueue's own writes.
  bool MarkFinished(const std::string& name) {
    return testing::Eventually(
        [&] {
          auto wl = client_->Get(kWorkloads, ns_, name);
          if (!wl.ok()) return false;
          (*wl)["status"]["conditions"].push_back({{"type", kConditionFinished},
                                                   {"status", "True"},
                                                   {"reason", "Succeeded"},
                                                   {"message", "the Ayatori Job succeeded"},
                                                   {"lastTransitionTime", api::FormatTime(Now())}});
          auto updated = client_->UpdateStatus(kWorkloads, ns_, *wl, {});
          EXPECT_TRUE(updated.ok() || updated.status().code() == StatusCode::kConflict)
              << updated.status().ToString();
          return updated.ok();
        },
        kAdmissionDeadline, kPoll);
  }

  static api::Time Now() {
    return std::chrono::time_point_cast<seconds>(std::chrono::system_clock::now());
  }

  static void Must(const StatusOr<json>& result) {
    EXPECT_TRUE(result.ok()) << result.status().ToString();
  }

  std::unique_ptr<kube::RestClient> client_;
  std::string ns_, flavor_, queue_;
  std::vector<std::string> workloads_;
};

TEST_F(KueueE2eTest, AdmitsWithinQuotaHoldsTheNextUntilTheFirstFinishes) {
  const std::string first = CreateWorkloadFor("first");
  WorkloadState s = WaitFor(first, [](const WorkloadState& w) { return w.admitted; });
  ASSERT_TRUE(s.admitted) << "not admitted: " << s.pendingReason << ": " << s.pendingMessage;
  EXPECT_TRUE(s.quotaReserved);
  EXPECT_EQ(s.clusterQueue, queue_);
  EXPECT_EQ(s.flavors["pods"], flavor_);
  EXPECT_EQ(s.flavors["cpu"], flavor_);
  EXPECT_FALSE(s.evicted);

  // Over quota (pods 1): held with Kueue's reason.
  const std::string second = CreateWorkloadFor("second");
  const std::string lacking = "insufficient unused quota for pods in flavor " + flavor_;
  s = WaitFor(second, [&](const WorkloadState& w) {
    return w.pendingMessage.find(lacking) != std::string::npos;
  });
  EXPECT_NE(s.pendingMessage.find(lacking), std::string::npos) << s.pendingMessage;
  EXPECT_EQ(s.pendingReason, "Pending");
  EXPECT_FALSE(s.admitted);
  EXPECT_FALSE(s.quotaReserved);

  // The first finishes: its quota goes to the second.
  ASSERT_TRUE(MarkFinished(first));
  s = WaitFor(second, [](const WorkloadState& w) { return w.admitted; });
  EXPECT_TRUE(s.admitted) << "not admitted: " << s.pendingReason << ": " << s.pendingMessage;
  EXPECT_EQ(s.flavors["pods"], flavor_);
  auto done = Read(first);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_TRUE(done->finished);
  EXPECT_EQ(done->finished->reason, "Succeeded");
}

// The same Job always names the same Workload: a second create (a controller that crashed after
// the first) is refused, never a second Workload.
TEST_F(KueueE2eTest, ASecondCreateForTheSameJobIsRefused) {
  api::Job job = CreateJob("again");
  auto wl = BuildWorkload(job, {});
  ASSERT_TRUE(wl.ok()) << wl.status().ToString();
  Must(client_->Create(kWorkloads, ns_, *wl, {}));
  workloads_.push_back((*wl)["metadata"]["name"]);
  auto again = client_->Create(kWorkloads, ns_, *BuildWorkload(job, {}), {});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists) << again.status().ToString();
}

}  // namespace
}  // namespace ayatori::kueue
