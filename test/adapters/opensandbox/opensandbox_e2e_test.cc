// The OpenSandbox adapter against the real opensandbox-server (fixture "opensandbox":
// hack/opensandbox/opensandbox.sh) on the project's dockerd, with the execd stand-in in every
// sandbox. Host network mode: one sandbox at a time (RESOURCE_LOCK opensandbox), and each test
// checks that none is left before it starts.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <vector>

#include "adapters/opensandbox/opensandbox_adapter.h"
#include "adapters/opensandbox/spec.h"
#include "api/json.h"
#include "api/quantity.h"
#include "test/adapters/docker/e2e_support.h"
#include "test/adapters/opensandbox/answer_losing_transport.h"
#include "test/adapters/opensandbox/e2e_server.h"
#include "test/support/wait.h"

namespace ayatori::adapters::opensandbox {
namespace {

using namespace std::chrono_literals;
using docker::e2e::PhaseName;
using nlohmann::json;

class OpenSandboxE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(server_.Connect());
    faults_ = std::make_shared<AnswerLosingTransport>(server_.transport());
    adapter_ = NewAdapter();
    ASSERT_EQ(CountSandboxes(""), 0) << "a sandbox is left from an earlier test";
  }
  void TearDown() override {
    for (const auto& key : created_) EXPECT_TRUE(adapter_->Delete(key).ok());
    EXPECT_TRUE(testing::Eventually([&] { return CountSandboxes("") == 0; }, 30s, 100ms))
        << "sandboxes are left after the test";
  }

  // A fresh adapter: what a restarted controller has (no memory of earlier calls).
  std::unique_ptr<OpenSandboxAdapter> NewAdapter() { return server_.NewAdapter(faults_); }
  json Parameters(const json& extra = json::object()) const { return server_.Parameters(extra); }
  int CountSandboxes(const std::string& uid) const { return server_.CountSandboxes(uid); }

  ExecutionRequest Request(std::vector<std::string> command, const std::string& image = "") {
    ExecutionRequest r;
    r.job.metadata.namespace_ = "e2e-opensandbox";
    r.job.metadata.name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (auto& c : r.job.metadata.name) c = static_cast<char>(std::tolower(c));
    r.job.metadata.uid = docker::e2e::NewUid();
    r.job.spec.task.image = image.empty() ? server_.workloadImage() : image;
    r.job.spec.task.command = std::move(command);
    r.resources.limits.cpu = api::Quantity::MustParse("500m");
    r.resources.limits.memory = api::Quantity::MustParse("256Mi");
    r.parameters = Parameters();
    created_.push_back(KeyOf(r));
    return r;
  }

  static ExecutionKey KeyOf(const ExecutionRequest& r, const Observation& o = {}) {
    return docker::e2e::KeyOf(r, o);
  }

  Observation WaitStopped(const ExecutionKey& key, std::chrono::milliseconds d = 60s) {
    return docker::e2e::WaitForStopped(*adapter_, key, d);
  }

  std::string Output(const ExecutionKey& key) {
    auto logs = adapter_->Logs(key, 1 << 20);
    EXPECT_TRUE(logs.ok()) << logs.status().ToString();
    return logs.ok() ? *logs : "";
  }

  e2e::TestServer server_;
  std::shared_ptr<AnswerLosingTransport> faults_;
  std::unique_ptr<OpenSandboxAdapter> adapter_;
  std::vector<ExecutionKey> created_;
};

// The peak resident memory of this process since ResetPeakRss(), in bytes (VmHWM); -1 if unknown.
int64_t PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}
// Makes VmHWM start again from the current resident size (proc(5), clear_refs "5").
bool ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  return static_cast<bool>(clear.flush());
}

