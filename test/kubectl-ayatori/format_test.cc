// kubectl-ayatori's output as pure functions (cmd/kubectl-ayatori/format.h): kubectl's ages,
// aligned stable columns, the derived state of each kind of Job, describe's sections, and
// -o json / -o yaml documents that read back as the objects.
#include "format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <sstream>

#include "api/json.h"
#include "test/support/process.h"

namespace ayatori::plugin {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

const api::Time kNow = api::ParseTime("2026-12-01T12:00:00Z").value();

api::Condition Cond(const char* type, api::ConditionStatus status, const char* reason,
                    const char* message = "") {
  return {type, status, reason, message, 1, kNow - seconds(30)};
}

api::Job BaseJob(const std::string& name) {
  api::Job job;
  job.metadata.name = name;
  job.metadata.namespace_ = "ci";
  job.metadata.uid = "uid-" + name;
  job.metadata.creationTimestamp = kNow - seconds(125);
  job.spec.task.image = "busybox";
  return job;
}

api::Job Accepted(api::Job job) {
  job.status.conditions.push_back(Cond("Accepted", api::ConditionStatus::kTrue, "Valid"));
  job.status.resolvedJobClass =
      api::ResolvedJobClass{"docker", "cuid", "execution.ayatori.ddupan.top/docker",
                            api::ParametersRef{"g", "DockerExecutionParameters", "local", "p"},
                            "ayatori-backend-0123456789abcdef"};
  job.status.effectiveResources = api::ResourceRequirements{
      {api::Quantity::MustParse("100m"), api::Quantity::MustParse("64Mi")},
      {api::Quantity::MustParse("1"), api::Quantity::MustParse("128Mi")}};
  job.status.execution = api::ExecutionStatus{"docker", {}};
  return job;
}

api::Job RunningJob(const std::string& name) {
  api::Job job = Accepted(BaseJob(name));
  job.status.conditions.push_back(Cond("Scheduled", api::ConditionStatus::kTrue, "BackendCreated"));
  job.status.conditions.push_back(Cond("Succeeded", api::ConditionStatus::kUnknown, "Running"));
  job.status.execution->references = {{"Container", "c0ffee"}};
  job.status.startTime = kNow - seconds(60);
  return job;
}

api::Job FailedJob(const std::string& name) {
  api::Job job = RunningJob(name);
  job.status.conditions.back() =
      Cond("Succeeded", api::ConditionStatus::kFalse, "ProcessFailed", "exited with 3");
  job.status.completionTime = kNow - seconds(10);
  job.status.result = api::JobResult{3, "ProcessFailed"};
  return job;
}

using testing::Lines;

TEST(FormatAgeTest, MatchesKubectlHumanDuration) {
  EXPECT_EQ(FormatAge(seconds(-5)), "<invalid>");
  EXPECT_EQ(FormatAge(seconds(-1)), "0s");
  EXPECT_EQ(FormatAge(seconds(0)), "0s");
  EXPECT_EQ(FormatAge(seconds(119)), "119s");
  EXPECT_EQ(FormatAge(seconds(120)), "2m");
  EXPECT_EQ(FormatAge(seconds(192)), "3m12s");
  EXPECT_EQ(FormatAge(seconds(600)), "10m");
  EXPECT_EQ(FormatAge(seconds(179 * 60 + 59)), "179m");
  EXPECT_EQ(FormatAge(seconds(3 * 3600)), "3h");
  EXPECT_EQ(FormatAge(seconds(4 * 3600 + 5 * 60)), "4h5m");
  EXPECT_EQ(FormatAge(seconds(47 * 3600)), "47h");
  EXPECT_EQ(FormatAge(seconds(3 * 86400 + 4 * 3600)), "3d4h");
  EXPECT_EQ(FormatAge(seconds(12 * 86400)), "12d");
  EXPECT_EQ(FormatAge(seconds(731 * 86400)), "2y1d");
  EXPECT_EQ(FormatAge(seconds(9LL * 365 * 86400)), "9y");
}

TEST(RenderTableTest, AlignsColumnsLikeKubectl) {
  EXPECT_EQ(RenderTable({{"NAME", "STATE"}, {"a-long-name", "Running"}, {"b", "Failed"}}),
            "NAME          STATE\n"
            "a-long-name   Running\n"
            "b             Failed\n");
  // Minimum column width 6 (cell + padding), no trailing blanks.
  EXPECT_EQ(RenderTable({{"A", "B", ""}}), "A     B\n");
}

TEST(FormatJobTableTest, StableColumnsAndDerivedStates) {
  api::Job resolving = BaseJob("resolving");
  resolving.status.conditions.push_back(
      Cond("Accepted", api::ConditionStatus::kFalse, "NoDefaultJobClass"));
  resolving.status.conditions.push_back(
      Cond("Succeeded", api::ConditionStatus::kUnknown, "Pending"));
  api::Job unknown = RunningJob("unknown");
  unknown.status.conditions.back() =
      Cond("Succeeded", api::ConditionStatus::kUnknown, "ResultUnknown");
  std::string table =
      FormatJobTable({resolving, RunningJob("run"), unknown, FailedJob("failed")}, {}, kNow);
  EXPECT_EQ(table,
            "NAME        STATE           CLASS       REASON              EXIT     AGE\n"
            "resolving   Resolving       <default>   NoDefaultJobClass   <none>   2m5s\n"
            "run         Running         docker      Running             <none>   2m5s\n"
            "unknown     ResultUnknown   docker      ResultUnknown       <none>   2m5s\n"
            "failed      Failed          docker      ProcessFailed       3        2m5s\n");
}

TEST(FormatJobTableTest, WideAndAllNamespacesAddColumnsWithoutBackendDetails) {
  std::string table = FormatJobTable({RunningJob("run")}, {true, true}, kNow);
  auto lines = Lines(table);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "NAMESPACE   NAME   STATE     CLASS    REASON    EXIT     AGE    DESIRED   STARTED   "
            "ADAPTER   BACKEND");
  EXPECT_EQ(lines[1],
            "ci          run    Running   docker   Running   <none>   2m5s   Running   60s       "
            "docker    Container");
  // The reference id, the snapshot and the parameters are not columns.
  EXPECT_THAT(table, Not(HasSubstr("c0ffee")));
  EXPECT_THAT(table, Not(HasSubstr("ayatori-backend-")));
}

