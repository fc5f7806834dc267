// Spec matrix (docs/design.md § The test matrix), category 幂等 (idempotency), on the real API
// server: a crash between Ensure and the status write, a lost Ensure response, and floods of
// duplicate events never create a second execution nor change a finished Job's times.
#include "test/controller/controller_fixture.h"

namespace ayatori::testing {
namespace {

class Idempotency : public ControllerTest {};

// Spec row: 幂等 | Ensure 成功但 status 写入前崩溃 | 通过 UID 找回，不能创建第二次执行.
TEST_F(Idempotency, CrashAfterEnsureBeforeStatusWrite) {
  H().ArmCrash(controller::kCrashAfterEnsure, ns_, "crash");
  api::Job job = Create("crash");
  const std::string uid = job.metadata.uid;
  ASSERT_TRUE(H().WaitCrashed()) << "the crash point " << controller::kCrashAfterEnsure
                                 << " never fired";
  EXPECT_EQ(H().crashedUid(), uid);
  // The backend has the execution; the API server does not know it (Scheduling persisted).
  EXPECT_EQ(Backend().Creations(uid), 1);
  job = Get("crash");
  EXPECT_TRUE(HasCondition(job, api::kConditionAccepted, ConditionStatus::kTrue, "Valid"))
      << Describe(job);
  EXPECT_FALSE(api::IsConditionTrue(job.status.conditions, api::kConditionScheduled))
      << Describe(job);
  EXPECT_TRUE(!job.status.execution || job.status.execution->references.empty()) << Describe(job);

  ASSERT_TRUE(H().RestartController().ok());
  ASSERT_TRUE(WaitFor("crash", IsScheduled, "Scheduled after the restart", &job));
  EXPECT_EQ(Backend().Creations(uid), 1) << "the restarted controller created a second execution";
  EXPECT_EQ(Backend().EnsureCalls(uid), 2) << "expected one Ensure per controller instance";
  Backend().StartExecution(uid);
  Backend().FinishExecution(uid, 0);
  ASSERT_TRUE(
      WaitFor("crash", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
  ASSERT_TRUE(job.status.result.has_value());
  EXPECT_EQ(job.status.result->exitCode, 0);
  EXPECT_TRUE(job.status.startTime && job.status.completionTime) << Describe(job);
  EXPECT_EQ(Backend().Creations(uid), 1);
}

// The Ensure request reached the backend but its answer was lost (a timeout): the Job is
// ResultUnknown, never re-created; the next Ensure adopts the execution by UID.
TEST_F(Idempotency, LostEnsureResponse) {
  Backend().LoseNextEnsureResponse();
  api::Job job = Create("lost", {{"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "1"}})}}}});
  ASSERT_TRUE(
      WaitFor("lost", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
  EXPECT_EQ(Backend().Creations(job.metadata.uid), 1);
  EXPECT_GE(Backend().EnsureCalls(job.metadata.uid), 2);
  ASSERT_TRUE(job.status.execution.has_value());
  EXPECT_EQ(job.status.execution->references.size(), 1u) << Describe(job);
}

// Spec row: 幂等 | 重复 reconcile 与重复事件 | 不产生额外执行，不改变终态时间.
TEST_F(Idempotency, DuplicateEventsAndReconciles) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("dup", &job));
  const std::string uid = job.metadata.uid;
  const auto startTime = job.status.startTime;
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(Touch("dup"));
    H().controller().Enqueue(ns_, "dup");
  }
  Backend().FinishExecution(uid, 0);
  ASSERT_TRUE(
      WaitFor("dup", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
  EXPECT_EQ(Backend().Creations(uid), 1);
  EXPECT_EQ(Backend().EnsureCalls(uid), 1) << "references were persisted: later rounds Observe";
  EXPECT_EQ(job.status.startTime, startTime);
  const api::JobStatus finished = job.status;
  const uint64_t writes = ControllerWrites("dup");
  auto callsNow = [&] {
    return Calls(uid, Call::kEnsure) + Calls(uid, Call::kObserve) + Calls(uid, Call::kCancel) +
           Calls(uid, Call::kDelete);
  };
  const int calls = callsNow();

  // More duplicates after the end: nothing moves, nothing is written, the backend is not asked.
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(Touch("dup"));
    H().controller().Enqueue(ns_, "dup");
  }
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto now = H().GetJob(ns_, "dup");
        return now.ok() && now->status == finished && ControllerWrites("dup") == writes &&
               callsNow() == calls;
      },
      1500ms, kApiPoll))
      << "a finished Job changed or cost writes/calls after duplicate events: "
      << Describe(Get("dup")) << " writes " << ControllerWrites("dup") << " (was " << writes
      << "), adapter calls " << callsNow() << " (was " << calls << ")";
  EXPECT_EQ(Backend().Creations(uid), 1);
}

}  // namespace
}  // namespace ayatori::testing
