// kubectl-ayatori end to end: the plugin drives Jobs that the real ayatori-controller (a
// subprocess) runs as containers of the "dockerd" fixture's engine. What the integration test
// (plugin_test.cc) shows with statuses written by the test, this shows with statuses written by
// the controller: `run --wait` mirrors the process's outcome, `cancel` + `wait` ends Cancelled,
// `describe` shows the container reference and the controller's Events.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "test/e2e/controller_e2e.h"
#include "test/support/testenv.h"

namespace ayatori::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kBusybox = "ayatori.local/busybox:1";
constexpr const char* kClass = "e2e-kubectl-ayatori";  // cluster-scoped: named after this file

testing::ProcessResult Plugin(const std::vector<std::string>& args) {
  std::vector<std::string> argv{
      testing::RequiredEnv("AYATORI_BINARY_DIR") + "/cmd/kubectl-ayatori/kubectl-ayatori",
      "--kubeconfig", testing::TestenvVar("KUBECONFIG")};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv);
}

// The STATE column of `get NAME`.
std::string StateOf(const std::string& ns, const std::string& name) {
  auto r = Plugin({"get", name, "-n", ns});
  std::istringstream in(r.out);
  std::string header, row, nameWord, state;
  std::getline(in, header);
  std::getline(in, row);
  std::istringstream words(row);
  words >> nameWord >> state;
  return state;
}

class KubectlAyatoriDockerE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    const std::string host = FixtureDockerHost();
    ASSERT_TRUE(InstallCrds());
    // A short stop grace period: busybox sleep as PID 1 ignores SIGTERM.
    ASSERT_TRUE(ApplyDockerClass(kClass, {{"endpoint", host},
                                          {"networkMode", "none"},
                                          {"pullPolicy", "IfNotPresent"},
                                          {"stopGracePeriodSeconds", 1}}));
    ASSERT_NO_FATAL_FAILURE(
        StartControllerAndNamespace("e2e-plugin", {"--docker-endpoint=" + host}));
  }
};

TEST_F(KubectlAyatoriDockerE2ETest, RunWaitGetDescribeCancel) {
  // Success: the words after -- are the image's arguments (busybox has no entrypoint).
  auto r = Plugin({"run", "ok", "-n", ns_, "--class", kClass, "--image", kBusybox, "--wait",
                   "--timeout", "120s", "--", "echo", "hello world"});
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("job.execution.ayatori.ddupan.top/ok created\n"));
  EXPECT_THAT(r.out, HasSubstr("job.execution.ayatori.ddupan.top/ok Succeeded (Completed, exit "
                               "code 0)\n"));
  EXPECT_EQ(StateOf(ns_, "ok"), "Succeeded");

  // Failure: exit code 3 of the process, the plugin's exit code 3 (Failed).
  r = Plugin({"run", "fails", "-n", ns_, "--class", kClass, "--image", kBusybox, "--command",
              "--wait", "--timeout", "120s", "--", "/bin/sh", "-c", "exit 3"});
  EXPECT_EQ(r.exitCode, 3) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("fails Failed (ProcessFailed, exit code 3)"));

  // describe: the container the controller created and its Events.
  r = Plugin({"describe", "ok", "-n", ns_});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("State:                 Succeeded\n"));
  EXPECT_THAT(r.out, HasSubstr("Resolved Class:        " + std::string(kClass) + "\n"));
  EXPECT_THAT(r.out, HasSubstr("  References:          Container/"));
  EXPECT_THAT(r.out, Not(HasSubstr("Events: <none>")));
  EXPECT_THAT(r.out, Not(HasSubstr("unix://")));  // the engine's endpoint is not the user's

  // Cancel a running Job; wait exits 4 (Cancelled).
  r = Plugin(
      {"run", "sleeper", "-n", ns_, "--class", kClass, "--image", kBusybox, "--", "sleep", "300"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(testing::Eventually([&] { return StateOf(ns_, "sleeper") == "Running"; }, 60s, 200ms))
      << StateOf(ns_, "sleeper");
  r = Plugin({"cancel", "sleeper", "-n", ns_});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = Plugin({"wait", "sleeper", "-n", ns_, "--timeout", "120s"});
  EXPECT_EQ(r.exitCode, 4) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("sleeper Cancelled"));
}

}  // namespace
}  // namespace ayatori::e2e
