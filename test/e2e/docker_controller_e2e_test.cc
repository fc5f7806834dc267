// Ayatori end to end on Docker, as a user drives it: Jobs created with kubectl against the real
// kube-apiserver, reconciled by the real ayatori-controller binary (a subprocess, pointed at the
// "dockerd" fixture with --docker-endpoint), run as containers of that dockerd. Every assertion
// is on what a user can see: the Job's status, its Events, the containers, their output, and the
// controller's log.
#include <gtest/gtest.h>
#include <unistd.h>

#include "test/adapters/docker/e2e_support.h"
#include "test/e2e/controller_e2e.h"
#include "test/support/testenv.h"

namespace ayatori::e2e {
namespace {

using adapters::docker::e2e::PongServer;
using adapters::docker::e2e::TcpListener;

constexpr const char* kBusybox = "ayatori.local/busybox:1";
constexpr const char* kArgvImage = "ayatori.local/argv:1";
// The classes of this file (cluster-scoped, so named after it): network none and network host.
constexpr const char* kClassNone = "e2e-docker-none";
constexpr const char* kClassHost = "e2e-docker-host";

class DockerControllerE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    host_ = FixtureDockerHost();
    ASSERT_TRUE(InstallCrds());
    // A short stop grace period: busybox sleep as PID 1 ignores SIGTERM, so stops wait for it.
    json params = {
        {"endpoint", host_}, {"pullPolicy", "IfNotPresent"}, {"stopGracePeriodSeconds", 1}};
    json none = params, hostNet = params;
    none["networkMode"] = "none";
    hostNet["networkMode"] = "host";
    hostNet["allowHostNetwork"] = true;
    ASSERT_TRUE(ApplyDockerClass(kClassNone, none));
    ASSERT_TRUE(ApplyDockerClass(kClassHost, hostNet));
    ASSERT_NO_FATAL_FAILURE(
        StartControllerAndNamespace("e2e-docker", {"--docker-endpoint=" + host_}));
  }

  // The one container of a Job (fails the test when there is not exactly one).
  std::string OnlyContainer(const std::string& uid) {
    auto ids = ContainersOf(host_, uid);
    EXPECT_EQ(ids.size(), 1u) << "containers with the job-uid label " << uid;
    return ids.empty() ? "" : ids[0];
  }

  bool ContainerRunning(const std::string& id) {
    auto c = InspectContainer(host_, id);
    return c && c->value("/State/Running"_json_pointer, false);
  }

  // Waits until the Job reports Succeeded=Unknown/Running with a startTime.
  json WaitForRunning(const std::string& name) {
    return WaitForJob(
        ns_, name,
        [](const json& j) {
          return ConditionSummary(j, "Succeeded") == "Unknown/Running" &&
                 j.contains("/status/startTime"_json_pointer);
        },
        60s, "Succeeded=Unknown/Running with a startTime");
  }

  std::string host_;
};

json Task(const std::string& image, const std::vector<std::string>& command,
          const std::vector<std::string>& args = {}) {
  json t = {{"image", image}, {"command", command}};
  if (!args.empty()) t["args"] = args;
  return t;
}

json Result(const json& job) { return job.value("/status/result"_json_pointer, json::object()); }

