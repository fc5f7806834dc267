// The engine goes away mid-run: a dedicated dockerd (hack/dockerd.sh with its own directory, so
// the fixture's dockerd is untouched) is killed with SIGKILL while two Jobs run and started again.
//
// What is true afterwards: hack/dockerd.sh runs dockerd with --live-restore, so containers keep
// running while the engine is down and the restarted engine reports what really happened to
// them. A container whose process exited during the outage reports that exit code; one that is
// still running is Running again. (Without --live-restore the restarted engine would kill every
// running container and report exit 137, a failure the Job never had.) While the engine is down
// every call answers Unknown/BackendUnreachable, never Failed.
//
// That dockerd also serves tcp://127.0.0.1 with mutual TLS (AYATORI_DOCKERD_TLS=1), for the test
// of the adapter's TCP + client-certificate path.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>

#include "adapters/docker/docker_adapter.h"
#include "test/adapters/docker/e2e_support.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::adapters::docker {
namespace {

using namespace std::chrono_literals;
using e2e::KeyOf;
using e2e::PhaseName;
using nlohmann::json;

class DockerRestartE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::RequiredEnv("AYATORI_DOCKERD_RESTART_DIR");
    ASSERT_FALSE(dir_.empty());
    env_ = {"AYATORI_DOCKERD_DIR=" + dir_, "AYATORI_DOCKERD_TLS=1"};
    ASSERT_TRUE(e2e::RunHackScript("dockerd.sh", {"up"}, env_));
    endpoint_ = e2e::DockerHostOf(dir_);
  }
  void TearDown() override {
    // Up first (a no-op when it runs): if the test stopped while the engine was down, only a
    // running engine can remove the containers that --live-restore kept alive.
    e2e::RunHackScript("dockerd.sh", {"up"}, env_);
    e2e::RunHackScript("dockerd.sh", {"down"}, env_);
  }

  // The host pid of a container's main process.
  int MainPid(const Observation& o) {
    auto ep = ParseEngineEndpoint(endpoint_, false);
    EngineClient client(*ep, {}, "1.41", {});
    auto r = client.Call("GET", "/containers/" + o.references.at(0).id + "/json");
    EXPECT_TRUE(r.ok() && r->status == 200);
    return r.ok() ? json::parse(r->body)["State"].value("Pid", 0) : 0;
  }

  std::string dir_;
  std::vector<std::string> env_;
  std::string endpoint_;
};

bool WaitForProcessExit(int pid, std::chrono::milliseconds deadline) {
  return ayatori::testing::Eventually([&] { return kill(pid, 0) != 0 && errno == ESRCH; },
                                      deadline);
}

