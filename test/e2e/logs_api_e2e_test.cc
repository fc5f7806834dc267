// The Job log API end to end on Docker (test/e2e/logs_api_e2e.h has the setting: the controller
// in a network namespace of the test, an APIService on the "apiserver" fixture's kube-apiserver).
#include "test/e2e/logs_api_e2e.h"

#include <sys/wait.h>

namespace ayatori::e2e::logs {
namespace {

constexpr const char* kClass = "e2e-logs-docker";

class DockerLogsApiE2ETest : public LogsApiE2ETest {
 protected:
  void SetUpBackend(std::vector<std::string>* flags) override {
    host_ = FixtureDockerHost();
    ASSERT_TRUE(ApplyDockerClass(kClass, {{"endpoint", host_},
                                          {"pullPolicy", "IfNotPresent"},
                                          {"networkMode", "none"},
                                          {"stopGracePeriodSeconds", 1}}));
    flags->push_back("--docker-endpoint=" + host_);
  }
};

TEST_F(DockerLogsApiE2ETest, AnAllowedUserReadsADockerJobsOutputAndOthersAreRefused) {
  ASSERT_FALSE(CreateJob("hello", kClass, Task("echo one; echo two; echo three")).empty());
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
      CreateJob("follow", kClass,
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
  std::string uid = CreateJob("gone", kClass, Task("echo bye"));
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

}  // namespace
}  // namespace ayatori::e2e::logs