TEST_F(DockerControllerE2ETest, ExitZeroSucceedsWithOneContainerAndItsOutput) {
  std::string uid = CreateJob("hello", kClassNone,
                              Task(kBusybox, {"/bin/sh", "-c", "echo hello $AYATORI_JOB_NAME"}));
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "hello");

  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  EXPECT_EQ(ConditionSummary(job, "Accepted").substr(0, 5), "True/") << Describe(job);
  EXPECT_EQ(ConditionSummary(job, "Scheduled"), "True/BackendCreated") << Describe(job);
  EXPECT_EQ(Result(job).value("exitCode", -1), 0) << Describe(job);
  EXPECT_EQ(Result(job).value("reason", ""), "Completed");
  auto start = ParseTime(job.value("/status/startTime"_json_pointer, ""));
  auto completion = ParseTime(job.value("/status/completionTime"_json_pointer, ""));
  ASSERT_TRUE(start && completion) << Describe(job);
  EXPECT_LE(*start, *completion);
  EXPECT_EQ(job.value("/status/resolvedJobClass/name"_json_pointer, ""), kClassNone);
  EXPECT_EQ(job.value("/status/execution/adapter"_json_pointer, ""), "docker");

  std::string id = OnlyContainer(uid);
  ASSERT_FALSE(id.empty());
  // The status references exactly this container.
  json refs = job.value("/status/execution/references"_json_pointer, json::array());
  ASSERT_EQ(refs.size(), 1u) << Describe(job);
  EXPECT_EQ(refs[0].value("id", ""), id);
  EXPECT_EQ(ContainerLogs(host_, id), "hello hello\n");
  auto c = InspectContainer(host_, id);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->value("/Name"_json_pointer, ""), "/ayatori-" + uid);
  EXPECT_EQ(c->value("/HostConfig/NetworkMode"_json_pointer, ""), "none");
  EXPECT_EQ(c->value("/Config/Labels/execution.ayatori.ddupan.top~1job-namespace"_json_pointer, ""),
            ns_);
  EXPECT_EQ(c->value("/Config/Labels/execution.ayatori.ddupan.top~1job-name"_json_pointer, ""),
            "hello");
}

TEST_F(DockerControllerE2ETest, NonZeroExitIsProcessFailedWithTheExitCode) {
  std::string uid = CreateJob("exit3", kClassNone, Task(kBusybox, {"/bin/sh", "-c", "exit 3"}));
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "exit3");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  EXPECT_EQ(Result(job).value("exitCode", -1), 3) << Describe(job);
  EXPECT_EQ(Result(job).value("reason", ""), "ProcessFailed");
  EXPECT_TRUE(job.contains("/status/completionTime"_json_pointer)) << Describe(job);
  EXPECT_EQ(ContainersOf(host_, uid).size(), 1u);
}

TEST_F(DockerControllerE2ETest, ActiveDeadlineStopsTheContainerAsDeadlineExceeded) {
  std::string uid = CreateJob("deadline", kClassNone, Task(kBusybox, {"/bin/sleep", "300"}),
                              {{"activeDeadlineSeconds", 2}});
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "deadline", 90s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/DeadlineExceeded") << Describe(job);
  EXPECT_EQ(Result(job).value("reason", ""), "DeadlineExceeded") << Describe(job);
  auto start = ParseTime(job.value("/status/startTime"_json_pointer, ""));
  auto completion = ParseTime(job.value("/status/completionTime"_json_pointer, ""));
  ASSERT_TRUE(start && completion) << Describe(job);
  // The deadline counts from startTime; second granularity on both ends.
  EXPECT_GE(*completion - *start, 1) << Describe(job);
  EXPECT_LT(*completion - *start, 60) << Describe(job);
  std::string id = OnlyContainer(uid);
  ASSERT_FALSE(id.empty());
  EXPECT_FALSE(ContainerRunning(id)) << "the container outlived its deadline";
}

