// Spec matrix (docs/design.md § The test matrix), category TTL, on the real API server with small
// real TTLs: a finished Job (Succeeded, Failed, Cancelled) stays until completionTime +
// ttlSecondsAfterFinished and is then deleted exactly once; a restarted controller picks the timer
// up again; a TTL extended just before it expires is re-read before the delete.
#include "test/controller/controller_fixture.h"

namespace ayatori::testing {
namespace {

using Clock = std::chrono::system_clock;

class Ttl : public ControllerTest {
 protected:
  // Waits until the Job is gone, checking on every poll that it is still there before its TTL
  // expired; then that exactly one DELETE of it succeeded.
  void ExpectDeletedAtTtl(const std::string& name, const api::Job& finished, int ttlSeconds) {
    ASSERT_TRUE(finished.status.completionTime.has_value()) << Describe(finished);
    const Clock::time_point expiry =
        *finished.status.completionTime + std::chrono::seconds(ttlSeconds);
    std::optional<Clock::time_point> goneAt;
    bool early = false;
    Eventually(
        [&] {
          auto j = H().GetJobJson(ns_, name);
          const auto now = Clock::now();
          if (j.ok()) {
            const bool deleting =
                j->contains(nlohmann::json::json_pointer("/metadata/deletionTimestamp"));
            if (deleting && now < expiry) early = true;
            return false;
          }
          if (j.status().code() != StatusCode::kNotFound) return false;
          goneAt = now;
          return true;
        },
        std::chrono::duration_cast<std::chrono::milliseconds>(expiry - Clock::now()) + 10s,
        kApiPoll);
    ASSERT_TRUE(goneAt.has_value())
        << "Job " << name << " was not deleted after its TTL of " << ttlSeconds << " s";
    EXPECT_FALSE(early) << "Job " << name << " was being deleted before its TTL expired";
    EXPECT_GE(*goneAt, expiry) << "Job " << name << " disappeared before its TTL expired";
    EXPECT_LE(*goneAt, expiry + 5s) << "Job " << name << " was deleted late";
    EXPECT_EQ(H().SuccessfulJobDeletes(ns_, name), 1);
    EXPECT_FALSE(Backend().Exists(finished.metadata.uid));
  }
};

// Spec row: TTL | 三种终态到期 | 到期前不删，到期后带 UID precondition 删除.

TEST_F(Ttl, SucceededExpires) {
  api::Job job =
      Create("succeeded", {{"ttlSecondsAfterFinished", 2},
                           {"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}})}}}});
  ASSERT_TRUE(WaitFor("succeeded", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &job));
  ExpectDeletedAtTtl("succeeded", job, 2);
}

TEST_F(Ttl, FailedExpires) {
  api::Job job = Create(
      "failed",
      {{"ttlSecondsAfterFinished", 2},
       {"task",
        {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}, {"AYATORI_TEST_EXIT_CODE", "3"}})}}}});
  ASSERT_TRUE(WaitFor("failed", SucceededIs(ConditionStatus::kFalse, "ProcessFailed"),
                      "Succeeded=False/ProcessFailed", &job));
  EXPECT_EQ(job.status.result->exitCode, 3);
  ExpectDeletedAtTtl("failed", job, 2);
}

TEST_F(Ttl, CancelledExpires) {
  api::Job job = Create("cancelled", {{"ttlSecondsAfterFinished", 2}});
  ASSERT_TRUE(WaitFor("cancelled", IsScheduled, "Scheduled", &job));
  ASSERT_TRUE(Cancel("cancelled"));
  ASSERT_TRUE(WaitFor("cancelled", SucceededIs(ConditionStatus::kFalse, "Cancelled"),
                      "Succeeded=False/Cancelled", &job));
  ExpectDeletedAtTtl("cancelled", job, 2);
}

// A Job without ttlSecondsAfterFinished is kept.
TEST_F(Ttl, NoTtlKeepsTheJob) {
  api::Job job = Create("kept", {{"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}})}}}});
  ASSERT_TRUE(
      WaitFor("kept", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
  EXPECT_TRUE(HoldsFor([&] { return H().GetJob(ns_, "kept").ok(); }, 1500ms, kApiPoll));
  EXPECT_EQ(H().SuccessfulJobDeletes(ns_, "kept"), 0);
}

// The JobClass's TTL policy (docs/jobclass.md § TTL): a Job that sets no TTL gets the class
// default, one that asks for more than the maximum gets the maximum; the status shows the TTL in
// force and the policy it came from, and the Job is deleted after that TTL.
TEST_F(Ttl, ClassDefaultAndMaximumAppliedAndShownInStatus) {
  const std::string cls = ns_ + "-ttl";
  ASSERT_TRUE(
      H().ApplyJobClass(cls, {{"ttlSecondsAfterFinished", {{"default", 2}, {"maximum", 3}}}}).ok());
  const nlohmann::json quick = {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}})}};
  api::Job byDefault = Create("by-default", {{"jobClassName", cls}, {"task", quick}});
  api::Job capped = Create(
      "capped", {{"jobClassName", cls}, {"ttlSecondsAfterFinished", 100000}, {"task", quick}});
  ASSERT_TRUE(WaitFor("by-default", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &byDefault));
  ASSERT_TRUE(WaitFor("capped", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True",
                      &capped));
  EXPECT_EQ(byDefault.status.ttlSecondsAfterFinished, 2) << Describe(byDefault);
  EXPECT_EQ(capped.status.ttlSecondsAfterFinished, 3) << Describe(capped);
  ASSERT_TRUE(capped.status.resolvedJobClass);
  EXPECT_EQ(capped.status.resolvedJobClass->ttlSecondsAfterFinished, (api::TtlPolicy{2, 3}));
  // The Job's own spec is not rewritten: the policy is visible in the status instead.
  EXPECT_FALSE(byDefault.spec.ttlSecondsAfterFinished);
  EXPECT_EQ(capped.spec.ttlSecondsAfterFinished, 100000);
  ExpectDeletedAtTtl("by-default", byDefault, 2);
  ExpectDeletedAtTtl("capped", capped, 3);
  EXPECT_TRUE(H().DeleteJobClass(cls).ok());
}

// Spec row: TTL | controller 在等待 TTL 时重启 | informer 恢复计时，最终删除一次.
TEST_F(Ttl, ControllerRestartsWhileWaiting) {
  api::Job job = Create("restart", {{"ttlSecondsAfterFinished", 3},
                                    {"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}})}}}});
  ASSERT_TRUE(
      WaitFor("restart", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
  ASSERT_TRUE(H().RestartController().ok());
  ASSERT_TRUE(H().RestartController().ok());
  ExpectDeletedAtTtl("restart", job, 3);
}

// The controller is down when the TTL expires: the next one deletes the Job at once. 3 s, not 1:
// completionTime has whole seconds and may lie up to 1 s before the status write, and with 1 s
// the Job was deleted 20 ms after it finished, before a poll could see it finished (CI, loaded).
TEST_F(Ttl, ExpiresWhileControllerDown) {
  api::Job job = Create("down", {{"ttlSecondsAfterFinished", 3},
                                 {"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}})}}}});
  ASSERT_TRUE(
      WaitFor("down", SucceededIs(ConditionStatus::kTrue, "Completed"), "Succeeded=True", &job));
  H().StopController();
  const auto expiry = *job.status.completionTime + std::chrono::seconds(3);
  // Nobody deletes it while no controller runs, even past its TTL.
  EXPECT_TRUE(
      HoldsFor([&] { return H().GetJob(ns_, "down").ok(); },
               std::chrono::duration_cast<std::chrono::milliseconds>(expiry - Clock::now()) + 500ms,
               kApiPoll));
  ASSERT_TRUE(H().StartController().ok());
  ASSERT_TRUE(WaitGone("down", 5s));
  EXPECT_EQ(H().SuccessfulJobDeletes(ns_, "down"), 1);
}

// Spec row: TTL | 到期附近延长 TTL | 最终 GET 重新核对最新 TTL.
TEST_F(Ttl, ExtendedNearExpiry) {
  api::Job job =
      Create("extended", {{"ttlSecondsAfterFinished", 3},
                          {"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}})}}}});
  ASSERT_TRUE(WaitFor("extended", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &job));
  const auto oldExpiry = *job.status.completionTime + std::chrono::seconds(3);
  // Extend it about one second before it expires.
  ASSERT_TRUE(Eventually([&] { return Clock::now() >= oldExpiry - 1s; }, 5s));
  ASSERT_LT(Clock::now(), oldExpiry - 500ms) << "the test was too slow to extend the TTL in time";
  ASSERT_TRUE(Patch("extended", {{"spec", {{"ttlSecondsAfterFinished", 3600}}}}));
  // Well past the old expiry it is still there, not even being deleted.
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto j = H().GetJob(ns_, "extended");
        return j.ok() && !j->metadata.deletionTimestamp;
      },
      std::chrono::duration_cast<std::chrono::milliseconds>(oldExpiry - Clock::now()) + 2s,
      kApiPoll))
      << "deleted at the old TTL";
  EXPECT_EQ(H().SuccessfulJobDeletes(ns_, "extended"), 0);
  // Shortened again it goes.
  ASSERT_TRUE(Patch("extended", {{"spec", {{"ttlSecondsAfterFinished", 0}}}}));
  ASSERT_TRUE(WaitGone("extended"));
  EXPECT_EQ(H().SuccessfulJobDeletes(ns_, "extended"), 1);
}

}  // namespace
}  // namespace ayatori::testing
