#include "adapters/docker/container.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "adapters/docker/docker_adapter.h"

namespace ayatori::adapters::docker {
namespace {

using api::Quantity;
using nlohmann::json;

ExecutionRequest Request() {
  ExecutionRequest r;
  r.job.metadata.namespace_ = "ci";
  r.job.metadata.name = "hello-x";
  r.job.metadata.uid = "5cb0e2a4-1111-2222-3333-444455556666";
  r.job.spec.task.image = "ayatori.local/busybox:1";
  return r;
}

json Body(const ExecutionRequest& r, const json& params = nullptr) {
  auto p = ParseDockerParameters(params);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  auto body = BuildCreateBody(r, *p);
  EXPECT_TRUE(body.ok()) << body.status().ToString();
  return body.ok() ? *body : json();
}

TEST(DockerParametersTest, DefaultsAndFields) {
  auto d = ParseDockerParameters(nullptr);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->endpoint, "") << "empty so that the adapter's default endpoint applies";
  EXPECT_EQ(d->networkMode, "none");
  EXPECT_EQ(d->pullPolicy, PullPolicy::kIfNotPresent);
  EXPECT_EQ(d->stopGracePeriodSeconds, 10);

  auto p = ParseDockerParameters(json::parse(R"({
    "apiVersion": "execution.ayatori.ddupan.top/v1alpha1", "kind": "DockerExecutionParameters",
    "metadata": {"name": "local"},
    "spec": {"endpoint": "unix:///run/x.sock", "networkMode": "host", "runtime": "runsc",
             "pullPolicy": "Never", "extraLabels": {"team": "a"}, "stopGracePeriodSeconds": 3}})"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->endpoint, "unix:///run/x.sock");
  EXPECT_EQ(p->networkMode, "host");
  EXPECT_EQ(p->runtime, "runsc");
  EXPECT_EQ(p->pullPolicy, PullPolicy::kNever);
  EXPECT_EQ(p->extraLabels.at("team"), "a");
  EXPECT_EQ(p->stopGracePeriodSeconds, 3);

  EXPECT_FALSE(ParseDockerParameters(json::parse(R"({"spec": {"pullPolicy": "Sometimes"}})")).ok());
  EXPECT_FALSE(
      ParseDockerParameters(json::parse(R"({"spec": {"stopGracePeriodSeconds": "x"}})")).ok());
}

TEST(CreateBodyTest, CommandReplacesEntrypointAndArgsReplaceCmd) {
  auto r = Request();
  json b = Body(r);
  EXPECT_FALSE(b.contains("Entrypoint")) << "no command keeps the image's entrypoint";
  EXPECT_FALSE(b.contains("Cmd")) << "no args keeps the image's CMD";

  r.job.spec.task.args = {"a b", "$HOME", ""};
  b = Body(r);
  EXPECT_FALSE(b.contains("Entrypoint"));
  EXPECT_EQ(b["Cmd"], json({"a b", "$HOME", ""})) << "argv passed literally, no shell";

  r.job.spec.task.command = {"/bin/echo"};
  r.job.spec.task.args = {};
  b = Body(r);
  EXPECT_EQ(b["Entrypoint"], json({"/bin/echo"}));
  EXPECT_FALSE(b.contains("Cmd"));

  r.job.spec.task.command = {"/bin/sh", "-c"};
  r.job.spec.task.args = {"echo \"hello ${TARGET}\""};
  r.job.spec.task.workingDir = "/workspace";
  b = Body(r);
  EXPECT_EQ(b["Entrypoint"], json({"/bin/sh", "-c"}));
  EXPECT_EQ(b["Cmd"], json({"echo \"hello ${TARGET}\""}));
  EXPECT_EQ(b["WorkingDir"], "/workspace");
  EXPECT_EQ(b["Image"], "ayatori.local/busybox:1");
}

TEST(CreateBodyTest, EnvInSpecOrderWithResolvedValuesAndJobIdentity) {
  auto r = Request();
  r.job.spec.task.env = {
      {"TARGET", std::string("world"), std::nullopt},
      {"TOKEN", std::nullopt,
       api::EnvVarSource{api::KeySelector{"tok", "token", false}, std::nullopt}},
      {"AYATORI_JOB_UID", std::string("spoofed"), std::nullopt},
  };
  r.resolvedEnv = {{"TARGET", SensitiveString("world")},
                   {"TOKEN", SensitiveString("s3cret=with=equals")},
                   {"EXTRA", SensitiveString("from-controller")}};
  json b = Body(r);
  EXPECT_EQ(b["Env"], json({"TARGET=world", "TOKEN=s3cret=with=equals", "EXTRA=from-controller",
                            "AYATORI_JOB_NAMESPACE=ci", "AYATORI_JOB_NAME=hello-x",
                            "AYATORI_JOB_UID=5cb0e2a4-1111-2222-3333-444455556666"}));
}

TEST(CreateBodyTest, LiteralEnvWithoutResolvedEnvAndUnresolvedReferenceIsAnError) {
  auto r = Request();
  r.job.spec.task.env = {{"A", std::string("1"), std::nullopt}};
  json b = Body(r);
  EXPECT_EQ(b["Env"][0], "A=1");
  r.job.spec.task.env.push_back(
      {"B", std::nullopt, api::EnvVarSource{std::nullopt, api::KeySelector{"cm", "k", false}}});
  auto p = ParseDockerParameters(nullptr);
  auto body = BuildCreateBody(r, *p);
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.status().message().find("env B"), std::string::npos) << body.status().message();
}

