// The verbs of kubectl-ayatori (cmd/kubectl-ayatori/commands.h) against FakeKubeClient, for what
// the real control plane of the integration test cannot show: a log API that answers (the chunks
// reach stdout as they come), a log API that fails otherwise than 404, and a wait whose watch
// must start again from a fresh GET after its resourceVersion expired.
#include "commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <sstream>

#include "api/json.h"
#include "controller/kinds.h"
#include "kube/resource.h"
#include "kube/testing/fake_clock.h"
#include "kube/testing/fake_kube_client.h"
#include "test/support/process.h"

namespace ayatori::plugin {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

api::Job JobIn(const std::string& reason) {
  api::Job job;
  job.metadata.name = "j";
  job.metadata.namespace_ = "ci";
  job.spec.task.image = "busybox";
  const api::Time t = api::ParseTime("2026-12-01T12:00:00Z").value();
  job.status.conditions = {{"Accepted", api::ConditionStatus::kTrue, "Valid", "", 1, t},
                           {"Scheduled", api::ConditionStatus::kTrue, "BackendCreated", "", 1, t}};
  job.status.startTime = t;
  if (reason == "Completed") {
    job.status.conditions.push_back({"Succeeded", api::ConditionStatus::kTrue, reason, "", 1, t});
    job.status.completionTime = t;
    job.status.result = api::JobResult{0, reason};
  } else if (reason == "Running" || reason == "ResultUnknown") {
    job.status.conditions.push_back(
        {"Succeeded", api::ConditionStatus::kUnknown, reason, "", 1, t});
  } else {
    job.status.conditions.push_back({"Succeeded", api::ConditionStatus::kFalse, reason, "", 1, t});
    job.status.completionTime = t;
  }
  return job;
}

struct Outcome {
  int exitCode = -1;
  std::string out, err;
};

Outcome Exec(const std::vector<std::string>& args, KubeClient& client,
             const PathStreamer& streamer) {
  ParseOutcome parsed = ParseArgs(args);
  EXPECT_TRUE(parsed.invocation.has_value()) << parsed.err;
  std::ostringstream out, err;
  std::istringstream in;
  Outcome r;
  r.exitCode = Execute(*parsed.invocation, "ci", client, streamer, {out, err, in});
  r.out = out.str();
  r.err = err.str();
  return r;
}

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(client_.Create(controller::kJobs, "ci", api::ToJson(JobIn("Running")), {}).ok());
  }
  kube::testing::FakeKubeClient client_;
};

TEST_F(CommandsTest, LogsStreamEachChunkAsItComes) {
  std::string requested;
  PathStreamer streamer = [&](std::string_view path, const std::stop_token&,
                              const std::function<bool(std::string_view)>& onData) {
    requested = std::string(path);
    onData("line 1\n");
    onData("line 2\n");
    return Status::Ok();
  };
  Outcome r = Exec({"logs", "-f", "j", "--tail", "5"}, client_, streamer);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "line 1\nline 2\n");
  EXPECT_EQ(requested, LogPath("ci", "j", {true, 5, std::nullopt}));
}

TEST_F(CommandsTest, LogsErrorsSayWhatHappened) {
  Status answer(StatusCode::kNotFound, "the server could not find the requested resource");
  PathStreamer streamer = [&](std::string_view, const std::stop_token&,
                              const std::function<bool(std::string_view)>&) { return answer; };
  Outcome r = Exec({"logs", "j"}, client_, streamer);
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_THAT(r.err, StartsWith("error: the Job log API is not installed in this cluster"));
  answer = Status(StatusCode::kGone, "the execution of job ci/j is gone");
  r = Exec({"logs", "j"}, client_, streamer);
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_EQ(r.err, "error: logs of job \"j\": the execution of job ci/j is gone\n");
  answer = Status(StatusCode::kForbidden, "user alice cannot get jobs/log");
  r = Exec({"logs", "j"}, client_, streamer);
  EXPECT_THAT(r.err, HasSubstr("Ask your cluster administrator for access (RBAC)"));
  // The log API's own 404 (src/logapi/server.cc): the Job, not the API, is missing.
  answer = Status(StatusCode::kNotFound, "jobs.execution.ayatori.ddupan.top \"j\" not found");
  r = Exec({"logs", "j"}, client_, streamer);
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_EQ(r.err, "error: logs of job \"j\": jobs.execution.ayatori.ddupan.top \"j\" not found\n");
}