TEST(StateReasonTest, ExplainsEachState) {
  api::Job deleting = FailedJob("d");
  deleting.metadata.deletionTimestamp = kNow;
  EXPECT_EQ(statemachine::DeriveState(deleting), statemachine::State::kDeleting);
  EXPECT_THAT(ExplainState(deleting, statemachine::State::kDeleting),
              HasSubstr("deletionTimestamp"));
  api::Job failed = FailedJob("f");
  EXPECT_EQ(ExplainState(failed, statemachine::DeriveState(failed)),
            "Succeeded=False/ProcessFailed: exited with 3");
  api::Job cancelling = RunningJob("c");
  cancelling.spec.desiredState = api::DesiredState::kCancelled;
  EXPECT_EQ(statemachine::DeriveState(cancelling), statemachine::State::kCancelling);
  EXPECT_THAT(ExplainState(cancelling, statemachine::State::kCancelling),
              HasSubstr("spec.desiredState is Cancelled"));
}

TEST(StateReasonTest, AQueuedJobShowsKueuesReason) {
  api::Job queued = Accepted(BaseJob("q"));
  queued.status.conditions.push_back(Cond("Admitted", api::ConditionStatus::kFalse, "Pending",
                                          "insufficient unused quota for pods in flavor docker-a"));
  queued.status.conditions.push_back(Cond("Succeeded", api::ConditionStatus::kUnknown, "Pending"));
  const statemachine::State state = statemachine::DeriveState(queued);
  EXPECT_EQ(state, statemachine::State::kQueued);
  EXPECT_EQ(StateReason(queued, state), "Pending");
  EXPECT_THAT(ExplainState(queued, state),
              HasSubstr("Admitted=False/Pending: insufficient unused quota for pods"));
}

// A Job of LocalQueue `queue` that Kueue has not admitted yet (state Queued).
api::Job QueuedJob(const std::string& name, const std::string& queue) {
  api::Job job = Accepted(BaseJob(name));
  job.metadata.labels["kueue.x-k8s.io/queue-name"] = queue;
  job.status.conditions.push_back(Cond("Admitted", api::ConditionStatus::kFalse, "Pending",
                                       "insufficient unused quota for pods in flavor docker-a"));
  job.status.conditions.push_back(Cond("Succeeded", api::ConditionStatus::kUnknown, "Pending"));
  return job;
}

// A Job of LocalQueue `queue` that Kueue admitted and that runs.
api::Job AdmittedJob(const std::string& name, const std::string& queue) {
  api::Job job = RunningJob(name);
  job.metadata.labels["kueue.x-k8s.io/queue-name"] = queue;
  job.status.conditions.push_back(Cond("Admitted", api::ConditionStatus::kTrue, "Admitted"));
  return job;
}

