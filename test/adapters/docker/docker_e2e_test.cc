// The Docker adapter against the fixture's real dockerd (hack/dockerd.sh: no bridge network,
// cgroup memory limits) with the local images of hack/images/build.sh.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <set>

#include "adapters/docker/container.h"
#include "adapters/docker/docker_adapter.h"
#include "base/url.h"
#include "test/adapters/docker/e2e_support.h"

namespace ayatori::adapters::docker {
namespace {

using namespace std::chrono_literals;
using e2e::KeyOf;
using e2e::MakeRequest;
using e2e::PhaseName;
using nlohmann::json;

constexpr const char* kBusybox = "ayatori.local/busybox:1";
constexpr const char* kArgvImage = "ayatori.local/argv:1";

class DockerE2ETest : public ::testing::Test {
 protected:
  void SetUp() override { endpoint_ = e2e::FixtureEndpoint(); }
  void TearDown() override {
    for (const auto& key : created_) EXPECT_TRUE(adapter_.Delete(key).ok());
  }

  ExecutionRequest Request(std::vector<std::string> command, std::vector<std::string> args = {},
                           const json& spec = json::object(), const std::string& image = kBusybox) {
    auto r = MakeRequest(endpoint_, "job", image, std::move(command), std::move(args), spec);
    r.job.metadata.name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (auto& c : r.job.metadata.name) c = static_cast<char>(std::tolower(c));
    created_.push_back(KeyOf(r));
    return r;
  }

  // Ensure, then wait until the container stopped.
  Observation Run(const ExecutionRequest& r) {
    Observation o = adapter_.Ensure(r);
    EXPECT_NE(o.phase, ExecutionPhase::kUnknown) << PhaseName(o);
    if (IsStopped(o.phase) || o.phase == ExecutionPhase::kAbsent) return o;
    return e2e::WaitForStopped(adapter_, KeyOf(r, o));
  }

  // What a crash between create and start leaves behind: a created container with our name and
  // labels that nobody started.
  void CreateWithoutStart(const ExecutionRequest& r) {
    auto params = ParseDockerParameters(r.parameters);
    ASSERT_TRUE(params.ok());
    auto body = BuildCreateBody(r, *params);
    ASSERT_TRUE(body.ok());
    auto ep = ParseEngineEndpoint(endpoint_, false);
    ASSERT_TRUE(ep.ok());
    EngineClient client(*ep, {}, "1.41", {});
    auto created = client.Call(
        "POST", "/containers/create?name=" + ContainerName(r.job.metadata.uid), body->dump());
    ASSERT_TRUE(created.ok());
    ASSERT_EQ(created->status, 201) << created->body;
  }

  std::string Output(const ExecutionRequest& r) {
    auto logs = adapter_.Logs(KeyOf(r), 1 << 20);
    EXPECT_TRUE(logs.ok()) << logs.status().ToString();
    return logs.ok() ? *logs : "";
  }

