// Spec matrix (docs/design.md § The test matrix), category 未知 (unknown results), on the real API
// server: an unreachable backend makes a Job ResultUnknown (not terminal: no completionTime, no
// TTL); when the backend answers again the Job is Running again and ends with its true result; only
// an administrator's confirmation ends a ResultUnknown Job with BackendLost, and only once it is
// ResultUnknown.
#include "test/controller/controller_fixture.h"

namespace ayatori::testing {
namespace {

class Unknown : public ControllerTest {};

// Spec rows: 未知 | Ensure/Observe 超时且结果不明 | 保持非终态，不设 completionTime，不触发 TTL;
// 未知 | 后端恢复后找回运行任务 | 从 ResultUnknown 返回 Running.
TEST_F(Unknown, BackendUnreachableWhileRunning) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("unreachable", &job, {{"ttlSecondsAfterFinished", 1}}));
  const std::string uid = job.metadata.uid;
  const auto startTime = job.status.startTime;
  Backend().SetUnreachable(true);
  ASSERT_TRUE(Touch("unreachable"));  // any event makes the controller look
  ASSERT_TRUE(WaitFor("unreachable", SucceededIs(ConditionStatus::kUnknown, "ResultUnknown"),
                      "Succeeded=Unknown/ResultUnknown", &job));
  EXPECT_FALSE(job.status.completionTime.has_value()) << Describe(job);
  EXPECT_FALSE(job.status.result.has_value()) << Describe(job);
  EXPECT_EQ(job.status.startTime, startTime);
  // Not terminal: the TTL of 1 s never applies, however long the backend stays away.
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto j = H().GetJob(ns_, "unreachable");
        return j.ok() && !j->metadata.deletionTimestamp && !j->status.completionTime &&
               HasCondition(*j, api::kConditionSucceeded, ConditionStatus::kUnknown,
                            "ResultUnknown");
      },
      2500ms, kApiPoll))
      << Describe(Get("unreachable"));

  Backend().SetUnreachable(false);
  ASSERT_TRUE(WaitFor("unreachable", IsRunning, "Running again", &job));
  EXPECT_EQ(job.status.startTime, startTime);
  // A TTL the polls below cannot miss: the result is read before the Job may go (the TTL counts
  // from the backend's finish time, which a loaded machine reports late).
  ASSERT_TRUE(Patch("unreachable", {{"spec", {{"ttlSecondsAfterFinished", 3600}}}}));
  Backend().FinishExecution(uid, 0);
  ASSERT_TRUE(WaitFor("unreachable", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &job));
  EXPECT_EQ(job.status.result->exitCode, 0);
  EXPECT_EQ(Backend().Creations(uid), 1);
  // Terminal now: the TTL applies.
  ASSERT_TRUE(Patch("unreachable", {{"spec", {{"ttlSecondsAfterFinished", 1}}}}));
  EXPECT_TRUE(WaitGone("unreachable"));
}

// Spec row: 未知 | 管理员确认执行丢失 | 只在确认后进入 Failed/BackendLost.
TEST_F(Unknown, AdminConfirmsBackendLost) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("lost", &job));
  const std::string uid = job.metadata.uid;
  Backend().SetUnreachable(true);
  ASSERT_TRUE(Touch("lost"));
  ASSERT_TRUE(WaitFor("lost", SucceededIs(ConditionStatus::kUnknown, "ResultUnknown"),
                      "ResultUnknown", &job));
  // Without a confirmation it stays ResultUnknown.
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto j = H().GetJob(ns_, "lost");
        return j.ok() && !IsFinished(*j);
      },
      1s, kApiPoll));
  ASSERT_TRUE(Patch("lost", {{"metadata",
                              {{"annotations",
                                {{api::kConfirmBackendLostAnnotation,
                                  std::to_string(job.status.resultUnknownEpisode) +
                                      ":admin@example.com: the test backend is gone"}}}}}}));
  ASSERT_TRUE(WaitFor("lost", SucceededIs(ConditionStatus::kFalse, "BackendLost"),
                      "Succeeded=False/BackendLost", &job));
  ASSERT_TRUE(job.status.completionTime.has_value());
  EXPECT_GE(*job.status.completionTime, *job.status.startTime);
  ASSERT_TRUE(job.status.result.has_value());
  EXPECT_EQ(job.status.result->reason, "BackendLost");
  EXPECT_FALSE(job.status.result->exitCode.has_value());
  const api::Condition* s = FindCondition(job, api::kConditionSucceeded);
  EXPECT_NE(s->message.find("the test backend is gone"), std::string::npos) << s->message;

  // The backend comes back with the process still running: the confirmed end is final.
  Backend().SetUnreachable(false);
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto j = H().GetJob(ns_, "lost");
        return j.ok() &&
               HasCondition(*j, api::kConditionSucceeded, ConditionStatus::kFalse, "BackendLost");
      },
      1s, kApiPoll));
  EXPECT_EQ(Backend().Creations(uid), 1);
  // Let the orphaned process end so the cleanup of the namespace can remove the execution.
  Backend().FinishExecution(uid, 0);
}

