#include "test/adapters/contract/adapter_contract.h"

#include <ostream>
#include <vector>

#include "test/support/wait.h"

namespace ayatori::adapters::contract {

std::string BackendName(const ::testing::TestParamInfo<Backend>& info) { return info.param.name; }

void PrintTo(const Backend& backend, std::ostream* os) { *os << backend.name; }

ExecutionKey KeyOf(const ExecutionRequest& request, const Observation& observed) {
  return {request.job.metadata.uid,  request.job.metadata.namespace_,
          request.job.metadata.name, observed.references,
          request.parameters,        false};
}

std::vector<std::string> ShellCommand(Task task) {
  switch (task) {
    case Task::kSucceeds:
      return {"/bin/sh", "-c", "exit 0"};
    case Task::kFailsWithExit3:
      return {"/bin/sh", "-c", "exit 3"};
    case Task::kSleeps:
      return {"/bin/sleep", "300"};
    case Task::kExceedsItsMemory:
      // The main process itself is the one killed: dockerd 28 reports State.OOMKilled reliably
      // only then (docs/api.md, the reason OOMKilled).
      return {"/bin/sh", "-c", "exec tail /dev/zero"};
  }
  return {};
}

void AdapterContractTest::SetUp() {
  fixture_ = GetParam().make();
  ASSERT_NE(fixture_, nullptr);
  fixture_->SetUp();
}

void AdapterContractTest::TearDown() {
  if (fixture_) fixture_->TearDown();
}

Observation AdapterContractTest::ObserveUntil(const ExecutionKey& key,
                                              const std::function<bool(const Observation&)>& done) {
  Observation o;
  testing::Eventually(
      [&] {
        o = AdapterUnderTest().Observe(key);
        return done(o);
      },
      fixture_->Deadline(), fixture_->Poll());
  return o;
}

Observation AdapterContractTest::RunToTheEnd(const ExecutionRequest& request) {
  Observation o = AdapterUnderTest().Ensure(request);
  EXPECT_NE(o.phase, ExecutionPhase::kUnknown) << o.reason << ": " << o.message;
  EXPECT_NE(o.phase, ExecutionPhase::kAbsent) << "Ensure created nothing";
  if (IsStopped(o.phase)) return o;
  return ObserveUntil(KeyOf(request, o), [](const Observation& seen) {
    return IsStopped(seen.phase) || seen.phase == ExecutionPhase::kAbsent;
  });
}

namespace {

using namespace std::chrono_literals;

std::string Describe(const Observation& o) {
  std::string s = ExecutionPhaseName(o.phase);
  if (!o.reason.empty()) s += " (" + o.reason + ")";
  if (!o.message.empty()) s += ": " + o.message;
  return s;
}

bool Started(const Observation& o) {
  return o.phase == ExecutionPhase::kPending || o.phase == ExecutionPhase::kRunning;
}

// Ensure twice with the same UID, and once more from a restarted controller by the UID alone:
// one execution, always the same references.
TEST_P(AdapterContractTest, EnsureIsIdempotentByUid) {
  const ExecutionRequest r = Fixture().Request(Task::kSleeps);
  const Observation first = AdapterUnderTest().Ensure(r);
  ASSERT_TRUE(Started(first)) << Describe(first);
  ASSERT_FALSE(first.references.empty()) << "Ensure returned no reference to persist";
  const Observation second = AdapterUnderTest().Ensure(r);
  EXPECT_TRUE(Started(second)) << Describe(second);
  EXPECT_EQ(second.references, first.references);
  const Observation restarted = Fixture().Restarted()->Ensure(r);
  EXPECT_TRUE(Started(restarted)) << Describe(restarted);
  EXPECT_EQ(restarted.references, first.references);
  EXPECT_EQ(Fixture().CountExecutions(r.job.metadata.uid), 1);
}

// The backend created the execution but its answer never reached the caller: the next Ensure,
// from a restarted controller that knows nothing but the UID, adopts that execution.
TEST_P(AdapterContractTest, ALostEnsureAnswerIsAdoptedNotCreatedTwice) {
  const ExecutionRequest r = Fixture().Request(Task::kSleeps);
  Fixture().CreateWithLostAnswer(r);
  ASSERT_EQ(Fixture().CountExecutions(r.job.metadata.uid), 1) << "the lost create made nothing";
  const Observation adopted = Fixture().Restarted()->Ensure(r);
  EXPECT_TRUE(Started(adopted)) << Describe(adopted);
  EXPECT_FALSE(adopted.references.empty());
  EXPECT_EQ(Fixture().CountExecutions(r.job.metadata.uid), 1);
  // The running controller's adapter adopts the same one.
  const Observation again = AdapterUnderTest().Ensure(r);
  EXPECT_EQ(again.references, adopted.references);
  EXPECT_EQ(Fixture().CountExecutions(r.job.metadata.uid), 1);
}

TEST_P(AdapterContractTest, ObserveReportsRunningWithItsStart) {
  const ExecutionRequest r = Fixture().Request(Task::kSleeps);
  const Observation ensured = AdapterUnderTest().Ensure(r);
  ASSERT_TRUE(Started(ensured)) << Describe(ensured);
  const Observation running = ObserveUntil(KeyOf(r, ensured), [](const Observation& o) {
    return o.phase == ExecutionPhase::kRunning || IsStopped(o.phase);
  });
  ASSERT_EQ(running.phase, ExecutionPhase::kRunning) << Describe(running);
  EXPECT_TRUE(running.startedAt.has_value());
  EXPECT_FALSE(running.finishedAt.has_value());
  EXPECT_EQ(running.references, ensured.references);
}

TEST_P(AdapterContractTest, ObserveReportsSucceededWithExitZero) {
  const ExecutionRequest r = Fixture().Request(Task::kSucceeds);
  const Observation done = RunToTheEnd(r);
  ASSERT_EQ(done.phase, ExecutionPhase::kSucceeded) << Describe(done);
  EXPECT_EQ(done.exitCode, 0);
  ASSERT_TRUE(done.startedAt.has_value());
  ASSERT_TRUE(done.finishedAt.has_value());
  EXPECT_LE(*done.startedAt, *done.finishedAt);
  EXPECT_LE(std::chrono::abs(std::chrono::system_clock::now() - *done.finishedAt), 5min);
  EXPECT_FALSE(done.references.empty());
  // The end is a fact: observing again says the same.
  EXPECT_EQ(AdapterUnderTest().Observe(KeyOf(r, done)).phase, ExecutionPhase::kSucceeded);
}

TEST_P(AdapterContractTest, ObserveReportsFailedWithTheExitCode) {
  const Observation done = RunToTheEnd(Fixture().Request(Task::kFailsWithExit3));
  ASSERT_EQ(done.phase, ExecutionPhase::kFailed) << Describe(done);
  EXPECT_EQ(done.reason, "ProcessFailed");
  EXPECT_EQ(done.exitCode, 3);
  EXPECT_TRUE(done.startedAt.has_value()) << "it ran, so it started";
  EXPECT_TRUE(done.finishedAt.has_value());
}

TEST_P(AdapterContractOomTest, ObserveReportsAnOomKillAsFailedOOMKilled) {
  const Observation done = RunToTheEnd(Fixture().Request(Task::kExceedsItsMemory));
  ASSERT_EQ(done.phase, ExecutionPhase::kFailed) << Describe(done);
  EXPECT_EQ(done.reason, "OOMKilled");
  if (done.exitCode) {
    EXPECT_EQ(*done.exitCode, 137) << "an OOM kill is SIGKILL";
  }
}

// What was never created is absent, and neither Cancel nor Delete creates or fails on it.
TEST_P(AdapterContractTest, ANeverCreatedExecutionIsAbsentAndCancelAndDeleteAreFine) {
  const ExecutionRequest r = Fixture().Request(Task::kSleeps);
  const ExecutionKey key = KeyOf(r);
  EXPECT_EQ(AdapterUnderTest().Observe(key).phase, ExecutionPhase::kAbsent);
  // Absent, or Cancelled where the backend cannot tell "never created" from "stopped and gone"
  // (Kubernetes: the pod of a deleted batch Job is gone either way).
  const Observation cancelled = AdapterUnderTest().Cancel(key);
  EXPECT_TRUE(cancelled.phase == ExecutionPhase::kAbsent ||
              cancelled.phase == ExecutionPhase::kCancelled)
      << Describe(cancelled);
  const Status deleted = AdapterUnderTest().Delete(key);
  EXPECT_TRUE(deleted.ok()) << deleted.ToString();
  EXPECT_TRUE(AdapterUnderTest().Delete(key).ok());
  EXPECT_EQ(Fixture().CountExecutions(r.job.metadata.uid), 0);
}

// Cancel stops a running execution and may be asked again (by a retried round, or a restarted
// controller): the repeat reports it stopped (or gone), never running again.
TEST_P(AdapterContractTest, CancelStopsARunningExecutionAndIsRepeatable) {
  const ExecutionRequest r = Fixture().Request(Task::kSleeps);
  const Observation ensured = AdapterUnderTest().Ensure(r);
  const ExecutionKey key = KeyOf(r, ensured);
  ASSERT_EQ(ObserveUntil(key,
                         [](const Observation& o) {
                           return o.phase == ExecutionPhase::kRunning || IsStopped(o.phase);
                         })
                .phase,
            ExecutionPhase::kRunning);
  // A backend may report the stop as under way (kRunning) until it is confirmed.
  Observation cancelled;
  testing::Eventually(
      [&] {
        cancelled = AdapterUnderTest().Cancel(key);
        return IsStopped(cancelled.phase) || cancelled.phase == ExecutionPhase::kAbsent;
      },
      Fixture().Deadline(), Fixture().Poll());
  ASSERT_EQ(cancelled.phase, ExecutionPhase::kCancelled) << Describe(cancelled);
  for (const auto& again : {AdapterUnderTest().Cancel(key), Fixture().Restarted()->Cancel(key)}) {
    EXPECT_TRUE(again.phase == ExecutionPhase::kCancelled || again.phase == ExecutionPhase::kAbsent)
        << Describe(again);
  }
  EXPECT_LE(Fixture().CountExecutions(r.job.metadata.uid), 1);
}

// Delete removes everything of the execution, also a running one, and is repeatable.
TEST_P(AdapterContractTest, DeleteRemovesTheExecutionAndIsRepeatable) {
  const ExecutionRequest r = Fixture().Request(Task::kSleeps);
  const Observation ensured = AdapterUnderTest().Ensure(r);
  const ExecutionKey key = KeyOf(r, ensured);
  // Running: everything of the execution exists (Kubernetes: the pod too).
  const Observation running = ObserveUntil(key, [](const Observation& o) {
    return o.phase == ExecutionPhase::kRunning || IsStopped(o.phase);
  });
  ASSERT_EQ(running.phase, ExecutionPhase::kRunning) << Describe(running);
  Status deleted;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        deleted = AdapterUnderTest().Delete(key);
        return deleted.ok();
      },
      Fixture().Deadline(), Fixture().Poll()))
      << deleted.ToString();
  EXPECT_TRUE(
      testing::Eventually([&] { return Fixture().CountExecutions(r.job.metadata.uid) == 0; },
                          Fixture().Deadline(), Fixture().Poll()))
      << "the backend still holds the execution";
  const Status again = AdapterUnderTest().Delete(key);
  EXPECT_TRUE(again.ok()) << again.ToString();
  const Status restarted = Fixture().Restarted()->Delete(KeyOf(r));
  EXPECT_TRUE(restarted.ok()) << restarted.ToString();
  EXPECT_EQ(AdapterUnderTest().Observe(KeyOf(r)).phase, ExecutionPhase::kAbsent);
}

