// Pinned backends on a real dockerd (docs/jobclass.md § What an administrator may change): a Job
// keeps talking to the engine it was accepted for. The controller runs WITHOUT --docker-endpoint,
// so the DockerExecutionParameters decide where Jobs run; they name the "dockerd" fixture's engine
// at first. While a Job runs (or right after its container was created, before the controller
// recorded it) the parameters are edited to point at another endpoint, deleted, or replaced, and
// the controller is killed and started again: the Job must still end with its true result from
// the fixture's engine, with exactly one container, and the other endpoint must never be asked
// anything. The other endpoint is a unix socket of this test that accepts connections and never
// answers, so that any call sent there is counted. The pinned values live in an immutable
// ConfigMap of the controller's namespace (src/controller/backend_snapshot.h); the Job's status
// only names it and never shows the endpoint.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "test/adapters/docker/e2e_support.h"
#include "test/e2e/controller_e2e.h"
#include "test/support/testenv.h"

namespace ayatori::e2e {
namespace {

using adapters::docker::e2e::TcpListener;

constexpr const char* kBusybox = "ayatori.local/busybox:1";
constexpr const char* kClass = "e2e-docker-pinned";
constexpr const char* kParameters = "dockerexecutionparameters.execution.ayatori.ddupan.top";
constexpr const char* kControllerNamespace = "ayatori-system";

// A unix socket that queues connections and never answers: an endpoint where nothing can run.
// Connections() accepts what is queued and counts every connection ever made to it.
class SilentUnixSocket {
 public:
  explicit SilentUnixSocket(std::string path) : path_(std::move(path)) {
    std::remove(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (fd_ < 0 || path_.size() >= sizeof(addr.sun_path)) {
      ADD_FAILURE() << "cannot create a unix socket at " << path_;
      return;
    }
    std::copy(path_.begin(), path_.end(), addr.sun_path);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd_, 128) != 0) {
      ADD_FAILURE() << "cannot listen on " << path_ << ": " << std::strerror(errno);
    }
  }
  ~SilentUnixSocket() {
    if (fd_ >= 0) close(fd_);
    std::remove(path_.c_str());
  }
  SilentUnixSocket(const SilentUnixSocket&) = delete;
  SilentUnixSocket& operator=(const SilentUnixSocket&) = delete;

  std::string endpoint() const { return "unix://" + path_; }
  int Connections() {
    for (int c; (c = accept(fd_, nullptr, nullptr)) >= 0;) {
      close(c);
      ++connections_;
    }
    return connections_;
  }

