// Spec matrix (docs/design.md § The test matrix), categories 取消 (cancel), 竞态 (race) and 超时
// (deadline), on the real API server: desiredState=Cancelled in each phase ends the Job Cancelled
// only once nothing runs and nothing will be created; a success the backend confirmed first is not
// overwritten by a cancel; an expired activeDeadlineSeconds stops the execution and ends
// DeadlineExceeded after the stop.
#include "test/controller/controller_fixture.h"

namespace ayatori::testing {
namespace {

class CancelInPhase : public ControllerTest {
 protected:
  void TearDown() override {
    if (!className_.empty()) (void)H().DeleteJobClass(className_);
    ControllerTest::TearDown();
  }
  std::string className_;
};

// Spec row: 取消 | 在解析、调度、启动、运行阶段取消 | 不再创建或确认停止后才进入 Cancelled.

TEST_F(CancelInPhase, Resolving) {
  className_ = ns_ + "-later";
  api::Job job = Create("resolving", {{"jobClassName", className_}});
  ASSERT_TRUE(WaitFor("resolving", AcceptedIs(ConditionStatus::kFalse, "JobClassNotFound"),
                      "Resolving", &job));
  ASSERT_TRUE(Cancel("resolving"));
  ASSERT_TRUE(WaitFor("resolving", SucceededIs(ConditionStatus::kFalse, "Cancelled"),
                      "Succeeded=False/Cancelled", &job));
  EXPECT_TRUE(job.status.completionTime.has_value());
  EXPECT_FALSE(job.status.startTime.has_value());
  // The class appearing now must not start anything.
  ASSERT_TRUE(H().ApplyJobClass(className_).ok());
  const std::string uid = job.metadata.uid;
  EXPECT_TRUE(HoldsFor(
      [&] { return Calls(uid, Call::kEnsure) == 0 && Backend().Creations(uid) == 0; }, 1500ms));
  EXPECT_FALSE(Get("resolving").status.resolvedJobClass.has_value());
}

// Scheduling: Accepted=True persisted, the Ensure made, its answer never written (the controller
// died); the Job is cancelled while the controller is down. The restarted controller cancels the
// execution it finds by UID and never Ensures again.
TEST_F(CancelInPhase, Scheduling) {
  H().ArmCrash(controller::kCrashAfterEnsure, ns_, "scheduling");
  api::Job job = Create("scheduling");
  const std::string uid = job.metadata.uid;
  ASSERT_TRUE(H().WaitCrashed());
  ASSERT_TRUE(Cancel("scheduling"));
  ASSERT_TRUE(H().RestartController().ok());
  ASSERT_TRUE(WaitFor("scheduling", SucceededIs(ConditionStatus::kFalse, "Cancelled"),
                      "Succeeded=False/Cancelled", &job));
  EXPECT_FALSE(Backend().IsRunning(uid));
  EXPECT_EQ(Backend().Creations(uid), 1);
  EXPECT_EQ(Backend().EnsureCalls(uid), 1) << "an Ensure after the cancel";
  Backend().StartExecution(uid);  // a late start of the backend must not revive it
  EXPECT_FALSE(Backend().IsRunning(uid));
}

// Starting: the execution exists but has not started.
TEST_F(CancelInPhase, Starting) {
  api::Job job = Create("starting");
  ASSERT_TRUE(WaitFor("starting", IsScheduled, "Scheduled", &job));
  const std::string uid = job.metadata.uid;
  ASSERT_TRUE(Cancel("starting"));
  ASSERT_TRUE(WaitFor("starting", SucceededIs(ConditionStatus::kFalse, "Cancelled"),
                      "Succeeded=False/Cancelled", &job));
  EXPECT_FALSE(job.status.startTime.has_value());
  EXPECT_TRUE(job.status.completionTime.has_value());
  EXPECT_FALSE(Backend().IsRunning(uid));
  Backend().StartExecution(uid);
  EXPECT_FALSE(Backend().IsRunning(uid)) << "the cancelled execution could still start";
  EXPECT_EQ(Backend().Creations(uid), 1);
  EXPECT_EQ(Backend().EnsureCalls(uid), 1);
}

TEST_F(CancelInPhase, Running) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("running", &job));
  const std::string uid = job.metadata.uid;
  ASSERT_TRUE(Cancel("running"));
  ASSERT_TRUE(WaitFor("running", SucceededIs(ConditionStatus::kFalse, "Cancelled"),
                      "Succeeded=False/Cancelled", &job));
  EXPECT_FALSE(Backend().IsRunning(uid));
  ASSERT_TRUE(job.status.completionTime && job.status.startTime);
  EXPECT_GE(*job.status.completionTime, *job.status.startTime);
  EXPECT_EQ(job.status.result->reason, "Cancelled");
  EXPECT_EQ(Backend().Creations(uid), 1);
  EXPECT_EQ(Backend().EnsureCalls(uid), 1);
}