TEST(CreateBodyTest, LabelsIdentifyTheJobAndCannotBeOverridden) {
  auto r = Request();
  json b = Body(r, json::parse(R"({"spec": {"extraLabels": {"team": "infra"}}})"));
  EXPECT_EQ(b["Labels"]["execution.ayatori.ddupan.top/job-uid"], r.job.metadata.uid);
  EXPECT_EQ(b["Labels"]["execution.ayatori.ddupan.top/job-namespace"], "ci");
  EXPECT_EQ(b["Labels"]["execution.ayatori.ddupan.top/job-name"], "hello-x");
  EXPECT_EQ(b["Labels"]["team"], "infra");

  auto p = ParseDockerParameters(
      json::parse(R"({"spec": {"extraLabels": {"execution.ayatori.ddupan.top/job-uid": "x"}}})"));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(BuildCreateBody(r, *p).ok()) << "the reserved label prefix is refused";
}

TEST(CreateBodyTest, ResourcesNetworkAndRuntime) {
  auto r = Request();
  r.resources.limits.cpu = Quantity::MustParse("1500m");
  r.resources.limits.memory = Quantity::MustParse("512Mi");
  r.resources.requests.cpu = Quantity::MustParse("100m");
  r.resources.requests.memory = Quantity::MustParse("128Mi");
  json b = Body(r, json::parse(R"({"spec": {"runtime": "runsc", "stopGracePeriodSeconds": 7}})"));
  const json& h = b["HostConfig"];
  EXPECT_EQ(h["NanoCpus"], 1500000000);
  EXPECT_EQ(h["Memory"], 512 * 1024 * 1024);
  EXPECT_EQ(h["MemorySwap"], 512 * 1024 * 1024) << "equal to Memory: no swap";
  EXPECT_EQ(h["CpuShares"], 102) << "100m * 1024 / 1000";
  EXPECT_EQ(h["MemoryReservation"], 128 * 1024 * 1024);
  EXPECT_EQ(h["NetworkMode"], "none") << "egress denied by default";
  EXPECT_EQ(h["Runtime"], "runsc");
  EXPECT_EQ(h["AutoRemove"], false);
  EXPECT_EQ(h["RestartPolicy"]["Name"], "no");
  EXPECT_EQ(b["StopTimeout"], 7);
  EXPECT_EQ(b["Tty"], false) << "logs must stay multiplexed";

  r.resources = {};
  r.resources.requests.cpu = Quantity::MustParse("1m");
  b = Body(r, json::parse(R"({"spec": {"networkMode": "host", "allowHostNetwork": true}})"));
  EXPECT_EQ(b["HostConfig"]["CpuShares"], 2) << "Docker's minimum";
  EXPECT_FALSE(b["HostConfig"].contains("Memory"));
  EXPECT_FALSE(b["HostConfig"].contains("NanoCpus"));
  EXPECT_FALSE(b["HostConfig"].contains("Runtime"));
  EXPECT_EQ(b["HostConfig"]["NetworkMode"], "host");
}