// Issue 25: a task that prints 50 MiB does not make the adapter hold 50 MiB. Its output is read
// by cursor in 1 MiB pieces handed on as they arrive; the peak resident memory of this process
// (the adapter, libcurl and the test's counting sink) grows by far less than the output.
TEST_F(OpenSandboxE2ETest, FiftyMiBOfOutputIsStreamedWithBoundedMemory) {
  constexpr int64_t kOutput = int64_t{50} << 20;
  auto r =
      Request({"/bin/sh", "-c",
               "/bin/busybox yes 0123456789abcdefghijklmnopqrstuvwxyz | /bin/busybox head -c " +
                   std::to_string(kOutput)});
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning) << PhaseName(o);
  const ExecutionKey key = KeyOf(r, o);
  Observation done = WaitStopped(key, 120s);
  ASSERT_EQ(done.phase, ExecutionPhase::kSucceeded) << PhaseName(done);

  // The measure itself works here: touching 32 MiB shows in the peak after a reset.
  ASSERT_TRUE(ResetPeakRss());
  const int64_t probeBase = PeakRssBytes();
  {
    std::vector<char> touched(size_t{32} << 20, 1);
    ASSERT_EQ(touched[touched.size() / 2], 1);
    ASSERT_GE(PeakRssBytes() - probeBase, int64_t{30} << 20) << "VmHWM does not follow the RSS";
  }
  ASSERT_TRUE(ResetPeakRss());
  const int64_t before = PeakRssBytes();
  ASSERT_GT(before, 0);
  ASSERT_LT(before, probeBase + (int64_t{30} << 20)) << "the peak was not reset";
  int64_t streamed = 0;
  int64_t newlines = 0;
  size_t largestPiece = 0;
  Status st = adapter_->StreamLogs(key, {}, [&](std::string_view d) {
    streamed += static_cast<int64_t>(d.size());
    newlines += std::count(d.begin(), d.end(), '\n');
    largestPiece = std::max(largestPiece, d.size());
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  const int64_t streamGrowth = PeakRssBytes() - before;
  EXPECT_EQ(streamed, kOutput);
  EXPECT_EQ(newlines, kOutput / 37);  // 36 characters and a newline per line
  EXPECT_LE(largestPiece, kLogChunkBytes);

  auto tail = adapter_->Logs(key, 1 << 20);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(tail->size(), size_t{1} << 20);
  const int64_t growth = PeakRssBytes() - before;
  std::printf("50 MiB of output: peak RSS +%.1f MiB while streaming, +%.1f MiB with Logs(1 MiB)\n",
              static_cast<double>(streamGrowth) / (1 << 20),
              static_cast<double>(growth) / (1 << 20));
  // Reading the whole output into memory, as before, grew the peak by at least its size.
  EXPECT_LT(growth, int64_t{16} << 20);
}

// Issue 25: plain HTTP to the server without insecure: true is refused before anything is sent:
// the real server gets no sandbox.
TEST_F(OpenSandboxE2ETest, APlainHttpClassWithoutInsecureCreatesNothing) {
  auto r = Request({"/bin/sh", "-c", "echo never"});
  r.parameters["spec"].erase("insecure");
  Observation o = adapter_->Ensure(r);
  EXPECT_NE(o.phase, ExecutionPhase::kRunning) << PhaseName(o);
  EXPECT_NE(o.message.find("InsecureEndpoint"), std::string::npos) << o.message;
  EXPECT_EQ(CountSandboxes(r.job.metadata.uid), 0);
  r.parameters["spec"]["insecure"] = true;  // the same class, saying so, runs
  o = adapter_->Ensure(r);
  // Running, or already done when the answer comes (the task is one echo).
  ASSERT_TRUE(o.phase == ExecutionPhase::kRunning || o.phase == ExecutionPhase::kSucceeded)
      << PhaseName(o);
  if (o.phase == ExecutionPhase::kRunning) {
    EXPECT_EQ(WaitStopped(KeyOf(r, o)).phase, ExecutionPhase::kSucceeded);
  }
}

TEST_F(OpenSandboxE2ETest, SuccessHasSandboxAndCommandReferencesOutputAndEnv) {
  auto r = Request({"/bin/sh", "-c", "echo \"done $AYATORI_JOB_NAME $GREETING\""});
  r.job.spec.task.env.push_back({"GREETING", std::string("hi there"), std::nullopt});
  Observation o = adapter_->Ensure(r);
  // Ensure reports what it sees right after the start: a task this short may have ended already.
  ASSERT_TRUE(o.phase == ExecutionPhase::kRunning || o.phase == ExecutionPhase::kSucceeded)
      << PhaseName(o);
  ASSERT_EQ(o.references.size(), 2u);
  EXPECT_EQ(o.references[0].type, "Sandbox");
  EXPECT_EQ(o.references[0].id.size(), 36u);
  EXPECT_EQ(o.references[1].type, "Command");
  EXPECT_EQ(o.references[1].id.size(), 32u);
  Observation done = WaitStopped(KeyOf(r, o));
  ASSERT_EQ(done.phase, ExecutionPhase::kSucceeded) << PhaseName(done);
  EXPECT_EQ(done.exitCode, 0);
  ASSERT_TRUE(done.startedAt && done.finishedAt);
  EXPECT_LE(*done.startedAt, *done.finishedAt);
  EXPECT_EQ(done.references, o.references);
  EXPECT_EQ(Output(KeyOf(r, o)),
            "done successhassandboxandcommandreferencesoutputandenv hi there\n");
  // Observing again, by reference or by UID alone, reports the same fact; Ensure adopts.
  EXPECT_EQ(adapter_->Ensure(r).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(CountSandboxes(r.job.metadata.uid), 1);
  ASSERT_TRUE(adapter_->Delete(KeyOf(r, o)).ok());
  EXPECT_EQ(CountSandboxes(r.job.metadata.uid), 0);
  EXPECT_TRUE(adapter_->Delete(KeyOf(r, o)).ok()) << "Delete is idempotent";
  Observation gone = adapter_->Observe(KeyOf(r, o));
  EXPECT_EQ(gone.phase, ExecutionPhase::kFailed) << PhaseName(gone);
  EXPECT_EQ(gone.reason, kReasonSandboxGone);
}

TEST_F(OpenSandboxE2ETest, ExitThreeFailsWithTheExitCode) {
  auto r = Request({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.references.size(), 2u) << PhaseName(o);
  Observation done = WaitStopped(KeyOf(r, o));
  ASSERT_EQ(done.phase, ExecutionPhase::kFailed) << PhaseName(done);
  EXPECT_EQ(done.reason, kReasonProcessFailed);
  EXPECT_EQ(done.exitCode, 3);
  EXPECT_EQ(Output(KeyOf(r, o)), "out\nerr\n");
}

// What the Job log API (src/logapi) streams for an OpenSandbox Job.
TEST_F(OpenSandboxE2ETest, StreamLogsFollowsTheCommandTailsItsLinesAndFailsOnceItIsGone) {
  auto r = Request({"/bin/sh", "-c", "for i in 1 2 3; do echo line$i; sleep 0.4; done"});
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.references.size(), 2u) << PhaseName(o);
  const ExecutionKey key = KeyOf(r, o);

  // A follower returns only once the command has stopped, with every line exactly once.
  LogOptions follow;
  follow.follow = true;
  std::string followed;
  Status streamed = adapter_->StreamLogs(key, follow, [&](std::string_view d) {
    followed.append(d);
    return true;
  });
  ASSERT_TRUE(streamed.ok()) << streamed.ToString();
  EXPECT_EQ(followed, "line1\nline2\nline3\n");
  EXPECT_EQ(adapter_->Observe(key).phase, ExecutionPhase::kSucceeded);

  LogOptions tail;
  tail.tailLines = 2;
  std::string tailed;
  ASSERT_TRUE(adapter_
                  ->StreamLogs(key, tail,
                               [&](std::string_view d) {
                                 tailed.append(d);
                                 return true;
                               })
                  .ok());
  EXPECT_EQ(tailed, "line2\nline3\n");

  // A reader that leaves ends the stream without an error.
  int calls = 0;
  EXPECT_TRUE(adapter_
                  ->StreamLogs(key, {},
                               [&](std::string_view) {
                                 ++calls;
                                 return false;
                               })
                  .ok());
  EXPECT_EQ(calls, 1);

  ASSERT_TRUE(adapter_->Delete(key).ok());
  Status gone = adapter_->StreamLogs(key, {}, [](std::string_view) { return true; });
  EXPECT_EQ(gone.code(), StatusCode::kNotFound) << gone.ToString();
}

TEST_F(OpenSandboxE2ETest, ArgvIsPassedWithoutAShellAndWorkingDirIsEntered) {
  auto r = Request({});
  r.job.spec.task.workingDir = "/tmp/work dir";
  r.job.spec.task.command = {
      "/bin/sh", "-c", "pwd; printf '[%s]' \"$@\"; echo", "argv0", "it's", "$HOME", "a  b", "`x`"};
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.references.size(), 2u) << PhaseName(o);
  ASSERT_EQ(WaitStopped(KeyOf(r, o)).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(Output(KeyOf(r, o)), "/tmp/work dir\n[it's][$HOME][a  b][`x`]\n");
}

// Issue 25: the task runs as the profile's ids (65534 by default), in a working directory made
// for it under a directory only root may write, and cannot signal execd (root), which reports
// its exit code. A class that says runAsRoot runs it as execd's own user.
TEST_F(OpenSandboxE2ETest, TheTaskRunsAsNobodyAndCannotSignalExecd) {
  const std::string script =
      "echo \"$(/bin/busybox id -u):$(/bin/busybox id -g)\"; pwd; : >written || exit 9; "
      "p=$(/bin/busybox pidof execd); [ -n \"$p\" ] || { echo no-execd; exit 8; }; "
      "if /bin/busybox kill -0 $p 2>/dev/null; then echo can-signal-execd; "
      "else echo cannot-signal-execd; fi";
  auto r = Request({"/bin/sh", "-c", script});
  r.job.spec.task.workingDir = "/srv/job";
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.references.size(), 2u) << PhaseName(o);
  Observation done = WaitStopped(KeyOf(r, o));
  EXPECT_EQ(Output(KeyOf(r, o)), "65534:65534\n/srv/job\ncannot-signal-execd\n");
  EXPECT_EQ(done.phase, ExecutionPhase::kSucceeded) << PhaseName(done);
  ASSERT_TRUE(adapter_->Delete(KeyOf(r, o)).ok());
  ASSERT_TRUE(testing::Eventually([&] { return CountSandboxes("") == 0; }, 30s, 100ms));

  auto root = Request({"/bin/sh", "-c", script});
  root.parameters["spec"]["securityProfile"] = {
      {"runAsUser", 0}, {"runAsGroup", 0}, {"runAsRoot", true}};
  root.job.spec.task.workingDir = "/srv/job";
  o = adapter_->Ensure(root);
  ASSERT_EQ(o.references.size(), 2u) << PhaseName(o);
  EXPECT_EQ(WaitStopped(KeyOf(root, o)).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(Output(KeyOf(root, o)), "0:0\n/srv/job\ncan-signal-execd\n");
}

TEST_F(OpenSandboxE2ETest, CancelInterruptsTheCommandAndDeletesTheSandbox) {
  auto r = Request({"/bin/sleep", "300"});
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning) << PhaseName(o);
  Observation c = adapter_->Cancel(KeyOf(r, o));
  ASSERT_EQ(c.phase, ExecutionPhase::kCancelled) << PhaseName(c);
  EXPECT_EQ(CountSandboxes(r.job.metadata.uid), 0);
  // Repeatable: nothing left, nothing to stop.
  EXPECT_EQ(adapter_->Cancel(KeyOf(r, o)).phase, ExecutionPhase::kAbsent);
}

TEST_F(OpenSandboxE2ETest, CancelAfterTheTaskFinishedReportsItsTrueResult) {
  auto r = Request({"/bin/sh", "-c", "exit 0"});
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.references.size(), 2u) << PhaseName(o);
  ASSERT_EQ(WaitStopped(KeyOf(r, o)).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(adapter_->Cancel(KeyOf(r, o)).phase, ExecutionPhase::kSucceeded);
}

TEST_F(OpenSandboxE2ETest, AnImageThatCannotBePulledFailsWithImagePullFailed) {
  auto r = Request({"/bin/true"}, "127.0.0.1:1/ayatori/nowhere:1");
  Observation o = adapter_->Ensure(r);
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed) << PhaseName(o);
  EXPECT_EQ(o.reason, kReasonImagePullFailed);
  EXPECT_EQ(CountSandboxes(r.job.metadata.uid), 0);
}