// A Secret value given to the execution appears in nothing the adapter returns: references,
// reasons, messages, errors (docs/security.md). The attacker reads status.execution and the
// Job's conditions; the value must not be there.
TEST_P(AdapterContractTest, NothingTheAdapterReturnsCarriesASecretValue) {
  constexpr const char* kSecret = "s3cr3t-contract-7f1c9a";
  std::vector<std::string> returned;
  auto keep = [&](const Observation& o) {
    returned.push_back(o.reason);
    returned.push_back(o.message);
    for (const auto& ref : o.references) {
      returned.push_back(ref.type);
      returned.push_back(ref.id);
    }
    return o;
  };
  auto keepStatus = [&](const Status& s) { returned.push_back(s.ToString()); };

  ExecutionRequest finishes = Fixture().Request(Task::kSucceeds);
  Fixture().PlantSecret(finishes, "CONTRACT_TOKEN", kSecret);
  keepStatus(AdapterUnderTest().Validate(finishes));
  Observation o = keep(AdapterUnderTest().Ensure(finishes));
  const ExecutionKey finishedKey = KeyOf(finishes, o);
  ObserveUntil(finishedKey, [&](const Observation& seen) {
    keep(seen);
    return IsStopped(seen.phase) || seen.phase == ExecutionPhase::kAbsent;
  });
  keep(AdapterUnderTest().Ensure(finishes));
  keep(AdapterUnderTest().Cancel(finishedKey));

  ExecutionRequest fails = Fixture().Request(Task::kFailsWithExit3);
  Fixture().PlantSecret(fails, "CONTRACT_TOKEN", kSecret);
  o = keep(AdapterUnderTest().Ensure(fails));
  ObserveUntil(KeyOf(fails, o), [&](const Observation& seen) {
    keep(seen);
    return IsStopped(seen.phase) || seen.phase == ExecutionPhase::kAbsent;
  });

  ExecutionRequest sleeps = Fixture().Request(Task::kSleeps);
  Fixture().PlantSecret(sleeps, "CONTRACT_TOKEN", kSecret);
  o = keep(AdapterUnderTest().Ensure(sleeps));
  const ExecutionKey sleepsKey = KeyOf(sleeps, o);
  testing::Eventually(
      [&] {
        const Observation c = keep(AdapterUnderTest().Cancel(sleepsKey));
        return IsStopped(c.phase) || c.phase == ExecutionPhase::kAbsent;
      },
      Fixture().Deadline(), Fixture().Poll());
  keepStatus(AdapterUnderTest().Delete(sleepsKey));
  keepStatus(AdapterUnderTest().Delete(finishedKey));

  ASSERT_GT(returned.size(), 10u);
  for (const auto& s : returned) {
    EXPECT_EQ(s.find(kSecret), std::string::npos) << "a returned string carries the Secret";
  }
}

}  // namespace

// The OpenSandbox instantiation leaves the OOM case out (see AdapterContractOomTest).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AdapterContractOomTest);

}  // namespace ayatori::adapters::contract
