// Queued Jobs and the controller's crash points (controller/reconciler.h) with a real Kueue
// (fixture "kueue"): the in-process controller, run with queueing on, "crashes" at a point while
// a queued Job goes through it and is started again; the Job still runs exactly once and its
// Workload ends Finished. test/statemachine/kueue_property_test.cc plays every step against a
// fake Kueue; this is the same protocol against Kueue itself.
#include "test/controller/controller_fixture.h"
#include "test/e2e/kueue_objects.h"
#include "test/support/wait.h"

namespace ayatori::testing {
namespace {

const ResourceRef kFlavors{"kueue.x-k8s.io", "v1beta2", "resourceflavors", false};
const ResourceRef kClusterQueues{"kueue.x-k8s.io", "v1beta2", "clusterqueues", false};
const ResourceRef kLocalQueues{"kueue.x-k8s.io", "v1beta2", "localqueues", true};

class KueueCrash : public ControllerTest, public ::testing::WithParamInterface<const char*> {
 protected:
  bool StartControllerInSetUp() const override { return false; }

  void SetUp() override {
    ControllerTest::SetUp();
    if (HasFatalFailure()) return;
    auto& c = H().client();
    ASSERT_TRUE(c.Create(kFlavors, "", e2e::KueueResourceFlavor(ns_), {}).ok());
    ASSERT_TRUE(c.Create(kClusterQueues, "",
                         e2e::KueueClusterQueue(
                             ns_, nlohmann::json::array({e2e::KueueFlavorQuotas(ns_, 1)})),
                         {})
                    .ok());
    ASSERT_TRUE(c.Create(kLocalQueues, ns_, e2e::KueueLocalQueue(ns_, ns_, ns_), {}).ok());
    ControllerSettings settings;
    settings.kueue = true;
    Status s = H().StartController(settings);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  void TearDown() override {
    ControllerTest::TearDown();
    (void)H().client().Delete(kClusterQueues, "", ns_, {});
    (void)H().client().Delete(kFlavors, "", ns_, {});
  }

  // The Job's Workload, if any.
  std::optional<nlohmann::json> Workload(const std::string& uid) {
    auto w = H().client().Get(controller::kWorkloads, ns_, "ajob-" + uid);
    return w.ok() ? std::optional<nlohmann::json>(*w) : std::nullopt;
  }
};

TEST_P(KueueCrash, AQueuedJobRunsOnceAcrossACrash) {
  // Only once the Job is queued (its Admitted condition persisted): before-status-write then
  // fires at the write of Admitted=True, after-ensure right after the create it allowed.
  H().ArmCrash(GetParam(), [ns = ns_](const api::Job& j) {
    return j.metadata.namespace_ == ns && api::FindCondition(j.status.conditions, "Admitted");
  });
  nlohmann::json manifest = JobManifest(ns_, "queued", nlohmann::json::object());
  manifest["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", ns_}};
  auto created = H().CreateJob(manifest);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  api::Job job = *created;
  const std::string uid = job.metadata.uid;
  ASSERT_TRUE(H().WaitCrashed()) << "no crash at " << GetParam();
  ASSERT_TRUE(H().RestartController().ok());  // with queueing on again
  ASSERT_TRUE(WaitFor("queued", IsScheduled, "Scheduled", &job)) << Describe(job);
  Backend().StartExecution(uid);  // the test backend's process starts when the test says so
  ASSERT_TRUE(WaitFor("queued", IsRunning, "Running", &job)) << Describe(job);
  EXPECT_TRUE(api::IsConditionTrue(job.status.conditions, "Admitted")) << Describe(job);
  Backend().FinishExecution(uid, 0);
  ASSERT_TRUE(
      WaitFor("queued", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
  EXPECT_EQ(Backend().Creations(uid), 1);
  EXPECT_TRUE(Eventually(
      [&] {
        auto w = Workload(uid);
        if (!w) return false;
        for (const auto& c : w->value("/status/conditions"_json_pointer, nlohmann::json::array())) {
          if (c.value("type", "") == "Finished") return c.value("status", "") == "True";
        }
        return false;
      },
      30s))
      << "the Workload was not Finished";
}

INSTANTIATE_TEST_SUITE_P(CrashPoints, KueueCrash,
                         ::testing::Values(controller::kCrashBeforeStatusWrite,
                                           controller::kCrashAfterEnsure));

}  // namespace
}  // namespace ayatori::testing