TEST_F(DockerRestartE2ETest, EngineCrashIsUnknownAndTheTrueResultsAreFoundAfterRestart) {
  DockerAdapterOptions options;
  options.maxEventsBackoff = 500ms;
  DockerAdapter adapter(options);
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, int> notified;
  ASSERT_TRUE(adapter
                  .Start([&](const std::string&, const std::string& name) {
                    std::lock_guard<std::mutex> lock(mu);
                    ++notified[name];
                    cv.notify_all();
                  })
                  .ok());

  // Each Job blocks on a TCP connection to the test (host network) until the test closes it.
  e2e::TcpListener listenA, listenB;
  auto a = e2e::MakeRequest(
      endpoint_, "ends-during-outage", "ayatori.local/busybox:1",
      {"/bin/sh", "-c", "nc 127.0.0.1 " + std::to_string(listenA.port()) + "; exit 7"}, {},
      {{"networkMode", "host"}, {"allowHostNetwork", true}});
  auto b = e2e::MakeRequest(endpoint_, "runs-through-outage", "ayatori.local/busybox:1",
                            {"/bin/sh", "-c", "nc 127.0.0.1 " + std::to_string(listenB.port())}, {},
                            {{"networkMode", "host"}, {"allowHostNetwork", true}});
  Observation oa = adapter.Ensure(a);
  Observation ob = adapter.Ensure(b);
  ASSERT_EQ(oa.phase, ExecutionPhase::kRunning) << PhaseName(oa);
  ASSERT_EQ(ob.phase, ExecutionPhase::kRunning) << PhaseName(ob);
  int connA = listenA.Accept(30s);
  int connB = listenB.Accept(30s);
  ASSERT_GE(connA, 0) << "job A never connected";
  ASSERT_GE(connB, 0) << "job B never connected";
  int pidA = MainPid(oa);
  ASSERT_GT(pidA, 0);

  ASSERT_TRUE(e2e::RunHackScript("dockerd.sh", {"kill"}, env_));
  for (const Observation& o : {adapter.Observe(KeyOf(a, oa)), adapter.Observe(KeyOf(b)),
                               adapter.Ensure(a), adapter.Cancel(KeyOf(b, ob))}) {
    EXPECT_EQ(o.phase, ExecutionPhase::kUnknown) << PhaseName(o);
    EXPECT_EQ(o.reason, "BackendUnreachable");
  }
  EXPECT_FALSE(adapter.Delete(KeyOf(a)).ok());

  // Job A's process ends (exit 7) while no engine is there to see it.
  close(connA);
  ASSERT_TRUE(WaitForProcessExit(pidA, 30s)) << "job A's process did not exit";
  int notifiedBefore;
  {
    std::lock_guard<std::mutex> lock(mu);
    notifiedBefore = notified["ends-during-outage"];
  }

  ASSERT_TRUE(e2e::RunHackScript("dockerd.sh", {"up"}, env_));
  Observation afterA = adapter.Observe(KeyOf(a, oa));
  EXPECT_EQ(afterA.phase, ExecutionPhase::kFailed) << PhaseName(afterA);
  EXPECT_EQ(afterA.reason, "ProcessFailed");
  EXPECT_EQ(afterA.exitCode, 7);
  Observation afterB = adapter.Observe(KeyOf(b, ob));
  EXPECT_EQ(afterB.phase, ExecutionPhase::kRunning) << PhaseName(afterB);
  EXPECT_EQ(afterB.references, ob.references);
  // The events stream came back and told the controller to look again.
  {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, 30s, [&] {
      return notified["ends-during-outage"] > notifiedBefore;
    })) << "no notification after the engine came back";
  }

  close(connB);
  Observation doneB = e2e::WaitForStopped(adapter, KeyOf(b, ob));
  EXPECT_EQ(doneB.phase, ExecutionPhase::kSucceeded) << PhaseName(doneB);
  EXPECT_EQ(e2e::CountContainers(endpoint_, a.job.metadata.uid), 1);
  EXPECT_EQ(e2e::CountContainers(endpoint_, b.job.metadata.uid), 1);
  adapter.Stop();
  EXPECT_TRUE(adapter.Delete(KeyOf(a)).ok());
  EXPECT_TRUE(adapter.Delete(KeyOf(b)).ok());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(DockerRestartE2ETest, TcpEndpointWithMutualTls) {
  auto vars = e2e::ReadEnvFile(dir_ + "/env.sh");
  const std::string tcp = vars["AYATORI_DOCKER_TLS_HOST"];
  const std::string certs = vars["AYATORI_DOCKER_CERT_PATH"];
  ASSERT_EQ(tcp.rfind("tcp://127.0.0.1:", 0), 0u) << "dockerd.sh wrote no TLS endpoint";

  DockerAdapterOptions options;
  options.tls.caPem = ReadFile(certs + "/ca.pem");
  options.tls.certPem = SensitiveString(ReadFile(certs + "/cert.pem"));
  options.tls.keyPem = SensitiveString(ReadFile(certs + "/key.pem"));
  DockerAdapter adapter(options);
  auto r = e2e::MakeRequest(tcp, "over-tls", "ayatori.local/busybox:1", {"/bin/echo", "tls"});
  Observation o = adapter.Ensure(r);
  ASSERT_NE(o.phase, ExecutionPhase::kUnknown) << PhaseName(o);
  o = e2e::WaitForStopped(adapter, KeyOf(r, o));
  EXPECT_EQ(o.phase, ExecutionPhase::kSucceeded) << PhaseName(o);
  auto logs = adapter.Logs(KeyOf(r), 100);
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  EXPECT_EQ(*logs, "tls\n");

  // Without a client certificate the engine refuses the connection: Unknown, not Failed.
  DockerAdapterOptions caOnly;
  caOnly.tls.caPem = options.tls.caPem;
  DockerAdapter noClientCert(caOnly);
  Observation refused = noClientCert.Observe(KeyOf(r));
  EXPECT_EQ(refused.phase, ExecutionPhase::kUnknown) << PhaseName(refused);
  // Nor does plain HTTP to the TLS port get anywhere.
  DockerAdapter plain;
  EXPECT_EQ(plain.Observe(KeyOf(r)).phase, ExecutionPhase::kUnknown);
  EXPECT_TRUE(adapter.Delete(KeyOf(r)).ok());
}

}  // namespace
}  // namespace ayatori::adapters::docker