TEST(FormatJobTableTest, QueueColumnsShowTheLocalQueueAndTheOneBasedPosition) {
  // Kueue's positions are 0-based; the table counts from 1 (1 = admitted next).
  const QueuePositions positions = {{"ci/small", {{"ajob-uid-q2", 1}, {"ajob-uid-q1", 0}}}};
  GetOptions options;
  options.queue = true;
  options.positions = positions;
  const std::string table =
      FormatJobTable({AdmittedJob("a", "small"), QueuedJob("q1", "small"), QueuedJob("q2", "small"),
                      QueuedJob("q3", "other"), RunningJob("plain")},
                     options, kNow);
  EXPECT_EQ(table,
            "NAME    STATE     CLASS    QUEUE    POSITION   REASON    EXIT     AGE\n"
            "a       Running   docker   small    <none>     Running   <none>   2m5s\n"
            "q1      Queued    docker   small    1          Pending   <none>   2m5s\n"
            "q2      Queued    docker   small    2          Pending   <none>   2m5s\n"
            "q3      Queued    docker   other    <none>     Pending   <none>   2m5s\n"
            "plain   Running   docker   <none>   <none>     Running   <none>   2m5s\n");
  // Without options.queue (no listed Job names a queue) the columns are those of before.
  EXPECT_THAT(FormatJobTable({QueuedJob("q1", "small")}, {}, kNow), Not(HasSubstr("QUEUE")));
}

TEST(QueueTextTest, SaysThePositionAdmissionOrWhyThePositionIsUnknown) {
  const QueuePositions positions = {{"ci/small", {{"ajob-uid-q", 2}}}};
  EXPECT_EQ(QueueText(QueuedJob("q", "small"), positions, ""), "position 3 in LocalQueue small");
  EXPECT_EQ(QueuePosition(QueuedJob("q", "small"), positions), 3);
  // The same Workload name in another namespace's queue is another Workload.
  api::Job elsewhere = QueuedJob("q", "small");
  elsewhere.metadata.namespace_ = "team-b";
  EXPECT_EQ(QueuePosition(elsewhere, positions), std::nullopt);
  EXPECT_EQ(QueueText(AdmittedJob("a", "small"), positions, ""), "admitted by LocalQueue small");
  EXPECT_EQ(QueueText(QueuedJob("q", "big"), {}, "the visibility API is not served"),
            "waiting in LocalQueue big, position unknown: the visibility API is not served");
  // Labelled but not gated yet (no Admitted condition): only the queue's name.
  api::Job resolving = BaseJob("r");
  resolving.metadata.labels["kueue.x-k8s.io/queue-name"] = "small";
  EXPECT_EQ(QueueText(resolving, positions, ""), "LocalQueue small");
}

TEST(FormatDescribeTest, AQueuedJobHasAQueueLine) {
  DescribeQueue queue{{{"ci/small", {{"ajob-uid-q", 0}}}}, ""};
  const std::string out = FormatDescribe(QueuedJob("q", "small"), {}, kNow, 20, queue);
  EXPECT_THAT(out, HasSubstr("Queue:                 position 1 in LocalQueue small\n"));
  EXPECT_THAT(FormatDescribe(RunningJob("plain"), {}, kNow), Not(HasSubstr("Queue:")));
}

TEST(FormatDescribeTest, ShowsStateWhyResourcesReferencesConditionsAndEvents) {
  api::Job job = FailedJob("failed");
  job.spec.task.env = {{"PLAIN", "s3cr3t-literal", std::nullopt},
                       {"TOKEN", std::nullopt,
                        api::EnvVarSource{api::KeySelector{"tok", "token", false}, std::nullopt}}};
  EventLine older{"Normal", "Started", "ayatori-controller", "started", 1, kNow - seconds(50)};
  EventLine newer{"Warning", "ProcessFailed",   "ayatori-controller", "exit 3",
                  2,         kNow - seconds(10)};
  std::string out = FormatDescribe(job, {newer, older}, kNow);
  EXPECT_THAT(out, HasSubstr("State:                 Failed\n"));
  EXPECT_THAT(out,
              HasSubstr("  Why:                 Succeeded=False/ProcessFailed: exited with 3\n"));
  EXPECT_THAT(out, HasSubstr("Resolved Class:        docker\n"));
  EXPECT_THAT(out, HasSubstr("  Parameters:          DockerExecutionParameters/local\n"));
  EXPECT_THAT(out, HasSubstr("  Requests:            cpu=100m, memory=64Mi\n"));
  EXPECT_THAT(out, HasSubstr("  Limits:              cpu=1, memory=128Mi\n"));
  EXPECT_THAT(out, HasSubstr("  References:          Container/c0ffee\n"));
  EXPECT_THAT(out, HasSubstr("Result:                reason ProcessFailed, exit code 3\n"));
  EXPECT_THAT(out, HasSubstr("Env:                   PLAIN (literal), TOKEN (secret tok/token)\n"));
  EXPECT_THAT(out, Not(HasSubstr("s3cr3t-literal")));
  EXPECT_THAT(out, HasSubstr("  TYPE        STATUS   REASON           AGE   MESSAGE\n"
                             "  Accepted    True     Valid            30s\n"));
  // Events oldest first; repeated ones show their count.
  EXPECT_THAT(out,
              HasSubstr("Events:\n"
                        "  TYPE      REASON          AGE        FROM                 MESSAGE\n"
                        "  Normal    Started         50s        ayatori-controller   started\n"
                        "  Warning   ProcessFailed   10s (x2)   ayatori-controller   exit 3\n"));
  // maxEvents keeps the most recent ones.
  std::string one = FormatDescribe(job, {newer, older}, kNow, 1);
  EXPECT_THAT(one, Not(HasSubstr("Normal    Started")));
  EXPECT_THAT(one, HasSubstr("ProcessFailed   10s (x2)"));
  EXPECT_THAT(FormatDescribe(BaseJob("new"), {}, kNow), HasSubstr("Events: <none>\n"));
}