TEST_F(CommandsTest, WaitStartsAgainWhenItsResourceVersionExpired) {
  PathStreamer none;
  auto waiting = std::async(std::launch::async, [&] {
    return Exec({"wait", "j", "--timeout", "20s"}, client_, none);
  });
  ASSERT_TRUE(client_.WaitForWatches(1, std::chrono::seconds(10)));
  // The server forgets the history and ends the watch: the next watch from the old
  // resourceVersion gets 410 Gone, and the wait must list the Job again and watch from the
  // list's resourceVersion (from the Job's own, it would be refused again and again).
  ASSERT_TRUE(client_
                  .Create(controller::kJobs, "other",
                          {{"apiVersion", api::kApiVersion},
                           {"kind", "Job"},
                           {"metadata", {{"name", "later"}, {"namespace", "other"}}},
                           {"spec", {{"task", {{"image", "busybox"}}}}}},
                          {})
                  .ok());  // the cluster moves on: the Job's resourceVersion is now an old one
  client_.Compact();
  client_.CloseWatches();
  ASSERT_TRUE(client_.WaitForWatches(1, std::chrono::seconds(10)));
  auto stored = client_.Peek(controller::kJobs, "ci", "j").value();
  stored["status"] = api::StatusToJson(JobIn("Completed").status);
  ASSERT_TRUE(client_.UpdateStatus(controller::kJobs, "ci", stored, {}).ok());
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Outcome r = waiting.get();
  EXPECT_EQ(r.exitCode, kExitOk) << r.err;
  // Progress (a line per derived state, piped: no spinner; the fake drops the status written on
  // create), then the outcome.
  const auto lines = ::ayatori::testing::Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_THAT(lines[0], ::testing::MatchesRegex("[0-9][0-9]:[0-9][0-9]:[0-9][0-9] Resolving"));
  EXPECT_THAT(lines[1], ::testing::MatchesRegex(
                            "[0-9][0-9]:[0-9][0-9]:[0-9][0-9] Succeeded \\(Completed, exit 0\\)"));
  EXPECT_EQ(lines[2], "job.execution.ayatori.ddupan.top/j Succeeded (Completed, exit code 0)");
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("\r")));
  EXPECT_EQ(client_.CountActions("list", "jobs.execution.ayatori.ddupan.top"), 1u);
  EXPECT_LE(client_.CountActions("watch", "jobs.execution.ayatori.ddupan.top"), 4u);
}

// Right after `kubectl apply` of the install manifest (issue 33): the Job kind is not served
// yet, or kube-apiserver's admission does not know it yet (503 "Resource kind ... not found").
// Kueue's visibility API as the API server would serve it: the PendingWorkloadsSummary of each
// LocalQueue it knows, an error for the others (404: the API is not served); counts the GETs.
class FakeVisibilityApi {
 public:
  void Serve(const std::string& ns, const std::string& queue, const nlohmann::json& summary) {
    answers_[PendingWorkloadsPath(ns, queue)] = summary.dump();
  }
  void Refuse(Status status) { refusal_ = std::move(status); }
  // Answers with `body` as it is, in chunks of 64 KiB; counts what the caller took.
  void ServeRaw(const std::string& ns, const std::string& queue, std::string body) {
    answers_[PendingWorkloadsPath(ns, queue)] = std::move(body);
  }
  size_t bytesTaken = 0;
  PathStreamer Streamer() {
    return [this](std::string_view path, const std::stop_token&,
                  const std::function<bool(std::string_view)>& onData) {
      requested.emplace_back(path);
      const auto answer = answers_.find(std::string(path));
      if (answer == answers_.end()) return refusal_;
      const std::string& body = answer->second;
      for (size_t at = 0; at < body.size(); at += 65536) {
        const std::string_view chunk = std::string_view(body).substr(at, 65536);
        if (!onData(chunk)) return Status::Ok();  // the reader stopped: the stream is closed
        bytesTaken += chunk.size();
      }
      return Status::Ok();
    };
  }
  std::vector<std::string> requested;