TEST_F(OpenSandboxE2ETest, AnUnreachableServerIsUnknownNeverFailed) {
  auto r = Request({"/bin/true"});
  r.parameters = Parameters({{"endpoint", "http://127.0.0.1:1/v1"}});
  Observation o = adapter_->Ensure(r);
  EXPECT_EQ(o.phase, ExecutionPhase::kUnknown) << PhaseName(o);
  EXPECT_EQ(o.reason, kReasonBackendUnreachable);
  Observation seen = adapter_->Observe(KeyOf(r, o));
  EXPECT_EQ(seen.phase, ExecutionPhase::kUnknown) << PhaseName(seen);
}

// At most once: the answer of POST /command is lost after execd started the task. The retry (a
// fresh adapter, as after a controller restart) finds the same command again and starts nothing.
TEST_F(OpenSandboxE2ETest, ALostRunAnswerIsFoundAgainNotRunTwice) {
  auto r = Request({"/bin/sh", "-c", "echo ran; sleep 2"});
  // The task's command, not a probe: the first Ensure created the sandbox, so it runs the task
  // at once.
  faults_->LoseNext("POST", "/command", "echo ran");
  Observation first = adapter_->Ensure(r);
  ASSERT_EQ(faults_->lostCount(), 1);
  EXPECT_EQ(first.phase, ExecutionPhase::kUnknown) << PhaseName(first);
  EXPECT_TRUE(first.references.empty());
  EventStreamParser parser;
  auto events = parser.Feed(faults_->lostBody());
  ASSERT_FALSE(events.empty()) << faults_->lostBody();
  const std::string startedId = events[0].value("text", "");
  ASSERT_EQ(startedId.size(), 32u);

  adapter_ = NewAdapter();
  Observation retry = adapter_->Ensure(r);
  ASSERT_EQ(retry.phase, ExecutionPhase::kRunning) << PhaseName(retry);
  ASSERT_EQ(retry.references.size(), 2u);
  EXPECT_EQ(retry.references[1].id, startedId) << "the retry adopted the first command";
  ASSERT_EQ(WaitStopped(KeyOf(r, retry)).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(Output(KeyOf(r, retry)), "ran\n");
  EXPECT_EQ(CountSandboxes(r.job.metadata.uid), 1);
}

// The controller dies after Ensure started the task but before the references reached the Job's
// status: Ensure without references finds the command again.
TEST_F(OpenSandboxE2ETest, EnsureWithoutPersistedReferencesAdoptsTheRunningCommand) {
  auto r = Request({"/bin/sh", "-c", "echo once; sleep 2"});
  Observation first = adapter_->Ensure(r);
  ASSERT_EQ(first.phase, ExecutionPhase::kRunning) << PhaseName(first);
  adapter_ = NewAdapter();
  Observation again = adapter_->Ensure(r);
  ASSERT_EQ(again.phase, ExecutionPhase::kRunning) << PhaseName(again);
  EXPECT_EQ(again.references, first.references);
  ASSERT_EQ(WaitStopped(KeyOf(r, again)).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(Output(KeyOf(r, again)), "once\n");
}

// The answer of POST /v1/sandboxes is lost: the retry finds that sandbox by the Job UID, runs the
// task in it, and there is still one sandbox.
TEST_F(OpenSandboxE2ETest, ALostCreateAnswerLeavesOneSandboxAndOneRun) {
  auto r = Request({"/bin/sh", "-c", "echo created-once"});
  faults_->LoseNext("POST", "/v1/sandboxes");
  Observation first = adapter_->Ensure(r);
  ASSERT_EQ(faults_->lostCount(), 1);
  EXPECT_EQ(first.phase, ExecutionPhase::kUnknown) << PhaseName(first);
  EXPECT_EQ(CountSandboxes(r.job.metadata.uid), 1);
  adapter_ = NewAdapter();
  Observation retry = adapter_->Ensure(r);
  ASSERT_TRUE(retry.phase == ExecutionPhase::kRunning || retry.phase == ExecutionPhase::kSucceeded)
      << PhaseName(retry);
  ASSERT_EQ(retry.references.size(), 2u);
  ASSERT_EQ(WaitStopped(KeyOf(r, retry)).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(Output(KeyOf(r, retry)), "created-once\n");
  EXPECT_EQ(CountSandboxes(r.job.metadata.uid), 1);
}

// The guard: the task's command POSTed a second time (as a lost answer could make a naive retry
// do) refuses to start the task again, and Observe of that second command does not report it
// as the task's result.
TEST_F(OpenSandboxE2ETest, ASecondStartOfTheTaskIsRefusedInTheSandbox) {
  auto r = Request({"/bin/sh", "-c", "echo first; sleep 1"});
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.references.size(), 2u) << PhaseName(o);
  ServerClient c(*server_.transport(), server_.Endpoint(), SensitiveString(server_.apiKey()), {});
  auto ep = c.Call("GET", "/sandboxes/" + o.references[0].id + "/endpoints/44772");
  ASSERT_TRUE(ep.ok() && ep->status == 200);
  ExecdTarget execd{ExecdBaseUrl(json::parse(ep->body)).value(), {}};
  auto second = c.RunBackground(execd, TaskCommand(r));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto key = KeyOf(r);
  key.references = {o.references[0], {kCommandReferenceType, *second}};
  Observation dup = docker::e2e::WaitFor(
      *adapter_, key, [](const Observation& x) { return x.phase != ExecutionPhase::kRunning; }, 30s,
      "the second start to end");
  EXPECT_EQ(dup.phase, ExecutionPhase::kUnknown) << PhaseName(dup);
  EXPECT_EQ(dup.reason, kReasonCommandNotIdentified);
  auto logs = c.Execd(execd, "GET", "/command/" + *second + "/logs?cursor=0");
  ASSERT_TRUE(logs.ok());
  EXPECT_EQ(logs->body, GuardLine(r.job.metadata.uid) + "\n");
  ASSERT_EQ(WaitStopped(KeyOf(r, o)).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(Output(KeyOf(r, o)), "first\n");
}

// Host networking allows one live sandbox: a second one's endpoint reaches the first sandbox's
// execd. The second Job's task refuses to start in the other Job's sandbox (its AYATORI_JOB_UID
// differs) and fails with a message that says why; the first Job is not disturbed.
TEST_F(OpenSandboxE2ETest, ATaskNeverStartsInAnotherJobsSandbox) {
  auto first = Request({"/bin/sh", "-c", "sleep 5; echo first-done"});
  Observation a = adapter_->Ensure(first);
  ASSERT_EQ(a.phase, ExecutionPhase::kRunning) << PhaseName(a);
  auto second = Request({"/bin/sh", "-c", "echo second-ran"});
  Observation b = adapter_->Ensure(second);
  Observation seen = docker::e2e::WaitFor(
      *adapter_, KeyOf(second, b), [](const Observation& x) { return IsStopped(x.phase); }, 30s,
      "the second Job's command to end");
  EXPECT_EQ(seen.phase, ExecutionPhase::kFailed) << PhaseName(seen);
  EXPECT_EQ(seen.reason, kReasonBackendRejected);
  EXPECT_NE(seen.message.find("another Job's sandbox"), std::string::npos) << seen.message;
  ASSERT_EQ(WaitStopped(KeyOf(first, a)).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(Output(KeyOf(first, a)), "first-done\n") << "the first Job is undisturbed";
}

TEST_F(OpenSandboxE2ETest, TheSandboxTimeoutFollowsTheDeadlineWithTheMargin) {
  auto r = Request({"/bin/true"});
  r.job.spec.activeDeadlineSeconds = 30;
  r.parameters = Parameters({{"sandboxTimeoutMarginSeconds", 45}});
  Observation o = adapter_->Ensure(r);
  ASSERT_NE(o.references.size(), 0u) << PhaseName(o);
  ServerClient c(*server_.transport(), server_.Endpoint(), SensitiveString(server_.apiKey()), {});
  auto g = c.Call("GET", "/sandboxes/" + o.references[0].id);
  ASSERT_TRUE(g.ok() && g->status == 200);
  auto sandbox = json::parse(g->body);
  auto created = api::ParseTime(sandbox["createdAt"].get<std::string>());
  auto expires = api::ParseTime(sandbox["expiresAt"].get<std::string>());
  ASSERT_TRUE(created.ok() && expires.ok());
  EXPECT_NEAR(static_cast<double>((*expires - *created).count()), 75.0, 2.0);
}

}  // namespace
}  // namespace ayatori::adapters::opensandbox
