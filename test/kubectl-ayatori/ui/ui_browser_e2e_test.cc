// `kubectl ayatori ui` in a real browser (test/ui/browser.test.mjs drives Debian's chromium with
// playwright-core), against the real kube-apiserver, the controller running Jobs on the
// "dockerd" fixture's engine, and the Job log API served by that controller through its
// APIService: e2e_logs_api_test's setting (DockerLogsApiE2ETest of test/e2e/logs_api_e2e.h). The
// screenshots go to $AYATORI_BINARY_DIR/run/e2e/ui-screenshots/.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "test/e2e/logs_api_e2e.h"
#include "test/support/wait.h"

namespace ayatori::e2e::logs {
namespace {

// A Job's state as `kubectl ayatori get` derives it: Running once Succeeded=Unknown/Running.
bool IsRunning(const json& job) { return ConditionSummary(job, "Succeeded") == "Unknown/Running"; }

using UiBrowserE2ETest = DockerLogsApiE2ETest;

TEST_F(UiBrowserE2ETest, TheWebViewShowsFiltersFollowsAndCancelsJobsInChromium) {
  const std::string nodeModules = [] {
    ProcessResult deps =
        RunProcess({testing::RequiredEnv("AYATORI_SOURCE_DIR") + "/hack/ui-test-deps.sh"});
    EXPECT_EQ(deps.exitCode, 0) << deps.err;
    return deps.out.substr(0, deps.out.find('\n'));
  }();
  ASSERT_FALSE(nodeModules.empty());

  json secretEnv = Task("echo failing; exit 3");
  secretEnv["env"] = {{{"name", "API_KEY"}, {"value", "do-not-show-this-value"}}};
  ASSERT_FALSE(CreateJob("ui-succeeded", kDockerClass, Task("echo ok")).empty());
  ASSERT_FALSE(CreateJob("ui-failed", kDockerClass, secretEnv).empty());
  ASSERT_FALSE(CreateJob("ui-running", kDockerClass,
                         Task("i=1; while [ $i -le 900 ]; do echo tick $i; i=$((i+1)); "
                              "sleep 0.3; done"))
                   .empty());
  ASSERT_FALSE(CreateJob("ui-hostile", kDockerClass,
                         Task("printf '<script>alert(\"xss\")</script>\\n<img src=x "
                              "onerror=alert(1)>\\n\\033[31mred text\\033[0m\\nend-of-hostile\\n'"))
                   .empty());
  ASSERT_FALSE(CreateJob("ui-cancel", kDockerClass, Task("sleep 600")).empty());
  for (const char* name : {"ui-succeeded", "ui-failed", "ui-hostile"}) {
    (void)WaitForFinished(ns_, name);
  }
  for (const char* name : {"ui-running", "ui-cancel"}) {
    (void)WaitForJob(ns_, name, IsRunning, 120s, "Running");
  }
  if (HasFatalFailure()) return;

  testing::ControllerProcess ui;
  const std::string uiLog = RunPath("ui-browser.plugin.log");
  std::filesystem::remove(uiLog);
  ASSERT_TRUE(
      ui.Spawn({testing::RequiredEnv("AYATORI_BINARY_DIR") + "/cmd/kubectl-ayatori/kubectl-ayatori",
                "--kubeconfig", TestenvVar("KUBECONFIG"), "ui", "--no-browser", "-n", ns_},
               uiLog)
          .ok());
  const std::regex printed(R"(http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{64})");
  std::smatch m;
  std::string url;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const std::string text = ui.Log();
        if (!std::regex_search(text, m, printed)) return false;
        url = m[0];
        return true;
      },
      30s, 50ms))
      << ui.Log();

  const std::string shots = RunPath("ui-screenshots");
  std::filesystem::create_directories(shots);
  const json names = {{"succeeded", "ui-succeeded"},
                      {"failed", "ui-failed"},
                      {"running", "ui-running"},
                      {"hostile", "ui-hostile"},
                      {"cancel", "ui-cancel"}};
  ProcessResult browser = RunProcess(
      {"env", "AYATORI_UI_URL=" + url, "AYATORI_UI_NAMESPACE=" + ns_,
       "AYATORI_UI_JOBS=" + names.dump(), "AYATORI_UI_NODE_MODULES=" + nodeModules,
       "AYATORI_UI_CHROMIUM=/usr/bin/chromium", "AYATORI_UI_SCREENSHOTS=" + shots, "node",
       testing::RequiredEnv("AYATORI_SOURCE_DIR") + "/test/ui/browser.test.mjs"});
  std::cout << browser.out;
  EXPECT_EQ(browser.exitCode, 0) << browser.out << browser.err << "\nplugin:\n" << ui.Log();
  for (const char* shot : {"ui-list.png", "ui-failed-details.png", "ui-log-follow.png",
                           "ui-hostile.png", "ui-cancelled.png"}) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(shots) / shot)) << shot;
  }
  // The Job the page cancelled, as the cluster has it.
  json cancelled = WaitForFinished(ns_, "ui-cancel");
  EXPECT_EQ(ConditionSummary(cancelled, "Succeeded"), "False/Cancelled") << Describe(cancelled);
  EXPECT_EQ(ui.Log().find("do-not-show-this-value"), std::string::npos);
  EXPECT_TRUE(ui.Stop(10s));
}

}  // namespace
}  // namespace ayatori::e2e::logs