TEST(CreateBodyTest, RestrictedProfileByDefault) {
  auto r = Request();
  const json b = Body(r);
  EXPECT_EQ(b["User"], "65534:65534") << "a field of the container, not of HostConfig";
  const json& h = b["HostConfig"];
  EXPECT_FALSE(h.contains("User"));
  EXPECT_EQ(h["CapDrop"], json({"ALL"}));
  EXPECT_EQ(h["CapAdd"], json::array());
  EXPECT_EQ(h["SecurityOpt"], json({"no-new-privileges"}));
  EXPECT_EQ(h["PidsLimit"], 256);
  EXPECT_EQ(h["ReadonlyRootfs"], true);
  EXPECT_EQ(h["Tmpfs"], json({{"/tmp", "rw,nosuid,nodev,noexec,uid=65534,gid=65534,size=64m"}}));
  EXPECT_EQ(h["Ulimits"], json::parse(R"([{"Name": "nofile", "Soft": 1024, "Hard": 1024}])"));
  EXPECT_EQ(h["Init"], true);
  EXPECT_EQ(h["LogConfig"], json::parse(R"({"Type": "json-file",
      "Config": {"max-size": "10485760", "max-file": "1"}})"));
  EXPECT_EQ(h["NetworkMode"], "none");
}

TEST(CreateBodyTest, WorkingDirIsAWritableTmpfsOnAReadOnlyRoot) {
  auto r = Request();
  r.job.spec.task.workingDir = "/workspace";
  json h =
      Body(r, json::parse(R"({"spec": {"securityProfile": {"tmpSizeMiB": 8}}})"))["HostConfig"];
  EXPECT_EQ(h["Tmpfs"],
            json({{"/tmp", "rw,nosuid,nodev,noexec,uid=65534,gid=65534,size=8m"},
                  {"/workspace", "rw,nosuid,nodev,noexec,uid=65534,gid=65534,size=8m"}}));
  r.job.spec.task.workingDir = "/tmp/build";
  h = Body(r)["HostConfig"];
  EXPECT_EQ(h["Tmpfs"].size(), 1u) << "below /tmp: already writable";
  r.job.spec.task.workingDir = "/workspace";
  h = Body(
      r, json::parse(
             R"({"spec": {"securityProfile": {"readOnlyRootFilesystem": false}}})"))["HostConfig"];
  EXPECT_EQ(h["ReadonlyRootfs"], false);
  EXPECT_EQ(h["Tmpfs"].size(), 1u) << "a writable root keeps the image's working directory";
  r.job.spec.task.workingDir = "relative";
  EXPECT_FALSE(ValidateRequest(r, *ParseDockerParameters(nullptr)).ok());
}

