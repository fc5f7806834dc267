#include "test/chaos/verdict.h"

#include <gtest/gtest.h>

#include <utility>

namespace ayatori::chaos {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

JobPlan Job(const std::string& name, Backend b, Kind k) {
  JobPlan j;
  j.name = name;
  j.backend = b;
  j.kind = k;
  j.exitCode = k == Kind::kExit3 ? 3 : 0;
  return j;
}

ProcessRecord Exited(int code) {
  return {true, true, code, false, "container exited " + std::to_string(code), false};
}

// A finished Job with one execution that the backend recorded ending with `processExit`.
JobFacts Finished(const std::string& uid, const std::string& succeeded, std::optional<int> exit,
                  ProcessRecord process) {
  JobFacts f;
  f.uid = uid;
  f.exists = true;
  f.finalizers = {"execution.ayatori.ddupan.top/job-cleanup"};
  f.succeeded = succeeded;
  f.exitCode = exit;
  f.scheduled = true;
  f.references = {"container-" + uid};
  f.executionsCreated = 1;
  f.createdIds = {"container-" + uid};
  f.executionsLeft = 1;
  f.process = std::move(process);
  return f;
}

// A round where everything went right: one Job of each kind on Docker.
struct Fixture {
  Plan plan;
  std::vector<JobFacts> facts;
  RoundLog log;