TEST_F(DockerControllerE2ETest, CancellingARunningJobStopsItsContainer) {
  std::string uid = CreateJob("cancel", kClassNone, Task(kBusybox, {"/bin/sleep", "300"}));
  ASSERT_FALSE(uid.empty());
  WaitForRunning("cancel");
  std::string id = OnlyContainer(uid);
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(ContainerRunning(id));

  PatchJob("cancel", {{"spec", {{"desiredState", "Cancelled"}}}});
  json job = WaitForFinished(ns_, "cancel", 60s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/Cancelled") << Describe(job);
  EXPECT_TRUE(job.contains("/status/completionTime"_json_pointer)) << Describe(job);
  EXPECT_FALSE(ContainerRunning(id)) << "Cancelled was reported while the container still runs";
  EXPECT_EQ(ContainersOf(host_, uid).size(), 1u) << "a cancel must not create anything";
}

// A class that names an OCI runtime: the container runs under it (runc-alt, runc registered under
// a second name by hack/dockerd.sh: it proves the runtime is passed and checked, not that it
// isolates more); a runtime the engine does not list is refused at acceptance as NotEnforceable,
// never replaced by the engine's default.
TEST_F(DockerControllerE2ETest, TheClassRuntimeRunsTheTaskAndAMissingOneIsNotEnforceable) {
  auto vars =
      adapters::docker::e2e::ReadEnvFile(testing::RequiredEnv("AYATORI_DOCKERD_DIR") + "/env.sh");
  const std::string alt = vars["AYATORI_DOCKER_ALT_RUNTIME"];
  ASSERT_FALSE(alt.empty()) << "hack/dockerd.sh registers a second runtime";
  ASSERT_TRUE(ApplyDockerClass("e2e-docker-runtime", {{"endpoint", host_}, {"runtime", alt}}));
  ASSERT_TRUE(
      ApplyDockerClass("e2e-docker-no-runtime", {{"endpoint", host_}, {"runtime", "no-such-oci"}}));
  std::string uid =
      CreateJob("alt-runtime", "e2e-docker-runtime", Task(kBusybox, {"/bin/echo", "ran"}));
  std::string missing =
      CreateJob("no-runtime", "e2e-docker-no-runtime", Task(kBusybox, {"/bin/echo", "ran"}));
  ASSERT_FALSE(uid.empty() || missing.empty());
  json job = WaitForFinished(ns_, "alt-runtime");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  std::string id = OnlyContainer(uid);
  ASSERT_FALSE(id.empty());
  auto c = InspectContainer(host_, id);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->value("/HostConfig/Runtime"_json_pointer, ""), alt);
  EXPECT_EQ(ContainerLogs(host_, id), "ran\n");

  json refused = WaitForJob(
      ns_, "no-runtime",
      [](const json& j) { return ConditionSummary(j, "Accepted") == "False/NotEnforceable"; }, 60s,
      "Accepted=False/NotEnforceable");
  const json* accepted = FindCondition(refused, "Accepted");
  ASSERT_NE(accepted, nullptr);
  const std::string message = accepted->value("message", "");
  EXPECT_NE(message.find("\"no-such-oci\""), std::string::npos) << message;
  EXPECT_NE(message.find(alt), std::string::npos) << "the runtimes the engine has: " << message;
  EXPECT_EQ(message.find(host_), std::string::npos) << "never the endpoint: " << message;
  EXPECT_TRUE(ContainersOf(host_, missing).empty());
}

TEST_F(DockerControllerE2ETest, MemoryLimitOverrunIsOOMKilled) {
  std::string uid = CreateJob(
      "oom", kClassNone, Task(kBusybox, {"/bin/sh", "-c", "exec tail /dev/zero"}),
      {{"resources", {{"requests", {{"memory", "16Mi"}}}, {"limits", {{"memory", "16Mi"}}}}}});
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "oom");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/OOMKilled") << Describe(job);
  EXPECT_EQ(Result(job).value("reason", ""), "OOMKilled") << Describe(job);
  EXPECT_EQ(job.value("/status/effectiveResources/limits/memory"_json_pointer, ""), "16Mi");
  std::string id = OnlyContainer(uid);
  ASSERT_FALSE(id.empty());
  auto c = InspectContainer(host_, id);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->value("/HostConfig/Memory"_json_pointer, 0LL), 16LL * 1024 * 1024);
}