TEST(CreateBodyTest, RelaxedProfileFieldByField) {
  auto r = Request();
  const json b = Body(r, json::parse(R"({"spec": {"init": false, "securityProfile": {
      "runAsUser": 0, "runAsGroup": 0, "runAsRoot": true,
      "addCapabilities": ["NET_BIND_SERVICE", "CHOWN"], "allowPrivilegeEscalation": true,
      "seccompProfile": "Unconfined", "pidsLimit": 4096, "openFilesLimit": 65536,
      "logMaxBytes": 1048576}}})"));
  EXPECT_EQ(b["User"], "0:0");
  const json& h = b["HostConfig"];
  EXPECT_EQ(h["CapDrop"], json({"ALL"}));
  EXPECT_EQ(h["CapAdd"], json({"NET_BIND_SERVICE", "CHOWN"}));
  EXPECT_EQ(h["SecurityOpt"], json({"seccomp=unconfined"}));
  EXPECT_EQ(h["PidsLimit"], 4096);
  EXPECT_EQ(h["Ulimits"][0]["Hard"], 65536);
  EXPECT_EQ(h["Init"], false);
  EXPECT_EQ(h["LogConfig"]["Config"]["max-size"], "1048576");
}

TEST(InitExecFailureTest, FindsDockerInitsReportOfAFailedExec) {
  EXPECT_EQ(InitExecFailure("[FATAL tini (7)] exec /does/not/exist failed: No such file or "
                            "directory\n"),
            "exec /does/not/exist failed: No such file or directory");
  EXPECT_EQ(InitExecFailure("x\n[FATAL tini (1)] exec ./a failed: Permission denied"),
            "exec ./a failed: Permission denied");
  EXPECT_EQ(InitExecFailure("sh: foo: not found\n"), std::nullopt) << "a shell's 127 ran";
  EXPECT_EQ(InitExecFailure("[FATAL tini (7)] something else\n"), std::nullopt);
  EXPECT_EQ(InitExecFailure(""), std::nullopt);
}

TEST(ValidateRequestTest, RefusesAProfileThatIsNotSaidOnPurpose) {
  auto refusal = [](const char* spec) {
    auto p = ParseDockerParameters(json::parse(spec));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    Status st = ValidateRequest(Request(), *p);
    return st.ok() ? std::string() : st.message();
  };
  EXPECT_NE(refusal(R"({"spec": {"securityProfile": {"runAsUser": 0}}})").find("runAsRoot: true"),
            std::string::npos);
  EXPECT_EQ(refusal(R"({"spec": {"securityProfile": {"runAsUser": 0, "runAsRoot": true}}})"), "");
  auto host = [](const char* spec) {
    Status st = HostNetworkAllowed(*ParseDockerParameters(json::parse(spec)));
    return st.ok() ? std::string() : st.message();
  };
  EXPECT_NE(host(R"({"spec": {"networkMode": "host"}})").find("allowHostNetwork: true"),
            std::string::npos);
  EXPECT_EQ(host(R"({"spec": {"networkMode": "host", "allowHostNetwork": true}})"), "");
  EXPECT_EQ(host(R"({"spec": {}})"), "");
  EXPECT_NE(refusal(R"({"spec": {"securityProfile": {"addCapabilities": ["net raw"]}}})"), "");
  EXPECT_NE(refusal(R"({"spec": {"securityProfile": {"pidsLimit": 0}}})"), "");
  EXPECT_NE(refusal(R"({"spec": {"securityProfile": {"tmpSizeMiB": 0}}})"), "");
  EXPECT_NE(refusal(R"({"spec": {"securityProfile": {"openFilesLimit": 3}}})"), "");
  EXPECT_NE(refusal(R"({"spec": {"securityProfile": {"logMaxBytes": 10}}})"), "");
  EXPECT_NE(refusal(R"({"spec": {"securityProfile": {"runAsGroup": -1}}})"), "");
}

