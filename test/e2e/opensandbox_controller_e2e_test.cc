// Ayatori end to end on OpenSandbox, as a user drives it: Jobs created with kubectl against the
// real kube-apiserver, reconciled by the real ayatori-controller binary, run by the real
// opensandbox-server (fixture "opensandbox": hack/opensandbox/opensandbox.sh) on the project's
// dockerd, with the execd stand-in in every sandbox. Sandboxes use host networking, so these
// tests hold RESOURCE_LOCK opensandbox and check that no sandbox is left between tests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <sstream>

#include "kube/config.h"
#include "test/adapters/docker/e2e_support.h"
#include "test/e2e/controller_e2e.h"
#include "test/support/testenv.h"

namespace ayatori::e2e {
namespace {

using adapters::docker::e2e::ReadEnvFile;
using adapters::docker::e2e::TcpListener;

constexpr const char* kClass = "e2e-opensandbox";
constexpr const char* kClassDenied = "e2e-opensandbox-denied";
constexpr const char* kSandboxLabel = "opensandbox.io/id";

class OpenSandboxControllerE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    host_ = FixtureDockerHost();
    osbDir_ = testing::RequiredEnv("AYATORI_OPENSANDBOX_DIR");
    auto vars = ReadEnvFile(osbDir_ + "/env.sh");
    domain_ = vars["AYATORI_OSB_DOMAIN"];
    apiKey_ = vars["AYATORI_OSB_API_KEY"];
    workload_ = vars["AYATORI_OSB_WORKLOAD_IMAGE"];
    ASSERT_FALSE(domain_.empty() || apiKey_.empty() || workload_.empty());
    ASSERT_TRUE(Sandboxes().empty()) << "a sandbox is left from an earlier test";
    ASSERT_TRUE(InstallCrds());
    ASSERT_NO_FATAL_FAILURE(StartControllerAndNamespace("e2e-osb", {}));
    // The API key lives in a Secret of the test's namespace that the parameters name.
    ASSERT_TRUE(Apply({{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata", {{"name", "osb-api-key"}, {"namespace", ns_}}},
                       {"stringData", {{"api-key", apiKey_}}}}));
    ASSERT_TRUE(ApplyClass(kClass, "Allowed"));
    ASSERT_TRUE(ApplyClass(kClassDenied, "Denied"));
  }
  void TearDown() override {
    // Before the Jobs' deletion removes them: a sandbox's own output (its bootstrap and execd's
    // start, nothing of the task's) says why execd could not be reached, e.g. that it could not
    // listen (docs/opensandbox.md "Host network mode").
    if (HasFailure()) {
      for (const auto& id : Sandboxes()) {
        std::cerr << "sandbox container " << id << " output:\n" << ContainerLogs(host_, id);
      }
    }
    ControllerTest::TearDown();
    EXPECT_TRUE(testing::Eventually([&] { return Sandboxes().empty(); }, 60s, 200ms))
        << "sandboxes are left after the test";
  }

  bool ApplyClass(const std::string& name, const std::string& forwarding) {
    json params = {
        {"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
        {"kind", "OpenSandboxExecutionParameters"},
        {"metadata", {{"name", name}}},
        {"spec",
         {{"endpoint", "http://" + domain_ + "/v1"},
          {"insecure", true},  // the test server listens on loopback only
          {"apiKeySecretRef", {{"namespace", ns_}, {"name", "osb-api-key"}, {"key", "api-key"}}},
          // The key lives in the test's namespace, not the controller's: allowed explicitly
          // (issue 26; else SecretNamespaceNotAllowed).
          {"allowCrossNamespaceSecretRefs", true},
          {"pollIntervalSeconds", 1}}}};
    json cls = {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                {"kind", "JobClass"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"controllerName", "execution.ayatori.ddupan.top/opensandbox"},
                  {"parametersRef",
                   {{"group", "execution.ayatori.ddupan.top"},
                    {"kind", "OpenSandboxExecutionParameters"},
                    {"name", name}}},
                  {"resources",
                   {{"defaults",
                     {{"requests", {{"cpu", "500m"}, {"memory", "256Mi"}}},
                      {"limits", {{"cpu", "500m"}, {"memory", "256Mi"}}}}}}},
                  {"secretEnvForwarding", forwarding}}}};
    return Apply(params) && Apply(cls);
  }

  json Task(const std::vector<std::string>& command, const std::string& image = "") const {
    return {{"image", image.empty() ? workload_ : image}, {"command", command}};
  }

