// The Docker engine dies under running Jobs. This test starts a dockerd of its own
// ($AYATORI_DOCKERD_OUTAGE_DIR, hack/dockerd.sh) so the fixture's engine is untouched, points a
// JobClass's DockerExecutionParameters at that engine's unix socket, and runs the controller
// WITHOUT --docker-endpoint, so the parameters decide where Jobs run.
//
// While the engine is down the controller cannot prove anything about the Jobs: they must go to
// Succeeded=Unknown/ResultUnknown, with no completionTime (so no TTL), never to a failure. After
// `hack/dockerd.sh up` (--live-restore kept the containers) each Job gets its true result: the
// one whose process exited during the outage its exit code, the one still running its later
// success.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>

#include "test/adapters/docker/e2e_support.h"
#include "test/e2e/controller_e2e.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::e2e {
namespace {

using adapters::docker::e2e::RunHackScript;
using adapters::docker::e2e::TcpListener;

constexpr const char* kBusybox = "ayatori.local/busybox:1";
constexpr const char* kClass = "e2e-docker-outage";

class DockerOutageE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    dir_ = testing::RequiredEnv("AYATORI_DOCKERD_OUTAGE_DIR");
    ASSERT_FALSE(dir_.empty());
    env_ = {"AYATORI_DOCKERD_DIR=" + dir_};
    ASSERT_TRUE(RunHackScript("dockerd.sh", {"up"}, env_));
    host_ = adapters::docker::e2e::DockerHostOf(dir_);
    ASSERT_EQ(host_, "unix://" + dir_ + "/docker.sock");
    ASSERT_TRUE(InstallCrds());
    // Host network: the Jobs block on a TCP connection to this test until it lets them end.
    ASSERT_TRUE(ApplyDockerClass(kClass, {{"endpoint", host_},
                                          {"networkMode", "host"},
                                          {"allowHostNetwork", true},
                                          {"stopGracePeriodSeconds", 1}}));
    ASSERT_NO_FATAL_FAILURE(StartControllerAndNamespace("e2e-outage", {}));
  }

  void TearDown() override {
    // Up first (a no-op when it runs): only a running engine lets the controller clean up.
    RunHackScript("dockerd.sh", {"up"}, env_);
    ControllerTest::TearDown();
    RunHackScript("dockerd.sh", {"down"}, env_);
  }

  // The host pid of a container's main process (0 if unknown).
  int MainPid(const std::string& id) {
    auto c = InspectContainer(host_, id);
    return c ? c->value("/State/Pid"_json_pointer, 0) : 0;
  }

  std::string dir_;
  std::vector<std::string> env_;
  std::string host_;
};

json BlockingTask(int port, const std::string& then) {
  return {{"image", kBusybox},
          {"command", {"/bin/sh", "-c", "nc 127.0.0.1 " + std::to_string(port) + then}}};
}

bool IsResultUnknown(const json& j) {
  return ConditionSummary(j, "Succeeded") == "Unknown/ResultUnknown" &&
         !j.contains("/status/completionTime"_json_pointer);
}

// The pid of the containerd shim that holds container `id`'s task (0 if none; the test fails).
int ShimPid(const std::vector<std::string>& env, const std::string& id) {
  std::string out;
  if (!RunHackScript("dockerd.sh", {"shim", id}, env, &out)) return 0;
  int pid = 0;
  std::from_chars(out.data(), out.data() + out.size(), pid);
  return pid;
}

TEST_F(DockerOutageE2ETest, EngineKilledMidRunIsResultUnknownThenTheTrueResults) {
  TcpListener listenA, listenB;
  std::string uidA = CreateJob("ends-in-outage", kClass, BlockingTask(listenA.port(), "; exit 4"));
  std::string uidB = CreateJob("runs-through", kClass, BlockingTask(listenB.port(), ""));
  ASSERT_FALSE(uidA.empty() || uidB.empty());
  int connA = listenA.Accept(60s);
  int connB = listenB.Accept(60s);
  ASSERT_GE(connA, 0) << "Job A never connected";
  ASSERT_GE(connB, 0) << "Job B never connected";
  for (const char* name : {"ends-in-outage", "runs-through"}) {
    WaitForJob(
        ns_, name,
        [](const json& j) { return ConditionSummary(j, "Succeeded") == "Unknown/Running"; }, 60s,
        "Running");
  }
  auto idsA = ContainersOf(host_, uidA);
  ASSERT_EQ(idsA.size(), 1u);
  int pidA = MainPid(idsA[0]);
  ASSERT_GT(pidA, 0);

  ASSERT_TRUE(RunHackScript("dockerd.sh", {"kill"}, env_));
  for (const char* name : {"ends-in-outage", "runs-through"}) {
    json j = WaitForJob(ns_, name, IsResultUnknown, 60s,
                        "Succeeded=Unknown/ResultUnknown without completionTime");
    EXPECT_TRUE(IsResultUnknown(j)) << Describe(j);
    EXPECT_FALSE(j.contains("/status/result"_json_pointer)) << Describe(j);
    // It says why (the engine is unreachable), never where: no endpoint in the Job API.
    EXPECT_NE(j.dump().find("BackendUnreachable"), std::string::npos) << Describe(j);
    EXPECT_EQ(j.dump().find(dir_), std::string::npos) << Describe(j);
  }
  // Job A's process exits 4 while no engine is there to see it.
  close(connA);
  ASSERT_TRUE(testing::Eventually([&] { return kill(pidA, 0) != 0 && errno == ESRCH; }, 30s))
      << "Job A's process did not exit";
  // Nothing is concluded from the silence.
  json stillUnknown = Get(kJobResource, ns_, "ends-in-outage").value_or(json());
  EXPECT_TRUE(IsResultUnknown(stillUnknown)) << Describe(stillUnknown);

  ASSERT_TRUE(RunHackScript("dockerd.sh", {"up"}, env_));
  json a = WaitForFinished(ns_, "ends-in-outage", 90s);
  EXPECT_EQ(ConditionSummary(a, "Succeeded"), "False/ProcessFailed") << Describe(a);
  EXPECT_EQ(a.value("/status/result/exitCode"_json_pointer, -1), 4) << Describe(a);
  json b = WaitForJob(
      ns_, "runs-through",
      [](const json& j) { return ConditionSummary(j, "Succeeded") == "Unknown/Running"; }, 90s,
      "Running again once the engine is back");
  EXPECT_FALSE(b.contains("/status/completionTime"_json_pointer)) << Describe(b);
  close(connB);
  b = WaitForFinished(ns_, "runs-through", 60s);
  EXPECT_EQ(ConditionSummary(b, "Succeeded"), "True/Completed") << Describe(b);
  EXPECT_EQ(ContainersOf(host_, uidA).size(), 1u);
  EXPECT_EQ(ContainersOf(host_, uidB).size(), 1u);
  auto startB = ParseTime(b.value("/status/startTime"_json_pointer, ""));
  auto endB = ParseTime(b.value("/status/completionTime"_json_pointer, ""));
  ASSERT_TRUE(startB && endB) << Describe(b);
  EXPECT_LE(*startB, *endB);
}

