// JobTables (src/controller/job_tables.h): what a reconciler remembers between rounds, on a
// FakeClock. Each table forgets what it must (another UID under the name, a reported execution, a
// cache that caught up, an entry past its time), since a stale entry would make a round act on a
// Job that is not the one it remembers.
#include "controller/job_tables.h"

#include <gtest/gtest.h>

#include "kube/testing/fake_clock.h"

namespace ayatori::controller {
namespace {

using kube::testing::FakeClock;

api::Job MakeJob(const std::string& uid, const std::string& resourceVersion) {
  api::Job job;
  job.metadata.namespace_ = "team";
  job.metadata.name = "job";
  job.metadata.uid = uid;
  job.metadata.resourceVersion = resourceVersion;
  return job;
}

api::JobStatus Accepted() {
  api::JobStatus status;
  api::Condition accepted;
  accepted.type = api::kConditionAccepted;
  accepted.status = api::ConditionStatus::kTrue;
  status.conditions.push_back(accepted);
  return status;
}

statemachine::UnreportedExecution Execution(const std::string& id) {
  return {{api::ExecutionReference{"container", id}}, api::Time{}};
}

TEST(JobTablesTest, WaitingMessageIsHeldForTheIntervalThenFree) {
  FakeClock clock;
  JobTables tables(clock);
  EXPECT_FALSE(tables.WaitingMessageHold("u1").has_value()) << "nothing written yet";
  tables.WaitingMessageWritten("u1");
  auto hold = tables.WaitingMessageHold("u1");
  ASSERT_TRUE(hold.has_value());
  EXPECT_EQ(*hold, std::chrono::ceil<std::chrono::seconds>(statemachine::kWaitingMessageInterval));
  EXPECT_FALSE(tables.WaitingMessageHold("u2").has_value()) << "held per UID";
  clock.Advance(statemachine::kWaitingMessageInterval);
  EXPECT_FALSE(tables.WaitingMessageHold("u1").has_value()) << "the interval is over";
  tables.WaitingMessageWritten("u1");
  tables.ForgetWaitingMessage("u1");
  EXPECT_FALSE(tables.WaitingMessageHold("u1").has_value()) << "the Job stopped waiting";
}

TEST(JobTablesTest, CacheBehindOwnWriteUntilTheCacheCatchesUp) {
  FakeClock clock;
  JobTables tables(clock);
  const api::Job v1 = MakeJob("u1", "1");
  const api::Job v2 = MakeJob("u1", "2");
  EXPECT_FALSE(tables.CacheBehindOwnWrite(v1));
  tables.WroteOver(v1, v2);
  EXPECT_TRUE(tables.CacheBehindOwnWrite(v1)) << "the copy predates the write";
  EXPECT_TRUE(tables.CacheBehindOwnWrite(v1)) << "asked again: still behind";
  EXPECT_FALSE(tables.CacheBehindOwnWrite(v2)) << "the cache shows the write";
  EXPECT_FALSE(tables.CacheBehindOwnWrite(v1)) << "the entry went once the cache caught up";
  EXPECT_FALSE(tables.CacheBehindOwnWrite(MakeJob("u2", "1"))) << "another UID";
}

TEST(JobTablesTest, OwnWritesAreForgottenAfterTheirMemory) {
  FakeClock clock;
  JobTables tables(clock);
  tables.WroteOver(MakeJob("u1", "1"), MakeJob("u1", "2"));
  clock.Advance(kOwnWriteMemory);
  EXPECT_FALSE(tables.CacheBehindOwnWrite(MakeJob("u1", "1")));
}

TEST(JobTablesTest, AWriteThatChangedNothingIsNotRemembered) {
  FakeClock clock;
  JobTables tables(clock);
  tables.WroteOver(MakeJob("u1", "1"), MakeJob("u1", "1"));
  EXPECT_FALSE(tables.CacheBehindOwnWrite(MakeJob("u1", "1")));
  // ...unless it removed the last finalizer of a deleted Job: the answer names the last version.
  api::Job deleted = MakeJob("u1", "1");
  deleted.metadata.deletionTimestamp = api::Time{};
  tables.WroteOver(MakeJob("u1", "1"), deleted);
  EXPECT_TRUE(tables.CacheBehindOwnWrite(MakeJob("u1", "1")));
}

TEST(JobTablesTest, OnlyTheLastFewOwnWritesAreRemembered) {
  FakeClock clock;
  JobTables tables(clock);
  for (size_t rv = 1; rv <= kOwnWritesRemembered + 1; ++rv) {
    tables.WroteOver(MakeJob("u1", std::to_string(rv)), MakeJob("u1", std::to_string(rv + 1)));
  }
  EXPECT_TRUE(tables.CacheBehindOwnWrite(MakeJob("u1", "2")));
  EXPECT_FALSE(tables.CacheBehindOwnWrite(MakeJob("u1", "1"))) << "the oldest was dropped";
}

TEST(JobTablesTest, UnreportedExecutionStaysUntilReportedOrReplaced) {
  FakeClock clock;
  JobTables tables(clock);
  const std::string key = "team/job";
  api::Job job = MakeJob("u1", "1");
  tables.KeepUnreportedExecution(job, Execution("c1"), Accepted());
  EXPECT_TRUE(tables.HasUnreportedExecution(key));
  std::optional<api::JobStatus> acceptance;
  auto kept = tables.UnreportedExecutionOf(key, &job, &acceptance);
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(*kept, Execution("c1"));
  ASSERT_TRUE(acceptance.has_value());
  EXPECT_TRUE(api::IsConditionTrue(acceptance->conditions, api::kConditionAccepted));

  api::Job reported = job;
  reported.status.execution.emplace();
  reported.status.execution->references = Execution("c1").references;
  EXPECT_FALSE(tables.UnreportedExecutionOf(key, &reported, nullptr).has_value());
  EXPECT_FALSE(tables.HasUnreportedExecution(key)) << "the status holds the references now";

  tables.KeepUnreportedExecution(job, Execution("c2"), std::nullopt);
  api::Job replaced = MakeJob("u2", "5");
  EXPECT_FALSE(tables.UnreportedExecutionOf(key, &replaced, nullptr).has_value())
      << "a new Job under the name is not the one whose execution it is";
  EXPECT_FALSE(tables.HasUnreportedExecution(key));

  tables.KeepUnreportedExecution(job, Execution("c3"), std::nullopt);
  EXPECT_FALSE(tables.UnreportedExecutionOf(key, nullptr, nullptr).has_value());
  EXPECT_FALSE(tables.HasUnreportedExecution(key)) << "the Job is gone";
}

TEST(JobTablesTest, AcceptanceSentUntilTheCopyShowsIt) {
  FakeClock clock;
  JobTables tables(clock);
  const std::string key = "team/job";
  api::Job job = MakeJob("u1", "1");
  EXPECT_FALSE(tables.AcceptanceSent(key, job));
  tables.KeepAcceptanceSent(job);
  EXPECT_TRUE(tables.AcceptanceSent(key, job));
  EXPECT_TRUE(tables.AcceptanceSent(key, job)) << "asked again: the copy still lags";
  api::Job accepted = job;
  accepted.status = Accepted();
  EXPECT_FALSE(tables.AcceptanceSent(key, accepted));
  EXPECT_FALSE(tables.AcceptanceSent(key, job)) << "forgotten once a copy showed it";

  tables.KeepAcceptanceSent(job);
  EXPECT_FALSE(tables.AcceptanceSent(key, MakeJob("u2", "1"))) << "another UID";
  EXPECT_FALSE(tables.AcceptanceSent(key, job));

  tables.KeepAcceptanceSent(job);
  tables.ForgetAcceptanceSent(key);
  EXPECT_FALSE(tables.AcceptanceSent(key, job));
}

}  // namespace
}  // namespace ayatori::controller