// Cancelled only after the backend confirmed the stop: while it ignores the request the Job stays
// active (Cancelling), however often the controller asks.
TEST_F(CancelInPhase, RunningBackendSlowToStop) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("slow", &job));
  const std::string uid = job.metadata.uid;
  Backend().SetIgnoreCancel(true);
  ASSERT_TRUE(Cancel("slow"));
  ASSERT_TRUE(Eventually([&] { return Calls(uid, Call::kCancel) >= 2; }, 20s))
      << "the controller did not keep asking the backend to stop";
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto j = H().GetJob(ns_, "slow");
        return j.ok() && !IsFinished(*j);
      },
      1s, kApiPoll))
      << Describe(Get("slow"));
  EXPECT_TRUE(Backend().IsRunning(uid));
  Backend().SetIgnoreCancel(false);
  ASSERT_TRUE(WaitFor("slow", SucceededIs(ConditionStatus::kFalse, "Cancelled"),
                      "Succeeded=False/Cancelled", &job));
  EXPECT_FALSE(Backend().IsRunning(uid));
}

class Race : public ControllerTest {};

// Spec row: 竞态 | 取消与成功完成并发 | 已确认成功不被取消覆盖. The process exits 0 and the cancel
// arrives at the same moment, while the controller is down: the backend's success came first.
TEST_F(Race, CancelAndSuccessWhileControllerDown) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("race", &job));
  const std::string uid = job.metadata.uid;
  H().StopController();
  Backend().FinishExecution(uid, 0);
  ASSERT_TRUE(Cancel("race"));
  ASSERT_TRUE(H().StartController().ok());
  ASSERT_TRUE(
      WaitFor("race", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
  EXPECT_EQ(job.status.result->exitCode, 0);
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto j = H().GetJob(ns_, "race");
        return j.ok() &&
               HasCondition(*j, api::kConditionSucceeded, ConditionStatus::kTrue, "Completed");
      },
      1s, kApiPoll));
}

// The same with the controller running: finish and cancel back to back.
TEST_F(Race, CancelAndSuccessBackToBack) {
  for (int i = 0; i < 3; ++i) {
    const std::string name = "race-" + std::to_string(i);
    api::Job job;
    ASSERT_TRUE(CreateRunning(name, &job));
    Backend().FinishExecution(job.metadata.uid, 0);
    ASSERT_TRUE(Cancel(name));
    ASSERT_TRUE(
        WaitFor(name, SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
    EXPECT_EQ(job.status.result->exitCode, 0);
  }
}

class Deadline : public ControllerTest {};

// Spec row: 超时 | active deadline 到期 | 请求取消，确认停止后 DeadlineExceeded.
TEST_F(Deadline, ActiveDeadlineExpires) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("deadline", &job, {{"activeDeadlineSeconds", 2}}));
  const std::string uid = job.metadata.uid;
  ASSERT_TRUE(job.status.startTime.has_value());
  const api::Time startTime = *job.status.startTime;
  // The backend is slow to stop: past the deadline the Job stays active until it confirms.
  Backend().SetIgnoreCancel(true);
  ASSERT_TRUE(Eventually([&] { return Calls(uid, Call::kCancel) >= 1; }, 10s))
      << "no Cancel after the deadline: " << Describe(Get("deadline"));
  EXPECT_GE(std::chrono::system_clock::now(), startTime + std::chrono::seconds(2))
      << "cancelled before the deadline";
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto j = H().GetJob(ns_, "deadline");
        return j.ok() && !IsFinished(*j);
      },
      1s, kApiPoll))
      << "finished before the backend confirmed the stop: " << Describe(Get("deadline"));
  Backend().SetIgnoreCancel(false);
  ASSERT_TRUE(WaitFor("deadline", SucceededIs(ConditionStatus::kFalse, "DeadlineExceeded"),
                      "Succeeded=False/DeadlineExceeded", &job));
  EXPECT_FALSE(Backend().IsRunning(uid));
  ASSERT_TRUE(job.status.completionTime.has_value());
  EXPECT_GE(*job.status.completionTime, startTime + std::chrono::seconds(2));
  EXPECT_EQ(job.status.result->reason, "DeadlineExceeded");
  EXPECT_EQ(Backend().Creations(uid), 1);
}

// The deadline counts from startTime, not from creation: time spent Starting does not count.
TEST_F(Deadline, CountsFromStartTime) {
  api::Job job = Create("late-start", {{"activeDeadlineSeconds", 1}});
  ASSERT_TRUE(WaitFor("late-start", IsScheduled, "Scheduled", &job));
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto j = H().GetJob(ns_, "late-start");
        return j.ok() && !IsFinished(*j);
      },
      2s, kApiPoll))
      << Describe(Get("late-start"));
  Backend().StartExecution(job.metadata.uid);
  ASSERT_TRUE(WaitFor("late-start", SucceededIs(ConditionStatus::kFalse, "DeadlineExceeded"),
                      "DeadlineExceeded", &job, 10s));
  EXPECT_GE(*job.status.completionTime, *job.status.startTime + std::chrono::seconds(1));
}

}  // namespace
}  // namespace ayatori::testing
