// Ayatori Jobs of a Kubernetes JobClass, end to end as a user runs them: kubectl creates Jobs on
// the e2e tier of the test control plane (fixture kubee2e: kube-apiserver, kube-controller-manager
// with the job, TTL and garbage-collector controllers, kube-scheduler and kwok's fake node), the
// real ayatori-controller binary runs as a subprocess and turns each Job into one batch/v1 Job,
// and kwok's Stages (hack/testenv/kwok-stages.yaml) play the kubelet: pods start after
// TESTENV_START_AFTER, run for TESTENV_RUN_FOR, exit with TESTENV_EXIT_CODE, are OOM-killed with
// TESTENV_OOM=1, and images named "...pull-error..." never pull.
//
// Each test has its own namespace and its own controller process (killed at the end, also when
// the test process dies). The controller reconciles every namespace; TearDown deletes the test's
// Jobs through it so that no finalizer is left behind. Every wait polls with a deadline.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ayatori/kube_client.h"
#include "kube/config.h"
#include "kube/rest_client.h"
#include "test/e2e/controller_e2e.h"
#include "test/support/controller_process.h"
#include "test/support/process.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::kubernetes_e2e {
namespace {

using nlohmann::json;
using testing::ControllerProcess;
using testing::Eventually;
using testing::HoldsFor;
using testing::ProcessResult;
using testing::RequiredEnv;
using testing::TestenvVar;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr const char* kJobs = "jobs.execution.ayatori.ddupan.top";
constexpr const char* kBatchJobs = "jobs.batch";
constexpr const char* kUidLabel = "execution.ayatori.ddupan.top/job-uid";
constexpr const char* kCleanupFinalizer = "execution.ayatori.ddupan.top/job-cleanup";
// A finalizer the tests put on a batch Job to keep it from going away.
constexpr const char* kHoldFinalizer = "test.ayatori.ddupan.top/hold";
// The JobClass (and KubernetesExecutionParameters) these tests install.
constexpr const char* kClass = "kubernetes-e2e";
constexpr int kPullTimeoutSeconds = 3;

// ---------------------------------------------------------------------------------------------
// Waiting.

// Most waits run kubectl (a process start and a TLS handshake per check) against a control plane
// that shares two cores with kube-controller-manager, kube-scheduler and kwok: poll every 100 ms.
constexpr std::chrono::milliseconds kPoll = 100ms;

// ---------------------------------------------------------------------------------------------
// kubectl.

ProcessResult Kubectl(const std::vector<std::string>& args, const std::string& input = "") {
  static const std::string kubectl = testing::Kubectl();
  static const std::string kubeconfig = TestenvVar("KUBECONFIG");
  std::vector<std::string> argv = {kubectl, "--kubeconfig=" + kubeconfig};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv, input);
}

bool IsNotFound(const ProcessResult& r) {
  return r.err.find("NotFound") != std::string::npos ||
         r.err.find("not found") != std::string::npos;
}

// kubectl get; nullopt when the object does not exist (other errors fail the test).
std::optional<json> Get(const std::string& resource, const std::string& ns,
                        const std::string& name) {
  auto r = Kubectl({"get", resource, name, "-n", ns, "-o", "json"});
  if (r.exitCode != 0) {
    EXPECT_TRUE(IsNotFound(r)) << "kubectl get " << resource << " " << name << ": " << r.err;
    return std::nullopt;
  }
  json j = json::parse(r.out, nullptr, false);
  if (!j.is_object()) {
    ADD_FAILURE() << "kubectl get " << resource << " " << name << " printed no object: " << r.out;
    return std::nullopt;
  }
  return j;
}

// The items of `resource` in `ns` carrying label kUidLabel=uid.
std::vector<json> ListByUid(const std::string& resource, const std::string& ns,
                            const std::string& uid) {
  auto r =
      Kubectl({"get", resource, "-n", ns, "-l", std::string(kUidLabel) + "=" + uid, "-o", "json"});
  EXPECT_EQ(r.exitCode, 0) << "kubectl get " << resource << ": " << r.err;
  json j = json::parse(r.out, nullptr, false);
  if (!j.is_object() || !j.contains("items")) return {};
  return j["items"].get<std::vector<json>>();
}

std::vector<json> BatchJobsOf(const std::string& ns, const std::string& uid) {
  return ListByUid(kBatchJobs, ns, uid);
}
std::vector<json> PodsOf(const std::string& ns, const std::string& uid) {
  return ListByUid("pods", ns, uid);
}

bool Apply(const json& object) {
  auto r = Kubectl({"apply", "-f", "-"}, object.dump());
  EXPECT_EQ(r.exitCode, 0) << "kubectl apply: " << r.err;
  return r.exitCode == 0;
}

void Patch(const std::string& resource, const std::string& ns, const std::string& name,
           const json& mergePatch) {
  auto r = Kubectl({"patch", resource, name, "-n", ns, "--type=merge", "-p", mergePatch.dump()});
  EXPECT_EQ(r.exitCode, 0) << "kubectl patch " << resource << " " << name << ": " << r.err;
}

// The string at JSON pointer `pointer`, "" when absent or not a string.
std::string Str(const json& j, const std::string& pointer) {
  json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return "";
  const json& v = j.at(p);
  return v.is_string() ? v.get_ref<const std::string&>() : "";
}

// The integer at `pointer`, `otherwise` when absent or not an integer.
long long Int(const json& j, const std::string& pointer, long long otherwise = -1) {
  json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return otherwise;
  const json& v = j.at(p);
  return v.is_number_integer() ? v.get<long long>() : otherwise;
}

// ---------------------------------------------------------------------------------------------
// Job status.

// The condition of `type` (a copy), or an empty object when absent.
json FindCondition(const json& job, const std::string& type) {
  json conditions = job.value("/status/conditions"_json_pointer, json::array());
  for (const auto& c : conditions) {
    if (c.is_object() && Str(c, "/type") == type) return c;
  }
  return json::object();
}

// "<status>/<reason>" of a condition, "" when absent.
std::string Summary(const json& job, const std::string& type) {
  json c = FindCondition(job, type);
  return c.empty() ? "" : Str(c, "/status") + "/" + Str(c, "/reason");
}

bool Finished(const json& job) {
  std::string s = Summary(job, "Succeeded");
  return s.rfind("True/", 0) == 0 || s.rfind("False/", 0) == 0;
}