 private:
  std::string path_;
  int fd_ = -1;
  int connections_ = 0;
};

json BlockingTask(int port, const std::string& then) {
  return {{"image", kBusybox},
          {"command", {"/bin/sh", "-c", "nc 127.0.0.1 " + std::to_string(port) + then}}};
}

json Params(const std::string& endpoint) {
  // Host network: the Jobs block on a TCP connection to this test until it lets them end.
  return {{"endpoint", endpoint},
          {"networkMode", "host"},
          {"allowHostNetwork", true},
          {"stopGracePeriodSeconds", 1}};
}

bool IsResultUnknown(const json& j) {
  return ConditionSummary(j, "Succeeded") == "Unknown/ResultUnknown" &&
         !j.contains("/status/completionTime"_json_pointer);
}

class DockerPinnedE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    host_ = FixtureDockerHost();
    other_ = std::make_unique<SilentUnixSocket>(RunPath("pinned-other.sock"));
    ASSERT_TRUE(InstallCrds());
    ASSERT_TRUE(ApplyDockerClass(kClass, Params(host_)));
    ASSERT_NO_FATAL_FAILURE(StartControllerAndNamespace("e2e-pinned", {}));
  }

  void TearDown() override {
    // A Job of the unreachable-engine test that never got its engine would keep its finalizer:
    // give it one, so that deleting it through the controller can finish.
    const std::string later = RunPath("pinned-later.sock");
    if (access(later.c_str(), F_OK) != 0) {
      symlink(host_.substr(std::string("unix://").size()).c_str(), later.c_str());
    }
    ControllerTest::TearDown();
    std::remove(later.c_str());
  }

  // Waits until the Job reports Succeeded=Unknown/Running and returns it.
  json WaitForRunning(const std::string& name) {
    return WaitForJob(
        ns_, name,
        [](const json& j) { return ConditionSummary(j, "Succeeded") == "Unknown/Running"; }, 60s,
        "Succeeded=Unknown/Running");
  }

  std::string ParametersUid() {
    return Get(kParameters, "", kClass).value_or(json()).value("/metadata/uid"_json_pointer, "");
  }

  // The backend snapshot ConfigMap a Job's status names.
  json SnapshotOf(const json& job) {
    const std::string name = job.value("/status/resolvedJobClass/backendSnapshot"_json_pointer, "");
    EXPECT_TRUE(name.starts_with("ayatori-backend-")) << Describe(job);
    return Get("configmaps", kControllerNamespace, name).value_or(json());
  }

  // The Job was accepted for the fixture's engine, with the parameters object of uid `uid`: its
  // snapshot names that engine, and its status does not.
  void ExpectPinnedToTheFixture(const json& job, const std::string& uid) {
    json snapshot = SnapshotOf(job);
    EXPECT_EQ(snapshot.value("/data/endpoint"_json_pointer, ""), host_) << snapshot.dump();
    EXPECT_EQ(snapshot.value("/data/networkMode"_json_pointer, ""), "host") << snapshot.dump();
    EXPECT_EQ(snapshot.value("immutable", false), true) << snapshot.dump();
    EXPECT_EQ(job.value("/status/resolvedJobClass/parametersRef/uid"_json_pointer, ""), uid);
    const std::string socketPath = host_.substr(std::string("unix://").size());
    EXPECT_EQ(job.value("status", json::object()).dump().find(socketPath), std::string::npos)
        << "the Job's status shows the endpoint: " << Describe(job);
  }

  // Creates Job `name`, blocked on a connection to `listener` and then running `then`; waits until
  // it runs and checks that it was pinned to the fixture's engine. Returns the connection (closing
  // it lets the Job end), or -1 after a test failure.
  int StartBlockedJob(const std::string& name, TcpListener& listener, const std::string& then,
                      std::string* uid) {
    const std::string paramsUid = ParametersUid();
    *uid = CreateJob(name, kClass, BlockingTask(listener.port(), then));
    if (uid->empty()) return -1;
    int conn = listener.Accept(60s);
    if (conn < 0) {
      ADD_FAILURE() << "Job " << name << " never connected";
      return -1;
    }
    ExpectPinnedToTheFixture(WaitForRunning(name), paramsUid);
    return conn;
  }

  std::string host_;
  std::unique_ptr<SilentUnixSocket> other_;
};

// Edited endpoint (same object) and a controller restart while the Job runs.
TEST_F(DockerPinnedE2ETest, EditedEndpointAndRestartLeaveTheRunningJobOnItsEngine) {
  const std::string paramsUid = ParametersUid();
  ASSERT_FALSE(paramsUid.empty());
  TcpListener listener;
  std::string uid;
  int conn = StartBlockedJob("edited", listener, "; exit 3", &uid);
  ASSERT_GE(conn, 0);

  controller_.Kill();
  ASSERT_TRUE(ApplyDockerClass(kClass, Params(other_->endpoint())));
  ASSERT_EQ(ParametersUid(), paramsUid) << "an edit, not a replacement";
  ASSERT_NO_FATAL_FAILURE(RestartController());
  close(conn);  // the process exits 3

  json job = WaitForFinished(ns_, "edited");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  EXPECT_EQ(job.value("/status/result/exitCode"_json_pointer, -1), 3) << Describe(job);
  EXPECT_EQ(ContainersOf(host_, uid).size(), 1u);
  EXPECT_EQ(other_->Connections(), 0) << "the controller talked to the edited endpoint";
}

