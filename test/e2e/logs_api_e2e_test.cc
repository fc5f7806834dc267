// The Job log API end to end on Docker (test/e2e/logs_api_e2e.h has the setting: the controller
// in a network namespace of the test, an APIService on the "apiserver" fixture's kube-apiserver).
#include "test/e2e/logs_api_e2e.h"

#include <sys/wait.h>

#include <algorithm>

namespace ayatori::e2e::logs {
namespace {

TEST_F(DockerLogsApiE2ETest, AnAllowedUserReadsADockerJobsOutputAndOthersAreRefused) {
  ASSERT_FALSE(CreateJob("hello", kDockerClass, Task("echo one; echo two; echo three")).empty());
  json job = WaitForFinished(ns_, "hello");
  ASSERT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);

  ProcessResult r = RawAs(kReader, LogPath("hello"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "one\ntwo\nthree\n");
  r = RawAs(kReader, LogPath("hello", "?tailLines=1"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "three\n");

  // The plugin, as the certificate user.
  r = Plugin({"logs", "-n", ns_, "hello"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "one\ntwo\nthree\n");
  r = Plugin({"logs", "-n", ns_, "hello", "--tail", "2"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "two\nthree\n");

  // Without the RoleBinding: 403 (kube-apiserver's RBAC, then this server's review).
  r = RawAs(kStranger, LogPath("hello"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("Forbidden"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("three"), std::string::npos);
  // An ordinary user of another namespace, with the same rule there: nothing of this one.
  const std::string otherNs = testing::CreateTestNamespace("e2e-logs-team-b");
  const std::string teamB = "e2e-log-team-b";
  AllowLogReading(otherNs, {teamB});
  if (HasFatalFailure()) return;
  r = RawAs(teamB, LogPath("hello"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("Forbidden"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("three"), std::string::npos);
  r = Kubectl({"get", "jobs.execution.ayatori.ddupan.top", "hello", "-n", ns_, "--as=" + teamB});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("Forbidden"), std::string::npos) << r.err;
  Kubectl({"delete", "namespace", otherNs, "--wait=false"});

  // Straight to the server: a client without the front proxy's certificate (none, or one of
  // the cluster CA) fails the TLS handshake and gets no HTTP answer at all.
  r = Direct(LogPath("hello"), "", {"X-Remote-User: " + std::string(kReader)});
  EXPECT_NE(r.exitCode, 0) << r.out;
  EXPECT_EQ(r.out.find("three"), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.ends_with("000")) << r.out << r.err;
  r = Direct(LogPath("hello"), "admin", {"X-Remote-User: " + std::string(kReader)});
  EXPECT_NE(r.exitCode, 0) << r.out;
  EXPECT_TRUE(r.out.ends_with("000")) << r.out << r.err;
  // The proxy's certificate naming a user without the rule: this server's SubjectAccessReview.
  r = Direct(LogPath("hello"), "front-proxy", {"X-Remote-User: " + std::string(kStranger)});
  EXPECT_TRUE(r.out.ends_with("\n403")) << r.out << r.err;
  EXPECT_NE(r.out.find("cannot get resource \\\"jobs/log\\\""), std::string::npos) << r.out;
  r = Direct(LogPath("hello"), "front-proxy", {"X-Remote-User: " + std::string(kReader)});
  EXPECT_EQ(r.out, "one\ntwo\nthree\n\n200") << r.err;
}

TEST_F(DockerLogsApiE2ETest, FollowStreamsLinesAsPrintedAndEndsWithTheJob) {
  std::string uid =
      CreateJob("follow", kDockerClass,
                Task("echo first; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo second >&2"));
  ASSERT_FALSE(uid.empty());
  WaitForJob(
      ns_, "follow", [](const json& j) { return j.contains("/status/startTime"_json_pointer); },
      60s, "a startTime");
  const std::string out = RunPath("LogsApiE2ETest.follow.out");
  std::remove(out.c_str());
  testing::ControllerProcess follower;  // any child with its output in a file
  Status s =
      follower.Spawn({testing::Kubectl(), "--kubeconfig=" + TestenvVar("KUBECONFIG"), "get",
                      "--raw", LogPath("follow", "?follow=true"), "--as=" + std::string(kReader)},
                     out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(
      testing::Eventually([&] { return ReadFile(out).find("first\n") != std::string::npos; }, 30s))
      << ReadFile(out);
  // Still open, nothing more: the task is waiting for /tmp/go.
  EXPECT_TRUE(testing::HoldsFor(
      [&] { return follower.Running() && ReadFile(out).find("second") == std::string::npos; }, 1s))
      << ReadFile(out);
  ProcessResult r = Docker(host_, {"exec", OnlyContainer(uid), "touch", "/tmp/go"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(
      testing::Eventually([&] { return ReadFile(out).find("second\n") != std::string::npos; }, 30s))
      << ReadFile(out);
  // The stream ends with the execution: kubectl exits 0 by itself.
  ASSERT_TRUE(follower.Wait(30s)) << ReadFile(out);
  EXPECT_TRUE(WIFEXITED(follower.exitStatus()) && WEXITSTATUS(follower.exitStatus()) == 0)
      << follower.exitStatus() << " " << ReadFile(out);
  EXPECT_EQ(ReadFile(out), "first\nsecond\n");
}

TEST_F(DockerLogsApiE2ETest, AGoneContainerOrNoExecutionIsAClearError) {
  std::string uid = CreateJob("gone", kDockerClass, Task("echo bye"));
  ASSERT_FALSE(uid.empty());
  WaitForFinished(ns_, "gone");
  ProcessResult r = Docker(host_, {"rm", "-f", OnlyContainer(uid)});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = RawAs(kReader, LogPath("gone"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("the execution of job \"gone\" is gone"), std::string::npos) << r.err;
  r = Plugin({"logs", "-n", ns_, "gone"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("is gone"), std::string::npos) << r.err;

  // A Job whose class does not exist is never started.
  ASSERT_FALSE(CreateJob("waiting", "e2e-logs-no-such-class", Task("echo never")).empty());
  r = RawAs(kReader, LogPath("waiting"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("has no execution yet"), std::string::npos) << r.err;
  // And a Job that does not exist.
  r = RawAs(kReader, LogPath("nonexistent"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
}

// Issue 26: one tenant cannot take the log API from the others. Forty follows of a Job that
// prints nothing (through kube-apiserver's aggregator, as `kubectl ayatori logs -f` does) leave
// another user's read of a finished Job answered within 5 s; the 41st follow gets 429 with
// Retry-After; once the followers exit, their slots are free again within 10 s although the Job
// stays silent (the controller sees the aggregator close the connections).
TEST_F(DockerLogsApiE2ETest, FortySilentFollowersLeaveOtherReadersAnsweredAndAreReleased) {
  ASSERT_FALSE(CreateJob("done", kDockerClass, Task("echo finished")).empty());
  ASSERT_EQ(ConditionSummary(WaitForFinished(ns_, "done"), "Succeeded"), "True/Completed");
  ASSERT_FALSE(CreateJob("silent", kDockerClass, Task("sleep 90")).empty());
  WaitForJob(
      ns_, "silent", [](const json& j) { return j.contains("/status/startTime"_json_pointer); },
      60s, "a startTime");
  // curl through kube-apiserver as the admin impersonating the reader: kubectl would retry a 429
  // by itself. -i: the status line and headers come first.
  // An absolute path: the followers are started with execv.
  std::string curl = RunProcess({"sh", "-c", "command -v curl"}).out;
  curl = curl.substr(0, curl.find('\n'));
  ASSERT_FALSE(curl.empty());
  auto viaApiserver = [&](const std::string& path, int maxSeconds) {
    return std::vector<std::string>{curl,
                                    "-sS",
                                    "-i",
                                    "--max-time",
                                    std::to_string(maxSeconds),
                                    "--cacert",
                                    TestenvVar("TESTENV_CA"),
                                    "--cert",
                                    TestenvVar("TESTENV_CERT"),
                                    "--key",
                                    TestenvVar("TESTENV_KEY"),
                                    "-H",
                                    "Impersonate-User: " + std::string(kReader),
                                    TestenvVar("TESTENV_API") + path};
  };
  std::vector<std::unique_ptr<testing::ControllerProcess>> followers;
  for (int i = 0; i < 40; ++i) {
    followers.push_back(std::make_unique<testing::ControllerProcess>());
    Status s = followers.back()->Spawn(viaApiserver(LogPath("silent", "?follow=true"), 300),
                                       RunPath("LogsApiE2ETest.silent." + std::to_string(i)));
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // The 41st, once the forty hold their slots (the controller logs each follow it admits, at
  // debug level, with the count).
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string log =
      RunPath(std::string(info->test_suite_name()) + "." + info->name() + ".controller.log");
  ASSERT_TRUE(testing::Eventually(
      [&] {
        return ReadFile(log).find(R"("follows":40,"level":"debug","msg":"follow started")") !=
               std::string::npos;
      },
      60s, 200ms))
      << ReadFile(log);
  ProcessResult r = RunProcess(viaApiserver(LogPath("silent", "?follow=true"), 10));
  EXPECT_TRUE(r.out.starts_with("HTTP/1.1 429") || r.out.starts_with("HTTP/2 429"))
      << r.out << r.err;
  std::string head = r.out;
  std::transform(head.begin(), head.end(), head.begin(), ::tolower);
  EXPECT_NE(head.find("\nretry-after: 10\r"), std::string::npos) << r.out;
  // Another user (the plugin's certificate user) reads the finished Job meanwhile.
  auto start = std::chrono::steady_clock::now();
  r = Plugin({"logs", "-n", ns_, "done"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "finished\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);

  for (auto& f : followers) f->Kill();
  start = std::chrono::steady_clock::now();
  r = Plugin({"logs", "-n", ns_, "done"});
  EXPECT_EQ(r.out, "finished\n") << r.err;
  // The slots are free again: a follow is admitted, not refused. (A follow of a Job that prints
  // nothing sends its status line with the first output, so curl's own timeout ends it, exit 28,
  // with nothing received.)
  EXPECT_TRUE(testing::Eventually(
      [&] {
        r = RunProcess(viaApiserver(LogPath("silent", "?follow=true"), 2));
        return r.exitCode == 28 && r.out.empty();
      },
      10s, 500ms))
      << r.exitCode << " " << r.out << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 12s);
}

}  // namespace
}  // namespace ayatori::e2e::logs