TEST_F(DockerControllerE2ETest, NetworkNoneCannotReachTheHostWhileHostNetworkCan) {
  PongServer listener;
  ASSERT_GT(listener.port(), 0);
  std::string port = std::to_string(listener.port());
  std::string isolated =
      CreateJob("isolated", kClassNone, Task(kBusybox, {"/bin/nc", "127.0.0.1", port}));
  json isolatedJob = WaitForFinished(ns_, "isolated");
  // The control: the same command on host network reaches the listener, so the check can fail.
  std::string connected =
      CreateJob("connected", kClassHost, Task(kBusybox, {"/bin/nc", "127.0.0.1", port}));
  json connectedJob = WaitForFinished(ns_, "connected");
  listener.Stop();

  EXPECT_EQ(ConditionSummary(isolatedJob, "Succeeded"), "False/ProcessFailed")
      << Describe(isolatedJob);
  EXPECT_EQ(ConditionSummary(connectedJob, "Succeeded"), "True/Completed")
      << Describe(connectedJob);
  EXPECT_EQ(listener.accepted(), 1) << "only the host-network Job may connect";
  std::string isolatedId = OnlyContainer(isolated);
  std::string connectedId = OnlyContainer(connected);
  ASSERT_FALSE(isolatedId.empty() || connectedId.empty());
  EXPECT_EQ(ContainerLogs(host_, isolatedId).find("pong"), std::string::npos);
  EXPECT_EQ(ContainerLogs(host_, connectedId), "pong\n");
  EXPECT_EQ(InspectContainer(host_, isolatedId)->value("/HostConfig/NetworkMode"_json_pointer, ""),
            "none");
}

TEST_F(DockerControllerE2ETest, ArgvAndEnvArriveExactlyAsGivenAndTheSecretStaysOutOfTheApi) {
  const std::string secret = "s3cret-" + RandomToken();
  ASSERT_TRUE(Apply({{"apiVersion", "v1"},
                     {"kind", "Secret"},
                     {"metadata", {{"name", "token"}, {"namespace", ns_}}},
                     {"type", "Opaque"},
                     {"stringData", {{"token", secret}}}}));
  ASSERT_TRUE(Apply({{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", "config"}, {"namespace", ns_}}},
                     {"data", {{"value", "from the config map"}}}}));
  // No implicit shell: "$HOME", "*" and the empty argument reach the process untouched; the
  // script prints every argument and variable between brackets.
  const std::string script =
      "printf '[%s]\\n' \"$0\" \"$@\"; printf 'literal=[%s]\\n' \"$LITERAL\"; "
      "printf 'token=[%s]\\n' \"$TOKEN\"; printf 'config=[%s]\\n' \"$CONFIG\"; "
      "printf 'ns=[%s] name=[%s] uid=[%s]\\n' \"$AYATORI_JOB_NAMESPACE\" \"$AYATORI_JOB_NAME\" "
      "\"$AYATORI_JOB_UID\"; pwd";
  json task = {{"image", kBusybox},
               {"command", {"/bin/sh", "-c"}},
               {"args", {script, "argv0", "two words", "$HOME", "*", "", "quote\"d"}},
               {"workingDir", "/tmp"},
               {"env",
                {{{"name", "LITERAL"}, {"value", "a=b  c;$(no)"}},
                 {{"name", "TOKEN"},
                  {"valueFrom", {{"secretKeyRef", {{"name", "token"}, {"key", "token"}}}}}},
                 {{"name", "CONFIG"},
                  {"valueFrom", {{"configMapKeyRef", {{"name", "config"}, {"key", "value"}}}}}}}}};
  std::string uid = CreateJob("argv-env", kClassNone, task);
  ASSERT_FALSE(uid.empty());
  // Entrypoint and CMD of an image: command replaces the entrypoint (and drops the image CMD),
  // args alone replace only the CMD.
  std::string uidCommand =
      CreateJob("command-only", kClassNone, Task(kArgvImage, {"/bin/echo", "only-command"}));
  std::string uidArgs = CreateJob("args-only", kClassNone,
                                  {{"image", kArgvImage}, {"args", {"first", "second arg"}}});
  std::string uidNeither = CreateJob("image-default", kClassNone, {{"image", kArgvImage}});

  json job = WaitForFinished(ns_, "argv-env");
  ASSERT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  std::string id = OnlyContainer(uid);
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(ContainerLogs(host_, id),
            "[argv0]\n[two words]\n[$HOME]\n[*]\n[]\n[quote\"d]\n"
            "literal=[a=b  c;$(no)]\n"
            "token=[" +
                secret +
                "]\n"
                "config=[from the config map]\n"
                "ns=[" +
                ns_ + "] name=[argv-env] uid=[" + uid +
                "]\n"
                "/tmp\n");

  for (auto [name, jobUid, output] :
       {std::tuple<std::string, std::string, std::string>{"command-only", uidCommand,
                                                          "only-command\n"},
        {"args-only", uidArgs, "image-entrypoint first second arg\n"},
        {"image-default", uidNeither, "image-entrypoint image-cmd\n"}}) {
    json j = WaitForFinished(ns_, name);
    EXPECT_EQ(ConditionSummary(j, "Succeeded"), "True/Completed") << Describe(j);
    std::string cid = OnlyContainer(jobUid);
    if (!cid.empty()) {
      EXPECT_EQ(ContainerLogs(host_, cid), output) << name;
    }
  }

  // The Secret's value reached the process and nothing else: not the Job (spec or status), not
  // its Events, not the controller's log (at debug level).
  auto fresh = Get(kJobResource, ns_, "argv-env");
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->dump().find(secret), std::string::npos) << "the Secret value is in the Job";
  std::string events = EventsJson(ns_);
  EXPECT_NE(events.find(uid), std::string::npos) << "expected Events about the Job";
  EXPECT_EQ(events.find(secret), std::string::npos) << "the Secret value is in an Event";
  std::string log = controller_.Log();
  EXPECT_NE(log.find(uid), std::string::npos) << "expected the controller to log about the Job";
  EXPECT_EQ(log.find(secret), std::string::npos) << "the Secret value is in the controller log";
}

