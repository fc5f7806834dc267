// Jobs of a Kubernetes JobClass on a real node (fixture realnode: kubelet + containerd + runc,
// hack/testenv/realnode.sh) joined to the e2e control plane (fixture kubee2e), through the real
// ayatori-controller binary: what kwok's fake pods cannot show. Real exit codes and signals, the
// kernel's OOM killer, the deadline's SIGTERM and the SIGKILL after the pod's grace period, an
// image that cannot be pulled, the restricted security profile as the task sees it from inside,
// the task's output through the Job log API, and a controller killed while a pod runs.
//
// The class's KubernetesExecutionParameters select the real node (its label and its taint), so
// the pods run there and never on kwok's node; the test namespaces enforce the Pod Security
// Standard "restricted". Images are ayatori.local/busybox:1, imported by realnode.sh: nothing is
// pulled. Every wait polls a condition with a deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "test/e2e/controller_e2e.h"
#include "test/e2e/logs_api_e2e.h"
#include "test/support/testenv.h"

namespace ayatori::e2e::realnode {
namespace {

using testing::Eventually;
using testing::ProcessResult;

constexpr const char* kClass = "e2e-realnode";
constexpr const char* kBusybox = "ayatori.local/busybox:1";
// What hack/testenv/realnode.sh gives its node.
constexpr const char* kNodeName = "127.0.0.1";
constexpr const char* kNodeLabel = "ayatori.test/node";
constexpr const char* kNodeTaint = "ayatori.test/real-node";
constexpr int kPullTimeoutSeconds = 5;
// The pod's terminationGracePeriodSeconds: the adapter leaves Kubernetes' default.
constexpr int kPodGraceSeconds = 30;

// The KubernetesExecutionParameters and JobClass of the real node.
void ApplyRealNodeClass() {
  ASSERT_TRUE(ApplyKubernetesClass(
      kClass,
      {{"nodeSelector", {{kNodeLabel, "real"}}},
       {"tolerations", {{{"key", kNodeTaint}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}},
       {"imagePullFailureTimeoutSeconds", kPullTimeoutSeconds}}));
}

// Pods of the test's namespace must pass "restricted": the class's defaults are that profile.
void EnforceRestricted(const std::string& ns) {
  ProcessResult r = Kubectl(
      {"label", "namespace", ns, "--overwrite", "pod-security.kubernetes.io/enforce=restricted"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
}

json Task(const std::string& script) {
  return {{"image", kBusybox}, {"command", json::array({"/bin/sh", "-c", script})}};
}

std::string Str(const json& j, const std::string& pointer) {
  json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p) || !j.at(p).is_string()) return "";
  return j.at(p).get<std::string>();
}

long long ExitCode(const json& job) {
  json::json_pointer p("/status/result/exitCode");
  return job.contains(p) && job.at(p).is_number_integer() ? job.at(p).get<long long>() : -1;
}

bool HasStartTime(const json& job) { return job.contains("/status/startTime"_json_pointer); }

// The pods of the Job `uid` (label kJobUidLabel).
std::vector<json> PodsOf(const std::string& ns, const std::string& uid) {
  ProcessResult r =
      Kubectl({"get", "pods", "-n", ns, "-l", std::string(kJobUidLabel) + "=" + uid, "-o", "json"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  if (!j.is_object() || !j.contains("items")) return {};
  return j["items"].get<std::vector<json>>();
}

size_t BatchJobCount(const std::string& ns, const std::string& uid) {
  ProcessResult r = Kubectl(
      {"get", "jobs.batch", "-n", ns, "-l", std::string(kJobUidLabel) + "=" + uid, "-o", "name"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return testing::Lines(r.out).size();
}

class RealNodeE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(InstallCrds());
    ASSERT_NO_FATAL_FAILURE(ApplyRealNodeClass());
    ASSERT_NO_FATAL_FAILURE(StartControllerAndNamespace("e2e-realnode", {}));
    ASSERT_NO_FATAL_FAILURE(EnforceRestricted(ns_));
  }

  // The one pod of the Job, once it exists (a test failure otherwise).
  json OnlyPod(const std::string& uid) {
    std::vector<json> pods;
    bool one = Eventually(
        [&] {
          pods = PodsOf(ns_, uid);
          return pods.size() == 1;
        },
        60s, 200ms);
    EXPECT_TRUE(one) << pods.size() << " pods of Job uid " << uid;
    return pods.empty() ? json::object() : pods[0];
  }

  // The output of the Job's pod, read by kubectl logs through the real kubelet.
  std::string PodLog(const std::string& pod) {
    ProcessResult r = Kubectl({"logs", "-n", ns_, pod});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return r.out;
  }

  json Run(const std::string& name, const json& task, const json& spec = json::object()) {
    EXPECT_FALSE(CreateJob(name, kClass, task, spec).empty());
    return WaitForFinished(ns_, name, 120s);
  }
};

TEST_F(RealNodeE2ETest, ExitCodesZeroOneAnd137ComeFromTheRealProcess) {
  json ok = Run("exit0", Task("echo ran on a real node"));
  EXPECT_EQ(ConditionSummary(ok, "Succeeded"), "True/Completed") << Describe(ok);
  EXPECT_EQ(ExitCode(ok), 0) << Describe(ok);
  json pod = OnlyPod(Str(ok, "/metadata/uid"));
  EXPECT_EQ(Str(pod, "/spec/nodeName"), kNodeName) << "the pod ran elsewhere";
  EXPECT_EQ(PodLog(Str(pod, "/metadata/name")), "ran on a real node\n");
  // startTime is the container's real start, from the kubelet.
  EXPECT_EQ(Str(ok, "/status/startTime"),
            Str(pod, "/status/containerStatuses/0/state/terminated/startedAt"))
      << Describe(ok);

  json one = Run("exit1", Task("echo failing >&2; exit 1"));
  EXPECT_EQ(ConditionSummary(one, "Succeeded"), "False/ProcessFailed") << Describe(one);
  EXPECT_EQ(ExitCode(one), 1) << Describe(one);

  // A process killed by SIGKILL (not the OOM killer): the shell reports 128 + 9.
  json killed = Run("exit137", Task("sleep 60 & kill -KILL $!; wait $!; exit $?"));
  EXPECT_EQ(ConditionSummary(killed, "Succeeded"), "False/ProcessFailed") << Describe(killed);
  EXPECT_EQ(ExitCode(killed), 137) << Describe(killed);
}

TEST_F(RealNodeE2ETest, AMemoryBombIsKilledByTheKernelAndTheReasonSaysOutOfMemory) {
  // The hog is PID 1 of the container: the OOM killer ends the task itself.
  json job = Run("oom", Task("exec tail /dev/zero"),
                 {{"resources", {{"limits", {{"memory", "96Mi"}, {"cpu", "500m"}}}}}});
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/OOMKilled") << Describe(job);
  EXPECT_EQ(ExitCode(job), 137) << Describe(job);
  const json* c = FindCondition(job, "Succeeded");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->value("message", "").find("exceeded its memory limit"), std::string::npos)
      << Describe(job);
  json pod = OnlyPod(Str(job, "/metadata/uid"));
  EXPECT_EQ(Str(pod, "/status/containerStatuses/0/state/terminated/reason"), "OOMKilled");
}

TEST_F(RealNodeE2ETest, TheDeadlineSendsSigtermThenSigkillAfterThePodsGracePeriod) {
  // The task ignores SIGTERM (it says so and goes on): only SIGKILL ends it.
  std::string uid = CreateJob(
      "deadline", kClass,
      Task("trap 'echo TERM received' TERM; echo started; while :; do sleep 1; echo tick; done"),
      {{"activeDeadlineSeconds", 3}});
  ASSERT_FALSE(uid.empty());
  json running = WaitForJob(ns_, "deadline", HasStartTime, 60s, "a startTime");
  const std::string pod = Str(OnlyPod(uid), "/metadata/name");
  ASSERT_FALSE(pod.empty());
  // At the deadline the controller deletes the batch Job and so the pod, with its grace period.
  json terminating;
  bool deleting = Eventually(
      [&] {
        auto p = Get("pods", ns_, pod);
        if (p) terminating = *p;
        return p && p->contains("/metadata/deletionTimestamp"_json_pointer);
      },
      60s, 100ms);
  ASSERT_TRUE(deleting) << "the pod was not deleted at the deadline: " << terminating.dump();
  const auto deleted = std::chrono::steady_clock::now();
  EXPECT_EQ(terminating.value("/metadata/deletionGracePeriodSeconds"_json_pointer, json()),
            kPodGraceSeconds);
  // SIGTERM: the task says so and keeps running.
  std::string log;
  bool termThenTick = Eventually(
      [&] {
        log = Kubectl({"logs", "-n", ns_, pod}).out;
        size_t term = log.find("TERM received\n");
        return term != std::string::npos && log.find("tick\n", term) != std::string::npos;
      },
      30s, 200ms);
  EXPECT_TRUE(termThenTick) << "no SIGTERM seen by the task, or it stopped at once: " << log;
  // Then SIGKILL at the end of the grace period: the pod goes, not much before.
  bool gone = Eventually([&] { return !Get("pods", ns_, pod).has_value(); },
                         std::chrono::seconds(kPodGraceSeconds + 30), 500ms);
  EXPECT_TRUE(gone) << "the pod outlived its grace period: no SIGKILL";
  EXPECT_GE(std::chrono::steady_clock::now() - deleted, std::chrono::seconds(kPodGraceSeconds - 5));
  json job = WaitForFinished(ns_, "deadline", 60s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/DeadlineExceeded") << Describe(job);
}

TEST_F(RealNodeE2ETest, CancelStopsTheRunningTaskAndRemovesItsPod) {
  std::string uid = CreateJob(
      "cancel", kClass, Task("trap 'exit 143' TERM; echo started; while :; do sleep 1; done"));
  ASSERT_FALSE(uid.empty());
  json running = WaitForJob(ns_, "cancel", HasStartTime, 60s, "a startTime");
  const std::string pod = Str(OnlyPod(uid), "/metadata/name");
  EXPECT_TRUE(Eventually([&] { return PodLog(pod) == "started\n"; }, 30s, 200ms));
  PatchJob("cancel", {{"spec", {{"desiredState", "Cancelled"}}}});
  json job = WaitForFinished(ns_, "cancel", 60s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/Cancelled") << Describe(job);
  EXPECT_EQ(Str(job, "/status/startTime"), Str(running, "/status/startTime"));
  EXPECT_EQ(BatchJobCount(ns_, uid), 0u);
  // The task exits on SIGTERM: its pod goes well within the grace period.
  EXPECT_TRUE(Eventually([&] { return PodsOf(ns_, uid).empty(); },
                         std::chrono::seconds(kPodGraceSeconds - 5), 200ms))
      << "the pod of the cancelled Job is still there";
}

TEST_F(RealNodeE2ETest, AnImageThatCannotBePulledFailsWithImagePullFailedAndAWarningEvent) {
  // A registry on a closed loopback port: the pull fails on this machine, nothing leaves it.
  std::string uid = CreateJob("pull", kClass,
                              {{"image", "127.0.0.1:1/ayatori/absent:1"},
                               {"command", json::array({"/bin/sh", "-c", "true"})}});
  ASSERT_FALSE(uid.empty());
  // While the kubelet retries, the Job says why it waits.
  json waiting = WaitForJob(
      ns_, "pull",
      [](const json& j) {
        return j.dump().find("ErrImagePull") != std::string::npos ||
               j.dump().find("ImagePullBackOff") != std::string::npos;
      },
      60s, "a condition naming ErrImagePull or ImagePullBackOff");
  json job = WaitForFinished(ns_, "pull", 60s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ImagePullFailed") << Describe(job);
  EXPECT_FALSE(HasStartTime(job)) << Describe(job);
  // The kubelet's Warning Event names the image.
  ProcessResult events =
      Kubectl({"get", "events", "-n", ns_, "--field-selector", "type=Warning", "-o",
               "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}"});
  ASSERT_EQ(events.exitCode, 0) << events.err;
  EXPECT_NE(events.out.find("127.0.0.1:1/ayatori/absent:1"), std::string::npos) << events.out;
}

TEST_F(RealNodeE2ETest, TheRestrictedProfileIsWhatTheTaskSeesFromInside) {
  json job = Run("restricted", Task("id -u; id -g; grep -E '^(CapEff|CapPrm|NoNewPrivs|Seccomp):' "
                                    "/proc/self/status; touch /rootfs-write 2>/dev/null && echo "
                                    "root-writable || echo root-read-only; touch /tmp/x && echo "
                                    "tmp-writable"));
  ASSERT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  const std::string out = PodLog(Str(OnlyPod(Str(job, "/metadata/uid")), "/metadata/name"));
  EXPECT_EQ(out,
            "65534\n65534\n"
            "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
            "NoNewPrivs:\t1\nSeccomp:\t2\n"
            "root-read-only\ntmp-writable\n");
}

TEST_F(RealNodeE2ETest, ControllerKilledWhileThePodRunsGivesTheResultExactlyOnce) {
  std::string uid =
      CreateJob("crash", kClass,
                Task("echo once; while [ ! -e /tmp/go ]; do sleep 0.2; done; echo done; exit 3"));
  ASSERT_FALSE(uid.empty());
  json running = WaitForJob(ns_, "crash", HasStartTime, 60s, "a startTime");
  const std::string pod = Str(OnlyPod(uid), "/metadata/name");
  controller_.Kill();
  // The task ends while no controller runs.
  ProcessResult r = Kubectl({"exec", "-n", ns_, pod, "--", "touch", "/tmp/go"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(Eventually(
      [&] {
        auto p = Get("pods", ns_, pod);
        return p && Str(*p, "/status/phase") == "Failed";
      },
      60s, 200ms));
  auto stale = Get(kJobResource, ns_, "crash");
  ASSERT_TRUE(stale.has_value());
  EXPECT_EQ(ConditionSummary(*stale, "Succeeded"), "Unknown/Running")
      << "finished without a controller: " << Describe(*stale);
  RestartController();
  json job = WaitForFinished(ns_, "crash", 60s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  EXPECT_EQ(ExitCode(job), 3) << Describe(job);
  EXPECT_EQ(Str(job, "/status/startTime"), Str(running, "/status/startTime"));
  // Exactly once: one batch Job, one pod, one run of the task.
  EXPECT_EQ(BatchJobCount(ns_, uid), 1u);
  EXPECT_EQ(PodsOf(ns_, uid).size(), 1u);
  EXPECT_EQ(PodLog(pod), "once\ndone\n");
}

// A private image of the "docker_registry" fixture (hack/registry.sh: htpasswd, plain HTTP on
// 127.0.0.1, which containerd's CRI uses for loopback registries), pulled by the real kubelet
// with the Job's imagePullSecrets.
class RealNodeRegistryE2ETest : public RealNodeE2ETest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ReadPrivateRegistry(&registry_));
    RemoveFromNode();  // only the registry has the image
    RealNodeE2ETest::SetUp();
  }
  void TearDown() override {
    RealNodeE2ETest::TearDown();
    RemoveFromNode();
  }

  void RemoveFromNode() {
    testing::RunProcess(
        {"ctr", "-a", testing::RequiredEnv("TESTENV_DIR") + "/realnode/containerd/containerd.sock",
         "-n", "k8s.io", "images", "rm", registry_.image});
  }

  // A kubernetes.io/dockerconfigjson Secret for the registry with `password`.
  void ApplyPullSecret(const std::string& name, const std::string& password) {
    ASSERT_TRUE(e2e::ApplyPullSecret(registry_, ns_, name, password));
  }

  json RunPrivate(const std::string& name, const std::string& pullSecret) {
    json task = {{"image", registry_.image}};
    if (!pullSecret.empty()) task["imagePullSecrets"] = {{{"name", pullSecret}}};
    return Run(name, task);
  }

  // Neither password appears in the Job, the namespace's Events or the controller's log.
  void ExpectNoCredentialLeak(const json& job, const std::string& wrongPassword) {
    const std::string events = EventsJson(ns_);
    const std::string log = controller_.Log();
    for (const std::string& secret : {registry_.password, wrongPassword}) {
      if (secret.empty()) continue;
      EXPECT_EQ(job.dump().find(secret), std::string::npos) << "a registry password in the Job";
      EXPECT_EQ(events.find(secret), std::string::npos) << "a registry password in an Event";
      EXPECT_EQ(log.find(secret), std::string::npos) << "a registry password in the log";
    }
  }

  PrivateRegistry registry_;
};

TEST_F(RealNodeRegistryE2ETest, AWrongPullSecretOrNoneFailsWithImagePullFailed) {
  const std::string wrong = "wrong-" + RandomToken();
  ApplyPullSecret("registry-wrong", wrong);
  json bad = RunPrivate("wrong-secret", "registry-wrong");
  EXPECT_EQ(ConditionSummary(bad, "Succeeded"), "False/ImagePullFailed") << Describe(bad);
  json none = RunPrivate("no-secret", "");
  EXPECT_EQ(ConditionSummary(none, "Succeeded"), "False/ImagePullFailed") << Describe(none);
  ExpectNoCredentialLeak(bad, wrong);
}

TEST_F(RealNodeRegistryE2ETest, ThePrivateImageRunsWithTheRightPullSecret) {
  ApplyPullSecret("registry-ok", registry_.password);
  json job = RunPrivate("private", "registry-ok");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  // The image's CMD prints its marker file.
  EXPECT_EQ(PodLog(Str(OnlyPod(Str(job, "/metadata/uid")), "/metadata/name")), "private-image\n");
  ExpectNoCredentialLeak(job, "");
}

// Another tenant's Job naming the image the node holds already, pulled with credentials it does
// not have: the kubelet checks the credentials of a cached private image (its
// imagePullCredentialsVerificationPolicy, default NeverVerifyPreloadedImages: only the images
// imported by hand are exempt), so the image is not run for it.
TEST_F(RealNodeRegistryE2ETest, ACachedPrivateImageIsNotRunWithoutItsCredentials) {
  ApplyPullSecret("registry-ok", registry_.password);
  json first = RunPrivate("with-access", "registry-ok");
  ASSERT_EQ(ConditionSummary(first, "Succeeded"), "True/Completed") << Describe(first);
  json none = RunPrivate("cached-no-secret", "");
  EXPECT_EQ(ConditionSummary(none, "Succeeded"), "False/ImagePullFailed") << Describe(none);
  const std::string wrong = "wrong-" + RandomToken();
  ApplyPullSecret("registry-wrong", wrong);
  json bad = RunPrivate("cached-wrong-secret", "registry-wrong");
  EXPECT_EQ(ConditionSummary(bad, "Succeeded"), "False/ImagePullFailed") << Describe(bad);
  ExpectNoCredentialLeak(bad, wrong);
}

// The Job log API (logs_api_e2e.h) for a Job whose pod runs on the real node: the output comes
// from pods/log, which kube-apiserver reads from the real kubelet.
class RealNodeLogsApiE2ETest : public logs::LogsApiE2ETest {
 protected:
  void SetUpBackend(std::vector<std::string>* /*flags*/) override { ApplyRealNodeClass(); }
};

TEST_F(RealNodeLogsApiE2ETest, TheAuthorReadsAndFollowsTheOutputAndAStrangerIsRefused) {
  std::string uid = CreateJob(
      "follow", kClass,
      // Each line waits for its own file: the kubelet's log orders stdout and stderr by arrival
      // (two pipes), so lines written back to back on both could come out either way.
      Task("echo first; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo second >&2; "
           "while [ ! -e /tmp/go2 ]; do sleep 0.1; done; echo third"));
  ASSERT_FALSE(uid.empty());
  WaitForJob(ns_, "follow", HasStartTime, 60s, "a startTime");
  const std::string out = RunPath("RealNodeLogsApiE2ETest.follow.out");
  std::remove(out.c_str());
  // kubectl ayatori logs -f, as the certificate user (bound by the test's RoleBinding).
  testing::ControllerProcess follower;  // any child with its output in a file
  Status s = follower.Spawn(
      {testing::RequiredEnv("AYATORI_BINARY_DIR") + "/cmd/kubectl-ayatori/kubectl-ayatori",
       "--kubeconfig=" + UserKubeconfig(), "logs", "-f", "-n", ns_, "follow"},
      out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Eventually([&] { return logs::ReadFile(out) == "first\n"; }, 30s, 200ms))
      << logs::ReadFile(out);
  EXPECT_TRUE(
      testing::HoldsFor([&] { return follower.Running() && logs::ReadFile(out) == "first\n"; }, 1s))
      << logs::ReadFile(out);
  const std::string pod = Str(PodsOf(ns_, uid).at(0), "/metadata/name");
  ProcessResult r = Kubectl({"exec", "-n", ns_, pod, "--", "touch", "/tmp/go"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // The follow shows the task's stderr as it is written.
  EXPECT_TRUE(Eventually([&] { return logs::ReadFile(out) == "first\nsecond\n"; }, 30s, 200ms))
      << logs::ReadFile(out);
  r = Kubectl({"exec", "-n", ns_, pod, "--", "touch", "/tmp/go2"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // The stream ends with the task: the plugin exits 0 by itself.
  ASSERT_TRUE(follower.Wait(60s)) << logs::ReadFile(out);
  EXPECT_TRUE(WIFEXITED(follower.exitStatus()) && WEXITSTATUS(follower.exitStatus()) == 0)
      << follower.exitStatus() << " " << logs::ReadFile(out);
  EXPECT_EQ(logs::ReadFile(out), "first\nsecond\nthird\n");
  json job = WaitForFinished(ns_, "follow");
  ASSERT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);

  // Once finished: the whole output, and its tail, for the reader.
  r = Plugin({"logs", "-n", ns_, "follow"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "first\nsecond\nthird\n");
  r = RawAs(logs::kReader, LogPath("follow", "?tailLines=1"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "third\n");
  // A user without the RoleBinding gets nothing of it.
  r = RawAs(logs::kStranger, LogPath("follow"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("Forbidden"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("first"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ayatori::e2e::realnode
