// The ayatori-controller binary as a user runs it (its build with the in-process test backend,
// ayatori-controller-test, whose main is the product's), on the real API server: two replicas with
// leader election (one leader, takeover after a SIGKILL within the lease duration, Jobs keep
// succeeding and never get a second execution), a leader whose Lease is taken over by another
// identity (it exits 3 within the renew deadline and writes nothing more), a leader that cannot
// sync (it releases the Lease and exits 4 within --sync-timeout), SIGTERM while syncing (Lease
// released, exit 0 at once), clients that hang up on /metrics (SIGPIPE is ignored), and
// `kubectl wait` for a Job through a controller that is SIGKILLed while the Job runs.
//
// On the in-process test backend each process has its own in-memory backend: an execution dies with
// the process that created it. The honest result for a Job whose process died is therefore
// ResultUnknown, ended by an administrator's confirmation (BackendLost); these tests assert that
// and never pretend otherwise.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "api/json.h"
#include "kube/leader_election.h"
#include "kube/time_format.h"
#include "test/controller/controller_fixture.h"
#include "test/support/controller_process.h"
#include "test/support/process.h"
#include "test/support/testenv.h"

namespace ayatori::testing {
namespace {

const ResourceRef kLeases{"coordination.k8s.io", "v1", "leases", true};
const ResourceRef kRoles{"rbac.authorization.k8s.io", "v1", "roles", true};
const ResourceRef kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings", true};
constexpr const char* kJobResource = "jobs.execution.ayatori.ddupan.top";

// Exit codes of ayatori-controller (cmd/ayatori-controller/main.cc, docs/operations.md).
constexpr int kExitLostLease = 3;
constexpr int kExitNotSynced = 4;

// "exit code N" or "killed by signal N", for messages.
std::string DescribeExit(int status) {
  if (status == -1) return "still running or unknown";
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

bool ExitedWith(int status, int code) { return WIFEXITED(status) && WEXITSTATUS(status) == code; }

// The first line of a JSON log whose "msg" is `msg`.
std::optional<nlohmann::json> FirstLogLine(const std::string& log, const std::string& msg) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("msg", "") == msg) return j;
  }
  return std::nullopt;
}

// The port of /metrics from the "serving metrics and health" line of a JSON log; 0 if none yet.
int MetricsPort(const std::string& log) {
  auto line = FirstLogLine(log, "serving metrics and health");
  return line ? line->value("port", 0) : 0;
}

// Connects to 127.0.0.1:port; -1 on failure.
int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// GET `path` on 127.0.0.1:port; the status line, or "" on failure.
std::string HttpGetStatusLine(int port, const std::string& path) {
  int fd = Connect(port);
  if (fd < 0) return "";
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    close(fd);
    return "";
  }
  std::string response;
  char buf[4096];
  for (ssize_t n = 0; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) response.append(buf, n);
  close(fd);
  return response.substr(0, response.find("\r\n"));
}