  Fixture() {
    plan.seed = 42;
    plan.jobs = {Job("ok", Backend::kDocker, Kind::kExit0),
                 Job("three", Backend::kDocker, Kind::kExit3),
                 Job("late", Backend::kDocker, Kind::kDeadline),
                 Job("stop", Backend::kDocker, Kind::kCancel),
                 Job("race", Backend::kDocker, Kind::kCancelRace),
                 Job("gone", Backend::kDocker, Kind::kDelete)};
    plan.disruptions = {{Disruption::Type::kRestartDockerd, 5s, false, 0, 4s},
                        {Disruption::Type::kKillReplica, 7s, true, 1, 0ms},
                        {Disruption::Type::kRestartApiserver, 15s, false, 0, 6s}};
    facts = {Finished("u1", "True/Completed", 0, Exited(0)),
             Finished("u2", "False/ProcessFailed", 3, Exited(3)),
             Finished("u3", "False/DeadlineExceeded", 137, Exited(137)),
             Finished("u4", "False/Cancelled", 137, Exited(137)),
             Finished("u5", "False/Cancelled", 137, Exited(137)),
             JobFacts{}};
    facts[3].acted = facts[4].acted = true;
    facts[3].stateWhenActed = facts[4].stateWhenActed = "Running";
    facts[5].uid = "u6";
    facts[5].acted = true;
    facts[5].stateWhenActed = "Starting";
    facts[5].executionsCreated = 1;
    log.ns = "chaos-42-1";
    log.kills = {{7s, 1, 100, "leader"}};
    log.exits = {{7s, 1, 100, true, -1, 9}, {16s, 0, 101, false, 1, 0}};
    log.restarts = {{"dockerd", 5s, 4s, true, "", {}, {}, {}},
                    {"kube-apiserver", 15s, 6s, true, "", {}, {}, {}}};
    log.settled = true;
  }
  Verdict Judge() const { return chaos::Judge(plan, facts, log); }
};

std::string All(const Verdict& v) {
  std::string s;
  for (const auto& x : v.violations) s += x + "\n";
  return s;
}

// The violations that mention `needle`.
int Count(const Verdict& v, const std::string& needle) {
  int n = 0;
  for (const auto& x : v.violations) n += x.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

TEST(ChaosTruth, FromTheSpecOrForARaceFromTheBackendsRecord) {
  ProcessRecord unknown;
  EXPECT_EQ(TruthOf(Job("a", Backend::kDocker, Kind::kExit0), unknown).acceptable,
            std::vector<std::string>{"True/Completed"});
  EXPECT_EQ(TruthOf(Job("a", Backend::kDocker, Kind::kExit0), unknown).exitCode, 0);
  EXPECT_EQ(TruthOf(Job("a", Backend::kDocker, Kind::kExit3), unknown).acceptable,
            std::vector<std::string>{"False/ProcessFailed"});
  EXPECT_EQ(TruthOf(Job("a", Backend::kDocker, Kind::kExit3), unknown).exitCode, 3);
  EXPECT_EQ(TruthOf(Job("a", Backend::kDocker, Kind::kDeadline), unknown).acceptable,
            std::vector<std::string>{"False/DeadlineExceeded"});
  EXPECT_EQ(TruthOf(Job("a", Backend::kDocker, Kind::kCancel), Exited(0)).acceptable,
            std::vector<std::string>{"False/Cancelled"});
  EXPECT_TRUE(TruthOf(Job("a", Backend::kDocker, Kind::kDelete), unknown).acceptable.empty());

  const JobPlan race = Job("r", Backend::kKubernetes, Kind::kCancelRace);
  EXPECT_EQ(TruthOf(race, Exited(0)).acceptable, std::vector<std::string>{"True/Completed"});
  EXPECT_EQ(TruthOf(race, Exited(0)).exitCode, 0);
  EXPECT_EQ(TruthOf(race, Exited(137)).acceptable, std::vector<std::string>{"False/Cancelled"});
  EXPECT_EQ(TruthOf(race, ProcessRecord{true, false, -1, false, "no container"}).acceptable,
            std::vector<std::string>{"False/Cancelled"});
  EXPECT_EQ(TruthOf(race, unknown).acceptable,
            (std::vector<std::string>{"True/Completed", "False/Cancelled"}));
  // Exit 0 no earlier than the stop request: it may have ended by itself or on the stop.
  ProcessRecord tied = Exited(0);
  tied.stopRequestedBeforeEnd = true;
  EXPECT_EQ(TruthOf(race, tied).acceptable,
            (std::vector<std::string>{"True/Completed", "False/Cancelled"}));
  ProcessRecord killed = Exited(137);
  killed.stopRequestedBeforeEnd = true;
  EXPECT_EQ(TruthOf(race, killed).acceptable, std::vector<std::string>{"False/Cancelled"});
}

TEST(ChaosTruth, OnlyTheFourPlannedReasonsAreNotOutages) {
  for (const char* r : {"Completed", "ProcessFailed", "DeadlineExceeded", "Cancelled", ""}) {
    EXPECT_FALSE(IsOutageReason(r)) << r;
  }
  for (const char* r :
       {"BackendLost", "ExecutionStopped", "ResultUnknown", "BackendRejected", "StartFailed"}) {
    EXPECT_TRUE(IsOutageReason(r)) << r;
  }
}

TEST(ChaosJudge, ACleanRoundHasNoViolationAndCountsEveryOutcome) {
  Fixture f;
  Verdict v = f.Judge();
  EXPECT_TRUE(v.ok()) << All(v);
  EXPECT_EQ(v.outcomes["succeeded"], 1);
  EXPECT_EQ(v.outcomes["failed-by-exit"], 1);
  EXPECT_EQ(v.outcomes["deadline"], 1);
  EXPECT_EQ(v.outcomes["cancelled"], 2);
  EXPECT_EQ(v.outcomes["deleted"], 1);
  EXPECT_EQ(v.executionsPerUid[1], 6);
  EXPECT_EQ(v.raceWonByCancel, 1);
  EXPECT_EQ(v.raceWonByProcess, 0);
  EXPECT_EQ(v.actedWhileRunning, 2);
  EXPECT_EQ(v.actedBeforeStart, 1);
  std::string report = FormatReport(f.plan, f.facts, f.log, v);
  EXPECT_NE(report.find("seed 42"), std::string::npos) << report;
  EXPECT_NE(report.find("make chaos CHAOS_SEED=42 CHAOS_JOBS=6"), std::string::npos) << report;
  EXPECT_NE(report.find("kills: 1"), std::string::npos) << report;
  EXPECT_NE(report.find("exit code 1 x1"), std::string::npos) << report;
  EXPECT_NE(report.find("restarts: 2"), std::string::npos) << report;
  EXPECT_NE(report.find("verdict: PASS"), std::string::npos) << report;
}

// Docker recorded exit code 255 at its restart for a task that exits 3: nobody knows the result,
// and the Job must say ResultUnknown, never a result.
TEST(ChaosJudge, AnExitStatusTheBackendLostMustBeReportedUnknown) {
  Fixture f;
  ProcessRecord lost = Exited(255);
  lost.exitStatusLost = true;
  f.facts[1] = Finished("u2", "Unknown/ResultUnknown", std::nullopt, lost);
  Verdict v = f.Judge();
  EXPECT_TRUE(v.ok()) << All(v);
  EXPECT_EQ(v.exitStatusLost, 1);
  EXPECT_EQ(v.outcomes["result-lost-by-backend"], 1);
  EXPECT_EQ(v.outcomes["failed-by-exit"], 0);
  EXPECT_NE(FormatReport(f.plan, f.facts, f.log, v).find("result-lost-by-backend 1"),
            std::string::npos);

  // Claiming the 255 (or any result) is a violation.
  f.facts[1] = Finished("u2", "False/ProcessFailed", 255, lost);
  v = f.Judge();
  EXPECT_EQ(Count(v, "the backend lost the task's exit status"), 1) << All(v);
  EXPECT_EQ(v.violations.size(), 1u) << All(v);

  // Without the mark, a 255 for a task that exits 3 is a violation as before.
  f.facts[1] = Finished("u2", "False/ProcessFailed", 255, Exited(255));
  v = f.Judge();
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(Count(v, "the backend lost the task's exit status"), 0) << All(v);
}

TEST(ChaosJudge, TheReportNamesWhatARestartRepaired) {
  Fixture f;
  const std::string cleared =
      "clearing the interrupted start of container 0123456789ab (created): its task "
      "never ran";
  f.log.restarts[0].repairs = {cleared};
  Verdict v = f.Judge();
  EXPECT_TRUE(v.violations.empty()) << All(v);
  std::string report = FormatReport(f.plan, f.facts, f.log, v);
  EXPECT_NE(report.find("dockerd at 5.0s down 4.0s (" + cleared + ")"), std::string::npos)
      << report;
}

TEST(ChaosJudge, AWrongResultIsAViolationAndAnOutageReasonIsNamed) {
  Fixture f;
  f.facts[0].succeeded = "False/ExecutionStopped";
  f.facts[0].exitCode.reset();
  Verdict v = f.Judge();
  EXPECT_EQ(Count(v, "ok (docker, exit0, uid u1): ended False/ExecutionStopped"), 1) << All(v);
  EXPECT_EQ(Count(v, "a Job failed by an outage"), 1) << All(v);
  EXPECT_EQ(v.outcomes["failed-by-outage"], 1);
  EXPECT_NE(FormatReport(f.plan, f.facts, f.log, v).find("verdict: FAIL, 1 violation"),
            std::string::npos);
}

TEST(ChaosJudge, TheExitCodeMustMatch) {
  Fixture f;
  f.facts[1].exitCode = 1;
  EXPECT_EQ(Count(f.Judge(), "with exit code 1, but the process exited 3"), 1);
}

TEST(ChaosJudge, ARaceTheProcessWonMustBeSucceeded) {
  Fixture f;
  f.facts[4].process = Exited(0);  // it exited 0 before the cancel took effect
  Verdict v = f.Judge();
  EXPECT_EQ(Count(v, "race (docker, cancel-race, uid u5): ended False/Cancelled"), 1) << All(v);
  EXPECT_EQ(Count(v, "backend record: container exited 0"), 1) << All(v);
  f.facts[4].succeeded = "True/Completed";
  f.facts[4].exitCode = 0;
  v = f.Judge();
  EXPECT_TRUE(v.ok()) << All(v);
  EXPECT_EQ(v.raceWonByProcess, 1);
  // Exiting 0 while being stopped: either result stands.
  f.facts[4].process.stopRequestedBeforeEnd = true;
  v = f.Judge();
  EXPECT_TRUE(v.ok()) << All(v);
  EXPECT_EQ(v.raceTied, 1);
  f.facts[4].succeeded = "False/Cancelled";
  f.facts[4].exitCode.reset();
  v = f.Judge();
  EXPECT_TRUE(v.ok()) << All(v);
  // Without a complete record either result stands.
  f.facts[4].process = ProcessRecord{};
  v = f.Judge();
  EXPECT_TRUE(v.ok()) << All(v);
  EXPECT_EQ(v.raceUnverified, 1);
}

TEST(ChaosJudge, UnfinishedJobsAreViolations) {
  Fixture f;
  f.facts[0].succeeded = "Unknown/ResultUnknown";
  f.facts[0].exitCode.reset();
  Verdict v = f.Judge();
  EXPECT_EQ(Count(v,
                  "not finished at the end of the round: Succeeded Unknown/ResultUnknown (stuck "
                  "in ResultUnknown)"),
            1)
      << All(v);
  EXPECT_EQ(v.outcomes["unfinished"], 1);
  EXPECT_EQ(Count(v, "backend record: container exited 0"), 1) << All(v);
}

TEST(ChaosJudge, MoreThanOneExecutionPerUidIsAViolation) {
  Fixture f;
  f.facts[2].executionsCreated = 2;
  f.facts[2].createdIds = {"container-u3", "second"};
  Verdict v = f.Judge();
  EXPECT_EQ(Count(v, "2 backend executions were created for one Job UID (container-u3, second)"), 1)
      << All(v);
  EXPECT_EQ(v.executionsPerUid[2], 1);
}

TEST(ChaosJudge, AResultWithoutAnExecutionIsAViolation) {
  Fixture f;
  f.facts[1].executionsCreated = 0;
  f.facts[1].createdIds.clear();
  EXPECT_EQ(Count(f.Judge(), "but the backend never created one"), 1);
  // A Job cancelled before anything was created has neither.
  f = Fixture();
  f.facts[3].executionsCreated = 0;
  f.facts[3].createdIds.clear();
  f.facts[3].scheduled = false;
  f.facts[3].references.clear();
  f.facts[3].exitCode.reset();
  EXPECT_TRUE(f.Judge().ok()) << All(f.Judge());
}

TEST(ChaosJudge, DockerReferencesMustNameTheCreatedContainer) {
  Fixture f;
  f.facts[0].references = {"someone-else"};
  EXPECT_EQ(Count(f.Judge(), "do not name the container that was created (container-u1)"), 1);
}

TEST(ChaosJudge, AFinishedJobWhoseExecutionStillRunsIsAViolation) {
  Fixture f;
  f.facts[3].activeLeft = 1;
  EXPECT_EQ(Count(f.Judge(), "yet its execution still runs on the docker backend"), 1);
}

TEST(ChaosJudge, ADeletedJobMustBeGoneWithItsExecution) {
  Fixture f;
  f.facts[5].exists = true;
  f.facts[5].deleting = true;
  f.facts[5].finalizers = {"execution.ayatori.ddupan.top/job-cleanup"};
  f.facts[5].executionsLeft = 1;
  Verdict v = f.Judge();
  EXPECT_EQ(Count(v,
                  "deleted (while Starting) but still in the API: deletionTimestamp set, "
                  "finalizers [execution.ayatori.ddupan.top/job-cleanup]"),
            1)
      << All(v);
  EXPECT_EQ(Count(v, "1 backend execution(s) with its UID label remain"), 1) << All(v);
  EXPECT_EQ(v.outcomes["deleted"], 0);
}

TEST(ChaosJudge, AJobThatVanishedOrWasNeverCreatedIsAViolation) {
  Fixture f;
  f.facts[0].exists = false;
  f.facts[1].uid.clear();
  Verdict v = f.Judge();
  EXPECT_EQ(Count(v, "no longer in the API although nobody deleted it"), 1) << All(v);
  EXPECT_EQ(Count(v, "the round could not create it"), 1) << All(v);
}

TEST(ChaosJudge, AJobTheRoundNeverActedOnProvesNothing) {
  Fixture f;
  f.facts[3].acted = false;
  EXPECT_EQ(Count(f.Judge(), "stop (docker, cancel, uid u4): the round never got to cancel it"), 1);
}

TEST(ChaosJudge, TheBackendsRecordMustAgreeWithTheTask) {
  Fixture f;
  f.facts[0].process = Exited(137);
  EXPECT_EQ(Count(f.Judge(), "the backend recorded exit code 137 for a task that exits 0"), 1);
}

TEST(ChaosJudge, TheRoundMustHaveHappened) {
  Fixture f;
  f.log.restarts.pop_back();
  f.log.restarts[0].ok = false;
  f.log.restarts[0].error = "dockerd did not answer";
  f.log.kills.clear();
  Verdict v = f.Judge();
  EXPECT_EQ(Count(v, "kube-apiserver was never restarted"), 1) << All(v);
  EXPECT_EQ(Count(v, "restarting dockerd failed: dockerd did not answer"), 1) << All(v);
  EXPECT_EQ(Count(v, "no replica was ever killed"), 1) << All(v);
}

TEST(ChaosJudge, AReplicaDyingOfASignalNobodySentIsACrash) {
  Fixture f;
  f.log.exits.push_back({20s, 0, 102, false, -1, 11});
  Verdict v = f.Judge();
  EXPECT_EQ(Count(v, "replica 0 (pid 102) died of signal 11 at 20.0s without being killed"), 1)
      << All(v);
  // Exiting with a code (as on a lost Lease) is not.
  EXPECT_EQ(v.violations.size(), 1u) << All(v);
}

TEST(ChaosJudge, CleanupProblemsAreViolations) {
  Fixture f;
  f.log.cleanupStuck = {"ok"};
  f.log.cleanupLeftovers = {"container /ayatori-u1 of Job uid u1"};
  Verdict v = f.Judge();
  EXPECT_EQ(Count(v, "cleanup: ok still exists after its deletion"), 1) << All(v);
  EXPECT_EQ(Count(v, "cleanup: left on the backend: container /ayatori-u1"), 1) << All(v);
}

}  // namespace
}  // namespace ayatori::chaos