 private:
  std::map<std::string, std::string> answers_;
  Status refusal_{StatusCode::kNotFound, "the server could not find the requested resource"};
};

// A Job named `name` in namespace ci of LocalQueue `queue`, not admitted yet (state Queued).
nlohmann::json QueuedJobIn(const std::string& name, const std::string& queue) {
  api::Job job = JobIn("Running");
  job.metadata.name = name;
  job.metadata.labels["kueue.x-k8s.io/queue-name"] = queue;
  job.status.startTime.reset();
  const api::Time t = api::ParseTime("2026-12-01T12:00:00Z").value();
  job.status.conditions = {{"Accepted", api::ConditionStatus::kTrue, "Valid", "", 1, t},
                           {"Admitted", api::ConditionStatus::kFalse, "Pending", "", 1, t}};
  return api::ToJson(job);
}

nlohmann::json Pending(const std::vector<std::pair<std::string, int64_t>>& workloads) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& [name, position] : workloads) {
    items.push_back({{"metadata", {{"name", name}, {"namespace", "ci"}}},
                     {"localQueueName", "small"},
                     {"positionInClusterQueue", position + 5},
                     {"positionInLocalQueue", position}});
  }
  return {{"kind", "PendingWorkloadsSummary"}, {"items", items}};
}

class QueueTest : public CommandsTest {
 protected:
  void SetUp() override {
    CommandsTest::SetUp();
    Store(api::ToJson(JobIn("Running")));  // j, with its status: Running, no queue
    std::map<std::string, std::string> uids;
    for (const auto& [name, queue] : std::vector<std::pair<std::string, std::string>>{
             {"q1", "small"}, {"q2", "small"}, {"q3", "other"}}) {
      uids[name] = Store(QueuedJobIn(name, queue));
    }
    visibility_.Serve("ci", "small",
                      Pending({{"ajob-" + uids["q2"], 0}, {"ajob-" + uids["q1"], 1}}));
  }

  // Creates the Job (or takes the stored one), then writes its status, which a create leaves
  // out (the status subresource); returns the uid the API server gave it.
  std::string Store(const nlohmann::json& job) {
    const std::string name = job["metadata"]["name"].get<std::string>();
    auto stored = client_.Create(controller::kJobs, "ci", job, {});
    if (!stored.ok()) stored = client_.Get(controller::kJobs, "ci", name);
    EXPECT_TRUE(stored.ok()) << stored.status().message();
    (*stored)["status"] = job["status"];
    EXPECT_TRUE(client_.UpdateStatus(controller::kJobs, "ci", *stored, {}).ok());
    return (*stored)["metadata"]["uid"].get<std::string>();
  }

  FakeVisibilityApi visibility_;
};

TEST_F(QueueTest, GetShowsQueueAndPositionAskingEachLocalQueueOnce) {
  Outcome r = Exec({"get"}, client_, visibility_.Streamer());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("NAME   STATE     CLASS       QUEUE    POSITION   REASON"));
  EXPECT_THAT(r.out, HasSubstr("q1     Queued    <default>   small    2          Pending"));
  EXPECT_THAT(r.out, HasSubstr("q2     Queued    <default>   small    1          Pending"));
  // The visibility API does not serve "other": no position, and no error.
  EXPECT_THAT(r.out, HasSubstr("q3     Queued    <default>   other    <none>     Pending"));
  EXPECT_THAT(r.out, HasSubstr("j      Running   <default>   <none>   <none>     Running"));
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(visibility_.requested,
              ::testing::UnorderedElementsAre(
                  "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ci/localqueues/small/"
                  "pendingworkloads",
                  PendingWorkloadsPath("ci", "other")));
}