TEST(ValidateRequestTest, RefusesWhatDockerCannotHonour) {
  auto params = *ParseDockerParameters(nullptr);
  auto refused = [&](const ExecutionRequest& r, const DockerExecutionParameters& p) {
    return !ValidateRequest(r, p).ok();
  };
  EXPECT_FALSE(refused(Request(), params));
  auto r = Request();
  r.resources.limits.memory = Quantity::MustParse("4Mi");
  EXPECT_TRUE(refused(r, params)) << "below Docker's 6MB minimum";
  r = Request();
  r.resources.limits.cpu = Quantity::MustParse("5m");
  EXPECT_TRUE(refused(r, params)) << "below 0.01 CPU";
  r = Request();
  r.resources.requests.memory = Quantity::MustParse("1Gi");
  r.resources.limits.memory = Quantity::MustParse("512Mi");
  EXPECT_TRUE(refused(r, params)) << "reservation above the limit";
  r = Request();
  r.job.metadata.uid = "bad/uid";
  EXPECT_TRUE(refused(r, params));
  r = Request();
  r.job.spec.task.image = "bad image";
  EXPECT_TRUE(refused(r, params));
  auto bridge = params;
  bridge.networkMode = "bridge";
  EXPECT_TRUE(refused(Request(), bridge)) << "only none or host";
  auto badRuntime = params;
  badRuntime.runtime = "run c";
  EXPECT_TRUE(refused(Request(), badRuntime));
}

TEST(InsecureEndpointRefusalTest, PlainHttpUnlessInsecureAndNeverHttpWithTls) {
  auto refused = [](const std::string& endpoint, bool tlsRef, bool insecure,
                    const std::string& fallback = "unix:///var/run/docker.sock",
                    bool adapterTls = false) {
    DockerExecutionParameters p;
    p.endpoint = endpoint;
    if (tlsRef) p.tlsSecretRef = api::SecretKeyReference{"ns", "tls", ""};
    p.insecure = insecure;
    auto r = InsecureEndpointRefusal(p, fallback, adapterTls);
    if (r) {
      EXPECT_EQ(r->reason, kReasonInsecureEndpoint);
    }
    return r.has_value();
  };
  EXPECT_FALSE(refused("unix:///var/run/docker.sock", false, false));
  EXPECT_FALSE(refused("", false, false));
  EXPECT_TRUE(refused("", false, false, "tcp://127.0.0.1:2375"));  // the adapter's default
  EXPECT_FALSE(refused("", false, false, "tcp://127.0.0.1:2375", /*adapterTls=*/true));
  EXPECT_TRUE(refused("tcp://127.0.0.1:2375", false, false));
  EXPECT_FALSE(refused("tcp://127.0.0.1:2375", false, true));
  EXPECT_FALSE(refused("tcp://127.0.0.1:2376", true, false));
  EXPECT_TRUE(refused("http://127.0.0.1:2375", false, false));
  EXPECT_FALSE(refused("http://127.0.0.1:2375", false, true));
  EXPECT_TRUE(refused("http://127.0.0.1:2375", true, true));
  EXPECT_FALSE(refused("https://127.0.0.1:2376", false, false));
}