  // Sandbox containers on the dockerd (all, or those of one Job UID).
  std::vector<std::string> Sandboxes(const std::string& uid = "") {
    auto r = Docker(host_, {"ps", "-aq", "--filter",
                            uid.empty() ? std::string("label=") + kSandboxLabel
                                        : std::string("label=") + kJobUidLabel + "=" + uid});
    std::vector<std::string> ids;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) ids.push_back(line);
    }
    return ids;
  }

  json WaitForRunning(const std::string& name) {
    return WaitForJob(
        ns_, name,
        [](const json& j) {
          return ConditionSummary(j, "Succeeded") == "Unknown/Running" &&
                 j.contains("/status/startTime"_json_pointer);
        },
        60s, "Succeeded=Unknown/Running with a startTime");
  }

  // The Job's references: Sandbox (a UUID) then Command (32 hex), nothing else (no endpoint, no
  // credential).
  void ExpectReferences(const json& job) {
    json refs = job.value("/status/execution/references"_json_pointer, json::array());
    ASSERT_EQ(refs.size(), 2u) << Describe(job);
    EXPECT_EQ(job.value("/status/execution/adapter"_json_pointer, ""), "opensandbox");
    EXPECT_EQ(refs[0].value("type", ""), "Sandbox");
    EXPECT_TRUE(std::regex_match(
        refs[0].value("id", ""),
        std::regex("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")))
        << refs.dump();
    EXPECT_EQ(refs[1].value("type", ""), "Command");
    EXPECT_TRUE(std::regex_match(refs[1].value("id", ""), std::regex("[0-9a-f]{32}")))
        << refs.dump();
  }

  void ExpectNoApiKeyLeak(const std::string& name) {
    std::string job = Get(kJobResource, ns_, name).value_or(json()).dump();
    EXPECT_EQ(job.find(apiKey_), std::string::npos) << "the API key is in Job " << name;
    EXPECT_EQ(EventsJson(ns_).find(apiKey_), std::string::npos) << "the API key is in an Event";
    EXPECT_EQ(controller_.Log().find(apiKey_), std::string::npos) << "the API key is in the log";
  }

  bool Stack(const std::string& verb) {
    auto r = testing::RunProcess(
        {testing::RequiredEnv("AYATORI_SOURCE_DIR") + "/hack/opensandbox/opensandbox.sh", verb});
    EXPECT_EQ(r.exitCode, 0) << "opensandbox.sh " << verb << ": " << r.out << r.err;
    return r.exitCode == 0;
  }

  std::string host_, osbDir_, domain_, apiKey_, workload_;
};

json Result(const json& job) { return job.value("/status/result"_json_pointer, json::object()); }

TEST_F(OpenSandboxControllerE2ETest, ExitZeroSucceedsWithOneSandboxAndStableReferences) {
  std::string uid = CreateJob("hello", kClass, Task({"/bin/sh", "-c", "echo hello"}));
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "hello");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  EXPECT_EQ(Result(job).value("exitCode", -1), 0) << Describe(job);
  ExpectReferences(job);
  json again = WaitForJob(
      ns_, "hello", [](const json&) { return true; }, 5s, "a second read");
  EXPECT_EQ(again["status"]["execution"], job["status"]["execution"]) << "references are stable";
  EXPECT_LE(Sandboxes(uid).size(), 1u);
  ExpectNoApiKeyLeak("hello");
}