// issue 12: a confirmation confirms one ResultUnknown episode. Left on the Job through two
// outages, the one it named and a later one, it does not fail the Job in the second.
TEST_F(Unknown, ConfirmationLeftOnDoesNotEndTheNextOutage) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("twice", &job));
  const std::string uid = job.metadata.uid;
  Backend().SetUnreachable(true);
  ASSERT_TRUE(Touch("twice"));
  ASSERT_TRUE(WaitFor("twice", SucceededIs(ConditionStatus::kUnknown, "ResultUnknown"),
                      "ResultUnknown (first outage)", &job));
  const int64_t first = job.status.resultUnknownEpisode;
  EXPECT_EQ(first, 1) << Describe(job);
  Backend().SetUnreachable(false);
  ASSERT_TRUE(Touch("twice"));
  ASSERT_TRUE(WaitFor("twice", SucceededIs(ConditionStatus::kUnknown, "Running"),
                      "Running again after the first outage", &job));
  // A confirmation of the first outage that lands after it ended (it raced the recovery, or no
  // admission policy guards the Job) stays on the Job.
  ASSERT_TRUE(Patch("twice", {{"metadata",
                               {{"annotations",
                                 {{api::kConfirmBackendLostAnnotation,
                                   std::to_string(first) + ":admin: first outage"}}}}}}));
  // The annotation stays on. The second outage is a new episode, which it does not confirm.
  Backend().SetUnreachable(true);
  ASSERT_TRUE(Touch("twice"));
  ASSERT_TRUE(WaitFor("twice", SucceededIs(ConditionStatus::kUnknown, "ResultUnknown"),
                      "ResultUnknown (second outage)", &job));
  EXPECT_EQ(job.status.resultUnknownEpisode, first + 1) << Describe(job);
  EXPECT_TRUE(HoldsFor(
      [&] {
        H().controller().Enqueue(ns_, "twice");
        auto j = H().GetJob(ns_, "twice");
        return j.ok() && !IsFinished(*j);
      },
      1500ms, kApiPoll))
      << Describe(Get("twice"));
  // The backend returns and the Job ends with its true result.
  Backend().SetUnreachable(false);
  Backend().FinishExecution(uid, 0);
  ASSERT_TRUE(Touch("twice"));
  ASSERT_TRUE(WaitFor("twice", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True/Completed", &job));
  EXPECT_EQ(Backend().Creations(uid), 1);
}

// The confirmation counts only for a Job in ResultUnknown: on a Job whose backend answers it
// changes nothing, and the Job ends with its true result.
TEST_F(Unknown, ConfirmationIgnoredBeforeResultUnknown) {
  api::Job job;
  ASSERT_TRUE(CreateRunning("not-lost", &job));
  const std::string uid = job.metadata.uid;
  ASSERT_TRUE(Patch(
      "not-lost",
      {{"metadata", {{"annotations", {{api::kConfirmBackendLostAnnotation, "1:too early"}}}}}}));
  H().controller().Enqueue(ns_, "not-lost");
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto j = H().GetJob(ns_, "not-lost");
        return j.ok() && IsRunning(*j);
      },
      1500ms, kApiPoll))
      << Describe(Get("not-lost"));
  EXPECT_TRUE(Backend().IsRunning(uid));
  Backend().FinishExecution(uid, 0);
  ASSERT_TRUE(WaitFor("not-lost", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True/Completed", &job));
  EXPECT_EQ(Backend().Creations(uid), 1);
}

}  // namespace
}  // namespace ayatori::testing
