// Spec matrix (docs/design.md § The test matrix), category 删除 (deletion), on the real API server:
// a Job deleted in any non-terminal state stays (deletionTimestamp + finalizer) until the
// controller stopped and removed its execution, then disappears; an unreachable backend keeps the
// finalizer.
#include "test/controller/controller_fixture.h"

namespace ayatori::testing {
namespace {

class Deletion : public ControllerTest {
 protected:
  void TearDown() override {
    if (!className_.empty()) (void)H().DeleteJobClass(className_);
    ControllerTest::TearDown();
  }

  // The Job is being deleted but kept by our finalizer, for `window`.
  ::testing::AssertionResult StaysWithFinalizer(const std::string& name,
                                                std::chrono::milliseconds window) {
    api::Job last;
    bool held = HoldsFor(
        [&] {
          auto j = H().GetJob(ns_, name);
          if (!j.ok()) return false;
          last = *j;
          return j->metadata.deletionTimestamp.has_value() && HasOurFinalizer(*j);
        },
        window, kApiPoll);
    if (held) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "Job " << name << " did not stay with its finalizer; last seen: " << Describe(last);
  }

  // Deletes the Job and checks that when it is gone, its execution is gone too.
  void DeleteAndExpectCleanedUp(const std::string& name, const std::string& uid) {
    ASSERT_TRUE(Delete(name));
    ASSERT_TRUE(WaitGone(name));
    EXPECT_FALSE(Backend().Exists(uid)) << "the Job disappeared before its execution was deleted";
  }

  std::string className_;
};

// Spec row: 删除 | 每个非终态阶段删除 | finalizer 清理完成前对象不消失.

TEST_F(Deletion, InResolving) {
  className_ = ns_ + "-never";
  api::Job job = Create("resolving", {{"jobClassName", className_}});
  ASSERT_TRUE(WaitFor(
      "resolving",
      [](const api::Job& j) {
        return HasOurFinalizer(j) && HasCondition(j, api::kConditionAccepted,
                                                  ConditionStatus::kFalse, "JobClassNotFound");
      },
      "Resolving with the finalizer", &job));
  // Never accepted, so nothing can exist on the backend: the finalizer goes at once.
  ASSERT_TRUE(Delete("resolving"));
  ASSERT_TRUE(WaitGone("resolving"));
  EXPECT_EQ(Calls(job.metadata.uid, Call::kEnsure), 0);
  EXPECT_EQ(Backend().Creations(job.metadata.uid), 0);
}

// Scheduling (Ensure made, answer never persisted): deleted while the controller is down, the
// Job waits; the restarted controller finds the execution by UID, stops and removes it.
TEST_F(Deletion, InScheduling) {
  H().ArmCrash(controller::kCrashAfterEnsure, ns_, "scheduling");
  api::Job job = Create("scheduling");
  const std::string uid = job.metadata.uid;
  ASSERT_TRUE(H().WaitCrashed());
  ASSERT_TRUE(Delete("scheduling"));
  EXPECT_TRUE(StaysWithFinalizer("scheduling", 1s));
  EXPECT_TRUE(Backend().Exists(uid));
  ASSERT_TRUE(H().RestartController().ok());
  ASSERT_TRUE(WaitGone("scheduling"));
  EXPECT_FALSE(Backend().Exists(uid));
  EXPECT_EQ(Backend().Creations(uid), 1);
}

TEST_F(Deletion, InStarting) {
  api::Job job = Create("starting");
  ASSERT_TRUE(WaitFor("starting", IsScheduled, "Scheduled", &job));
  const std::string uid = job.metadata.uid;
  Backend().SetIgnoreCancel(true);
  ASSERT_TRUE(Delete("starting"));
  EXPECT_TRUE(StaysWithFinalizer("starting", 1500ms));
  EXPECT_TRUE(Backend().Exists(uid));
  Backend().SetIgnoreCancel(false);
  ASSERT_TRUE(WaitGone("starting"));
  EXPECT_FALSE(Backend().Exists(uid));
}

TEST_F(Deletion, InRunning) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("running", &job));
  const std::string uid = job.metadata.uid;
  Backend().SetIgnoreCancel(true);
  ASSERT_TRUE(Delete("running"));
  EXPECT_TRUE(StaysWithFinalizer("running", 1500ms));
  EXPECT_TRUE(Backend().IsRunning(uid));
  Backend().SetIgnoreCancel(false);
  ASSERT_TRUE(WaitGone("running"));
  EXPECT_FALSE(Backend().Exists(uid));
  EXPECT_EQ(Backend().Creations(uid), 1);
}

TEST_F(Deletion, InRunningPromptBackend) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("prompt", &job));
  DeleteAndExpectCleanedUp("prompt", job.metadata.uid);
}

TEST_F(Deletion, InCancelling) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("cancelling", &job));
  const std::string uid = job.metadata.uid;
  Backend().SetIgnoreCancel(true);
  ASSERT_TRUE(Cancel("cancelling"));
  ASSERT_TRUE(Eventually([&] { return Calls(uid, Call::kCancel) >= 1; }, 20s));
  ASSERT_TRUE(Delete("cancelling"));
  EXPECT_TRUE(StaysWithFinalizer("cancelling", 1500ms));
  EXPECT_TRUE(Backend().IsRunning(uid));
  Backend().SetIgnoreCancel(false);
  ASSERT_TRUE(WaitGone("cancelling"));
  EXPECT_FALSE(Backend().Exists(uid));
}

TEST_F(Deletion, InResultUnknown) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("unknown", &job));
  const std::string uid = job.metadata.uid;
  Backend().SetUnreachable(true);
  ASSERT_TRUE(Touch("unknown"));
  ASSERT_TRUE(WaitFor("unknown", SucceededIs(ConditionStatus::kUnknown, "ResultUnknown"),
                      "ResultUnknown", &job));
  ASSERT_TRUE(Delete("unknown"));
  EXPECT_TRUE(StaysWithFinalizer("unknown", 2s));
  Backend().SetUnreachable(false);
  ASSERT_TRUE(WaitGone("unknown"));
  EXPECT_FALSE(Backend().Exists(uid));
}

// Spec row: 删除 | 后端暂时不可达 | finalizer 保留并重试，不误报已清理.
TEST_F(Deletion, BackendUnreachable) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("unreachable", &job));
  const std::string uid = job.metadata.uid;
  Backend().SetUnreachable(true);
  ASSERT_TRUE(Delete("unreachable"));
  EXPECT_TRUE(StaysWithFinalizer("unreachable", 3s));
  job = Get("unreachable");
  EXPECT_FALSE(HasCondition(job, api::kConditionSucceeded, ConditionStatus::kFalse, "Cancelled"))
      << "reported cancelled while the backend could not confirm it: " << Describe(job);
  EXPECT_GE(Calls(uid, Call::kCancel), 2) << "the controller did not retry";
  EXPECT_TRUE(Backend().IsRunning(uid));
  Backend().SetUnreachable(false);
  ASSERT_TRUE(WaitGone("unreachable"));
  EXPECT_FALSE(Backend().Exists(uid));
  EXPECT_EQ(Backend().Creations(uid), 1);
}

// Deleting a finished Job removes its execution too (the finalizer path of every deletion).
TEST_F(Deletion, Finished) {
  api::Job job =
      Create("finished", {{"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}})}}}});
  ASSERT_TRUE(WaitFor("finished", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &job));
  EXPECT_TRUE(Backend().Exists(job.metadata.uid));
  DeleteAndExpectCleanedUp("finished", job.metadata.uid);
}

}  // namespace
}  // namespace ayatori::testing