// The server is pinned at acceptance (docs/jobclass.md, "What an administrator may change"):
// pointing the parameters at another endpoint (and route) while the Job runs moves nothing. The
// new endpoint is a listener that never answers: a call that followed it would leave the Job
// Unknown, and it would show as a connection.
TEST_F(OpenSandboxControllerE2ETest, ARunningJobKeepsItsServerWhenTheParametersMoveAway) {
  std::string uid = CreateJob("pinned", kClass, Task({"/bin/sh", "-c", "sleep 3; echo pinned"}));
  ASSERT_FALSE(uid.empty());
  WaitForRunning("pinned");
  TcpListener elsewhere;
  ASSERT_TRUE(Apply(
      {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
       {"kind", "OpenSandboxExecutionParameters"},
       {"metadata", {{"name", kClass}}},
       {"spec",
        {{"endpoint", "http://127.0.0.1:" + std::to_string(elsewhere.port()) + "/v1"},
         {"insecure", true},
         {"useServerProxy", true},
         {"apiKeySecretRef", {{"namespace", ns_}, {"name", "osb-api-key"}, {"key", "api-key"}}},
         {"allowCrossNamespaceSecretRefs", true},
         {"pollIntervalSeconds", 1}}}}));
  json job = WaitForFinished(ns_, "pinned", 60s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  EXPECT_EQ(Result(job).value("exitCode", -1), 0) << Describe(job);
  ExpectReferences(job);
  EXPECT_LE(Sandboxes(uid).size(), 1u);
  EXPECT_EQ(elsewhere.Accept(0ms), -1) << "a call went to the endpoint the parameters moved to";
  ExpectNoApiKeyLeak("pinned");
}

TEST_F(OpenSandboxControllerE2ETest, ExitThreeIsProcessFailedWithTheExitCode) {
  ASSERT_FALSE(CreateJob("three", kClass, Task({"/bin/sh", "-c", "exit 3"})).empty());
  json job = WaitForFinished(ns_, "three");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  EXPECT_EQ(Result(job).value("exitCode", -1), 3) << Describe(job);
}

TEST_F(OpenSandboxControllerE2ETest, ActiveDeadlineStopsTheSandboxAsDeadlineExceeded) {
  std::string uid =
      CreateJob("late", kClass, Task({"/bin/sleep", "300"}), {{"activeDeadlineSeconds", 3}});
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "late", 90s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/DeadlineExceeded") << Describe(job);
  EXPECT_TRUE(testing::Eventually([&] { return Sandboxes(uid).empty(); }, 30s, 200ms))
      << "the sandbox outlived the deadline";
}

TEST_F(OpenSandboxControllerE2ETest, CancellingARunningJobDeletesItsSandbox) {
  std::string uid = CreateJob("stopme", kClass, Task({"/bin/sleep", "300"}));
  ASSERT_FALSE(uid.empty());
  WaitForRunning("stopme");
  PatchJob("stopme", {{"spec", {{"desiredState", "Cancelled"}}}});
  json job = WaitForFinished(ns_, "stopme", 60s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/Cancelled") << Describe(job);
  EXPECT_TRUE(testing::Eventually([&] { return Sandboxes(uid).empty(); }, 30s, 200ms));
}

TEST_F(OpenSandboxControllerE2ETest, CancellingBeforeItRunsCreatesNoSandbox) {
  std::string uid =
      CreateJob("never", kClass, Task({"/bin/sleep", "300"}), {{"desiredState", "Cancelled"}});
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "never", 60s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/Cancelled") << Describe(job);
  EXPECT_TRUE(Sandboxes(uid).empty());
}

TEST_F(OpenSandboxControllerE2ETest, SecretForwardingDeniedByTheClassRejectsTheJob) {
  ASSERT_TRUE(Apply({{"apiVersion", "v1"},
                     {"kind", "Secret"},
                     {"metadata", {{"name", "token"}, {"namespace", ns_}}},
                     {"stringData", {{"token", "t0ken-" + RandomToken()}}}}));
  json task = Task({"/bin/sh", "-c", "echo $TOKEN"});
  task["env"] = {{{"name", "TOKEN"},
                  {"valueFrom", {{"secretKeyRef", {{"name", "token"}, {"key", "token"}}}}}}};
  std::string uid = CreateJob("denied", kClassDenied, task);
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "denied", 60s);
  EXPECT_EQ(ConditionSummary(job, "Accepted"), "False/SecretForwardingDenied") << Describe(job);
  EXPECT_TRUE(Sandboxes(uid).empty());
}

TEST_F(OpenSandboxControllerE2ETest, AnImageThatCannotBePulledIsImagePullFailed) {
  std::string uid = CreateJob("nopull", kClass, Task({"/bin/true"}, "127.0.0.1:1/nowhere/x:1"));
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "nopull", 60s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ImagePullFailed") << Describe(job);
  EXPECT_TRUE(Sandboxes(uid).empty());
}

// A private image of the project's registry (fixture "docker_registry"), which the server pulls
// with the image.auth the adapter takes from the Job's pull Secret. A wrong Secret fails the pull;
// neither password appears in the Job, its Events or the controller's log.
TEST_F(OpenSandboxControllerE2ETest, APrivateImageRunsWithTheRightPullSecretOnly) {
  PrivateRegistry registry;
  ASSERT_NO_FATAL_FAILURE(ReadPrivateRegistry(&registry));
  const std::string& password = registry.password;
  const std::string& image = registry.image;
  const std::string wrong = "wrong-" + RandomToken();
  ASSERT_TRUE(ApplyPullSecret(registry, ns_, "pull-ok", password));
  ASSERT_TRUE(ApplyPullSecret(registry, ns_, "pull-wrong", wrong));
  auto run = [&](const std::string& job, const std::string& secret) {
    Docker(host_, {"rmi", "-f", image});  // only the registry has it: the server must pull
    json task = Task({"/bin/cat", "/private-marker"}, image);
    task["imagePullSecrets"] = {{{"name", secret}}};
    EXPECT_FALSE(CreateJob(job, kClass, task).empty());
    return WaitForFinished(ns_, job, 120s);
  };
  json wrongJob = run("wrong", "pull-wrong");
  EXPECT_EQ(ConditionSummary(wrongJob, "Succeeded"), "False/ImagePullFailed") << Describe(wrongJob);
  json okJob = run("right", "pull-ok");
  EXPECT_EQ(ConditionSummary(okJob, "Succeeded"), "True/Completed") << Describe(okJob);
  for (const char* job : {"wrong", "right"}) {
    std::string text = Get(kJobResource, ns_, job).value_or(json()).dump();
    for (const std::string& secret : {password, wrong}) {
      EXPECT_EQ(text.find(secret), std::string::npos) << "a registry password is in Job " << job;
      EXPECT_EQ(EventsJson(ns_).find(secret), std::string::npos) << "a password is in an Event";
      EXPECT_EQ(controller_.Log().find(secret), std::string::npos) << "a password is in the log";
    }
  }
  Docker(host_, {"rmi", "-f", image});
}

// SIGKILL as soon as the sandbox exists, usually before the command was started or its
// reference written: the next controller finds the sandbox by the Job UID, finds out whether the
// task was started (the sandbox's marker), and the task runs exactly once.
TEST_F(OpenSandboxControllerE2ETest, ControllerKilledBetweenSandboxCreateAndRunRunsTheTaskOnce) {
  TcpListener listener;
  std::string uid = CreateJob(
      "once", kClass,
      Task({"/bin/sh", "-c", "nc 127.0.0.1 " + std::to_string(listener.port()) + " </dev/null"}));
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(testing::Eventually([&] { return !Sandboxes(uid).empty(); }, 60s, 5ms))
      << "no sandbox appeared";
  controller_.Kill();
  std::cerr << "at the kill: " << Describe(Get(kJobResource, ns_, "once").value_or(json())) << "\n";
  ASSERT_NO_FATAL_FAILURE(RestartController());
  int conn = listener.Accept(60s);
  ASSERT_GE(conn, 0) << "the task never ran";
  close(conn);
  json job = WaitForFinished(ns_, "once");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  ExpectReferences(job);
  EXPECT_EQ(listener.accepted(), 1) << "the task ran more than once";
  EXPECT_LE(Sandboxes(uid).size(), 1u) << "more than one sandbox";
}

// The server goes away while the task runs: the Job says ResultUnknown (never Failed); the task
// ends (exit 7) while the server is down; once the server is back the Job gets the true result.
TEST_F(OpenSandboxControllerE2ETest, ServerRestartMidRunIsUnknownThenTheTrueResult) {
  TcpListener listener;
  std::string uid = CreateJob(
      "outage", kClass,
      Task({"/bin/sh", "-c", "nc 127.0.0.1 " + std::to_string(listener.port()) + "; exit 7"}));
  ASSERT_FALSE(uid.empty());
  int conn = listener.Accept(60s);
  ASSERT_GE(conn, 0) << "the task never ran";
  WaitForRunning("outage");
  ASSERT_TRUE(Stack("stop"));
  json unknown = WaitForJob(
      ns_, "outage",
      [](const json& j) { return ConditionSummary(j, "Succeeded") == "Unknown/ResultUnknown"; },
      60s, "Succeeded=Unknown/ResultUnknown while the server is down");
  close(conn);  // the task exits 7 while the server is down
  json during = Get(kJobResource, ns_, "outage").value_or(json());
  EXPECT_NE(ConditionSummary(during, "Succeeded").rfind("False", 0), 0u) << Describe(during);
  ASSERT_TRUE(Stack("start"));
  json job = WaitForFinished(ns_, "outage", 120s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  EXPECT_EQ(Result(job).value("exitCode", -1), 7) << Describe(job);
  EXPECT_EQ(Sandboxes(uid).size(), 1u);
}

}  // namespace
}  // namespace ayatori::e2e