TEST(EventLineTest, ReadsCoreAndEventsApiShapes) {
  auto core = EventLineFromJson(nlohmann::json::parse(R"({
    "type": "Warning", "reason": "BackendLost", "message": "gone", "count": 4,
    "source": {"component": "ayatori"}, "lastTimestamp": "2026-12-01T11:59:00Z"})"));
  EXPECT_EQ(core.from, "ayatori");
  EXPECT_EQ(core.count, 4);
  EXPECT_EQ(core.last, kNow - seconds(60));
  // An events.k8s.io/v1 write read through core/v1: no lastTimestamp, eventTime and series.
  auto modern = EventLineFromJson(nlohmann::json::parse(R"({
    "type": "Normal", "reason": "Started", "message": "", "note": "started",
    "reportingComponent": "ayatori-controller", "eventTime": "2026-12-01T11:58:00.123456Z",
    "series": {"count": 3, "lastObservedTime": "2026-12-01T11:59:30.000001Z"}})"));
  EXPECT_EQ(modern.message, "started");
  EXPECT_EQ(modern.from, "ayatori-controller");
  EXPECT_EQ(modern.count, 3);
  EXPECT_EQ(modern.last, kNow - seconds(30));
}

TEST(OutputDocumentTest, JsonAndYamlReadBackWithoutManagedFields) {
  nlohmann::json job = api::ToJson(RunningJob("run"));
  job["metadata"]["managedFields"] = nlohmann::json::array({{{"manager", "kubectl"}}});
  job["metadata"]["labels"] = {{"version", "1.10"}, {"enabled", "true"}, {"empty", ""},
                               {"octal", "0755"},   {"null", "null"},    {"yes", "yes"}};
  auto single = OutputDocument({job}, true);
  EXPECT_EQ(single["kind"], "Job");
  EXPECT_FALSE(single["metadata"].contains("managedFields"));
  auto list = OutputDocument({job, job}, false);
  EXPECT_EQ(list["kind"], "List");
  ASSERT_EQ(list["items"].size(), 2u);
  EXPECT_FALSE(list["items"][1]["metadata"].contains("managedFields"));
  EXPECT_EQ(OutputDocument({}, false)["items"], nlohmann::json::array());

  EXPECT_EQ(nlohmann::json::parse(ToJsonText(single)), single);
  EXPECT_THAT(ToJsonText(single), HasSubstr("\n    \"kind\": \"Job\""));  // 4-space indent

  // YAML: every string stays a string when read back (quoted where YAML would misread it).
  std::string yaml = ToYamlText(single);
  YAML::Node node = YAML::Load(yaml);
  EXPECT_EQ(node["kind"].as<std::string>(), "Job");
  EXPECT_EQ(node["metadata"]["labels"]["version"].Tag(), "!");  // quoted: "1.10"
  EXPECT_EQ(node["metadata"]["labels"]["version"].as<std::string>(), "1.10");
  EXPECT_EQ(node["metadata"]["labels"]["enabled"].Tag(), "!");
  EXPECT_EQ(node["metadata"]["labels"]["empty"].as<std::string>(), "");
  EXPECT_EQ(node["metadata"]["labels"]["octal"].Tag(), "!");
  EXPECT_EQ(node["metadata"]["labels"]["null"].Tag(), "!");
  EXPECT_EQ(node["metadata"]["labels"]["yes"].Tag(), "!");
  EXPECT_EQ(node["metadata"]["name"].Tag(), "?");  // plain where it is safe
  EXPECT_EQ(node["status"]["execution"]["references"][0]["id"].as<std::string>(), "c0ffee");
  EXPECT_THAT(yaml, HasSubstr("kind: Job\n"));
}

