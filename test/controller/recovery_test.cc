// Spec matrix (docs/design.md § The test matrix), row 恢复 | controller 在各非终态重启 | 从持久
// status/reference 恢复正确状态: the controller is stopped in each non-terminal state (Resolving,
// Scheduling, Starting, Running, Cancelling, ResultUnknown), the world may change while it is down,
// and a new instance carries the Job on from what the API server persisted, with the one execution
// it already has.
#include "test/controller/controller_fixture.h"

namespace ayatori::testing {
namespace {

class Recovery : public ControllerTest {
 protected:
  void TearDown() override {
    if (!className_.empty()) (void)H().DeleteJobClass(className_);
    ControllerTest::TearDown();
  }
  std::string className_;
};

TEST_F(Recovery, RestartInResolving) {
  className_ = ns_ + "-late";
  api::Job job = Create("resolving", {{"jobClassName", className_}});
  ASSERT_TRUE(WaitFor("resolving", AcceptedIs(ConditionStatus::kFalse, "JobClassNotFound"),
                      "Resolving (JobClassNotFound)", &job));
  H().StopController();
  ASSERT_TRUE(H().ApplyJobClass(className_).ok());  // appears while nobody watches
  ASSERT_TRUE(H().StartController().ok());
  ASSERT_TRUE(WaitFor("resolving", IsScheduled, "Scheduled", &job));
  EXPECT_EQ(job.status.resolvedJobClass->name, className_);
  Backend().FinishExecution(job.metadata.uid, 0);
  ASSERT_TRUE(WaitFor("resolving", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &job));
  EXPECT_EQ(Backend().Creations(job.metadata.uid), 1);
}

// Scheduling persisted (Accepted=True, no Scheduled): the controller died after its Ensure; the
// process started while it was down.
TEST_F(Recovery, RestartInScheduling) {
  H().ArmCrash(controller::kCrashAfterEnsure, ns_, "scheduling");
  api::Job job = Create("scheduling");
  const std::string uid = job.metadata.uid;
  ASSERT_TRUE(H().WaitCrashed());
  job = Get("scheduling");
  ASSERT_TRUE(HasCondition(job, api::kConditionAccepted, ConditionStatus::kTrue, "Valid"));
  ASSERT_FALSE(api::IsConditionTrue(job.status.conditions, api::kConditionScheduled));
  Backend().StartExecution(uid);
  ASSERT_TRUE(H().RestartController().ok());
  ASSERT_TRUE(WaitFor("scheduling", IsRunning, "Running", &job));
  EXPECT_EQ(Backend().Creations(uid), 1);
  Backend().FinishExecution(uid, 0);
  ASSERT_TRUE(WaitFor("scheduling", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &job));
  EXPECT_EQ(Backend().Creations(uid), 1);
}

// Starting (Scheduled, no startTime): restarted while the execution is still pending, it waits
// for the process to start; no second Ensure (the references are persisted).
TEST_F(Recovery, RestartInStarting) {
  api::Job job = Create("starting");
  ASSERT_TRUE(WaitFor("starting", IsScheduled, "Scheduled", &job));
  const std::string uid = job.metadata.uid;
  ASSERT_FALSE(job.status.startTime.has_value());
  ASSERT_TRUE(H().RestartController().ok());
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto j = H().GetJob(ns_, "starting");
        return j.ok() &&
               HasCondition(*j, api::kConditionSucceeded, ConditionStatus::kUnknown, "Scheduling");
      },
      500ms, kApiPoll));
  Backend().StartExecution(uid);
  ASSERT_TRUE(WaitFor("starting", IsRunning, "Running", &job));
  Backend().FinishExecution(uid, 4);
  ASSERT_TRUE(WaitFor("starting", SucceededIs(ConditionStatus::kFalse, "ProcessFailed"),
                      "Succeeded=False/ProcessFailed", &job));
  EXPECT_EQ(job.status.result->exitCode, 4);
  EXPECT_EQ(Backend().Creations(uid), 1);
  EXPECT_EQ(Backend().EnsureCalls(uid), 1);
}

// Running: the process finishes while the controller is down; the new one observes the result
// (with the backend's times) instead of anything invented.
TEST_F(Recovery, RestartInRunning) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("running", &job));
  const std::string uid = job.metadata.uid;
  const auto startTime = job.status.startTime;
  H().StopController();
  Backend().FinishExecution(uid, 0);
  ASSERT_TRUE(H().StartController().ok());
  ASSERT_TRUE(
      WaitFor("running", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
  EXPECT_EQ(job.status.startTime, startTime);
  ASSERT_TRUE(job.status.completionTime.has_value());
  EXPECT_GE(*job.status.completionTime, *startTime);
  EXPECT_EQ(job.status.result->exitCode, 0);
  EXPECT_EQ(Backend().Creations(uid), 1);
  EXPECT_EQ(Backend().EnsureCalls(uid), 1);
}

// Cancelling: the controller asked the backend to stop, the backend did not stop yet, and the
// controller restarted; the new one keeps asking and ends Cancelled once the backend confirms.
TEST_F(Recovery, RestartInCancelling) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("cancelling", &job));
  const std::string uid = job.metadata.uid;
  Backend().SetIgnoreCancel(true);
  ASSERT_TRUE(Cancel("cancelling"));
  ASSERT_TRUE(Eventually([&] { return Calls(uid, Call::kCancel) >= 1; }, 20s))
      << "the controller never asked the backend to cancel";
  job = Get("cancelling");
  EXPECT_FALSE(IsFinished(job)) << "Cancelled before the backend confirmed: " << Describe(job);
  H().StopController();
  Backend().SetIgnoreCancel(false);
  ASSERT_TRUE(H().StartController().ok());
  ASSERT_TRUE(WaitFor("cancelling", SucceededIs(ConditionStatus::kFalse, "Cancelled"),
                      "Succeeded=False/Cancelled", &job));
  EXPECT_FALSE(Backend().IsRunning(uid));
  EXPECT_EQ(Backend().Creations(uid), 1);
  EXPECT_EQ(Backend().EnsureCalls(uid), 1);
}

// ResultUnknown: the backend went away while the Job ran, the controller restarted, the backend
// came back with the execution still running: Running again, then the true result.
TEST_F(Recovery, RestartInResultUnknown) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("unknown", &job));
  const std::string uid = job.metadata.uid;
  Backend().SetUnreachable(true);
  ASSERT_TRUE(Touch("unknown"));
  ASSERT_TRUE(WaitFor("unknown", SucceededIs(ConditionStatus::kUnknown, "ResultUnknown"),
                      "ResultUnknown", &job));
  H().StopController();
  Backend().SetUnreachable(false);
  ASSERT_TRUE(H().StartController().ok());
  ASSERT_TRUE(WaitFor("unknown", IsRunning, "Running again", &job));
  Backend().FinishExecution(uid, 0);
  ASSERT_TRUE(
      WaitFor("unknown", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
  EXPECT_EQ(Backend().Creations(uid), 1);
  EXPECT_EQ(Backend().EnsureCalls(uid), 1);
}

}  // namespace
}  // namespace ayatori::testing