  std::string endpoint_;
  DockerAdapter adapter_;
  std::vector<ExecutionKey> created_;
};

TEST_F(DockerE2ETest, ExitZeroSucceedsWithTimesAndAContainerReference) {
  auto r = Request({"/bin/sh", "-c", "echo done"});
  Observation o = Run(r);
  ASSERT_EQ(o.phase, ExecutionPhase::kSucceeded) << PhaseName(o);
  EXPECT_EQ(o.exitCode, 0);
  ASSERT_TRUE(o.startedAt && o.finishedAt);
  EXPECT_LE(*o.startedAt, *o.finishedAt);
  EXPECT_LE(std::chrono::abs(std::chrono::system_clock::now() - *o.finishedAt), 60s);
  ASSERT_EQ(o.references.size(), 1u);
  EXPECT_EQ(o.references[0].type, "Container");
  EXPECT_EQ(o.references[0].id.size(), 64u);
  EXPECT_EQ(Output(r), "done\n");
  // Observing again, by reference or by UID alone, reports the same fact.
  EXPECT_EQ(adapter_.Observe(KeyOf(r, o)).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(adapter_.Observe(KeyOf(r)).phase, ExecutionPhase::kSucceeded);
}

// Under init (the default) the engine starts docker-init, which reports the failed exec and exits
// 127 a moment later: Ensure may still see it running.
TEST_F(DockerE2ETest, MissingEntrypointFailsWithStartFailedAndIsNotRetried) {
  auto r = Request({"/does/not/exist"});
  Observation o = Run(r);
  ASSERT_EQ(o.phase, ExecutionPhase::kFailed) << PhaseName(o);
  EXPECT_EQ(o.reason, "StartFailed");
  EXPECT_NE(o.message.find("/does/not/exist"), std::string::npos) << o.message;
  Observation again = adapter_.Ensure(r);
  EXPECT_EQ(again.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(again.reason, "StartFailed");
  EXPECT_EQ(e2e::CountContainers(endpoint_, r.job.metadata.uid), 1);
}

TEST_F(DockerE2ETest, CancelStopsARunningContainerWithinTheGracePeriod) {
  auto r = Request({"/bin/sleep", "300"}, {}, {{"stopGracePeriodSeconds", 2}});
  Observation o = adapter_.Ensure(r);
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning) << PhaseName(o);
  auto begin = std::chrono::steady_clock::now();
  // sleep runs as PID 1, which ignores SIGTERM: the engine kills it after the grace period.
  Observation c = adapter_.Cancel(KeyOf(r, o));
  auto took = std::chrono::steady_clock::now() - begin;
  ASSERT_EQ(c.phase, ExecutionPhase::kCancelled) << PhaseName(c);
  EXPECT_LT(took, 2s + 5s) << "stop must not wait longer than the grace period plus slack";
  EXPECT_TRUE(c.exitCode.has_value());
  EXPECT_TRUE(c.finishedAt.has_value());
  // The cancellation is recorded on the container, so a fresh adapter (a restarted controller)
  // observes the same, and cancelling again is harmless.
  DockerAdapter fresh;
  EXPECT_EQ(fresh.Observe(KeyOf(r)).phase, ExecutionPhase::kCancelled);
  EXPECT_EQ(fresh.Cancel(KeyOf(r)).phase, ExecutionPhase::kCancelled);
  // And Ensure never starts it again.
  EXPECT_EQ(adapter_.Ensure(r).phase, ExecutionPhase::kCancelled);
  EXPECT_EQ(e2e::CountContainers(endpoint_, r.job.metadata.uid), 1);
}

TEST_F(DockerE2ETest, CancelAfterTheContainerEndedReportsItsTrueResult) {
  auto ok = Request({"/bin/true"});
  ASSERT_EQ(Run(ok).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(adapter_.Cancel(KeyOf(ok)).phase, ExecutionPhase::kSucceeded) << "success wins";
  auto failed = Request({"/bin/false"});
  ASSERT_EQ(Run(failed).phase, ExecutionPhase::kFailed);
  Observation c = adapter_.Cancel(KeyOf(failed));
  EXPECT_EQ(c.phase, ExecutionPhase::kFailed) << PhaseName(c);
  EXPECT_EQ(c.exitCode, 1);
  auto absent = Request({"/bin/true"});
  EXPECT_EQ(adapter_.Cancel(KeyOf(absent)).phase, ExecutionPhase::kAbsent);
}

TEST_F(DockerE2ETest, EnsureNeverCreatesAnExecutionForACancelledJob) {
  auto r = Request({"/bin/true"});
  r.job.spec.desiredState = api::DesiredState::kCancelled;
  EXPECT_EQ(adapter_.Ensure(r).phase, ExecutionPhase::kAbsent);
  EXPECT_EQ(e2e::CountContainers(endpoint_, r.job.metadata.uid), 0);
}

TEST_F(DockerE2ETest, NetworkNoneBlocksEgressToTheHostAndHostModeDoesNot) {
  e2e::PongServer listener;
  std::string port = std::to_string(listener.port());
  auto none = Request({"/bin/nc", "127.0.0.1", port});
  Observation blocked = Run(none);
  auto host = Request({"/bin/nc", "127.0.0.1", port}, {},
                      {{"networkMode", "host"}, {"allowHostNetwork", true}});
  Observation reached = Run(host);
  listener.Stop();

  EXPECT_EQ(blocked.phase, ExecutionPhase::kFailed) << PhaseName(blocked);
  EXPECT_EQ(Output(none).find("pong"), std::string::npos);
  // The control: the same command in host mode reaches the listener, so the check above can fail.
  EXPECT_EQ(reached.phase, ExecutionPhase::kSucceeded) << PhaseName(reached);
  EXPECT_EQ(Output(host), "pong\n");
  EXPECT_EQ(listener.accepted(), 1) << "only the host-network container may connect";
}

TEST_F(DockerE2ETest, ArgvIsPassedLiterallyWithoutAShell) {
  auto r = Request({"/bin/printf"}, {"[%s]\n", "$HOME", "a  b", "*", "", "'q' \"d\"", "$(id)"});
  ASSERT_EQ(Run(r).phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(Output(r), "[$HOME]\n[a  b]\n[*]\n[]\n['q' \"d\"]\n[$(id)]\n");
}

TEST_F(DockerE2ETest, CommandReplacesTheEntrypointAndArgsReplaceTheCmd) {
  struct Case {
    std::vector<std::string> command, args;
    std::string output;
  } cases[] = {
      {{}, {}, "image-entrypoint image-cmd\n"},
      {{}, {"my", "args"}, "image-entrypoint my args\n"},
      {{"/bin/echo", "mine"}, {}, "mine\n"},  // the image's CMD goes with its entrypoint
      {{"/bin/echo", "mine"}, {"and", "args"}, "mine and args\n"},
  };
  for (const auto& c : cases) {
    auto r = Request(c.command, c.args, json::object(), kArgvImage);
    ASSERT_EQ(Run(r).phase, ExecutionPhase::kSucceeded);
    EXPECT_EQ(Output(r), c.output);
  }
}

TEST_F(DockerE2ETest, EnvWorkingDirAndJobIdentityReachTheProcess) {
  auto r = Request({"/bin/sh", "-c", "pwd; env"});
  r.job.spec.task.workingDir = "/tmp";
  r.job.spec.task.env = {
      {"TARGET", std::string("world"), std::nullopt},
      {"TOKEN", std::nullopt,
       api::EnvVarSource{api::KeySelector{"tok", "token", false}, std::nullopt}}};
  r.resolvedEnv = {{"TARGET", SensitiveString("world")},
                   {"TOKEN", SensitiveString("p@ss w0rd $X \"q\"")}};
  ASSERT_EQ(Run(r).phase, ExecutionPhase::kSucceeded);
  std::string out = Output(r);
  EXPECT_EQ(out.substr(0, 5), "/tmp\n") << out;
  for (const std::string& line :
       {std::string("TARGET=world"), std::string("TOKEN=p@ss w0rd $X \"q\""),
        std::string("AYATORI_JOB_NAMESPACE=e2e-docker"), "AYATORI_JOB_NAME=" + r.job.metadata.name,
        "AYATORI_JOB_UID=" + r.job.metadata.uid}) {
    EXPECT_NE(out.find("\n" + line + "\n"), std::string::npos) << line << " missing in:\n" << out;
  }
}

// The sample Job's working directory (/workspace, which the image does not have) is a writable
// tmpfs of the restricted profile: the task, not root, writes there while / stays read-only.
TEST_F(DockerE2ETest, AWorkingDirectoryTheImageLacksIsWritableOnAReadOnlyRoot) {
  auto r = Request({"/bin/sh", "-c",
                    "echo hello > greeting && cat greeting && pwd && id -u && "
                    "(touch /x 2>&1 || true)"});
  r.job.spec.task.workingDir = "/workspace";
  ASSERT_EQ(Run(r).phase, ExecutionPhase::kSucceeded) << Output(r);
  EXPECT_EQ(Output(r), "hello\n/workspace\n65534\ntouch: /x: Read-only file system\n");
}

TEST_F(DockerE2ETest, LimitsAndRequestsReachTheContainer) {
  auto r = Request({"/bin/sh", "-c",
                    "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.shares "
                    "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"});
  r.resources.limits.memory = api::Quantity::MustParse("64Mi");
  r.resources.limits.cpu = api::Quantity::MustParse("500m");
  r.resources.requests.cpu = api::Quantity::MustParse("250m");
  ASSERT_EQ(Run(r).phase, ExecutionPhase::kSucceeded);
  // 64Mi; 250m * 1024 / 1000 = 256 shares; 0.5 CPU = 50ms per 100ms period.
  EXPECT_EQ(Output(r), "67108864\n256\n50000\n");
}

// Ensure twice, a restarted adapter and a lost answer are the contract suite's
// (contract_test.cc); here: a stale container reference in the Job's status never outweighs the
// UID.
TEST_F(DockerE2ETest, AStaleReferenceNeverOutweighsTheUid) {
  auto r = Request({"/bin/sleep", "30"}, {}, {{"stopGracePeriodSeconds", 0}});
  Observation first = adapter_.Ensure(r);
  ASSERT_EQ(first.phase, ExecutionPhase::kRunning) << PhaseName(first);
  auto withRef = r;
  withRef.job.status.execution = api::ExecutionStatus{"docker", {{"Container", "0123456789ab"}}};
  DockerAdapter restarted;
  EXPECT_EQ(restarted.Ensure(withRef).references, first.references);
  EXPECT_EQ(e2e::CountContainers(endpoint_, r.job.metadata.uid), 1);
  EXPECT_EQ(adapter_.Cancel(KeyOf(r)).phase, ExecutionPhase::kCancelled);
}

TEST_F(DockerE2ETest, ConcurrentEnsuresCreateExactlyOneContainer) {
  auto r = Request({"/bin/sleep", "30"}, {}, {{"stopGracePeriodSeconds", 0}});
  std::vector<std::future<Observation>> results;
  std::vector<std::unique_ptr<DockerAdapter>> adapters;
  results.reserve(4);
  adapters.reserve(4);
  for (int i = 0; i < 4; ++i) adapters.push_back(std::make_unique<DockerAdapter>());
  for (auto& a : adapters) {
    results.push_back(std::async(std::launch::async, [&a, &r] { return a->Ensure(r); }));
  }
  std::set<std::string> ids;
  for (auto& f : results) {
    Observation o = f.get();
    EXPECT_EQ(o.phase, ExecutionPhase::kRunning) << PhaseName(o);
    for (const auto& ref : o.references) ids.insert(ref.id);
  }
  EXPECT_EQ(ids.size(), 1u) << "every Ensure adopted the same container";
  EXPECT_EQ(e2e::CountContainers(endpoint_, r.job.metadata.uid), 1);
}

TEST_F(DockerE2ETest, EnsureAdoptsAndStartsAContainerCreatedBeforeALostResponse) {
  auto r = Request({"/bin/sh", "-c", "echo adopted"});
  ASSERT_NO_FATAL_FAILURE(CreateWithoutStart(r));
  EXPECT_EQ(adapter_.Observe(KeyOf(r)).phase, ExecutionPhase::kPending);

  Observation o = Run(r);
  EXPECT_EQ(o.phase, ExecutionPhase::kSucceeded) << PhaseName(o);
  EXPECT_EQ(Output(r), "adopted\n");
  EXPECT_EQ(e2e::CountContainers(endpoint_, r.job.metadata.uid), 1);
}

// A follower of a container that was created but not yet started gets the task's output once it
// starts: the engine itself answers such a follow at once with an empty log, which ended
// `kubectl ayatori logs -f` of a Job between its container's create and start with no output.
TEST_F(DockerE2ETest, FollowingACreatedContainerWaitsForItsStart) {
  auto r = Request({"/bin/sh", "-c", "echo followed"});
  ASSERT_NO_FATAL_FAILURE(CreateWithoutStart(r));

  std::mutex mu;
  std::string followed;
  LogOptions follow;
  follow.follow = true;
  auto follower = std::async(std::launch::async, [&] {
    return adapter_.StreamLogs(KeyOf(r), follow, [&](std::string_view bytes) {
      std::lock_guard lock(mu);
      followed.append(bytes);
      return true;
    });
  });
  // Before the fix the follow returned within milliseconds; the task has not started yet.
  ASSERT_EQ(follower.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout)
      << "the follow of a created container ended before the container started";

  EXPECT_EQ(Run(r).phase, ExecutionPhase::kSucceeded);  // adopts and starts the container
  ASSERT_EQ(follower.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the follow did not end with its container";
  Status st = follower.get();
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::lock_guard lock(mu);
  EXPECT_EQ(followed, "followed\n");
}

// A follower that leaves while the container waits to start ends the follow at once.
TEST_F(DockerE2ETest, AFollowerOfACreatedContainerMayLeave) {
  auto r = Request({"/bin/sh", "-c", "echo never"});
  ASSERT_NO_FATAL_FAILURE(CreateWithoutStart(r));

  std::stop_source leave;
  LogOptions follow;
  follow.follow = true;
  follow.stop = leave.get_token();
  auto follower = std::async(std::launch::async, [&] {
    return adapter_.StreamLogs(KeyOf(r), follow, [](std::string_view) { return true; });
  });
  leave.request_stop();
  ASSERT_EQ(follower.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the follow went on after its reader left";
  EXPECT_TRUE(follower.get().ok());
}

// The engine finds an image by a prefix of its ID too; a Job that names one does not get that
// image (it might be another tenant's private image): only an image known under the name the Job
// gives counts as present.
TEST_F(DockerE2ETest, AnImageIdPrefixIsNotAnImageName) {
  auto ep = ParseEngineEndpoint(endpoint_, false);
  ASSERT_TRUE(ep.ok());
  EngineClient client(*ep, {}, "1.41", {});
  auto inspect = client.Call("GET", "/images/" + base::PercentEncode(kBusybox) + "/json");
  ASSERT_TRUE(inspect.ok());
  ASSERT_EQ(inspect->status, 200);
  const std::string id = json::parse(inspect->body).value("Id", "");
  ASSERT_EQ(id.rfind("sha256:", 0), 0u) << id;
  const std::string prefix = id.substr(7, 12);
  // The control: the engine itself resolves the prefix to the image.
  auto byId = client.Call("GET", "/images/" + prefix + "/json");
  ASSERT_TRUE(byId.ok());
  ASSERT_EQ(byId->status, 200) << "the engine no longer resolves ID prefixes: the check below "
                                  "could not fail";

  auto r = Request({"/bin/echo", "ran"}, {}, {{"pullPolicy", "Never"}}, prefix);
  Observation o = adapter_.Ensure(r);
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed) << PhaseName(o);
  EXPECT_EQ(o.reason, "ImagePullFailed");
  EXPECT_NE(o.message.find("is not present on the engine"), std::string::npos) << o.message;
  EXPECT_EQ(e2e::CountContainers(endpoint_, r.job.metadata.uid), 0);
}

// Every answer read from the engine is bounded (docs/security.md § Bounded reads): beyond the
// limit a JSON answer is an error, not read further; a progress stream keeps its tail.
TEST_F(DockerE2ETest, EngineAnswersAreReadOnlyUpToTheirLimit) {
  auto ep = ParseEngineEndpoint(endpoint_, false);
  ASSERT_TRUE(ep.ok());
  EngineClient client(*ep, {}, "1.41", {});
  // The image's inspect answer: the same at every call.
  const std::string path = "/images/" + base::PercentEncode(kBusybox) + "/json";
  auto whole = client.Call("GET", path);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_GT(whole->body.size(), 1000u) << "the check below could not fail";
  ASSERT_EQ(whole->status, 200) << whole->body;
  auto capped = client.Call("GET", path, "", {}, 0ms, BodyLimit{512, false});
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().code(), StatusCode::kInternal);
  EXPECT_NE(capped.status().message().find("exceeds 512 bytes"), std::string::npos)
      << capped.status().message();
  auto tail = client.Call("GET", path, "", {}, 0ms, BodyLimit{256, true});
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_LE(tail->body.size(), 2 * 256u);
  EXPECT_TRUE(whole->body.ends_with(tail->body)) << "the tail is the answer's end";
  // The client is usable again after an answer it cut short.
  auto again = client.Call("GET", "/_ping");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

// Delete itself is the contract suite's (contract_test.cc); here: the logs go with the container.
TEST_F(DockerE2ETest, TheLogsOfADeletedContainerAreNotFound) {
  auto r = Request({"/bin/sleep", "30"});
  ASSERT_EQ(adapter_.Ensure(r).phase, ExecutionPhase::kRunning);
  ASSERT_TRUE(adapter_.Delete(KeyOf(r)).ok());
  auto logs = adapter_.Logs(KeyOf(r), 100);
  EXPECT_EQ(logs.status().code(), StatusCode::kNotFound);
}

TEST_F(DockerE2ETest, LogsKeepTheTailAndIncludeStderr) {
  auto r = Request({"/bin/sh", "-c", "seq 1 20000; echo last"});
  ASSERT_EQ(Run(r).phase, ExecutionPhase::kSucceeded);
  auto tail = adapter_.Logs(KeyOf(r), 11);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(*tail, "20000\nlast\n");
  std::string all = Output(r);
  EXPECT_EQ(all.substr(0, 8), "1\n2\n3\n4\n");
  EXPECT_EQ(all.size(), 108894u + 5u) << "every byte of seq 1 20000 and the last line";

  auto both = Request({"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2"});
  ASSERT_EQ(Run(both).phase, ExecutionPhase::kSucceeded);
  std::string out = Output(both);
  EXPECT_NE(out.find("to-stdout\n"), std::string::npos) << out;
  EXPECT_NE(out.find("to-stderr\n"), std::string::npos) << out;
  EXPECT_EQ(out.size(), 20u) << out;
}

TEST_F(DockerE2ETest, PullPolicyNeverWithAMissingImageIsImagePullFailed) {
  auto r = Request({"/bin/true"}, {}, {{"pullPolicy", "Never"}}, "ayatori.local/not-built:1");
  Observation o = adapter_.Ensure(r);
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed) << PhaseName(o);
  EXPECT_EQ(o.reason, "ImagePullFailed");
  EXPECT_EQ(e2e::CountContainers(endpoint_, r.job.metadata.uid), 0);
}

TEST_F(DockerE2ETest, AnUnknownRuntimeIsBackendRejected) {
  Observation o = adapter_.Ensure(Request({"/bin/true"}, {}, {{"runtime", "no-such-runtime"}}));
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed) << PhaseName(o);
  EXPECT_EQ(o.reason, "BackendRejected");
}

TEST_F(DockerE2ETest, AnUnreachableEngineIsUnknownNeverFailed) {
  auto r = MakeRequest("unix:///nonexistent/ayatori/docker.sock", "unreachable", kBusybox,
                       {"/bin/true"});
  for (const Observation& o :
       {adapter_.Ensure(r), adapter_.Observe(KeyOf(r)), adapter_.Cancel(KeyOf(r))}) {
    EXPECT_EQ(o.phase, ExecutionPhase::kUnknown) << PhaseName(o);
    EXPECT_EQ(o.reason, "BackendUnreachable");
  }
  EXPECT_FALSE(adapter_.Delete(KeyOf(r)).ok());
}

TEST_F(DockerE2ETest, EventsNotifyTheJobWithoutPolling) {
  std::mutex mu;
  std::condition_variable cv;
  std::multiset<std::string> notified;
  ASSERT_TRUE(adapter_
                  .Start([&](const std::string& ns, const std::string& name) {
                    std::lock_guard<std::mutex> lock(mu);
                    notified.insert(ns + "/" + name);
                    cv.notify_all();
                  })
                  .ok());
  auto r = Request({"/bin/sh", "-c", "exit 4"});
  const std::string job = r.job.metadata.namespace_ + "/" + r.job.metadata.name;
  Observation o = adapter_.Ensure(r);
  ASSERT_NE(o.phase, ExecutionPhase::kUnknown) << PhaseName(o);
  // Re-observe only when notified, as the controller does: the container's death must wake us.
  Observation after = o;
  size_t seen = 0;
  auto until = std::chrono::steady_clock::now() + 30s;
  while (!IsStopped(after.phase)) {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_until(lock, until, [&] { return notified.count(job) > seen; }))
        << "no notification for " << job << " while it is " << PhaseName(after);
    seen = notified.count(job);
    lock.unlock();
    after = adapter_.Observe(KeyOf(r, o));
  }
  EXPECT_EQ(after.phase, ExecutionPhase::kFailed) << PhaseName(after);
  EXPECT_EQ(after.exitCode, 4);
  adapter_.Stop();
}

}  // namespace
}  // namespace ayatori::adapters::docker