// The signals a process ignores, from /proc/<pid>/status (SigIgn, a hex mask; bit n-1 is signal
// n); nullopt when unreadable.
std::optional<uint64_t> IgnoredSignals(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigIgn:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  return std::nullopt;
}

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
    binary_ = TestControllerBinaryPath();
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

  ControllerProcess* StartController(const std::vector<std::string>& extraArgs,
                                     const std::string& kubeconfig = "") {
    auto p = std::make_unique<ControllerProcess>();
    std::string log = ::testing::TempDir() + "/ayatori-controller-" + ns_ + "-" +
                      std::to_string(processes_.size()) + ".log";
    std::vector<std::string> argv{
        binary_, "--kubeconfig=" + (kubeconfig.empty() ? H().kubeconfig() : kubeconfig),
        "--metrics-address=127.0.0.1:0", "--log-level=debug", "--workers=2"};
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

  // Writes `identity` into the Lease as its holder, by hand, as another replica that believes
  // the Lease expired would.
  Status StealLease(const std::string& identity) {
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto lease = H().client().Get(kLeases, ns_, "ayatori-controller");
      if (!lease.ok()) return lease.status();
      nlohmann::json& spec = (*lease)["spec"];
      const std::string now = kube::FormatMicroTime(std::chrono::system_clock::now());
      spec["holderIdentity"] = identity;
      spec["acquireTime"] = now;
      spec["renewTime"] = now;
      spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
      auto written = H().client().Update(kLeases, ns_, *lease, {});
      if (written.ok() || written.status().code() != StatusCode::kConflict) {
        return written.status();
      }
      // The leader renewed in between; read again.
    }
    return {StatusCode::kConflict, "the Lease kept changing"};
  }

  // A kubeconfig for testenv's token user ("testenv-token-user", group testenv-users), who may do
  // nothing but what a test grants it.
  std::string TokenUserKubeconfig() {
    std::string path = ::testing::TempDir() + "/kubeconfig-token-user-" + ns_;
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                        << "clusters:\n- name: t\n  cluster:\n    server: "
                        << TestenvVar("TESTENV_API")
                        << "\n    certificate-authority: " << TestenvVar("TESTENV_CA") << "\n"
                        << "users:\n- name: u\n  user:\n    token: "
                        << TestenvVar("TESTENV_USER_TOKEN") << "\n"
                        << "contexts:\n- name: t\n  context: {cluster: t, user: u}\n";
    return path;
  }

  // A replica running as the token user with --sync-timeout=`syncTimeout`, once it holds the
  // Lease; nullptr (and a test failure) if it does not take it.
  ControllerProcess* StartLeaderThatCannotSync(const std::string& syncTimeout) {
    Status granted = GrantTokenUserLeases();
    EXPECT_TRUE(granted.ok()) << granted.ToString();
    auto args = LeaderElectionArgs();
    args.push_back("--sync-timeout=" + syncTimeout);
    ControllerProcess* p = StartController(args, TokenUserKubeconfig());
    if (!granted.ok() || !Eventually([&] { return LeaseHolder() == Identity(p); }, 30s, kApiPoll)) {
      ADD_FAILURE() << "the replica did not take the Lease; holder: " << LeaseHolder();
      return nullptr;
    }
    return p;
  }

  // Lets the token user run leader election in this test's namespace, and nothing else: it can
  // lead but not list Jobs, JobClasses or Namespaces, so its informers never sync.
  Status GrantTokenUserLeases() {
    nlohmann::json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                           {"kind", "Role"},
                           {"metadata", {{"name", "leases"}, {"namespace", ns_}}},
                           {"rules",
                            {{{"apiGroups", {"coordination.k8s.io"}},
                              {"resources", {"leases"}},
                              {"verbs", {"get", "create", "update"}}}}}};
    nlohmann::json binding = {
        {"apiVersion", "rbac.authorization.k8s.io/v1"},
        {"kind", "RoleBinding"},
        {"metadata", {{"name", "leases"}, {"namespace", ns_}}},
        {"roleRef",
         {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "leases"}}},
        {"subjects",
         {{{"apiGroup", "rbac.authorization.k8s.io"},
           {"kind", "User"},
           {"name", "testenv-token-user"}}}}};
    if (auto r = H().client().Create(kRoles, ns_, role, {}); !r.ok()) return r.status();
    return H().client().Create(kRoleBindings, ns_, binding, {}).status();
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
  const auto sigtermAt = std::chrono::steady_clock::now();
  standby->Signal(SIGTERM);
  ASSERT_TRUE(standby->Wait(20s)) << "SIGTERM did not stop the controller";
  const auto stopTook = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - sigtermAt);
  std::cout << "exit after SIGTERM of the leader: " << stopTook.count() << " ms\n";
  EXPECT_TRUE(ExitedWith(standby->exitStatus(), 0)) << DescribeExit(standby->exitStatus());
  EXPECT_LT(stopTook, 5s) << "the graceful stop took " << stopTook.count() << " ms";
  EXPECT_EQ(LeaseHolder(), "") << "the Lease was not released";
}