TEST_F(QueueTest, GetWithoutQueuedJobsHasNoQueueColumnsAndAsksNothing) {
  Outcome r = Exec({"get", "j"}, client_, visibility_.Streamer());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("QUEUE")));
  EXPECT_TRUE(visibility_.requested.empty());
}

TEST_F(QueueTest, DescribeSaysThePositionOrWhyItIsUnknown) {
  Outcome r = Exec({"describe", "q1"}, client_, visibility_.Streamer());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Queue:                 position 2 in LocalQueue small\n"));
  r = Exec({"describe", "q3"}, client_, visibility_.Streamer());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("position unknown: Kueue's visibility API (visibility.kueue.x-k8s.io/"
                        "v1beta2) is not served by this cluster\n"));
  visibility_.Refuse(Status(StatusCode::kServerError, "service unavailable"));
  r = Exec({"describe", "q3"}, client_, visibility_.Streamer());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Queue:                 waiting in LocalQueue other, position "
                               "unknown: Kueue's visibility API (visibility.kueue.x-k8s.io/"
                               "v1beta2) did not answer: service unavailable\n"));
  // An answer that is not a PendingWorkloadsSummary is no position either.
  visibility_.Serve("ci", "other", nlohmann::json::array());
  r = Exec({"describe", "q3"}, client_, visibility_.Streamer());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("position unknown: Kueue's visibility API"));
}

// A visibility API that answers without end (a hostile or broken server behind the APIService):
// the plugin stops reading at its bound and says so; describe still succeeds.
TEST_F(QueueTest, AnEndlessVisibilityAnswerIsCutAtItsBound) {
  visibility_.ServeRaw("ci", "other",
                       std::string(kMaxPendingWorkloadsBytes + size_t{1024} * 1024, ' '));
  Outcome r = Exec({"describe", "q3"}, client_, visibility_.Streamer());
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("position unknown: Kueue's visibility API (visibility.kueue.x-k8s.io/"
                        "v1beta2) answered more than " +
                        std::to_string(kMaxPendingWorkloadsBytes) + " bytes\n"));
  EXPECT_LE(visibility_.bytesTaken, kMaxPendingWorkloadsBytes);
}

class UnservedKindTest : public ::testing::Test {
 protected:
  static constexpr const char* kJobsResource = "jobs.execution.ayatori.ddupan.top";
  static Status NotYetAdmitted() {
    return Status(StatusCode::kServerError,
                  "Resource kind execution.ayatori.ddupan.top/v1alpha1, Kind=Job not found. There "
                  "can be a delay between when CustomResourceDefinitions are created and when "
                  "they are available.");
  }
  static Status NotServed() {
    return Status(StatusCode::kNotFound, "the server could not find the requested resource");
  }

  void SetUp() override {
    client_.SetClock(&clock_);
    client_.DisableStatusSubresource(kube::CustomResourceDefinitionsResource());
  }

  // The Job CRD, created now (the fake clock's), with this Established condition.
  void InstallCrd(const std::string& established, const std::string& message = "") {
    nlohmann::json crd = {
        {"apiVersion", "apiextensions.k8s.io/v1"},
        {"kind", "CustomResourceDefinition"},
        {"metadata", {{"name", kJobsCrdName}}},
        {"status",
         {{"conditions",
           {{{"type", "Established"}, {"status", established}, {"message", message}}}}}}};
    ASSERT_TRUE(client_.Create(kube::CustomResourceDefinitionsResource(), "", crd, {}).ok());
  }