TEST(OutputFormatTest, EveryAcceptedValueAndTheirOutput) {
  using Kind = OutputFormat::Kind;
  for (const auto& [text, kind] :
       std::vector<std::pair<std::string, Kind>>{{"", Kind::kTable},
                                                 {"wide", Kind::kWide},
                                                 {"json", Kind::kJson},
                                                 {"yaml", Kind::kYaml},
                                                 {"name", Kind::kName},
                                                 {"jsonpath={.metadata.name}", Kind::kJsonPath}}) {
    auto format = ParseOutputFormat(text);
    ASSERT_TRUE(format.ok()) << text;
    EXPECT_EQ(format->kind, kind) << text;
  }
  for (const char* bad : {"xml", "JSON", "jsonpath", "jsonpath={.a[?(@.b)]}", "custom-columns=A"}) {
    auto format = ParseOutputFormat(bad);
    ASSERT_FALSE(format.ok()) << bad;
  }
  EXPECT_THAT(ParseOutputFormat("xml").status().message(),
              HasSubstr("use one of json, yaml, name, wide, jsonpath=TEMPLATE"));

  const std::vector<nlohmann::json> jobs = {api::ToJson(RunningJob("a")),
                                            api::ToJson(RunningJob("b"))};
  EXPECT_EQ(FormatObjects(*ParseOutputFormat("name"), jobs, false),
            "job.execution.ayatori.ddupan.top/a\njob.execution.ayatori.ddupan.top/b\n");
  // jsonpath: on the List of several Jobs, on the Job itself when one was named.
  EXPECT_EQ(FormatObjects(*ParseOutputFormat("jsonpath={.items[*].metadata.name}"), jobs, false),
            "a b");
  EXPECT_EQ(FormatObjects(*ParseOutputFormat("jsonpath={.metadata.name}"), {jobs[0]}, true), "a");
  EXPECT_EQ(nlohmann::json::parse(
                FormatObjects(*ParseOutputFormat("json"), {jobs[1]}, true))["metadata"]["name"],
            "b");
  EXPECT_EQ(YAML::Load(FormatObjects(*ParseOutputFormat("yaml"), jobs,
                                     false))["items"][1]["metadata"]["name"]
                .as<std::string>(),
            "b");
}

TEST(FormatJobRowTest, AWatchedChangeLinesUpUnderTheTable) {
  const std::string table = FormatJobTable({RunningJob("run")}, {}, kNow);
  const std::string row = FormatJobRow(RunningJob("run"), {}, kNow);
  EXPECT_EQ(table.substr(table.find('\n') + 1), row);
  EXPECT_EQ(std::count(row.begin(), row.end(), '\n'), 1);
  EXPECT_THAT(FormatJobRow(FailedJob("failed"), {true, true}, kNow), HasSubstr("Failed"));
}

TEST(FormatWatchedObjectTest, OneObjectInTheFormatYamlAsDocuments) {
  const nlohmann::json job = api::ToJson(RunningJob("run"));
  EXPECT_EQ(FormatWatchedObject(*ParseOutputFormat("name"), job),
            "job.execution.ayatori.ddupan.top/run\n");
  EXPECT_EQ(nlohmann::json::parse(FormatWatchedObject(*ParseOutputFormat("json"), job))["kind"],
            "Job");
  const std::string yaml = FormatWatchedObject(*ParseOutputFormat("yaml"), job);
  EXPECT_THAT(yaml, ::testing::StartsWith("---\n"));
  EXPECT_EQ(YAML::Load(yaml)["metadata"]["name"].as<std::string>(), "run");
  EXPECT_EQ(FormatWatchedObject(*ParseOutputFormat(R"(jsonpath={.metadata.name}{"\n"})"), job),
            "run\n");
}

TEST(VersionLineTest, VersionAndCommitWhenKnown) {
  EXPECT_EQ(VersionLine("Client", "0.1.0", "1a2b3c4d5e6f"),
            "Client Version: 0.1.0 (commit 1a2b3c4d5e6f)\n");
  EXPECT_EQ(VersionLine("Client", "0.1.0", "unknown"), "Client Version: 0.1.0\n");
  EXPECT_EQ(VersionLine("Controller", "", ""), "Controller Version: unknown\n");
}

}  // namespace
}  // namespace ayatori::plugin