TEST(DockerAdapterValidateTest, ChecksParametersEndpointAndResourcesWithoutTheEngine) {
  DockerAdapter adapter;  // no engine is contacted by Validate
  auto r = Request();
  EXPECT_TRUE(adapter.Validate(r).ok());
  r.parameters = json::parse(R"({"spec": {"endpoint": "ftp://x:1"}})");
  EXPECT_FALSE(adapter.Validate(r).ok());
  r.parameters = json::parse(R"({"spec": {"networkMode": "bridge"}})");
  EXPECT_FALSE(adapter.Validate(r).ok());
  r.parameters = json::parse(R"({"kind": "KubernetesExecutionParameters", "spec": {}})");
  EXPECT_FALSE(adapter.Validate(r).ok()) << "parameters of another kind";
  r = Request();
  r.resources.limits.memory = Quantity::MustParse("1Mi");
  EXPECT_FALSE(adapter.Validate(r).ok());
}

TEST(ContainerNameTest, IsDeterministicFromTheUid) {
  EXPECT_EQ(ContainerName("abc-1"), "ayatori-abc-1");
  EXPECT_EQ(CancelledContainerName("abc-1"), "ayatori-abc-1-cancelled");
}

json Inspect(const std::string& status, int exitCode, bool oom = false,
             const std::string& error = "", const std::string& name = "/ayatori-u1") {
  return json{{"Id", "c0ffee"},
              {"Name", name},
              {"Config", {{"Labels", {{"execution.ayatori.ddupan.top/job-uid", "u1"}}}}},
              {"State",
               {{"Status", status},
                {"Running", status == "running"},
                {"OOMKilled", oom},
                {"ExitCode", exitCode},
                {"Error", error},
                {"StartedAt",
                 status == "created" ? "0001-01-01T00:00:00Z" : "2026-11-29T08:12:05.040198519Z"},
                {"FinishedAt",
                 status == "exited" ? "2026-11-29T08:13:06.126079364Z" : "0001-01-01T00:00:00Z"}}}};
}

TEST(ObservationFromInspectTest, MapsEngineStates) {
  using P = ExecutionPhase;
  const auto started = api::Time(std::chrono::sys_days(std::chrono::year(2026) / 11 / 29)) +
                       std::chrono::hours(8) + std::chrono::minutes(12) + std::chrono::seconds(5);
  const auto finished = started + std::chrono::minutes(1) + std::chrono::seconds(1);
  struct Case {
    const char* what;
    json inspect;
    P phase;
    std::string reason;
    std::optional<int32_t> exitCode;
  } cases[] = {
      {"created", Inspect("created", 0), P::kPending, "", std::nullopt},
      {"created, start failed", Inspect("created", 127, false, "exec: \"/nope\": no such file"),
       P::kFailed, kReasonStartFailed, std::nullopt},
      {"created, command not executable", Inspect("created", 126, false, "permission denied"),
       P::kFailed, kReasonStartFailed, std::nullopt},
      {"created, init OOM-killed during the start",
       Inspect("created", 128, false,
               "OCI runtime start failed: container init was OOM-killed (memory limit too low?): "
               "unknown"),
       P::kFailed, kReasonOOMKilled, std::nullopt},
      {"created, start failed inside the engine",
       Inspect("created", 128, false, "task c0ffee: already exists"), P::kUnknown,
       kReasonStartNotConfirmed, std::nullopt},
      {"created, cancelled", Inspect("created", 0, false, "", "/ayatori-u1-cancelled"),
       P::kCancelled, "", std::nullopt},
      {"running", Inspect("running", 0), P::kRunning, "", std::nullopt},
      {"paused", Inspect("paused", 0), P::kRunning, "", std::nullopt},
      {"exit 0", Inspect("exited", 0), P::kSucceeded, "", 0},
      {"exit 3", Inspect("exited", 3), P::kFailed, kReasonProcessFailed, 3},
      {"oom", Inspect("exited", 137, true), P::kFailed, kReasonOOMKilled, 137},
      {"exit 0 after a child's oom", Inspect("exited", 0, true), P::kSucceeded, "", 0},
      {"stopped by our cancel", Inspect("exited", 143, false, "", "/ayatori-u1-cancelled"),
       P::kCancelled, "", 143},
      {"success wins over cancel", Inspect("exited", 0, false, "", "/ayatori-u1-cancelled"),
       P::kSucceeded, "", 0},
      {"cancel mark of another uid is not ours",
       Inspect("exited", 143, false, "", "/ayatori-u2-cancelled"), P::kFailed, kReasonProcessFailed,
       143},
      {"dead", Inspect("dead", 1), P::kFailed, kReasonProcessFailed, 1},
      {"odd state", Inspect("weird", 0), P::kUnknown, kReasonUnexpectedState, std::nullopt},
      {"no state", json{{"Id", "c0ffee"}}, P::kUnknown, kReasonUnexpectedState, std::nullopt},
      {"wrong types", json{{"Id", 7}, {"State", {{"Status", 1}, {"ExitCode", "x"}}}}, P::kUnknown,
       kReasonUnexpectedState, std::nullopt},
  };
  for (const auto& c : cases) {
    Observation o = ObservationFromInspect(c.inspect, /*resultUnknown=*/false);
    EXPECT_EQ(o.phase, c.phase) << c.what << ": " << ExecutionPhaseName(o.phase);
    EXPECT_EQ(o.reason, c.reason) << c.what;
    EXPECT_EQ(o.exitCode, c.exitCode) << c.what;
  }
  Observation running = ObservationFromInspect(Inspect("running", 0), /*resultUnknown=*/false);
  EXPECT_EQ(running.startedAt, started);
  EXPECT_FALSE(running.finishedAt.has_value());
  ASSERT_EQ(running.references.size(), 1u);
  EXPECT_EQ(running.references[0].type, "Container");
  EXPECT_EQ(running.references[0].id, "c0ffee");
  Observation done = ObservationFromInspect(Inspect("exited", 3), /*resultUnknown=*/false);
  EXPECT_EQ(done.startedAt, started);
  EXPECT_EQ(done.finishedAt, finished);
  // The same words on every adapter (src/adapters/task_messages.h).
  EXPECT_EQ(done.message, "The task exited with code 3");
  EXPECT_EQ(ObservationFromInspect(Inspect("exited", 0), /*resultUnknown=*/false).message,
            "The task exited with code 0");
  EXPECT_EQ(ObservationFromInspect(Inspect("exited", 137, true), /*resultUnknown=*/false).message,
            "The task exceeded its memory limit and was killed (exit code 137)");
  EXPECT_EQ(ObservationFromInspect(Inspect("created", 127, false, "exec: \"/nope\": no such file"),
                                   /*resultUnknown=*/false)
                .message,
            "The task could not start: exec: \"/nope\": no such file");
  EXPECT_FALSE(
      ObservationFromInspect(Inspect("created", 0), /*resultUnknown=*/false).startedAt.has_value());
}

// The State a real dockerd (20.10) shows after it was killed (SIGKILL) during
// POST /containers/{id}/start and started again, followed by one more start: containerd kept the
// task of the interrupted start, so dockerd's start fails inside the engine, records exit code 128
// and shows the container as never started. (With "id already in use" instead, that task had even
// run the process.) Not a failure of the task: Unknown, and Ensure may start it again.
json InterruptedStartInspect(const std::string& error) {
  json inspect = Inspect("created", 128, false, error);
  inspect["State"] = json::parse(R"({"Status":"created","Running":false,"Paused":false,
      "Restarting":false,"OOMKilled":false,"Dead":false,"Pid":0,"ExitCode":128,
      "StartedAt":"0001-01-01T00:00:00Z","FinishedAt":"0001-01-01T00:00:00Z"})");
  inspect["State"]["Error"] = error;
  return inspect;
}