  Outcome Run(const std::vector<std::string>& args) {
    ParseOutcome parsed = ParseArgs(args);
    EXPECT_TRUE(parsed.invocation.has_value()) << parsed.err;
    std::ostringstream out, err;
    std::istringstream in;
    Pacing pacing{&clock_, [this](std::chrono::milliseconds d) {
                    slept_ += d;
                    clock_.Advance(d);
                  }};
    Outcome r;
    r.exitCode = Execute(*parsed.invocation, "ci", client_, {}, {out, err, in, pacing});
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  kube::testing::FakeClock clock_;
  kube::testing::FakeKubeClient client_;
  std::chrono::milliseconds slept_{0};
};

TEST_F(UnservedKindTest, RunRetriesWhileTheNewCrdSettles) {
  InstallCrd("True");
  client_.FailNext("create", kJobsResource, NotYetAdmitted(), 3);
  Outcome r = Run({"run", "hello", "--image", "busybox", "--", "echo", "hi"});
  EXPECT_EQ(r.exitCode, kExitOk) << r.err;
  EXPECT_EQ(r.out, "job.execution.ayatori.ddupan.top/hello created\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(client_.CountActions("create", kJobsResource), 4u);
  EXPECT_GT(slept_.count(), 0);
  EXPECT_LT(slept_, kCrdSettleTime);
}

TEST_F(UnservedKindTest, ACrdNotEstablishedYetIsWaitedForThenNamed) {
  InstallCrd("False", "the initial names have not been accepted");
  client_.FailNext("get", kJobsResource, NotServed(), 1000);
  Outcome r = Run({"get", "j"});
  EXPECT_EQ(r.exitCode, kExitError);
  // Retried for kCrdSettleTime, no longer.
  EXPECT_GE(slept_, kCrdSettleTime - std::chrono::milliseconds(250));
  EXPECT_LE(slept_, kCrdSettleTime);
  EXPECT_EQ(
      r.err,
      "error: get job \"j\": the API server does not serve Ayatori Jobs "
      "(jobs.execution.ayatori.ddupan.top) yet: the CRD jobs.execution.ayatori.ddupan.top "
      "exists but is not Established (its condition Established is False: the initial names "
      "have not been accepted). Wait for it with `kubectl wait --for condition=established "
      "--timeout=60s crd/jobs.execution.ayatori.ddupan.top`, or see why with `kubectl get crd "
      "jobs.execution.ayatori.ddupan.top -o yaml`\n");
}

TEST_F(UnservedKindTest, AMissingCrdIsNamedAtOnce) {
  client_.FailNext("create", kJobsResource, NotServed());
  Outcome r = Run({"run", "hello", "--image", "busybox"});
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_EQ(slept_.count(), 0);
  EXPECT_EQ(client_.CountActions("create", kJobsResource), 1u);
  EXPECT_EQ(r.err,
            "error: create job \"hello\": the API server does not serve Ayatori Jobs "
            "(jobs.execution.ayatori.ddupan.top): the CRD jobs.execution.ayatori.ddupan.top is not "
            "installed in this cluster. Install Ayatori (docs/install.md: kubectl apply -f "
            "dist/install.yaml, or kubectl apply -k config/crd); `kubectl get crd "
            "jobs.execution.ayatori.ddupan.top` shows it once it is there\n");
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("Is the cluster running")));
}

TEST_F(UnservedKindTest, AnOldEstablishedCrdIsNotRetried) {
  InstallCrd("True");
  clock_.Advance(std::chrono::minutes(5));
  client_.FailNext("create", kJobsResource, NotYetAdmitted());
  Outcome r = Run({"run", "hello", "--image", "busybox"});
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_EQ(slept_.count(), 0);
  EXPECT_THAT(r.err, HasSubstr("although the CRD jobs.execution.ayatori.ddupan.top is Established "
                               "(the API server answered: Resource kind"));
  EXPECT_THAT(r.err, HasSubstr("`kubectl get crd jobs.execution.ayatori.ddupan.top`"));
}