// What the controller reads for a Docker-class Job (docs/api.md, "Secret and ConfigMap
// references"), measured on the API server itself (apiserver_request_total counts every GET of a
// Secret by any client; the test makes its Secrets with kubectl create, a POST):
// - a Job whose Secret does not exist yet waits without reading anything;
// - once it exists, the Secret is read to accept the Job (its keys) and to create the container
//   (the value), and not again while the Job runs and finishes;
// - a class that denies forwarding refuses such a Job without reading the Secret.
TEST_F(DockerControllerE2ETest, ForwardingReadsTheReferencedSecretOnlyToAcceptAndToCreate) {
  const std::string value = "s3cret-" + RandomToken();
  auto gets = [] { return testing::ApiserverRequestCount("secrets", "GET"); };
  json task = {{"image", kBusybox},
               {"command", {"/bin/sh", "-c", "test \"$TOKEN\" = " + value}},
               {"env",
                {{{"name", "TOKEN"},
                  {"valueFrom", {{"secretKeyRef", {{"name", "late"}, {"key", "token"}}}}}}}}};
  const auto start = gets();
  ASSERT_TRUE(start.has_value());
  ASSERT_FALSE(CreateJob("forwarded", kClassNone, task).empty());
  WaitForJob(
      ns_, "forwarded",
      [](const json& j) { return ConditionSummary(j, "Accepted") == "False/SecretNotFound"; }, 60s,
      "Accepted=False/SecretNotFound");
  const auto waiting = gets();
  ASSERT_TRUE(waiting.has_value());
  EXPECT_EQ(*waiting - *start, 0) << "Secret GETs while the Secret did not exist";

  auto created =
      Kubectl({"create", "-f", "-"}, json{{"apiVersion", "v1"},
                                          {"kind", "Secret"},
                                          {"metadata", {{"name", "late"}, {"namespace", ns_}}},
                                          {"stringData", {{"token", value}}}}
                                         .dump());
  ASSERT_EQ(created.exitCode, 0) << created.err;
  json job = WaitForFinished(ns_, "forwarded");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  const auto finished = gets();
  ASSERT_TRUE(finished.has_value());
  // One GET to accept and one to create; a resolution that runs again before the acceptance is
  // in the cache (an event racing the status write) may add one.
  EXPECT_GE(*finished - *waiting, 2);
  EXPECT_LE(*finished - *waiting, 3);
  std::cerr << "Secret GETs for one forwarded Job: " << *finished - *waiting << "\n";

  // Denied: refused before any read, although the Secret exists.
  ASSERT_TRUE(ApplyDockerClass(
      "e2e-docker-denied",
      {{"endpoint", host_}, {"pullPolicy", "IfNotPresent"}, {"networkMode", "none"}},
      {{"secretEnvForwarding", "Denied"}}));
  ASSERT_FALSE(CreateJob("denied", "e2e-docker-denied", task).empty());
  json denied = WaitForFinished(ns_, "denied");
  EXPECT_EQ(ConditionSummary(denied, "Accepted"), "False/SecretForwardingDenied")
      << Describe(denied);
  const auto end = gets();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(*end - *finished, 0) << "Secret GETs for a Job whose class denies forwarding";
  EXPECT_EQ(controller_.Log().find(value), std::string::npos);
}

