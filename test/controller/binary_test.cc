// The ayatori-controller binary as a user runs it, on the real API server: two replicas with
// leader election (one leader, takeover after a SIGKILL within the lease duration, Jobs keep
// succeeding and never get a second execution), and `kubectl wait` for a Job through a controller
// that is SIGKILLed while the Job runs.
//
// With --enable-test-adapter each process has its own in-memory backend: an execution dies with
// the process that created it. The honest result for a Job whose process died is therefore
// ResultUnknown, ended by an administrator's confirmation (BackendLost); these tests assert that
// and never pretend otherwise.
#include <signal.h>
#include <unistd.h>

#include <iostream>

#include "api/json.h"
#include "test/controller/controller_fixture.h"
#include "test/support/controller_process.h"
#include "test/support/process.h"
#include "test/support/testenv.h"

namespace ayatori::testing {
namespace {

const ResourceRef kLeases{"coordination.k8s.io", "v1", "leases", true};
constexpr const char* kJobResource = "jobs.execution.ayatori.ddupan.top";

std::string Hostname() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

class Binary : public ::testing::Test {
 protected:
  static ControllerHarness& H() { return ControllerHarness::Instance(); }

  void SetUp() override {
    ASSERT_TRUE(H().ok()) << H().setupError();
    binary_ = ControllerBinaryPath();
    ASSERT_FALSE(binary_.empty());
    ASSERT_EQ(access(binary_.c_str(), X_OK), 0) << binary_ << " is not built";
    ns_ = H().CreateNamespace("bin");
    ASSERT_FALSE(ns_.empty());
  }

  void TearDown() override {
    for (auto& p : processes_) {
      if (p->Running()) {
        p->Signal(SIGKILL);
        p->Wait(10s);
      }
      if (HasFailure()) {
        std::cout << "---- log of ayatori-controller pid " << p->pid() << " ----\n"
                  << p->Log() << "----\n";
      }
    }
    // The in-process controller cleans the namespace up (its backend knows none of the
    // subprocesses' executions, so it finds them absent, which is the truth now).
    std::string note = H().CleanupNamespace(ns_);
    if (!note.empty()) std::cout << "[cleanup of " << ns_ << "] " << note << "\n";
    H().StopController();
  }

  ControllerProcess* StartController(const std::vector<std::string>& extraArgs) {
    auto p = std::make_unique<ControllerProcess>();
    std::string log = ::testing::TempDir() + "/ayatori-controller-" + ns_ + "-" +
                      std::to_string(processes_.size()) + ".log";
    std::vector<std::string> argv{binary_,
                                  "--kubeconfig=" + H().kubeconfig(),
                                  "--enable-test-adapter",
                                  "--metrics-address=127.0.0.1:0",
                                  "--log-level=debug",
                                  "--workers=2"};
    argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
    Status s = p->Spawn(argv, log);
    EXPECT_TRUE(s.ok()) << s.ToString();
    processes_.push_back(std::move(p));
    return processes_.back().get();
  }

  std::vector<std::string> LeaderElectionArgs() {
    return {"--leader-elect", "--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms",
            "--leader-election-namespace=" + ns_};
  }

  std::string Identity(const ControllerProcess* p) {
    return Hostname() + "_" + std::to_string(p->pid());
  }

  std::string LeaseHolder() {
    auto lease = H().client().Get(kLeases, ns_, "ayatori-controller");
    if (!lease.ok()) return "";
    return lease->value("/spec/holderIdentity"_json_pointer, std::string());
  }

  ProcessResult Kubectl(std::vector<std::string> args, const std::string& input = "") {
    std::vector<std::string> argv{testing::Kubectl(), "--kubeconfig", H().kubeconfig(), "-n", ns_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, input);
  }

  static int Count(const std::string& text, const std::string& needle) {
    int n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
      ++n;
    }
    return n;
  }

