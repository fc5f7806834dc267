// Hostile workloads on Docker under the restricted security profile (issue 25, docs/security.md),
// through the real ayatori-controller binary and the "dockerd" fixture's engine. Each hostile Job
// runs beside an ordinary one: the ordinary Job succeeds within twice its usual time (measured
// alone, the same way, in this process), the hostile Job ends with a clear reason, and the
// controller stays healthy (/healthz answers 200, its peak memory stays small).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "test/e2e/controller_e2e.h"
#include "test/support/process.h"

namespace ayatori::e2e {
namespace {

constexpr const char* kBusybox = "ayatori.local/busybox:1";
constexpr const char* kSetuidImage = "ayatori.local/setuid-probe:1";
// The classes of this file: the restricted defaults (small tmpfs, short stop grace period), and
// the same with privilege escalation allowed (the control of the setuid case).
constexpr const char* kClass = "e2e-docker-hostile";
constexpr const char* kClassEscalation = "e2e-docker-hostile-escalation";
constexpr int kTmpSizeMiB = 8;

using Clock = std::chrono::steady_clock;

json Task(const std::vector<std::string>& command, const std::string& image = kBusybox) {
  return {{"image", image}, {"command", command}};
}

json Limits(const std::string& cpu, const std::string& memory) {
  return {{"resources",
           {{"requests", {{"cpu", cpu}, {"memory", memory}}},
            {"limits", {{"cpu", cpu}, {"memory", memory}}}}}};
}

// The controller's peak resident memory (VmHWM) in KiB, 0 when unknown.
long PeakRssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

class DockerHostileE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    host_ = FixtureDockerHost();
    ASSERT_TRUE(InstallCrds());
    json params = {{"endpoint", host_},
                   {"pullPolicy", "IfNotPresent"},
                   {"stopGracePeriodSeconds", 1},
                   {"securityProfile", {{"tmpSizeMiB", kTmpSizeMiB}}}};
    ASSERT_TRUE(ApplyDockerClass(kClass, params));
    params["securityProfile"]["allowPrivilegeEscalation"] = true;
    ASSERT_TRUE(ApplyDockerClass(kClassEscalation, params));
    ASSERT_NO_FATAL_FAILURE(
        StartControllerAndNamespace("e2e-hostile", {"--docker-endpoint=" + host_}));
  }

  // The ordinary Job's usual time, measured alone right before a case (the machine's load
  // changes over the suite): the slower of two runs.
  // An ordinary Job's time alone: the slower of two runs, and never counted below 1 s. Its
  // few hundred milliseconds are mostly kubectl's start and the 100 ms polls of this test, whose
  // jitter on a loaded 2-core machine alone reached 2x (674 vs 322 ms beside the stdout flood in
  // one CI run); starvation, which the 2x bound is for, shows as seconds.
  void MeasureUsual(const std::string& name) {
    usual_ = std::max({RunOrdinary(name + "-alone-1"), RunOrdinary(name + "-alone-2"),
                       Clock::duration(std::chrono::seconds(1))});
  }

  // An ordinary Job: created now, waited for until it ended; it must succeed. Its time from
  // create to the first read that shows it succeeded.
  Clock::duration RunOrdinary(const std::string& name) {
    const auto begin = Clock::now();
    EXPECT_FALSE(CreateJob(name, kClass, Task({"/bin/sh", "-c", "echo ordinary"})).empty());
    json job = WaitForFinished(ns_, name);
    const auto took = Clock::now() - begin;
    EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
    return took;
  }

  // The hostile Job `name`, then (once it runs, or ended) an ordinary Job beside it, which must
  // succeed within twice its usual time; returns the hostile Job once it ended.
  json Beside(const std::string& name, const json& task, const json& spec,
              const std::string& jobClass = kClass) {
    MeasureUsual(name);
    EXPECT_FALSE(CreateJob(name, jobClass, task, spec).empty());
    WaitForJob(
        ns_, name,
        [](const json& j) {
          const std::string s = ConditionSummary(j, "Succeeded");
          return s == "Unknown/Running" || s.starts_with("True/") || s.starts_with("False/");
        },
        120s, "running or ended");
    const auto took = RunOrdinary(name + "-ordinary");
    Report(name, took);
    EXPECT_LE(took, 2 * usual_)
        << "the ordinary Job beside " << name << " took "
        << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
        << " ms; alone it takes "
        << std::chrono::duration_cast<std::chrono::milliseconds>(usual_).count() << " ms";
    json job = WaitForFinished(ns_, name);
    ExpectControllerHealthy();
    return job;
  }