// The controller dies as soon as the container exists, usually before the status names it; the
// parameters object is then deleted and created again under the same name (a new uid) pointing
// elsewhere. The next controller must adopt the container on the fixture's engine.
TEST_F(DockerPinnedE2ETest, ReplacedParametersAfterACrashRightAfterCreateDoNotRunTheJobTwice) {
  const std::string paramsUid = ParametersUid();
  TcpListener listener;
  std::string uid = CreateJob("replaced", kClass, BlockingTask(listener.port(), ""));
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(testing::Eventually([&] { return !ContainersOf(host_, uid).empty(); }, 60s, 5ms))
      << "no container appeared";
  controller_.Kill();
  json atKill = Get(kJobResource, ns_, "replaced").value_or(json());
  std::cerr << "at the kill: " << Describe(atKill) << "\n";
  ExpectPinnedToTheFixture(atKill, paramsUid);

  auto r = Kubectl({"delete", kParameters, kClass, "--wait=true"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(ApplyDockerClass(kClass, Params(other_->endpoint())));
  ASSERT_NE(ParametersUid(), paramsUid) << "a replacement, not an edit";
  ASSERT_NO_FATAL_FAILURE(RestartController());

  int conn = listener.Accept(60s);
  ASSERT_GE(conn, 0) << "the Job never connected";
  close(conn);
  json job = WaitForFinished(ns_, "replaced");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  EXPECT_EQ(ContainersOf(host_, uid).size(), 1u) << "the task ran more than once";
  EXPECT_EQ(other_->Connections(), 0) << "the controller talked to the replacement's endpoint";
}

// The parameters object is deleted while the Job runs, and the controller restarted: the Job ends
// with its true result, and deleting it removes its container from the engine it ran on.
TEST_F(DockerPinnedE2ETest, DeletedParametersLeaveTheRunningJobAndItsCleanupOnItsEngine) {
  TcpListener listener;
  std::string uid;
  int conn = StartBlockedJob("orphan", listener, "; exit 5", &uid);
  ASSERT_GE(conn, 0);

  auto r = Kubectl({"delete", kParameters, kClass, "--wait=true"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  controller_.Kill();
  ASSERT_NO_FATAL_FAILURE(RestartController());
  close(conn);

  json job = WaitForFinished(ns_, "orphan");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  EXPECT_EQ(job.value("/status/result/exitCode"_json_pointer, -1), 5) << Describe(job);
  EXPECT_EQ(ContainersOf(host_, uid).size(), 1u);

  r = Kubectl({"delete", kJobResource, "orphan", "-n", ns_, "--wait=false"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(WaitForJobGone(ns_, "orphan"))
      << "the Job was not deleted: " << Describe(Get(kJobResource, ns_, "orphan").value_or(json()));
  EXPECT_TRUE(ContainersOf(host_, uid).empty()) << "the container outlived its Job";
}

// The Job's recorded engine does not exist (yet): its result is unknown, never a failure.
// Pointing the parameters at a healthy engine does not move it there; once its own endpoint
// answers (a symlink to the fixture's socket appears at that path) the Job runs there.
TEST_F(DockerPinnedE2ETest, UnreachableRecordedEngineIsResultUnknownUntilThatEngineAnswers) {
  const std::string later = RunPath("pinned-later.sock");
  std::remove(later.c_str());
  ASSERT_TRUE(ApplyDockerClass(kClass, Params("unix://" + later)));
  std::string uid =
      CreateJob("waits", kClass, {{"image", kBusybox}, {"command", {"/bin/sh", "-c", "exit 0"}}});
  ASSERT_FALSE(uid.empty());
  json unknown = WaitForJob(ns_, "waits", IsResultUnknown, 60s, "Succeeded=Unknown/ResultUnknown");
  EXPECT_FALSE(unknown.contains("/status/result"_json_pointer)) << Describe(unknown);
  EXPECT_EQ(SnapshotOf(unknown).value("/data/endpoint"_json_pointer, ""), "unix://" + later);

  ASSERT_TRUE(ApplyDockerClass(kClass, Params(host_)));
  EXPECT_TRUE(testing::HoldsFor(
      [&] {
        json j = Get(kJobResource, ns_, "waits").value_or(json());
        return IsResultUnknown(j) && ContainersOf(host_, uid).empty();
      },
      5s, 500ms))
      << "the Job left its recorded engine: "
      << Describe(Get(kJobResource, ns_, "waits").value_or(json()));

  ASSERT_EQ(symlink(host_.substr(std::string("unix://").size()).c_str(), later.c_str()), 0)
      << std::strerror(errno);
  json job = WaitForFinished(ns_, "waits", 90s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  EXPECT_EQ(ContainersOf(host_, uid).size(), 1u);
}

// The snapshot cannot be edited; deleted, the Job's backend is unknown: no guess from the current
// parameters (which name the same engine here, so a fallback would "work"), Succeeded stays
// Unknown with the reason and the ConfigMap's name. Restored as it was, the Job ends with its true
// result.
TEST_F(DockerPinnedE2ETest, DeletedSnapshotIsResultUnknownUntilRestored) {
  TcpListener listener;
  std::string uid;
  int conn = StartBlockedJob("snap", listener, "; exit 4", &uid);
  ASSERT_GE(conn, 0);
  json job = Get(kJobResource, ns_, "snap").value_or(json());
  json snapshot = SnapshotOf(job);
  const std::string name = snapshot.value("/metadata/name"_json_pointer, "");
  ASSERT_FALSE(name.empty());

  auto r = Kubectl({"patch", "configmap", name, "-n", kControllerNamespace, "--type=merge", "-p",
                    R"({"data":{"endpoint":"unix:///elsewhere.sock"}})"});
  EXPECT_NE(r.exitCode, 0) << "the snapshot was edited";
  EXPECT_NE(r.err.find("immutable"), std::string::npos) << r.err;

  r = Kubectl({"delete", "configmap", name, "-n", kControllerNamespace, "--wait=true"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  PatchJob("snap", {{"metadata", {{"labels", {{"ayatori-test/touch", "1"}}}}}});
  json unknown = WaitForJob(ns_, "snap", IsResultUnknown, 60s, "Succeeded=Unknown/ResultUnknown");
  std::string message;
  for (const auto& c : unknown["status"]["conditions"]) {
    if (c.value("type", "") == "Succeeded") message = c.value("message", "");
  }
  EXPECT_TRUE(message.starts_with("BackendSnapshotMissing: ")) << message;
  EXPECT_NE(message.find(std::string(kControllerNamespace) + "/" + name), std::string::npos)
      << message;
  EXPECT_EQ(unknown["status"].dump().find(host_.substr(std::string("unix://").size())),
            std::string::npos)
      << Describe(unknown);

  // The process ends meanwhile; without its snapshot the Job must not learn (or guess) a result.
  close(conn);
  EXPECT_TRUE(testing::HoldsFor(
      [&] { return IsResultUnknown(Get(kJobResource, ns_, "snap").value_or(json())); }, 5s, 500ms))
      << Describe(Get(kJobResource, ns_, "snap").value_or(json()));

  json restored = {{"apiVersion", "v1"},
                   {"kind", "ConfigMap"},
                   {"metadata",
                    {{"name", name},
                     {"namespace", kControllerNamespace},
                     {"labels", snapshot["metadata"]["labels"]},
                     {"annotations", snapshot["metadata"]["annotations"]}}},
                   {"immutable", true},
                   {"data", snapshot["data"]}};
  r = Kubectl({"create", "-f", "-"}, restored.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  PatchJob("snap", {{"metadata", {{"labels", {{"ayatori-test/touch", "2"}}}}}});
  job = WaitForFinished(ns_, "snap");
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ProcessFailed") << Describe(job);
  EXPECT_EQ(job.value("/status/result/exitCode"_json_pointer, -1), 4) << Describe(job);
  EXPECT_EQ(ContainersOf(host_, uid).size(), 1u);
}

}  // namespace
}  // namespace ayatori::e2e