TEST(ObservationFromInspectTest, StartFailedInsideTheEngineIsUnknownNotFailed) {
  for (const std::string error :
       {"task 28170099ac7441ccafd0b13d36d6d68b45eb5f8348699f374e05e5e4e75b7009: already exists",
        "id already in use"}) {
    const json inspect = InterruptedStartInspect(error);
    Observation o = ObservationFromInspect(inspect, /*resultUnknown=*/false);
    EXPECT_EQ(o.phase, ExecutionPhase::kUnknown) << error << ": " << ExecutionPhaseName(o.phase);
    EXPECT_EQ(o.reason, kReasonStartNotConfirmed) << error;
    EXPECT_NE(o.message.find(error), std::string::npos) << o.message;
    EXPECT_FALSE(o.exitCode.has_value()) << "128 is the engine's, not the task's exit code";
    EXPECT_FALSE(o.startedAt.has_value());
    EXPECT_TRUE(MayStart(inspect)) << error;
  }
}

// What a real dockerd (20.10) showed for a task that runs `sleep 1.5; exit 3`, after dockerd was
// SIGKILLed while it ran and started again 2 s later: the task ended while the engine (and the
// containerd it had started) was down, containerd lost its exit status, and dockerd recorded 255
// at its restart (FinishedAt: the restart, not the task's end).
json LostExitStatusInspect() {
  json inspect = Inspect("exited", 255);
  inspect["State"] = json::parse(R"({"Status":"exited","Running":false,"Paused":false,
      "Restarting":false,"OOMKilled":false,"Dead":false,"Pid":0,"ExitCode":255,"Error":"",
      "StartedAt":"2026-12-02T11:06:15.184553444Z","FinishedAt":"2026-12-02T11:06:21.574464619Z"})");
  return inspect;
}