// The engine loses a task's exit status: dockerd's own containerd dies with it, and a task whose
// shim is gone when they come back is recorded "exited 255" at the restart (a crash takes some
// shims; here the test kills the task's shim during the outage, which makes it certain; see
// docs/operations.md "dockerd was restarted"). The Job must stay ResultUnknown, saying
// ExitStatusLost, and never claim the 255.
TEST_F(DockerOutageE2ETest, AnExitStatusTheEngineLostLeavesTheJobResultUnknown) {
  TcpListener listen;
  std::string uid = CreateJob("status-lost", kClass, BlockingTask(listen.port(), "; exit 4"));
  ASSERT_FALSE(uid.empty());
  int conn = listen.Accept(60s);
  ASSERT_GE(conn, 0) << "the Job never connected";
  WaitForJob(
      ns_, "status-lost",
      [](const json& j) { return ConditionSummary(j, "Succeeded") == "Unknown/Running"; }, 60s,
      "Running");
  auto ids = ContainersOf(host_, uid);
  ASSERT_EQ(ids.size(), 1u);
  const int shim = ShimPid(env_, ids[0]);
  ASSERT_GT(shim, 0) << "no containerd shim holds container " << ids[0];

  ASSERT_TRUE(RunHackScript("dockerd.sh", {"kill"}, env_));
  WaitForJob(ns_, "status-lost", IsResultUnknown, 60s,
             "Succeeded=Unknown/ResultUnknown without completionTime");
  ASSERT_EQ(kill(shim, SIGKILL), 0);
  ASSERT_TRUE(RunHackScript("dockerd.sh", {"up"}, env_));

  // The engine now reports 255 for a task that exits 4 ...
  std::optional<json> container;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        container = InspectContainer(host_, ids[0]);
        return container && container->value("/State/Status"_json_pointer, "") == "exited";
      },
      60s))
      << "the container did not end after the restart";
  ASSERT_EQ(container->value("/State/ExitCode"_json_pointer, -1), 255) << container->dump();
  // ... and the Job says its result is unknown, with the cause, and holds no result.
  auto lostSaid = [](const json& j) {
    return IsResultUnknown(j) && j.dump().find("ExitStatusLost") != std::string::npos;
  };
  json lost = WaitForJob(ns_, "status-lost", lostSaid, 60s, "ResultUnknown saying ExitStatusLost");
  EXPECT_FALSE(lost.contains("/status/result"_json_pointer)) << Describe(lost);
  EXPECT_TRUE(testing::HoldsFor(
      [&] { return lostSaid(Get(kJobResource, ns_, "status-lost").value_or(json())); }, 5s, 250ms))
      << Describe(Get(kJobResource, ns_, "status-lost").value_or(json()));

  // A cancel now stops nothing (the task has ended) and must not turn the lost status into a
  // result: the container keeps its name (no cancel mark) and the Job stays ResultUnknown.
  PatchJob("status-lost", {{"spec", {{"desiredState", "Cancelled"}}}});
  EXPECT_TRUE(testing::HoldsFor(
      [&] { return lostSaid(Get(kJobResource, ns_, "status-lost").value_or(json())); }, 5s, 250ms))
      << "a cancel reported a result the engine lost: "
      << Describe(Get(kJobResource, ns_, "status-lost").value_or(json()));
  container = InspectContainer(host_, ids[0]);
  ASSERT_TRUE(container.has_value());
  EXPECT_EQ(container->value("/Name"_json_pointer, ""), "/ayatori-" + uid) << container->dump();
  close(conn);
}

}  // namespace
}  // namespace ayatori::e2e