TEST_F(UnservedKindTest, AUserWhoMayNotReadCrdsIsToldWhatToCheck) {
  client_.FailNext("get", "customresourcedefinitions.apiextensions.k8s.io",
                   Status(StatusCode::kForbidden, "cannot get customresourcedefinitions"), 1000);
  client_.FailNext("create", kJobsResource, NotYetAdmitted(), 2);
  Outcome r = Run({"run", "hello", "--image", "busybox"});
  EXPECT_EQ(r.exitCode, kExitOk) << r.err;  // the server's 503 says it is a delay: retried
  client_.FailNext("create", kJobsResource, NotServed());
  r = Run({"run", "again", "--image", "busybox"});
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_THAT(r.err, HasSubstr("Is Ayatori installed, and its CRD Established? Check with `kubectl "
                               "get crd jobs.execution.ayatori.ddupan.top` and `kubectl wait "
                               "--for condition=established"));
}

TEST(KindNotServedTest, OnlyTheKindsAbsenceCounts) {
  EXPECT_TRUE(KindNotServed(
      Status(StatusCode::kNotFound, "the server could not find the requested resource")));
  EXPECT_TRUE(KindNotServed(Status(
      StatusCode::kServerError,
      "Resource kind execution.ayatori.ddupan.top/v1alpha1, Kind=Job not found. There can be")));
  EXPECT_FALSE(KindNotServed(
      Status(StatusCode::kNotFound, "jobs.execution.ayatori.ddupan.top \"j\" not found")));
  EXPECT_FALSE(KindNotServed(Status(StatusCode::kServerError, "etcdserver: request timed out")));
  EXPECT_FALSE(KindNotServed(Status(StatusCode::kUnavailable, "connection refused")));
}

TEST(FinishedExitCodeTest, MapsTheOutcome) {
  EXPECT_EQ(FinishedExitCode(JobIn("Completed")), kExitOk);
  EXPECT_EQ(FinishedExitCode(JobIn("ProcessFailed")), kExitJobFailed);
  EXPECT_EQ(FinishedExitCode(JobIn("BackendLost")), kExitJobFailed);
  EXPECT_EQ(FinishedExitCode(JobIn("Cancelled")), kExitJobCancelled);
  EXPECT_EQ(FinishedExitCode(JobIn("Running")), std::nullopt);
  EXPECT_EQ(FinishedExitCode(JobIn("ResultUnknown")), std::nullopt);  // not final
  api::Job deleted = JobIn("ProcessFailed");
  deleted.metadata.deletionTimestamp = deleted.status.startTime;  // Deleting, but it finished
  EXPECT_EQ(FinishedExitCode(deleted), kExitJobFailed);
}

TEST(ExplainErrorTest, SaysWhatToDo) {
  EXPECT_THAT(ExplainError(
                  Status(StatusCode::kNotFound, "the server could not find the requested resource"),
                  "list jobs"),
              HasSubstr("is the CRD jobs.execution.ayatori.ddupan.top installed and Established? "
                        "Check with `kubectl get crd jobs.execution.ayatori.ddupan.top`"));
  EXPECT_THAT(ExplainError(Status(StatusCode::kUnauthorized, "Unauthorized"), "list jobs"),
              HasSubstr("check the user of your kubeconfig"));
  EXPECT_THAT(ExplainError(Status(StatusCode::kUnavailable, "connection refused"), "list jobs"),
              HasSubstr("Is the cluster running"));
  EXPECT_EQ(ExplainError(Status(StatusCode::kInvalid, "spec.task.image: Invalid value"), "create"),
            "create: spec.task.image: Invalid value");
}

TEST(ConfirmLostAnnotationValueTest, NamesTheEpisodeThenWhoAndWhy) {
  EXPECT_EQ(ConfirmLostAnnotationValue(3, "node-7 burned"), "3:node-7 burned");
  EXPECT_EQ(ConfirmLostAnnotationValue(0, ""), "0:confirmed with kubectl ayatori confirm-lost");
  EXPECT_EQ(ResultUnknownEpisode(nlohmann::json::parse(R"({"status":{"resultUnknownEpisode":2}})")),
            2);
  EXPECT_EQ(ResultUnknownEpisode(nlohmann::json::parse(R"({"status":{}})")), 0);
  EXPECT_EQ(ResultUnknownEpisode(nlohmann::json::parse(R"({"metadata":{}})")), 0);
}

}  // namespace
}  // namespace ayatori::plugin