TEST(ObservationFromInspectTest, ExitCode255FoundInAResultUnknownEpisodeIsUnknown) {
  const Observation reported =
      ObservationFromInspect(LostExitStatusInspect(), /*resultUnknown=*/false);
  ASSERT_EQ(reported.phase, ExecutionPhase::kFailed);

  // The controller had found the engine gone (the Job is ResultUnknown); the engine, back, says
  // 255: the exit status is lost.
  Observation lost = ObservationFromInspect(LostExitStatusInspect(), /*resultUnknown=*/true);
  EXPECT_EQ(lost.phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(lost.reason, kReasonExitStatusLost);
  EXPECT_TRUE(lost.ended);
  EXPECT_FALSE(lost.exitCode.has_value());
  EXPECT_FALSE(lost.finishedAt.has_value());
  EXPECT_EQ(lost.startedAt, reported.startedAt);
  EXPECT_EQ(lost.references, reported.references);
  EXPECT_NE(lost.message.find("exit code 255 at 2026-12-02T11:06:21Z"), std::string::npos)
      << lost.message;

  // Outside an episode 255 is the task's own exit code.
  EXPECT_EQ(reported.reason, kReasonProcessFailed);
  EXPECT_EQ(reported.exitCode, 255);
  // Other ends in an episode are what they say.
  for (const json& inspect :
       {Inspect("exited", 3), Inspect("exited", 0), Inspect("exited", 255, /*oom=*/true),
        Inspect("running", 0), Inspect("exited", 255, false, "", "/ayatori-u1-cancelled")}) {
    const Observation o = ObservationFromInspect(inspect, /*resultUnknown=*/false);
    const Observation after = ObservationFromInspect(inspect, /*resultUnknown=*/true);
    EXPECT_EQ(after.phase, o.phase) << inspect.dump();
    EXPECT_EQ(after.reason, o.reason) << inspect.dump();
    EXPECT_EQ(after.exitCode, o.exitCode) << inspect.dump();
  }
}

TEST(ObservationFromInspectTest, MayStartOnlyWhatNeverStartedAndCanRun) {
  EXPECT_TRUE(MayStart(Inspect("created", 0)));
  EXPECT_FALSE(MayStart(Inspect("created", 127, false, "exec: \"/nope\": no such file")));
  EXPECT_FALSE(MayStart(Inspect("created", 126, false, "permission denied")));
  EXPECT_FALSE(MayStart(Inspect("created", 128, false, "container init was OOM-killed")));
  EXPECT_FALSE(MayStart(Inspect("created", 0, false, "", "/ayatori-u1-cancelled")));
  EXPECT_FALSE(MayStart(Inspect("running", 0)));
  EXPECT_FALSE(MayStart(Inspect("exited", 0)));
  EXPECT_FALSE(MayStart(json{{"Id", "c0ffee"}}));
}

TEST(ParseEngineTimeTest, ZeroTimeIsNever) {
  EXPECT_FALSE(ParseEngineTime("0001-01-01T00:00:00Z").has_value());
  EXPECT_FALSE(ParseEngineTime("").has_value());
  EXPECT_FALSE(ParseEngineTime("yesterday").has_value());
  auto t = ParseEngineTime("2026-11-29T08:12:05.999999999Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->time_since_epoch().count() % 60, 5) << "fractions are truncated";
}

}  // namespace
}  // namespace ayatori::adapters::docker