TEST_F(DockerControllerE2ETest, DeletingARunningJobRemovesItsContainerAndThenTheJob) {
  std::string uid = CreateJob("doomed", kClassNone, Task(kBusybox, {"/bin/sleep", "300"}));
  ASSERT_FALSE(uid.empty());
  WaitForRunning("doomed");
  ASSERT_EQ(ContainersOf(host_, uid).size(), 1u);

  auto r = Kubectl({"delete", kJobResource, "doomed", "-n", ns_, "--wait=false"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(WaitForJobGone(ns_, "doomed"))
      << "the Job was not deleted: " << Describe(Get(kJobResource, ns_, "doomed").value_or(json()));
  EXPECT_TRUE(ContainersOf(host_, uid).empty()) << "the container outlived its Job";
}

// The controller is SIGKILLed while the Job runs; the Job finishes while no controller is there;
// a new controller process finds the one container and reports its true result.
TEST_F(DockerControllerE2ETest, ControllerKilledMidRunFindsTheSameContainerAfterRestart) {
  TcpListener listener;
  std::string uid = CreateJob(
      "survivor", kClassHost,
      Task(kBusybox,
           {"/bin/sh", "-c", "nc 127.0.0.1 " + std::to_string(listener.port()) + "; exit 7"}));
  ASSERT_FALSE(uid.empty());
  int conn = listener.Accept(60s);
  ASSERT_GE(conn, 0) << "the Job never connected";
  WaitForRunning("survivor");

  controller_.Kill();
  std::string id = OnlyContainer(uid);
  ASSERT_FALSE(id.empty());
  close(conn);  // the process exits 7 while no controller runs
  ASSERT_TRUE(testing::Eventually([&] { return !ContainerRunning(id); }, 30s))
      << "the container did not exit";
  json during = Get(kJobResource, ns_, "survivor").value_or(json());
  EXPECT_EQ(ConditionSummary(during, "Succeeded"), "Unknown/Running") << Describe(during);

  ASSERT_NO_FATAL_FAILURE(RestartController());
  json job = WaitForFinished(ns_, "survivor");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  EXPECT_EQ(Result(job).value("exitCode", -1), 7) << Describe(job);
  EXPECT_EQ(ContainersOf(host_, uid), std::vector<std::string>{id})
      << "the restarted controller must adopt the container, never create another";
}

// The controller is SIGKILLed as soon as the container exists, usually before it recorded the
// reference in the status: the next process must find the container by the Job's UID.
TEST_F(DockerControllerE2ETest, ControllerKilledRightAfterCreatingTheContainerDoesNotRunItTwice) {
  TcpListener listener;
  std::string uid = CreateJob(
      "once", kClassHost,
      Task(kBusybox, {"/bin/sh", "-c", "nc 127.0.0.1 " + std::to_string(listener.port())}));
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(testing::Eventually([&] { return !ContainersOf(host_, uid).empty(); }, 60s, 5ms))
      << "no container appeared";
  controller_.Kill();
  json atKill = Get(kJobResource, ns_, "once").value_or(json());
  std::cerr << "at the kill: " << Describe(atKill) << "\n";

  ASSERT_NO_FATAL_FAILURE(RestartController());
  int conn = listener.Accept(60s);
  ASSERT_GE(conn, 0) << "the Job never connected";
  close(conn);
  json job = WaitForFinished(ns_, "once");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  EXPECT_EQ(ContainersOf(host_, uid).size(), 1u) << "the task ran more than once";
}

}  // namespace
}  // namespace ayatori::e2e