std::string StatusField(const json& job, const std::string& field) {
  if (!job.contains("status") || !job["status"].contains(field)) return "";
  const json& v = job["status"][field];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

bool HasStartTime(const json& job) { return !StatusField(job, "startTime").empty(); }

std::string Describe(const json& job) {
  if (!job.is_object()) return "<no Job>";
  std::ostringstream s;
  s << Str(job, "/metadata/name") << " uid=" << Str(job, "/metadata/uid");
  for (const char* type : {"Accepted", "Scheduled", "Succeeded"}) {
    json c = FindCondition(job, type);
    if (!c.empty()) {
      s << " " << type << "=" << Str(c, "/status") << "/" << Str(c, "/reason") << " ("
        << Str(c, "/message") << ")";
    }
  }
  for (const char* f : {"startTime", "completionTime", "result", "execution"}) {
    if (std::string v = StatusField(job, f); !v.empty()) s << " " << f << "=" << v;
  }
  if (job.contains("/metadata/deletionTimestamp"_json_pointer)) s << " deleting";
  return s.str();
}

// RFC 3339 in UTC ("2026-01-02T15:04:05Z") -> seconds since the epoch.
std::optional<long long> ParseTime(const std::string& t) {
  std::tm tm{};
  const char* end = strptime(t.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  return static_cast<long long>(timegm(&tm));
}

long long Seconds(const json& job, const std::string& field) {
  auto t = ParseTime(StatusField(job, field));
  EXPECT_TRUE(t.has_value()) << "status." << field << " missing or malformed: " << Describe(job);
  return t.value_or(0);
}

bool HasFinalizer(const json& object, const std::string& finalizer) {
  if (!object.contains("/metadata/finalizers"_json_pointer)) return false;
  for (const auto& f : object["metadata"]["finalizers"]) {
    if (f == finalizer) return true;
  }
  return false;
}

// The env entry `name` of the first container of a pod template or pod spec.
json ContainerEnv(const json& podSpec, const std::string& name) {
  for (const auto& e : podSpec["containers"][0].value("env", json::array())) {
    if (Str(e, "/name") == name) return e;
  }
  return nullptr;
}

std::string RandomHex(size_t n) {
  static std::mt19937_64 rng{std::random_device{}()};
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back("0123456789abcdef"[rng() % 16]);
  return s;
}

json Env(const std::vector<std::pair<std::string, std::string>>& vars) {
  json env = json::array();
  for (const auto& [k, v] : vars) env.push_back({{"name", k}, {"value", v}});
  return env;
}

std::string RunDir() {
  std::string dir = RequiredEnv("AYATORI_BINARY_DIR") + "/run/k8s-controller-e2e";
  mkdir((RequiredEnv("AYATORI_BINARY_DIR") + "/run").c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  return dir;
}

// ---------------------------------------------------------------------------------------------
// The fixture.

class KubernetesControllerE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setupError_.clear();
    const std::string crds = RequiredEnv("AYATORI_SOURCE_DIR") + "/config/crd/";
    auto r = Kubectl({"apply", "-f", crds});
    if (r.exitCode != 0) {
      setupError_ = "kubectl apply -f " + crds + ": " + r.err;
      return;
    }
    r = Kubectl({"wait", "--for=condition=established", "--timeout=60s", "-f", crds});
    if (r.exitCode != 0) {
      setupError_ = "CRDs not established: " + r.err;
      return;
    }
    // The controller's namespace (its backend snapshot ConfigMaps; it never creates namespaces).
    r = Kubectl({"apply", "-f", "-"},
                R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ayatori-system"}})");
    if (r.exitCode != 0) {
      setupError_ = "kubectl apply namespace ayatori-system: " + r.err;
      return;
    }
    // secretEnvForwarding Denied: Jobs with Secret env run only because this backend never
    // needs the values.
    if (!e2e::ApplyKubernetesClass(kClass,
                                   {{"imagePullFailureTimeoutSeconds", kPullTimeoutSeconds}})) {
      setupError_ = "kubectl apply of the KubernetesExecutionParameters and JobClass failed";
    }
  }

  void SetUp() override {
    ASSERT_TRUE(setupError_.empty()) << setupError_;
    ns_ = testing::CreateTestNamespace("k8sctl");
    ASSERT_FALSE(ns_.empty());
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    logPath_ = RunDir() + "/" + info->test_suite_name() + "." + info->name() + ".log";
    std::remove(logPath_.c_str());
    StartController();
  }

  void TearDown() override {
    if (ns_.empty()) return;
    if (!controller_.Running()) StartController();
    auto r = Kubectl({"delete", kJobs, "--all", "-n", ns_, "--timeout=90s"});
    EXPECT_EQ(r.exitCode, 0) << "deleting the Jobs of " << ns_
                             << " through the controller: " << r.err;
    // Secret values must never reach the controller's output, whatever the test did.
    const std::string log = controller_.Log();
    for (const auto& secret : secretValues_) {
      EXPECT_EQ(log.find(secret), std::string::npos)
          << "a Secret value appears in the controller log " << logPath_;
    }
    Kubectl({"delete", "namespace", ns_, "--wait=false"});
    controller_.Kill();
    if (HasFailure()) std::cerr << "controller log: " << logPath_ << "\n";
  }

  void StartController(const std::vector<std::string>& extraArgs = {}) {
    std::vector<std::string> args = {"--kubeconfig=" + TestenvVar("KUBECONFIG"),
                                     "--metrics-address=127.0.0.1:0", "--log-format=json",
                                     "--log-level=debug"};
    args.insert(args.end(), extraArgs.begin(), extraArgs.end());
    Status s = controller_.Start(testing::ControllerBinaryPath(), args, logPath_, 60s);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Creates a Job of class kClass (unless `spec` names another) with kubectl; returns its uid.
  std::string CreateJob(const std::string& name, const json& env, const json& spec = json::object(),
                        const std::string& image = "busybox:1.36") {
    json s = {{"jobClassName", kClass},
              {"task", {{"image", image}, {"command", {"/bin/sh", "-c", "true"}}, {"env", env}}}};
    s.merge_patch(spec);
    json job = {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                {"kind", "Job"},
                {"metadata", {{"name", name}, {"namespace", ns_}}},
                {"spec", s}};
    auto r = Kubectl({"create", "-o", "json", "-f", "-"}, job.dump());
    EXPECT_EQ(r.exitCode, 0) << "kubectl create Job " << name << ": " << r.err;
    json created = json::parse(r.out, nullptr, false);
    return created.is_object() ? Str(created, "/metadata/uid") : "";
  }

  std::optional<json> GetJob(const std::string& name) { return Get(kJobs, ns_, name); }

  // Polls the Job until `done` accepts it; fails the test naming `what` and the last state seen.
  json WaitForJob(const std::string& name, const std::function<bool(const json&)>& done,
                  const std::string& what, std::chrono::milliseconds timeout = 60s) {
    json last;
    bool ok = Eventually(
        [&] {
          auto job = GetJob(name);
          if (job) last = std::move(*job);
          return job.has_value() && done(last);
        },
        timeout, kPoll);
    EXPECT_TRUE(ok) << "timed out waiting for " << ns_ << "/" << name << ": " << what
                    << "; last seen: " << Describe(last);
    return last;
  }

  json WaitForFinished(const std::string& name, std::chrono::milliseconds timeout = 60s) {
    return WaitForJob(name, Finished, "Succeeded True or False", timeout);
  }

  bool WaitForJobGone(const std::string& name, std::chrono::milliseconds timeout = 60s) {
    return Eventually(
        [&] {
          auto r = Kubectl({"get", kJobs, name, "-n", ns_, "-o", "name"});
          return r.exitCode != 0 && IsNotFound(r);
        },
        timeout, kPoll);
  }

  void Cancel(const std::string& name) {
    Patch(kJobs, ns_, name, {{"spec", {{"desiredState", "Cancelled"}}}});
  }

  // The single batch Job of `uid` (a test failure when there is not exactly one).
  json OnlyBatchJob(const std::string& uid) {
    auto jobs = BatchJobsOf(ns_, uid);
    EXPECT_EQ(jobs.size(), 1u) << "batch Jobs with " << kUidLabel << "=" << uid;
    return jobs.empty() ? json::object() : jobs[0];
  }

  // Waits until neither a batch Job nor a pod of `uid` is left.
  void ExpectBackendGone(const std::string& uid, std::chrono::milliseconds timeout = 60s) {
    size_t jobs = 0, pods = 0;
    bool gone = Eventually(
        [&] {
          jobs = BatchJobsOf(ns_, uid).size();
          pods = PodsOf(ns_, uid).size();
          return jobs == 0 && pods == 0;
        },
        timeout, kPoll);
    EXPECT_TRUE(gone) << "left of Job uid " << uid << ": " << jobs << " batch Jobs, " << pods
                      << " pods";
  }

  // Waits until the pod of `uid` exists and `accept` accepts it.
  json WaitForPod(const std::string& uid, const std::function<bool(const json&)>& accept,
                  const std::string& what, std::chrono::milliseconds timeout = 60s) {
    json pod;
    bool ok = Eventually(
        [&] {
          auto pods = PodsOf(ns_, uid);
          if (pods.size() != 1) return false;
          pod = pods[0];
          return accept(pod);
        },
        timeout, kPoll);
    EXPECT_TRUE(ok) << "timed out waiting for the pod of " << uid << ": " << what
                    << "; last seen: " << pod.value("/status"_json_pointer, json()).dump();
    return pod;
  }

  static std::string PodPhase(const json& pod) { return Str(pod, "/status/phase"); }

  std::string ns_;
  std::string logPath_;
  ControllerProcess controller_;
  std::vector<std::string> secretValues_;

 private:
  static std::string setupError_;
};

std::string KubernetesControllerE2E::setupError_;

// ---------------------------------------------------------------------------------------------
// Results.

TEST_F(KubernetesControllerE2E, SuccessfulJobCompletesWithStartTimeOfTheContainer) {
  std::string uid = CreateJob("ok", Env({{"TESTENV_RUN_FOR", "1s"}}));
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished("ok");
  EXPECT_EQ(Summary(job, "Accepted"), "True/Valid") << Describe(job);
  EXPECT_EQ(Summary(job, "Scheduled"), "True/BackendCreated") << Describe(job);
  EXPECT_EQ(Summary(job, "Succeeded"), "True/Completed") << Describe(job);
  EXPECT_EQ(Int(job, "/status/result/exitCode"), 0) << Describe(job);
  EXPECT_EQ(Str(job, "/status/execution/adapter"), "kubernetes");
  EXPECT_GE(Seconds(job, "completionTime"), Seconds(job, "startTime"));

  // One batch Job, controlled by the Ayatori Job and named in its references.
  json batch = OnlyBatchJob(uid);
  EXPECT_EQ(Str(batch, "/metadata/ownerReferences/0/uid"), uid);
  EXPECT_EQ(batch.value("/metadata/ownerReferences/0/controller"_json_pointer, json()), true);
  EXPECT_FALSE(Str(batch, "/metadata/uid").empty());
  EXPECT_EQ(Str(job, "/status/execution/references/0/id"), Str(batch, "/metadata/uid"))
      << Describe(job);
  EXPECT_EQ(Int(batch, "/spec/backoffLimit"), 0);
  EXPECT_EQ(Str(batch, "/spec/template/spec/restartPolicy"), "Never");

  // startTime is when the container started (kwok's startedAt), not when the Job was created.
  auto pods = PodsOf(ns_, uid);
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(StatusField(job, "startTime"),
            Str(pods[0], "/status/containerStatuses/0/state/terminated/startedAt"))
      << Describe(job);
}

TEST_F(KubernetesControllerE2E, NonZeroExitFailsWithProcessFailedAndTheExitCode) {
  ASSERT_FALSE(CreateJob("exit3", Env({{"TESTENV_EXIT_CODE", "3"}})).empty());
  json job = WaitForFinished("exit3");
  EXPECT_EQ(Summary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  EXPECT_EQ(Int(job, "/status/result/exitCode"), 3) << Describe(job);
  EXPECT_TRUE(HasStartTime(job)) << Describe(job);
}

TEST_F(KubernetesControllerE2E, OomKilledContainerFailsWithOOMKilled) {
  ASSERT_FALSE(CreateJob("oom", Env({{"TESTENV_OOM", "1"}})).empty());
  json job = WaitForFinished("oom");
  EXPECT_EQ(Summary(job, "Succeeded"), "False/OOMKilled") << Describe(job);
  EXPECT_EQ(Int(job, "/status/result/exitCode"), 137) << Describe(job);
}

TEST_F(KubernetesControllerE2E, DeadlineStopsTheRunningPodAndRemovesTheBatchJob) {
  std::string uid =
      CreateJob("deadline", Env({{"TESTENV_RUN_FOR", "300s"}}), {{"activeDeadlineSeconds", 2}});
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished("deadline", 60s);
  EXPECT_EQ(Summary(job, "Succeeded"), "False/DeadlineExceeded") << Describe(job);
  // The deadline counts from startTime; both times are truncated to seconds.
  EXPECT_GE(Seconds(job, "completionTime") - Seconds(job, "startTime"), 2) << Describe(job);
  ExpectBackendGone(uid);
}

TEST_F(KubernetesControllerE2E, ImagePullFailureFailsWithoutStartTime) {
  std::string uid = CreateJob("pull", Env({}), json::object(), "registry.invalid/pull-error:1");
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished("pull", 60s);
  EXPECT_EQ(Summary(job, "Succeeded"), "False/ImagePullFailed") << Describe(job);
  EXPECT_FALSE(HasStartTime(job)) << Describe(job);
  // Not before imagePullFailureTimeoutSeconds after the pod (created after the Job) existed.
  auto created = ParseTime(Str(job, "/metadata/creationTimestamp"));
  ASSERT_TRUE(created.has_value());
  EXPECT_GE(Seconds(job, "completionTime") - *created, kPullTimeoutSeconds) << Describe(job);
}

// ---------------------------------------------------------------------------------------------
// Cancellation in each phase.

TEST_F(KubernetesControllerE2E, CancelWhileResolvingNeverCreatesABatchJob) {
  std::string uid = CreateJob("resolving", Env({}), {{"jobClassName", "absent-" + RandomHex(8)}});
  ASSERT_FALSE(uid.empty());
  WaitForJob(
      "resolving", [](const json& j) { return Summary(j, "Accepted") == "False/JobClassNotFound"; },
      "Accepted=False/JobClassNotFound");
  Cancel("resolving");
  json job = WaitForFinished("resolving");
  EXPECT_EQ(Summary(job, "Succeeded"), "False/Cancelled") << Describe(job);
  EXPECT_FALSE(HasStartTime(job)) << Describe(job);
  EXPECT_EQ(StatusField(job, "execution"), "") << Describe(job);
  EXPECT_TRUE(BatchJobsOf(ns_, uid).empty());
}

TEST_F(KubernetesControllerE2E, CancelWhileThePodIsPendingStopsItBeforeItStarts) {
  std::string uid = CreateJob("pending", Env({{"TESTENV_START_AFTER", "300s"}}));
  ASSERT_FALSE(uid.empty());
  WaitForPod(
      uid, [](const json& p) { return PodPhase(p) == "Pending"; }, "a Pending pod");
  json before = WaitForJob(
      "pending", [](const json& j) { return Summary(j, "Scheduled") == "True/BackendCreated"; },
      "Scheduled=True");
  EXPECT_FALSE(HasStartTime(before)) << Describe(before);
  Cancel("pending");
  json job = WaitForFinished("pending");
  EXPECT_EQ(Summary(job, "Succeeded"), "False/Cancelled") << Describe(job);
  EXPECT_FALSE(HasStartTime(job)) << Describe(job);
  // Cancelled is only reported once the backend confirmed: the batch Job is gone already.
  EXPECT_TRUE(BatchJobsOf(ns_, uid).empty());
  ExpectBackendGone(uid);
}

TEST_F(KubernetesControllerE2E, CancelWhileRunningKillsThePod) {
  std::string uid = CreateJob("running", Env({{"TESTENV_RUN_FOR", "300s"}}));
  ASSERT_FALSE(uid.empty());
  json running = WaitForJob("running", HasStartTime, "startTime");
  Cancel("running");
  json job = WaitForFinished("running");
  EXPECT_EQ(Summary(job, "Succeeded"), "False/Cancelled") << Describe(job);
  EXPECT_EQ(StatusField(job, "startTime"), StatusField(running, "startTime"));
  EXPECT_TRUE(BatchJobsOf(ns_, uid).empty());
  ExpectBackendGone(uid);
}

// ---------------------------------------------------------------------------------------------
// Secrets and ConfigMaps.

TEST_F(KubernetesControllerE2E, SecretAndConfigMapEnvStayReferencesForTheNode) {
  const std::string secretValue = "s3cret-" + RandomHex(24);
  const std::string configValue = "config-" + RandomHex(12);
  secretValues_.push_back(secretValue);
  ASSERT_TRUE(Apply({{"apiVersion", "v1"},
                     {"kind", "Secret"},
                     {"metadata", {{"name", "token"}, {"namespace", ns_}}},
                     {"stringData", {{"token", secretValue}}}}));
  ASSERT_TRUE(Apply({{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", "settings"}, {"namespace", ns_}}},
                     {"data", {{"value", configValue}}}}));
  json env = Env({{"TESTENV_RUN_FOR", "1s"}});
  env.push_back({{"name", "TOKEN"},
                 {"valueFrom", {{"secretKeyRef", {{"name", "token"}, {"key", "token"}}}}}});
  env.push_back({{"name", "SETTING"},
                 {"valueFrom", {{"configMapKeyRef", {{"name", "settings"}, {"key", "value"}}}}}});
  std::string uid = CreateJob("secret-env", env);
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished("secret-env");
  // Accepted although the class denies forwarding Secret values: none is forwarded.
  EXPECT_EQ(Summary(job, "Accepted"), "True/Valid") << Describe(job);
  EXPECT_EQ(Summary(job, "Succeeded"), "True/Completed") << Describe(job);

  json batch = OnlyBatchJob(uid);
  const json& podSpec = batch["spec"]["template"]["spec"];
  json token = ContainerEnv(podSpec, "TOKEN");
  EXPECT_EQ(Str(token, "/valueFrom/secretKeyRef/name"), "token") << token;
  EXPECT_EQ(Str(token, "/valueFrom/secretKeyRef/key"), "token") << token;
  EXPECT_FALSE(token.contains("value")) << token;
  json setting = ContainerEnv(podSpec, "SETTING");
  EXPECT_EQ(Str(setting, "/valueFrom/configMapKeyRef/name"), "settings") << setting;
  EXPECT_EQ(Str(setting, "/valueFrom/configMapKeyRef/key"), "value") << setting;
  EXPECT_FALSE(setting.contains("value")) << setting;
  EXPECT_EQ(batch.dump().find(secretValue), std::string::npos);
  EXPECT_EQ(batch.dump().find(configValue), std::string::npos);
  auto pods = PodsOf(ns_, uid);
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].dump().find(secretValue), std::string::npos);

  // Nowhere else either: not in the Job, its Events or the controller's log (also checked in
  // TearDown for the whole run).
  EXPECT_EQ(job.dump().find(secretValue), std::string::npos);
  auto events = Kubectl({"get", "events", "-n", ns_, "-o", "json"});
  EXPECT_EQ(events.exitCode, 0) << events.err;
  EXPECT_NE(events.out.find("secret-env"), std::string::npos) << "no Events for the Job at all";
  EXPECT_EQ(events.out.find(secretValue), std::string::npos);
  EXPECT_EQ(controller_.Log().find(secretValue), std::string::npos);
  EXPECT_EQ(controller_.Log().find(configValue), std::string::npos);
}

// The controller reads no Secret for a Kubernetes-class Job (docs/api.md, "Secret and ConfigMap
// references"): it knows that a referenced Secret exists from its metadata-only watch, and the
// kubelet reads the values. Measured on the API server itself, whose apiserver_request_total
// counts every GET of a Secret by any client, while Jobs that reference Secrets are accepted, wait
// for a Secret, run and finish. The test's own Secrets are made with kubectl create (a POST;
// kubectl apply would GET them first).
TEST_F(KubernetesControllerE2E, KubernetesClassJobsWithSecretReferencesCauseNoSecretGet) {
  const std::string secretValue = "s3cret-" + RandomHex(24);
  secretValues_.push_back(secretValue);
  auto createSecret = [&](const std::string& name) {
    json secret = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", {{"name", name}, {"namespace", ns_}}},
                   {"stringData", {{"token", secretValue}}}};
    auto r = Kubectl({"create", "-f", "-"}, secret.dump());
    EXPECT_EQ(r.exitCode, 0) << "kubectl create secret " << name << ": " << r.err;
  };
  auto gets = [] { return testing::ApiserverRequestCount("secrets", "GET"); };
  const auto before = gets();
  ASSERT_TRUE(before.has_value());

  createSecret("present");
  auto cm =
      Kubectl({"create", "-f", "-"}, json{{"apiVersion", "v1"},
                                          {"kind", "ConfigMap"},
                                          {"metadata", {{"name", "settings"}, {"namespace", ns_}}},
                                          {"data", {{"value", "v"}}}}
                                         .dump());
  ASSERT_EQ(cm.exitCode, 0) << cm.err;
  auto envWith = [](const std::string& secret) {
    json env = Env({{"TESTENV_RUN_FOR", "1s"}});
    env.push_back({{"name", "TOKEN"},
                   {"valueFrom", {{"secretKeyRef", {{"name", secret}, {"key", "token"}}}}}});
    env.push_back({{"name", "SETTING"},
                   {"valueFrom", {{"configMapKeyRef", {{"name", "settings"}, {"key", "value"}}}}}});
    return env;
  };
  ASSERT_FALSE(CreateJob("refs-a", envWith("present")).empty());
  ASSERT_FALSE(CreateJob("refs-b", envWith("present")).empty());
  // A Job whose Secret does not exist yet waits for it; creating it wakes the Job.
  ASSERT_FALSE(CreateJob("refs-late", envWith("late")).empty());
  WaitForJob(
      "refs-late", [](const json& j) { return Summary(j, "Accepted") == "False/SecretNotFound"; },
      "Accepted=False/SecretNotFound");
  createSecret("late");
  for (const char* name : {"refs-a", "refs-b", "refs-late"}) {
    json job = WaitForFinished(name);
    EXPECT_EQ(Summary(job, "Succeeded"), "True/Completed") << Describe(job);
  }

  const auto after = gets();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(*after - *before, 0)
      << "Secret GETs seen by the API server while Kubernetes-class Jobs with Secret references "
         "ran (no other client of this control plane GETs Secrets)";
  std::cerr << "apiserver_request_total{resource=secrets,verb=GET}: " << *before << " before, "
            << *after << " after\n";

  // The measurement can fail: one GET by kubectl shows up in it.
  auto r = Kubectl({"get", "secret", "present", "-n", ns_, "-o", "name"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto control = gets();
  ASSERT_TRUE(control.has_value());
  EXPECT_GE(*control - *after, 1) << "a kubectl get of a Secret was not counted";
}

// ---------------------------------------------------------------------------------------------
// Controller crashes.

TEST_F(KubernetesControllerE2E, ControllerKilledWhileRunningFindsTheResultAfterRestart) {
  std::string uid =
      CreateJob("crash", Env({{"TESTENV_RUN_FOR", "3s"}, {"TESTENV_EXIT_CODE", "3"}}));
  ASSERT_FALSE(uid.empty());
  json running = WaitForJob("crash", HasStartTime, "startTime");
  controller_.Kill();
  // The pod ends while no controller runs.
  WaitForPod(
      uid, [](const json& p) { return PodPhase(p) == "Failed"; }, "pod Failed");
  json stale = *GetJob("crash");
  EXPECT_FALSE(Finished(stale)) << "finished without a controller: " << Describe(stale);
  StartController();
  json job = WaitForFinished("crash");
  EXPECT_EQ(Summary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  EXPECT_EQ(Int(job, "/status/result/exitCode"), 3) << Describe(job);
  EXPECT_EQ(StatusField(job, "startTime"), StatusField(running, "startTime"));
  EXPECT_EQ(BatchJobsOf(ns_, uid).size(), 1u);
}

TEST_F(KubernetesControllerE2E, ControllerKilledDuringCreationMakesExactlyOneBatchJobPerJob) {
  // Several Jobs at once, the controller killed as soon as the first batch Job exists: some
  // Jobs have their batch Job, some have a finalizer only, some nothing yet.
  constexpr int kJobCount = 6;
  std::vector<std::string> uids;
  for (int i = 0; i < kJobCount; ++i) {
    uids.push_back(CreateJob("burst-" + std::to_string(i), Env({{"TESTENV_RUN_FOR", "2s"}})));
    ASSERT_FALSE(uids.back().empty());
  }
  ASSERT_TRUE(Eventually(
      [&] {
        auto r = Kubectl({"get", kBatchJobs, "-n", ns_, "-o", "name"});
        return r.exitCode == 0 && !r.out.empty();
      },
      30s, 20ms))
      << "no batch Job was created";
  controller_.Kill();
  StartController();
  for (int i = 0; i < kJobCount; ++i) {
    json job = WaitForFinished("burst-" + std::to_string(i));
    EXPECT_EQ(Summary(job, "Succeeded"), "True/Completed") << Describe(job);
    EXPECT_EQ(BatchJobsOf(ns_, uids[i]).size(), 1u) << Describe(job);
  }
}

// Under a burst the controller creates a batch Job before it writes the Job's acceptance; the
// batch Job carries it (annotation execution.ayatori.ddupan.top/acceptance). Killed then, and
// with the Job's class deleted before it restarts, the new controller must read the class back
// from the batch Job: the Jobs finish on their one batch Job, never wait for (or re-resolve to)
// whatever the class says now. Jobs that had no batch Job wait for their class.
TEST_F(KubernetesControllerE2E, ControllerKilledBeforeWritingTheAcceptanceReadsItBack) {
  const std::string carryClass = "carry-" + RandomHex(8);
  const json jobClass = {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                         {"kind", "JobClass"},
                         {"metadata", {{"name", carryClass}}},
                         {"spec",
                          {{"controllerName", "execution.ayatori.ddupan.top/kubernetes"},
                           {"parametersRef",
                            {{"group", "execution.ayatori.ddupan.top"},
                             {"kind", "KubernetesExecutionParameters"},
                             {"name", kClass}}}}}};
  auto r = Kubectl({"apply", "-f", "-"}, jobClass.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // A controller at 5 requests/s, so that the Jobs wait in its queue for seconds (a backlog,
  // which is when it defers writes); their pods start 20 s later, so nothing else is written
  // for them before the kill.
  controller_.Kill();
  StartController({"--qps=5", "--burst=5"});
  constexpr int kJobCount = 30;
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  for (int i = 0; i < kJobCount; ++i) {
    list["items"].push_back(
        {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
         {"kind", "Job"},
         {"metadata", {{"name", "carry-" + std::to_string(i)}, {"namespace", ns_}}},
         {"spec",
          {{"jobClassName", carryClass},
           {"task",
            {{"image", "busybox:1.36"},
             {"command", {"/bin/sh", "-c", "true"}},
             {"env", Env({{"TESTENV_START_AFTER", "20s"}, {"TESTENV_RUN_FOR", "1s"}})}}}}}});
  }
  r = Kubectl({"create", "-f", "-"}, list.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json::json_pointer acceptance(
      "/metadata/annotations/execution.ayatori.ddupan.top~1acceptance");
  auto carried = [&] {
    std::vector<json> out;
    auto all = Kubectl({"get", kBatchJobs, "-n", ns_, "-o", "json"});
    json items = json::parse(all.out, nullptr, false);
    if (!items.is_object() || !items.contains("items")) return out;
    for (const json& b : items["items"]) {
      if (b.contains(acceptance)) out.push_back(b);
    }
    return out;
  };
  ASSERT_TRUE(Eventually([&] { return !carried().empty(); }, 30s, 20ms))
      << "no batch Job carried an acceptance: the burst never made the controller busy";
  controller_.Kill();

  // The batch Jobs whose Job's status does not say Accepted=True: only they can tell the class.
  std::vector<std::string> unwritten;  // Job names
  for (const json& b : carried()) {
    const std::string name = Str(b, "/metadata/annotations/execution.ayatori.ddupan.top~1job-name");
    auto job = GetJob(name);
    ASSERT_TRUE(job.has_value()) << name;
    if (Summary(*job, "Accepted") != "True/Valid") unwritten.push_back(name);
    json record = json::parse(Str(b, acceptance.to_string()), nullptr, false);
    EXPECT_EQ(Str(record, "/resolvedJobClass/name"), carryClass) << record.dump();
  }
  ASSERT_FALSE(unwritten.empty()) << "every acceptance was written before the kill";
  r = Kubectl({"delete", "jobclass", carryClass});
  ASSERT_EQ(r.exitCode, 0) << r.err;

  StartController();
  for (const std::string& name : unwritten) {
    json job = WaitForFinished(name);
    EXPECT_EQ(Summary(job, "Succeeded"), "True/Completed") << Describe(job);
    EXPECT_EQ(Str(job, "/status/resolvedJobClass/name"), carryClass) << Describe(job);
    EXPECT_EQ(BatchJobsOf(ns_, Str(job, "/metadata/uid")).size(), 1u) << Describe(job);
  }
  // A Job without a batch Job, if any is left, waits for its class; back, it lets them run.
  for (int i = 0; i < kJobCount; ++i) {
    const std::string name = "carry-" + std::to_string(i);
    auto job = GetJob(name);
    ASSERT_TRUE(job.has_value()) << name;
    if (!BatchJobsOf(ns_, Str(*job, "/metadata/uid")).empty()) continue;
    WaitForJob(
        name, [](const json& j) { return Summary(j, "Accepted") == "False/JobClassNotFound"; },
        "Accepted=False/JobClassNotFound");
  }
  r = Kubectl({"apply", "-f", "-"}, jobClass.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (int i = 0; i < kJobCount; ++i) {
    json job = WaitForFinished("carry-" + std::to_string(i), 120s);
    EXPECT_EQ(Summary(job, "Succeeded"), "True/Completed") << Describe(job);
    EXPECT_EQ(BatchJobsOf(ns_, Str(job, "/metadata/uid")).size(), 1u) << Describe(job);
  }
  Kubectl({"delete", "jobclass", carryClass});
}

// The spec: no execution is created once desiredState=Cancelled. 500 Jobs at once on a controller
// held to 30 requests/s (so it is far behind), half of them cancelled while most have no batch
// Job yet. "After" is the order of the API server's writes: the resourceVersions are etcd
// revisions of the one etcd of this control plane, compared as numbers (a test-only reading of
// an opaque field); the batch Jobs' creations are seen by a watch started before the Jobs exist,
// so each ADDED event carries the object at its creation's revision. A batch Job created after
// its Job's cancel must have been confirmed on the Job's last version before the cancel (its
// annotation): the cancel raced the round trip between the confirming read and the create, the
// one window two objects without a transaction leave (docs/api.md § Decisions on the spec).
TEST_F(KubernetesControllerE2E, CancelDuringABacklogNeverCreatesFromAStaleDecision) {
  constexpr int kJobCount = 500;
  kube::ConfigLoadOptions load;
  load.kubeconfigPath = TestenvVar("KUBECONFIG");
  auto config = kube::LoadConfig(load);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  kube::RestClientOptions clientOptions;
  clientOptions.qps = 500;
  clientOptions.burst = 500;
  clientOptions.userAgent = "ayatori-e2e-cancel-race";
  auto client = kube::RestClient::New(*config, clientOptions);
  const ResourceRef batchJobs{"batch", "v1", "jobs", true};
  const ResourceRef jobs{"execution.ayatori.ddupan.top", "v1alpha1", "jobs", true};
  auto revision = [](const json& o) {
    return std::stoll(o.value("/metadata/resourceVersion"_json_pointer, std::string("0")));
  };

  controller_.Kill();
  StartController({"--qps=30", "--burst=30"});

  auto listed = client->List(batchJobs, ns_, ListOptions{});
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::mutex mu;
  std::map<std::string, long long> createdAt;      // Job uid -> revision of its batch Job's create
  std::map<std::string, std::string> confirmedOn;  // Job uid -> the Job version it was confirmed on
  std::stop_source stopWatch;
  std::thread watcher;
  // Stops and joins the watch however the test ends (an ASSERT returns early).
  struct StopOnExit {
    std::stop_source& stop;
    std::thread& thread;
    ~StopOnExit() {
      stop.request_stop();
      if (thread.joinable()) thread.join();
    }
  } stopOnExit{stopWatch, watcher};
  watcher = std::thread([&] {
    WatchOptions wo;
    wo.resourceVersion = listed->resourceVersion;
    wo.allowWatchBookmarks = false;
    while (!stopWatch.stop_requested()) {
      Status s = client->Watch(batchJobs, ns_, wo, stopWatch.get_token(), [&](WatchEvent&& e) {
        if (e.type == WatchEventType::kAdded) {
          const std::string uid =
              Str(e.object, "/metadata/labels/execution.ayatori.ddupan.top~1job-uid");
          std::lock_guard lock(mu);
          createdAt.emplace(uid, revision(e.object));
          confirmedOn.emplace(uid,
                              Str(e.object,
                                  "/metadata/annotations/"
                                  "execution.ayatori.ddupan.top~1confirmed-job-resource-version"));
        }
        wo.resourceVersion = Str(e.object, "/metadata/resourceVersion");
        return !stopWatch.stop_requested();
      });
      (void)s;  // a closed stream is resumed from the last revision seen
    }
  });

  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  for (int i = 0; i < kJobCount; ++i) {
    list["items"].push_back(
        {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
         {"kind", "Job"},
         {"metadata", {{"name", "race-" + std::to_string(i)}, {"namespace", ns_}}},
         {"spec",
          {{"jobClassName", kClass},
           {"task",
            {{"image", "busybox:1.36"},
             {"command", {"/bin/sh", "-c", "true"}},
             {"env", Env({{"TESTENV_RUN_FOR", "1s"}})}}}}}});
  }
  auto r = Kubectl({"create", "-f", "-"}, list.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // Behind: some batch Jobs exist, most do not.
  ASSERT_TRUE(Eventually(
      [&] {
        std::lock_guard lock(mu);
        return createdAt.size() >= 10;
      },
      60s, 20ms))
      << "the controller created no batch Jobs";

  // Cancel the odd-numbered half from four threads at once. Each cancel is a patch with a
  // resourceVersion precondition, so its revision and the Job's version right before it are
  // known exactly.
  std::map<std::string, long long> cancelledAt;      // Job name -> revision of its cancel
  std::map<std::string, std::string> versionBefore;  // Job name -> its version before the cancel
  std::map<std::string, std::string> uidOf;
  {
    std::vector<std::thread> cancellers;
    cancellers.reserve(4);
    for (int t = 0; t < 4; ++t) {
      cancellers.emplace_back([&, t] {
        for (int i = 1 + 2 * t; i < kJobCount; i += 8) {
          const std::string name = "race-" + std::to_string(i);
          StatusOr<json> patched = Status(StatusCode::kConflict, "not sent");
          std::string before;
          for (int attempt = 0; attempt < 20 && patched.status().code() == StatusCode::kConflict;
               ++attempt) {
            auto current = client->Get(jobs, ns_, name);
            if (!current.ok()) {
              patched = current.status();
              break;
            }
            before = Str(*current, "/metadata/resourceVersion");
            patched = client->Patch(jobs, ns_, name, PatchType::kMerge,
                                    {{"metadata", {{"resourceVersion", before}}},
                                     {"spec", {{"desiredState", "Cancelled"}}}},
                                    {});
          }
          std::lock_guard lock(mu);
          if (!patched.ok()) {
            ADD_FAILURE() << "cancel " << name << ": " << patched.status().ToString();
            continue;
          }
          cancelledAt[name] = revision(*patched);
          versionBefore[name] = before;
          uidOf[name] = Str(*patched, "/metadata/uid");
        }
      });
    }
    for (auto& c : cancellers) c.join();
  }
  size_t createdBeforeCancels = 0;
  {
    std::lock_guard lock(mu);
    createdBeforeCancels = createdAt.size();
  }

  // The race is over: the rest is finishing, at the controller's usual rate.
  controller_.Kill();
  StartController();
  std::map<std::string, json> finished;
  // Listed in pages (a 500-Job list is larger than one answer the client takes).
  auto listJobs = [&](const std::function<void(json &&)>& visit) {
    ListOptions lo;
    lo.limit = 100;
    return ListAll(*client, jobs, ns_, lo, visit).ok();
  };
  const bool allFinished = Eventually(
      [&] {
        finished.clear();
        const bool pagesRead = listJobs([&](json&& j) {
          if (Finished(j)) {
            const std::string name = Str(j, "/metadata/name");
            finished[name] = std::move(j);
          }
        });
        return pagesRead && finished.size() == static_cast<size_t>(kJobCount);
      },
      300s, 500ms);
  ASSERT_TRUE(allFinished) << finished.size() << " of " << kJobCount << " Jobs finished";
  for (int i = 0; i < kJobCount; i += 2) {
    const json& job = finished["race-" + std::to_string(i)];
    EXPECT_EQ(Summary(job, "Succeeded"), "True/Completed") << Describe(job);
  }
  // Every create the watch may still deliver has happened: each Job is finished.
  stopWatch.request_stop();
  watcher.join();
  std::lock_guard lock(mu);

  int withoutBatchJob = 0, createdBeforeTheirCancel = 0, createdAfterTheirCancel = 0;
  for (const auto& [name, cancelRevision] : cancelledAt) {
    auto created = createdAt.find(uidOf[name]);
    if (created == createdAt.end()) {
      ++withoutBatchJob;
      EXPECT_EQ(Summary(finished[name], "Succeeded"), "False/Cancelled")
          << Describe(finished[name]);
      continue;
    }
    if (created->second < cancelRevision) {
      ++createdBeforeTheirCancel;
      continue;
    }
    // Created after the cancel: only a create confirmed on the Job's very last version before
    // the cancel, i.e. the cancel landed between the confirming read and the create (a round
    // trip; Kubernetes has no transaction across the two objects). A create decided on any
    // older copy of the Job fails here. Such a Job must still end with its execution stopped
    // (Cancelled) or, if the task finished first, Completed.
    ++createdAfterTheirCancel;
    const std::string& confirmed = confirmedOn[uidOf[name]];
    EXPECT_EQ(confirmed, versionBefore[name])
        << name << ": batch Job created at revision " << created->second
        << ", after its cancel at revision " << cancelRevision << ", confirmed on Job version "
        << confirmed << " where the cancel replaced version " << versionBefore[name];
    const std::string result = Summary(finished[name], "Succeeded");
    EXPECT_TRUE(result == "False/Cancelled" || result == "True/Completed") << result;
  }
  std::cerr << kJobCount << " Jobs, " << cancelledAt.size() << " cancelled; batch Jobs existing "
            << "when the cancels were done: " << createdBeforeCancels << "; cancelled Jobs without "
            << "a batch Job: " << withoutBatchJob
            << ", with one created before the cancel: " << createdBeforeTheirCancel
            << ", after it: " << createdAfterTheirCancel << "\n";
  EXPECT_EQ(cancelledAt.size(), static_cast<size_t>(kJobCount / 2));
  // The race was run: many cancels reached Jobs the controller had not created a batch Job for.
  EXPECT_GT(withoutBatchJob, kJobCount / 8);
  // The round trip is short: a create racing a cancel is rare (it was 0 or 1 of 250 in runs on a
  // loaded 2-core machine; a create waiting in the rate limiter after its read made it common).
  EXPECT_LE(createdAfterTheirCancel, kJobCount / 50);
  // A batch Job the watch missed would show here (a cancelled Job's batch Job may be gone).
  std::vector<std::string> unseen;
  ListOptions pages;
  pages.limit = 100;
  ASSERT_TRUE(ListAll(*client, batchJobs, ns_, pages, [&](json&& b) {
                const std::string uid =
                    Str(b, "/metadata/labels/execution.ayatori.ddupan.top~1job-uid");
                if (!createdAt.contains(uid)) unseen.push_back(uid);
              }).ok());
  EXPECT_TRUE(unseen.empty()) << unseen.size() << " batch Jobs the watch did not see created";

  // TearDown's kubectl delete is too slow for 500 Jobs: delete them here, through the controller.
  for (int i = 0; i < kJobCount; ++i) {
    Status s = client->Delete(jobs, ns_, "race-" + std::to_string(i), DeleteOptions{});
    EXPECT_TRUE(s.ok() || s.code() == StatusCode::kNotFound) << s.ToString();
  }
  EXPECT_TRUE(Eventually(
      [&] {
        size_t left = 0;
        return listJobs([&](json&&) { ++left; }) && left == 0;
      },
      300s, 500ms))
      << "the Jobs were not all deleted";
}

// ---------------------------------------------------------------------------------------------
// Deletion: the Job keeps its finalizer until the backend is gone.

TEST_F(KubernetesControllerE2E, DeleteWhileResolvingRemovesTheJob) {
  std::string uid =
      CreateJob("del-resolving", Env({}), {{"jobClassName", "absent-" + RandomHex(8)}});
  ASSERT_FALSE(uid.empty());
  WaitForJob(
      "del-resolving",
      [](const json& j) { return Summary(j, "Accepted") == "False/JobClassNotFound"; },
      "Accepted=False/JobClassNotFound");
  auto r = Kubectl({"delete", kJobs, "del-resolving", "-n", ns_, "--wait=false"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(WaitForJobGone("del-resolving", 30s));
  EXPECT_TRUE(BatchJobsOf(ns_, uid).empty());
}

class DeletionE2E : public KubernetesControllerE2E {
 protected:
  // Deletes the Job while the test holds its batch Job: a test finalizer keeps the batch Job
  // from going away once deleted, and a second (non-controller) owner, a ConfigMap, keeps the
  // garbage collector from deleting it when the Ayatori Job is gone, so a deletionTimestamp on
  // it can only come from the controller.
  //
  // `podRuns`: a pod of the Job has not terminated. Then the Job must stay, with its cleanup
  // finalizer, for as long as the batch Job is held, and go once it is released. A finished
  // Job's pod has terminated: the controller then removes its finalizer as soon as the batch
  // Job's deletion is accepted (it does not wait for other finalizers on the batch Job).
  void DeleteWithTheBatchJobHeld(const std::string& name, const std::string& uid, bool podRuns) {
    json batch = OnlyBatchJob(uid);
    const std::string batchName = Str(batch, "/metadata/name");
    ASSERT_FALSE(batchName.empty());
    auto r = Kubectl({"create", "configmap", "anchor", "-n", ns_, "-o", "json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const std::string anchorUid = Str(json::parse(r.out, nullptr, false), "/metadata/uid");
    ASSERT_FALSE(anchorUid.empty());
    json owners = batch["metadata"]["ownerReferences"];
    owners.push_back(
        {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "anchor"}, {"uid", anchorUid}});
    Patch(kBatchJobs, ns_, batchName,
          {{"metadata", {{"finalizers", {kHoldFinalizer}}, {"ownerReferences", owners}}}});

    r = Kubectl({"delete", kJobs, name, "-n", ns_, "--wait=false"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto batchDeleting = [&] {
      auto b = Get(kBatchJobs, ns_, batchName);
      return b && b->contains("/metadata/deletionTimestamp"_json_pointer);
    };
    EXPECT_TRUE(Eventually(batchDeleting, 30s, kPoll))
        << "the controller did not delete batch Job " << batchName;
    if (podRuns) {
      bool stays = HoldsFor(
          [&] {
            auto job = GetJob(name);
            return job && job->contains("/metadata/deletionTimestamp"_json_pointer) &&
                   HasFinalizer(*job, kCleanupFinalizer);
          },
          2s, kPoll);
      EXPECT_TRUE(stays) << "the Job went away while its batch Job and pod still existed";
      Patch(kBatchJobs, ns_, batchName, {{"metadata", {{"finalizers", nullptr}}}});
      EXPECT_TRUE(WaitForJobGone(name, 60s)) << "the Job stayed after its batch Job was gone";
    } else {
      EXPECT_TRUE(WaitForJobGone(name, 30s));
      // Gone only after the controller deleted the batch Job (nobody else could).
      EXPECT_TRUE(batchDeleting()) << "the Job went away before its batch Job was deleted";
      Patch(kBatchJobs, ns_, batchName, {{"metadata", {{"finalizers", nullptr}}}});
    }
    ExpectBackendGone(uid);
  }
};

TEST_F(DeletionE2E, DeleteWhilePending) {
  std::string uid = CreateJob("del-pending", Env({{"TESTENV_START_AFTER", "300s"}}));
  ASSERT_FALSE(uid.empty());
  WaitForPod(
      uid, [](const json& p) { return PodPhase(p) == "Pending"; }, "a Pending pod");
  DeleteWithTheBatchJobHeld("del-pending", uid, /*podRuns=*/true);
}

TEST_F(DeletionE2E, DeleteWhileRunning) {
  std::string uid = CreateJob("del-running", Env({{"TESTENV_RUN_FOR", "300s"}}));
  ASSERT_FALSE(uid.empty());
  WaitForJob("del-running", HasStartTime, "startTime");
  DeleteWithTheBatchJobHeld("del-running", uid, /*podRuns=*/true);
}

TEST_F(DeletionE2E, DeleteWhenFinished) {
  std::string uid = CreateJob("del-finished", Env({{"TESTENV_RUN_FOR", "1s"}}));
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished("del-finished");
  EXPECT_EQ(Summary(job, "Succeeded"), "True/Completed") << Describe(job);
  DeleteWithTheBatchJobHeld("del-finished", uid, /*podRuns=*/false);
}

// ---------------------------------------------------------------------------------------------
// TTL.

TEST_F(KubernetesControllerE2E, TtlDeletesTheFinishedJobAndItsBatchJob) {
  std::string uid =
      CreateJob("ttl", Env({{"TESTENV_RUN_FOR", "1s"}}), {{"ttlSecondsAfterFinished", 2}});
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished("ttl");
  EXPECT_EQ(Summary(job, "Succeeded"), "True/Completed") << Describe(job);
  const long long completion = Seconds(job, "completionTime");
  ASSERT_TRUE(WaitForJobGone("ttl", 60s)) << "the Job outlived its TTL";
  const long long goneAt = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  // completionTime is truncated to the second, so the real completion is at or after it.
  EXPECT_GE(goneAt, completion + 2) << "deleted before ttlSecondsAfterFinished passed";
  EXPECT_TRUE(BatchJobsOf(ns_, uid).empty());
  ExpectBackendGone(uid);
}

// ---------------------------------------------------------------------------------------------
// Every waiting Job says why: the Succeeded condition's message and a Warning Event on the Job
// carry what the cluster says, while the Job waits (none of these fail the Job).

class WaitingE2E : public KubernetesControllerE2E {
 protected:
  // A JobClass of its own whose KubernetesExecutionParameters carry `spec` and whose own spec
  // adds `classSpec` (cluster-scoped, so named per test and removed at the end).
  std::string CreateClass(const json& spec, const json& classSpec = json::object()) {
    std::string name = "waiting-" + RandomHex(8);
    json s = spec;
    s["imagePullFailureTimeoutSeconds"] = 600;
    EXPECT_TRUE(e2e::ApplyKubernetesClass(name, s, classSpec));
    classes_.push_back(name);
    return name;
  }

  void TearDown() override {
    KubernetesControllerE2E::TearDown();
    for (const auto& c : classes_) {
      Kubectl({"delete", "jobclasses.execution.ayatori.ddupan.top", c, "--wait=false"});
      Kubectl({"delete", "kubernetesexecutionparameters.execution.ayatori.ddupan.top", c,
               "--wait=false"});
    }
  }

  // Waits until the Job waits (Succeeded=Unknown/Scheduling, not started) with a message that
  // contains every part of `parts`; returns the Job.
  json WaitForWaitingMessage(const std::string& name, const std::vector<std::string>& parts) {
    return WaitForJob(
        name,
        [&](const json& j) {
          if (Summary(j, "Succeeded") != "Unknown/Scheduling" || HasStartTime(j)) return false;
          const std::string message = Str(FindCondition(j, "Succeeded"), "/message");
          for (const auto& p : parts) {
            if (message.find(p) == std::string::npos) return false;
          }
          return true;
        },
        "Succeeded=Unknown/Scheduling with a message that names the cause", 60s);
  }

  // The Warning Events of reason `reason` about the Ayatori Job `uid` (core/v1 view, which shows
  // the controller's events.k8s.io Events too).
  std::vector<json> WarningEvents(const std::string& uid, const std::string& reason) {
    auto r = Kubectl({"get", "events", "-n", ns_, "-o", "json", "--field-selector",
                      "involvedObject.uid=" + uid + ",type=Warning,reason=" + reason});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    json list = json::parse(r.out, nullptr, false);
    if (!list.is_object() || !list.contains("items")) return {};
    return list["items"].get<std::vector<json>>();
  }

  // Waits for a Warning Event `reason` about the Job whose note contains `part`.
  void ExpectWarningEvent(const std::string& uid, const std::string& reason,
                          const std::string& part) {
    std::vector<json> events;
    bool found = Eventually(
        [&] {
          events = WarningEvents(uid, reason);
          for (const auto& e : events) {
            if (Str(e, "/message").find(part) != std::string::npos) return true;
          }
          return false;
        },
        30s, kPoll);
    EXPECT_TRUE(found) << "no Warning Event " << reason << " containing \"" << part
                       << "\" about Job uid " << uid << "; found " << json(events).dump();
  }

  std::vector<std::string> classes_;
};

TEST_F(WaitingE2E, MissingPriorityClassShowsTheFailedCreate) {
  const std::string priorityClass = "absent-" + RandomHex(8);
  const std::string cls = CreateClass({{"priorityClassName", priorityClass}});
  std::string uid = CreateJob("prio", Env({}), {{"jobClassName", cls}});
  ASSERT_FALSE(uid.empty());
  json job = WaitForWaitingMessage(
      "prio", {"FailedCreate", "no PriorityClass with name " + priorityClass + " was found"});
  EXPECT_EQ(Summary(job, "Scheduled"), "True/BackendCreated") << Describe(job);
  ExpectWarningEvent(uid, "FailedCreate", priorityClass);
  // It waits, it does not fail: the Job starts once the PriorityClass exists.
  ASSERT_TRUE(Apply({{"apiVersion", "scheduling.k8s.io/v1"},
                     {"kind", "PriorityClass"},
                     {"metadata", {{"name", priorityClass}}},
                     {"value", 1000}}));
  json started = WaitForJob("prio", Finished, "finished once the PriorityClass exists", 120s);
  EXPECT_EQ(Summary(started, "Succeeded"), "True/Completed") << Describe(started);
  Kubectl({"delete", "priorityclass", priorityClass, "--wait=false"});
}

TEST_F(WaitingE2E, MissingServiceAccountShowsTheFailedCreate) {
  const std::string account = "absent-" + RandomHex(8);
  const std::string cls = CreateClass({{"serviceAccountName", account}});
  std::string uid = CreateJob("sa", Env({}), {{"jobClassName", cls}});
  ASSERT_FALSE(uid.empty());
  WaitForWaitingMessage("sa", {"FailedCreate", "serviceaccount \"" + account + "\" not found"});
  ExpectWarningEvent(uid, "FailedCreate", account);
}

TEST_F(WaitingE2E, UnschedulableShowsTheSchedulersMessage) {
  // The fake node has 64 CPUs.
  std::string uid =
      CreateJob("unschedulable", Env({}),
                {{"resources", {{"requests", {{"cpu", "1000"}}}, {"limits", {{"cpu", "1000"}}}}}});
  ASSERT_FALSE(uid.empty());
  json job = WaitForWaitingMessage("unschedulable", {"Unschedulable", "Insufficient cpu"});
  EXPECT_EQ(Summary(job, "Scheduled"), "True/BackendCreated") << Describe(job);
  ExpectWarningEvent(uid, "Unschedulable", "Insufficient cpu");
}

TEST_F(WaitingE2E, StartTimeoutFailsAJobThatCannotStart) {
  const std::string cls = CreateClass(json::object(), {{"startTimeoutSeconds", 3}});
  std::string uid =
      CreateJob("never-starts", Env({}),
                {{"jobClassName", cls},
                 {"resources", {{"requests", {{"cpu", "1000"}}}, {"limits", {{"cpu", "1000"}}}}}});
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished("never-starts", 60s);
  EXPECT_EQ(Summary(job, "Succeeded"), "False/StartTimeout") << Describe(job);
  const std::string message = Str(FindCondition(job, "Succeeded"), "/message");
  EXPECT_NE(message.find("startTimeoutSeconds=3"), std::string::npos) << message;
  EXPECT_NE(message.find("Insufficient cpu"), std::string::npos) << message;
  EXPECT_FALSE(HasStartTime(job)) << Describe(job);
  // Not before the timeout after acceptance.
  auto accepted = ParseTime(Str(FindCondition(job, "Accepted"), "/lastTransitionTime"));
  ASSERT_TRUE(accepted.has_value());
  EXPECT_GE(Seconds(job, "completionTime") - *accepted, 3) << Describe(job);
  ExpectBackendGone(uid);
}

TEST_F(WaitingE2E, MissingSecretKeyShowsTheKubeletsCreateContainerConfigError) {
  // kwok plays the kubelet (hack/testenv/kwok-stages.yaml, TESTENV_CONFIG_ERROR): it reports the
  // container as a kubelet does that finds a Secret key missing. The controller itself never
  // reads the Secret on this path.
  const std::string kubeletMessage = "couldn't find key missing in Secret " + ns_ + "/token";
  std::string uid = CreateJob("config-error", Env({{"TESTENV_CONFIG_ERROR", kubeletMessage}}));
  ASSERT_FALSE(uid.empty());
  WaitForWaitingMessage("config-error", {"CreateContainerConfigError", kubeletMessage});
  ExpectWarningEvent(uid, "CreateContainerConfigError", kubeletMessage);
}

}  // namespace
}  // namespace ayatori::kubernetes_e2e