  // The measurement, for the test's output.
  void Report(const std::string& name, Clock::duration beside) {
    using std::chrono::duration_cast;
    using std::chrono::milliseconds;
    std::cout << "hostile " << name << ": ordinary Job "
              << duration_cast<milliseconds>(beside).count() << " ms beside it, "
              << duration_cast<milliseconds>(usual_).count() << " ms alone\n";
  }

  void ExpectControllerHealthy() {
    ASSERT_TRUE(controller_.Running()) << "the controller died";
    auto r = testing::RunProcess(
        {"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
         "http://127.0.0.1:" + std::to_string(controller_.metricsPort()) + "/healthz"});
    EXPECT_EQ(r.out, "200") << r.err;
  }

  std::string Logs(const json& job) {
    const std::string uid = job.value("/metadata/uid"_json_pointer, "");
    auto ids = ContainersOf(host_, uid);
    EXPECT_EQ(ids.size(), 1u) << Describe(job);
    return ids.empty() ? "" : ContainerLogs(host_, ids[0]);
  }

  std::string host_;
  Clock::duration usual_{};
};

// The probe of issue 25: a non-root uid, no capabilities, no new privileges, a seccomp filter,
// a numeric pids limit, and a read-only root filesystem.
TEST_F(DockerHostileE2ETest, ProbeShowsTheRestrictedProfile) {
  json job = Beside("probe",
                    Task({"/bin/sh", "-c",
                          "id; grep -E 'CapEff|NoNewPrivs|Seccomp' /proc/self/status; "
                          "cat /sys/fs/cgroup/pids/pids.max; touch /etc/x"}),
                    json::object());
  // touch fails, so the Job does: its exit code is touch's.
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  const std::string out = Logs(job);
  EXPECT_NE(out.find("uid=65534"), std::string::npos) << out;
  EXPECT_EQ(out.find("uid=0("), std::string::npos) << out;
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;
  EXPECT_NE(out.find("Seccomp:\t2"), std::string::npos) << out;  // a filter is installed
  EXPECT_NE(out.find("\n256\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Read-only file system"), std::string::npos) << out;
}

// A fork bomb fills its pids limit and no more; its deadline ends it.
TEST_F(DockerHostileE2ETest, ForkBombHitsThePidsLimit) {
  json spec = Limits("500m", "256Mi");
  // Room for the bomb to reach the limit on a loaded machine (8 s was too little at a load of 15
  // on 2 cores).
  spec["activeDeadlineSeconds"] = 12;
  // Every process of the bomb prints how many the container holds (shell builtins only). The
  // bomb runs in a subshell: the main shell forks only before it, then waits for a sleep, so a
  // fork the bomb makes fail cannot end the task before its deadline.
  json job = Beside("forkbomb",
                    Task({"/bin/sh", "-c",
                          "sleep 60 & (b() { read n < /sys/fs/cgroup/pids/pids.current; echo $n; "
                          "b | b & }; b) & wait"}),
                    spec);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/DeadlineExceeded") << Describe(job);
  const std::string out = Logs(job);
  long most = 0;
  for (const auto& line : testing::Lines(out)) most = std::max(most, std::atol(line.c_str()));
  EXPECT_LE(most, 256) << "more processes than pidsLimit";
  // The bomb reached the limit: a fork failed for want of pids (EAGAIN), which no other limit
  // on this machine causes at this size. The printed counts are only a sample (a process whose
  // output goes into a pipe nobody reads prints nothing), so their maximum cannot show this.
  EXPECT_NE(out.find("can't fork: Resource temporarily unavailable"), std::string::npos)
      << "the bomb never reached the pids limit: the check above could not fail\n"
      << out.substr(0, 2000);
}