  ::testing::AssertionResult WaitSucceeded(const std::string& name, api::Job* out) {
    api::Job last;
    if (H().WaitForJob(ns_, name, SucceededIs(ConditionStatus::kTrue, "Completed"), 30s, &last)) {
      *out = last;
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << name << " did not succeed: " << Describe(last);
  }

  std::string binary_;
  std::string ns_;
  std::vector<std::unique_ptr<ControllerProcess>> processes_;
};

// Two replicas, one Lease: exactly one leads; Jobs succeed; kill -9 the leader and the other
// takes over within the lease duration; Jobs created afterwards succeed too; no Job ever shows a
// second execution and no finished Job changes.
TEST_F(Binary, LeaderElectionTwoReplicas) {
  ControllerProcess* a = StartController(LeaderElectionArgs());
  ControllerProcess* b = StartController(LeaderElectionArgs());
  ASSERT_TRUE(Eventually([&] { return !LeaseHolder().empty(); }, 30s, kApiPoll))
      << "nobody took the Lease " << ns_ << "/ayatori-controller";
  const std::string holder = LeaseHolder();
  ASSERT_TRUE(holder == Identity(a) || holder == Identity(b))
      << "the Lease holder " << holder << " is neither replica";
  ControllerProcess* leader = holder == Identity(a) ? a : b;
  ControllerProcess* standby = leader == a ? b : a;
  ASSERT_TRUE(
      Eventually([&] { return leader->Log().find("controller ready") != std::string::npos; }, 20s))
      << "the leader never started its controller";
  EXPECT_TRUE(HoldsFor([&] { return LeaseHolder() == holder; }, 1s, kApiPoll)) << "the lease moved";
  // main.cc logs {"msg":"became leader"} when it starts the controller as the leader.
  const std::string becameLeader = R"("msg":"became leader")";
  EXPECT_EQ(Count(leader->Log(), becameLeader), 1);
  EXPECT_EQ(Count(standby->Log(), becameLeader), 0) << "two leaders";
  EXPECT_EQ(Count(standby->Log(), "controller ready"), 0) << "the standby runs its controller";

  auto createJobs = [&](const std::string& prefix, std::map<std::string, api::Job>* jobs) {
    for (int i = 0; i < 3; ++i) {
      std::string name = prefix + std::to_string(i);
      auto job = H().CreateJob(
          JobManifest(ns_, name, {{"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "1"}})}}}}));
      ASSERT_TRUE(job.ok()) << job.status().ToString();
    }
    for (int i = 0; i < 3; ++i) {
      std::string name = prefix + std::to_string(i);
      api::Job job;
      ASSERT_TRUE(WaitSucceeded(name, &job));
      ASSERT_TRUE(job.status.execution.has_value());
      EXPECT_EQ(job.status.execution->references.size(), 1u) << Describe(job);
      (*jobs)[name] = job;
    }
  };
  std::map<std::string, api::Job> before, after;
  createJobs("before-", &before);
  if (HasFatalFailure()) return;

  leader->Signal(SIGKILL);
  const auto killedAt = std::chrono::steady_clock::now();
  ASSERT_TRUE(leader->Wait(10s));
  ASSERT_TRUE(Eventually([&] { return LeaseHolder() == Identity(standby); }, 20s, kApiPoll))
      << "the standby did not take over; holder: " << LeaseHolder();
  const auto takeover = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - killedAt);
  std::cout << "takeover after SIGKILL of the leader: " << takeover.count() << " ms\n";
  RecordProperty("takeover_ms", static_cast<int>(takeover.count()));
  // The lease expires leaseDuration after its last renewal (at most retryPeriod before the
  // kill); the standby notices at its next retry.
  EXPECT_LE(takeover, 4s + 2 * 500ms + 1s);
  ASSERT_TRUE(Eventually(
      [&] { return standby->Log().find("controller ready") != std::string::npos; }, 20s));

  createJobs("after-", &after);
  if (HasFatalFailure()) return;

  // The Jobs finished under the old leader are untouched by the new one.
  for (const auto& [name, job] : before) {
    auto now = H().GetJob(ns_, name);
    ASSERT_TRUE(now.ok());
    EXPECT_EQ(now->status, job.status) << "changed after the takeover: " << Describe(*now);
  }
  for (const auto& [name, job] : after) {
    EXPECT_EQ(job.status.execution->references.size(), 1u) << Describe(job);
  }

  // A graceful stop releases the Lease at once.
  standby->Signal(SIGTERM);
  ASSERT_TRUE(standby->Wait(20s)) << "SIGTERM did not stop the controller";
  EXPECT_TRUE(WIFEXITED(standby->exitStatus()) && WEXITSTATUS(standby->exitStatus()) == 0)
      << "exit status " << standby->exitStatus();
  EXPECT_EQ(LeaseHolder(), "") << "the Lease was not released";
}

// `kubectl wait --for=condition=Succeeded` through the binary; then a Job whose controller is
// SIGKILLed while it runs. The execution died with the process, so after the restart the Job is
// ResultUnknown (not Succeeded, no completionTime), and only the administrator's confirmation
// ends it, as BackendLost.
TEST_F(Binary, KubectlWaitAndSigkillMidRun) {
  ControllerProcess* first = StartController({});
  auto quick = nlohmann::json(
      JobManifest(ns_, "quick", {{"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "1"}})}}}}));
  auto r = Kubectl({"create", "-f", "-"}, quick.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = Kubectl(
      {"wait", "--for=condition=Succeeded", "--timeout=60s", std::string(kJobResource) + "/quick"});
  ASSERT_EQ(r.exitCode, 0) << "kubectl wait: " << r.out << r.err;
  auto quickDone = H().GetJob(ns_, "quick");
  ASSERT_TRUE(quickDone.ok());
  EXPECT_TRUE(
      HasCondition(*quickDone, api::kConditionSucceeded, ConditionStatus::kTrue, "Completed"));

  auto longJob = nlohmann::json(
      JobManifest(ns_, "long", {{"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "600"}})}}}}));
  r = Kubectl({"create", "-f", "-"}, longJob.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string reasonPath = R"({.status.conditions[?(@.type=="Succeeded")].reason})";
  r = Kubectl({"wait", "--for=jsonpath=" + reasonPath + "=Running", "--timeout=60s",
               std::string(kJobResource) + "/long"});
  ASSERT_EQ(r.exitCode, 0) << "kubectl wait for Running: " << r.out << r.err;

  first->Signal(SIGKILL);
  ASSERT_TRUE(first->Wait(10s));
  StartController({});

  r = Kubectl({"wait", "--for=jsonpath=" + reasonPath + "=ResultUnknown", "--timeout=60s",
               std::string(kJobResource) + "/long"});
  ASSERT_EQ(r.exitCode, 0) << "kubectl wait for ResultUnknown: " << r.out << r.err;
  auto job = H().GetJob(ns_, "long");
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(job->status.completionTime.has_value()) << Describe(*job);
  EXPECT_FALSE(job->status.result.has_value()) << Describe(*job);
  EXPECT_TRUE(job->status.startTime.has_value());
  // Not a success, whatever one waits for.
  r = Kubectl(
      {"wait", "--for=condition=Succeeded", "--timeout=2s", std::string(kJobResource) + "/long"});
  EXPECT_NE(r.exitCode, 0) << "kubectl wait saw Succeeded for a Job whose process died";

  r = Kubectl({"annotate", std::string(kJobResource) + "/long",
               std::string(api::kConfirmBackendLostAnnotation) +
                   "=admin: the controller process and its in-memory backend were killed"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = Kubectl({"wait", "--for=condition=Succeeded=False", "--timeout=60s",
               std::string(kJobResource) + "/long"});
  ASSERT_EQ(r.exitCode, 0) << "kubectl wait for Succeeded=False: " << r.out << r.err;
  job = H().GetJob(ns_, "long");
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(HasCondition(*job, api::kConditionSucceeded, ConditionStatus::kFalse, "BackendLost"))
      << Describe(*job);
  EXPECT_TRUE(job->status.completionTime.has_value());
  ASSERT_TRUE(job->status.execution.has_value());
  EXPECT_EQ(job->status.execution->references.size(), 1u) << Describe(*job);

  // The Job that finished before the kill kept its result.
  auto quickAfter = H().GetJob(ns_, "quick");
  ASSERT_TRUE(quickAfter.ok());
  EXPECT_EQ(quickAfter->status, quickDone->status);
}

}  // namespace
}  // namespace ayatori::testing