// Another identity takes the Lease over while this replica leads (as a replica that believed it
// expired would): the leader notices at its next renewal and exits 3 within the renew deadline,
// without stopping its work in order, and writes nothing more while the other holds the Lease.
TEST_F(Binary, AStolenLeaseEndsTheLeaderWithinTheRenewDeadline) {
  ControllerProcess* p = StartController(LeaderElectionArgs());  // renew deadline 3 s
  ASSERT_TRUE(Eventually([&] { return LeaseHolder() == Identity(p); }, 30s, kApiPoll))
      << "the replica did not take the Lease; holder: " << LeaseHolder();
  ASSERT_TRUE(
      Eventually([&] { return p->Log().find("controller ready") != std::string::npos; }, 20s))
      << "the leader never started its controller";
  auto becameLeader = FirstLogLine(p->Log(), "became leader");
  ASSERT_TRUE(becameLeader.has_value());
  EXPECT_EQ(becameLeader->value("identity", ""), Identity(p)) << becameLeader->dump();

  // A Job that runs 3 s on this replica's in-memory backend: its end comes after the steal, and
  // only a replica still working would write it.
  auto running = H().CreateJob(
      JobManifest(ns_, "running", {{"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "3"}})}}}}));
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  api::Job job;
  ASSERT_TRUE(H().WaitForJob(ns_, "running", IsRunning, 20s, &job)) << Describe(job);

  ASSERT_TRUE(StealLease("thief").ok());
  const auto stolenAt = std::chrono::steady_clock::now();
  // The thief keeps renewing as itself, so the Lease never expires back to the replica.
  kube::LeaderElectionConfig thiefConfig;
  thiefConfig.leaseNamespace = ns_;
  thiefConfig.leaseName = "ayatori-controller";
  thiefConfig.identity = "thief";
  thiefConfig.leaseDuration = 4s;
  thiefConfig.renewDeadline = 3s;
  thiefConfig.retryPeriod = 500ms;
  thiefConfig.log = [](const std::string&) {};
  kube::LeaderElector thief(H().client(), SystemClock::Instance(), thiefConfig);
  std::jthread thiefThread([&thief](const std::stop_token& stop) { thief.Run(stop); });
  auto created = H().CreateJob(JobManifest(
      ns_, "after-steal", {{"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}})}}}}));
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  ASSERT_TRUE(p->Wait(3s + 1s)) << "the replica still runs "
                                << std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::steady_clock::now() - stolenAt)
                                       .count()
                                << " ms after its Lease was taken";
  const auto exitAfter = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - stolenAt);
  std::cout << "exit after the Lease was taken over: " << exitAfter.count() << " ms\n";
  RecordProperty("exit_after_steal_ms", static_cast<int>(exitAfter.count()));
  EXPECT_TRUE(ExitedWith(p->exitStatus(), kExitLostLease)) << DescribeExit(p->exitStatus());
  EXPECT_NE(p->Log().find(R"("msg":"lost the lease; exiting")"), std::string::npos);

  // Between the steal and the replica's next renewal (one retry period, 500 ms) it could not
  // know; whatever it wrote then is the state now, and nothing changes afterwards.
  auto afterSteal = H().GetJobJson(ns_, "after-steal");
  auto runningAtExit = H().GetJobJson(ns_, "running");
  ASSERT_TRUE(afterSteal.ok() && runningAtExit.ok());
  const std::string rvAtExit = afterSteal->value("/metadata/resourceVersion"_json_pointer, "");
  const std::string runningRv = runningAtExit->value("/metadata/resourceVersion"_json_pointer, "");
  ASSERT_TRUE(H().GetJob(ns_, "running").ok());
  EXPECT_TRUE(IsRunning(*H().GetJob(ns_, "running"))) << "the 3 s execution ended too early";
  std::cout
      << "Job created after the steal, at the replica's exit: finalizers "
      << afterSteal->value("/metadata/finalizers"_json_pointer, nlohmann::json::array()).dump()
      << ", status " << afterSteal->value("/status"_json_pointer, nlohmann::json()).dump() << "\n";
  // Past the end of the running Job's execution (3 s after it started).
  EXPECT_TRUE(HoldsFor(
      [&] {
        auto now = H().GetJobJson(ns_, "after-steal");
        auto run = H().GetJobJson(ns_, "running");
        return now.ok() && run.ok() &&
               now->value("/metadata/resourceVersion"_json_pointer, "") == rvAtExit &&
               run->value("/metadata/resourceVersion"_json_pointer, "") == runningRv &&
               LeaseHolder() == "thief";
      },
      4s, kApiPoll))
      << "a Job changed after the replica lost its Lease, or the thief lost it: running "
      << Describe(*H().GetJob(ns_, "running")) << "; holder " << LeaseHolder();
  thiefThread.request_stop();
  thiefThread.join();
}

// A replica that leads but whose informers cannot sync (its user may take the Lease but list
// nothing) releases the Lease and exits 4 within --sync-timeout, instead of holding the Lease
// with no worker.
TEST_F(Binary, AReplicaThatCannotSyncReleasesTheLeaseAndExits) {
  ControllerProcess* p = StartLeaderThatCannotSync("3s");
  ASSERT_NE(p, nullptr);
  const auto ledAt = std::chrono::steady_clock::now();
  ASSERT_TRUE(p->Wait(3s + 3s)) << "the replica still runs past its sync timeout";
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - ledAt);
  std::cout << "exit after taking the Lease with --sync-timeout=3s: " << took.count() << " ms\n";
  EXPECT_TRUE(ExitedWith(p->exitStatus(), kExitNotSynced)) << DescribeExit(p->exitStatus());
  EXPECT_EQ(LeaseHolder(), "") << "the Lease was not released";
  EXPECT_NE(p->Log().find("informers did not sync within the timeout"), std::string::npos);
  EXPECT_EQ(p->Log().find("controller ready"), std::string::npos);
}

// SIGTERM while the informers are still syncing (here they never will): the start is cancelled,
// the Lease released and the process exits 0 at once, not after the sync timeout.
TEST_F(Binary, SigtermWhileSyncingReleasesTheLeaseAndExitsAtOnce) {
  ControllerProcess* p = StartLeaderThatCannotSync("60s");
  ASSERT_NE(p, nullptr);
  const auto sigtermAt = std::chrono::steady_clock::now();
  p->Signal(SIGTERM);
  ASSERT_TRUE(p->Wait(5s)) << "SIGTERM did not stop a replica whose informers sync";
  std::cout << "exit after SIGTERM while syncing: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - sigtermAt)
                   .count()
            << " ms\n";
  EXPECT_TRUE(ExitedWith(p->exitStatus(), 0)) << DescribeExit(p->exitStatus());
  EXPECT_EQ(LeaseHolder(), "") << "the Lease was not released";
}

// Clients that send a request to /metrics and hang up at once (with a reset) make the server
// write to a dead connection: EPIPE, which must not kill the process (SIGPIPE is ignored).
TEST_F(Binary, ClientsThatHangUpDoNotKillTheProcess) {
  ControllerProcess* p = StartController({});
  int port = 0;
  ASSERT_TRUE(Eventually([&] { return (port = MetricsPort(p->Log())) != 0; }, 20s));
  auto ignored = IgnoredSignals(p->pid());
  ASSERT_TRUE(ignored.has_value());
  EXPECT_NE(*ignored & (uint64_t{1} << (SIGPIPE - 1)), 0u) << "SIGPIPE is not ignored";
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  for (int i = 0; i < 200 && p->Running(); ++i) {
    int fd = Connect(port);
    ASSERT_GE(fd, 0) << "cannot connect to /metrics: " << DescribeExit(p->exitStatus());
    ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    linger reset{1, 0};  // close() sends RST: the server's write then fails with EPIPE
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    close(fd);
  }
  ASSERT_TRUE(p->Running()) << "the controller died: " << DescribeExit(p->exitStatus());
  // The server holds at most 16 connections per address (src/obs/http_server.h): until it has
  // reaped the reset ones, a new connection from 127.0.0.1 may be refused. It must serve again
  // within seconds, and must still be the same process.
  std::string status;
  EXPECT_TRUE(Eventually(
      [&] {
        status = HttpGetStatusLine(port, "/healthz");
        return status == "HTTP/1.1 200 OK";
      },
      5s))
      << "last answer: \"" << status << "\"";
  EXPECT_TRUE(p->Running()) << "the controller died: " << DescribeExit(p->exitStatus());
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
               std::string(api::kConfirmBackendLostAnnotation) + "=" +
                   std::to_string(job->status.resultUnknownEpisode) +
                   ":admin: the controller process and its in-memory backend were killed"});
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