// Writing to / fails (read-only root); writing to /tmp ends at the tmpfs size.
TEST_F(DockerHostileE2ETest, DiskFillIsReadOnlyOnRootAndBoundedInTmp) {
  json job = Beside("diskfill",
                    Task({"/bin/sh", "-c",
                          "dd if=/dev/zero of=/fill bs=1M count=1; "
                          "dd if=/dev/zero of=/tmp/fill bs=1M count=64; "
                          "ls -l /tmp/fill; exit 1"}),
                    Limits("500m", "64Mi"));
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  const std::string out = Logs(job);
  EXPECT_NE(out.find("can't open '/fill': Read-only file system"), std::string::npos) << out;
  EXPECT_NE(out.find("No space left on device"), std::string::npos) << out;
  // The file stops at the tmpfs size: 8 MiB = 8388608 bytes.
  EXPECT_NE(out.find(" " + std::to_string(kTmpSizeMiB * 1024 * 1024) + " "), std::string::npos)
      << out;
}

TEST_F(DockerHostileE2ETest, MemoryBombIsOOMKilled) {
  json job = Beside("membomb", Task({"/bin/sh", "-c", "tail /dev/zero"}), Limits("500m", "32Mi"));
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/OOMKilled") << Describe(job);
}

// 1 GiB of output: the engine keeps at most logMaxBytes of it, and the controller's memory does
// not follow.
TEST_F(DockerHostileE2ETest, GigabyteOfStdoutKeepsTheLogBounded) {
  const long before = PeakRssKiB(controller_.pid());
  json job =
      Beside("flood",
             Task({"/bin/sh", "-c",
                   "yes aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | head -c 1073741824"}),
             Limits("500m", "64Mi"));
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  const std::string uid = job.value("/metadata/uid"_json_pointer, "");
  auto ids = ContainersOf(host_, uid);
  ASSERT_EQ(ids.size(), 1u);
  auto c = InspectContainer(host_, ids[0]);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->value("/HostConfig/LogConfig/Config/max-size"_json_pointer, ""), "10485760");
  struct stat st {};
  const std::string logPath = c->value("LogPath", "");
  ASSERT_EQ(stat(logPath.c_str(), &st), 0) << logPath;
  // The json-file driver's file (each line wrapped in JSON): at most max-size plus one line.
  EXPECT_LE(st.st_size, 10 * 1024 * 1024 + 64 * 1024) << logPath;
  EXPECT_GT(st.st_size, 1024 * 1024) << "the task wrote little: the check could not fail";
  const long after = PeakRssKiB(controller_.pid());
  EXPECT_LT(after - before, 64 * 1024)
      << "controller peak RSS grew from " << before << " to " << after << " KiB";
}

// A setuid-root binary cannot become root under no-new-privileges; the control class (privilege
// escalation allowed) shows that the same binary does get effective uid 0 otherwise.
TEST_F(DockerHostileE2ETest, SetuidRootBinaryCannotBecomeRoot) {
  const char* probe = std::getenv("AYATORI_SETUID_PROBE");
  ASSERT_NE(probe, nullptr) << "AYATORI_SETUID_PROBE names the static probe program";
  if (Docker(host_, {"image", "inspect", kSetuidImage}).exitCode != 0) {
    // FROM scratch: the probe alone, owned by root, mode 4755.
    const std::string dir = RunPath("setuid-probe-image");
    ASSERT_EQ(testing::RunProcess({"rm", "-rf", dir}).exitCode, 0);
    ASSERT_EQ(testing::RunProcess({"mkdir", "-p", dir + "/root"}).exitCode, 0);
    ASSERT_EQ(testing::RunProcess({"cp", probe, dir + "/root/setuid-probe"}).exitCode, 0);
    ASSERT_EQ(testing::RunProcess({"chmod", "4755", dir + "/root/setuid-probe"}).exitCode, 0);
    auto tar = testing::RunProcess({"tar", "--numeric-owner", "--owner=0", "--group=0", "-C",
                                    dir + "/root", "-cf", dir + "/image.tar", "."});
    ASSERT_EQ(tar.exitCode, 0) << tar.err;
    auto imported = Docker(host_, {"import", "--change", "ENTRYPOINT [\"/setuid-probe\"]",
                                   dir + "/image.tar", kSetuidImage});
    ASSERT_EQ(imported.exitCode, 0) << imported.err;
  }
  json job = Beside("setuid", Task({"/setuid-probe"}, kSetuidImage), json::object());
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  std::string out = Logs(job);
  EXPECT_NE(out.find("before: uid=65534 euid=65534"), std::string::npos) << out;
  EXPECT_NE(out.find("setuid(0) failed: Operation not permitted"), std::string::npos) << out;

  EXPECT_FALSE(
      CreateJob("setuid-control", kClassEscalation, Task({"/setuid-probe"}, kSetuidImage)).empty());
  json control = WaitForFinished(ns_, "setuid-control");
  EXPECT_EQ(ConditionSummary(control, "Succeeded"), "True/Completed") << Describe(control);
  out = Logs(control);
  // The exec made the effective uid root (all capabilities are still dropped, so setuid(0)
  // changes no more than that).
  EXPECT_NE(out.find("before: uid=65534 euid=0"), std::string::npos) << out;
  EXPECT_NE(out.find("setuid(0) succeeded"), std::string::npos) << out;
}

// Network none: neither the controller's own port on the host's loopback nor any other address
// can be reached.
TEST_F(DockerHostileE2ETest, OutboundConnectionsFailWithNetworkNone) {
  const std::string port = std::to_string(controller_.metricsPort());
  json job = Beside("egress",
                    Task({"/bin/sh", "-c",
                          "nc -w 2 127.0.0.1 " + port + " </dev/null && echo reached-controller; " +
                              "nc -w 2 192.0.2.1 80 </dev/null && echo reached-net; exit 1"}),
                    json::object());
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  const std::string out = Logs(job);
  EXPECT_EQ(out.find("reached-"), std::string::npos) << out;
  EXPECT_NE(out.find("Connection refused"), std::string::npos) << out;
  EXPECT_NE(out.find("unreachable"), std::string::npos) << out;
}

constexpr const char* kIgnoresSigterm = "trap '' TERM; while true; do sleep 1; done";

// A task that ignores SIGTERM is killed once the stop grace period (1 s) passed.
TEST_F(DockerHostileE2ETest, SigtermIgnoringTaskIsCancelledAfterTheGracePeriod) {
  MeasureUsual("stubborn");
  ASSERT_FALSE(CreateJob("stubborn", kClass, Task({"/bin/sh", "-c", kIgnoresSigterm})).empty());
  WaitForJob(
      ns_, "stubborn",
      [](const json& j) { return ConditionSummary(j, "Succeeded") == "Unknown/Running"; }, 60s,
      "running");
  const auto begin = Clock::now();
  PatchJob("stubborn", {{"spec", {{"desiredState", "Cancelled"}}}});
  const auto ordinary = RunOrdinary("stubborn-ordinary");
  Report("stubborn", ordinary);
  EXPECT_LE(ordinary, 2 * usual_);
  json job = WaitForFinished(ns_, "stubborn", 60s);
  const auto took = Clock::now() - begin;
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/Cancelled") << Describe(job);
  EXPECT_GE(took, 1s) << "ended before the grace period: SIGTERM was not ignored";
  EXPECT_LT(took, 30s);
  ExpectControllerHealthy();
}

TEST_F(DockerHostileE2ETest, SigtermIgnoringTaskEndsAtItsDeadline) {
  json job =
      Beside("overdue", Task({"/bin/sh", "-c", kIgnoresSigterm}), {{"activeDeadlineSeconds", 2}});
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/DeadlineExceeded") << Describe(job);
  const std::string uid = job.value("/metadata/uid"_json_pointer, "");
  auto ids = ContainersOf(host_, uid);
  ASSERT_EQ(ids.size(), 1u);
  auto c = InspectContainer(host_, ids[0]);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->value("/State/Running"_json_pointer, true)) << "outlived its deadline";
  EXPECT_EQ(c->value("/State/ExitCode"_json_pointer, 0), 137) << "SIGKILL after the grace period";
}

}  // namespace
}  // namespace ayatori::e2e
