// The kubectl-ayatori binary against the real test control plane (kube-apiserver + etcd, no
// controller): Jobs are created (by `run` and by kubectl), their status is written through the
// status subresource to reach every derived state, and the plugin's output and exit codes are
// checked as a user sees them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test/integration/crd_kubectl.h"
#include "test/kubectl-ayatori/shell_completion.h"
#include "test/support/controller_process.h"
#include "test/support/process.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

constexpr const char* kJobs = "jobs.execution.ayatori.ddupan.top";
constexpr int kExitJobFailed = 3;  // docs/kubectl-ayatori.md, "Exit codes"
constexpr int kExitJobCancelled = 4;
constexpr int kExitTimeout = 5;
constexpr int kExitJobDeleted = 6;

std::string PluginBinary() {
  return RequiredEnv("AYATORI_BINARY_DIR") + "/cmd/kubectl-ayatori/kubectl-ayatori";
}

// The plugin as the cluster admin; `kubeconfig` "" passes the test control plane's.
ProcessResult Plugin(std::vector<std::string> args, const std::string& input = "",
                     const std::string& kubeconfig = "") {
  // First, so that it never lands after run's `--`.
  std::vector<std::string> argv{PluginBinary(), "--kubeconfig",
                                kubeconfig.empty() ? TestenvVar("KUBECONFIG") : kubeconfig};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, input);
}

nlohmann::json Cond(const char* type, const char* status, const char* reason) {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", std::string(reason) + " (set by the test)"},
          {"lastTransitionTime", "2026-01-01T00:00:00Z"}};
}

// Statuses that derive as each state (docs/api.md, "States"); each is a valid status write.
nlohmann::json StatusFor(const std::string& state) {
  nlohmann::json accepted = Cond("Accepted", "True", "Valid");
  nlohmann::json resolved = {{"name", "docker"},
                             {"uid", "class-uid"},
                             {"controllerName", "execution.ayatori.ddupan.top/docker"},
                             {"parametersRef",
                              {{"group", "execution.ayatori.ddupan.top"},
                               {"kind", "DockerExecutionParameters"},
                               {"name", "local"}}}};
  nlohmann::json effective = {{"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}},
                              {"limits", {{"cpu", "1"}, {"memory", "128Mi"}}}};
  nlohmann::json status;
  if (state == "Resolving") {
    status["conditions"] = {Cond("Accepted", "False", "NoDefaultJobClass"),
                            Cond("Succeeded", "Unknown", "Pending")};
    return status;
  }
  status["resolvedJobClass"] = resolved;
  status["effectiveResources"] = effective;
  status["execution"] = {{"adapter", "docker"}};
  if (state == "Queued") {  // queued through Kueue, its LocalQueue missing
    status["conditions"] = {accepted, Cond("Admitted", "False", "Inadmissible"),
                            Cond("Succeeded", "Unknown", "Pending")};
    return status;
  }
  if (state == "Scheduling") {
    status["conditions"] = {accepted, Cond("Succeeded", "Unknown", "Scheduling")};
    return status;
  }
  nlohmann::json scheduled = Cond("Scheduled", "True", "BackendCreated");
  status["execution"]["references"] = {{{"type", "Container"}, {"id", "c0ffee"}}};
  if (state == "Starting") {
    status["conditions"] = {accepted, scheduled, Cond("Succeeded", "Unknown", "Scheduling")};
    return status;
  }
  status["startTime"] = "2026-01-01T00:00:01Z";
  if (state == "Running") {
    status["conditions"] = {accepted, scheduled, Cond("Succeeded", "Unknown", "Running")};
  } else if (state == "ResultUnknown") {
    status["conditions"] = {accepted, scheduled, Cond("Succeeded", "Unknown", "ResultUnknown")};
  } else if (state == "Succeeded") {
    status["conditions"] = {accepted, scheduled, Cond("Succeeded", "True", "Completed")};
    status["completionTime"] = "2026-01-01T00:00:02Z";
    status["result"] = {{"exitCode", 0}, {"reason", "Completed"}};
  } else if (state == "Failed") {
    status["conditions"] = {accepted, scheduled, Cond("Succeeded", "False", "ProcessFailed")};
    status["completionTime"] = "2026-01-01T00:00:02Z";
    status["result"] = {{"exitCode", 7}, {"reason", "ProcessFailed"}};
  } else if (state == "Cancelled") {
    status["conditions"] = {accepted, scheduled, Cond("Succeeded", "False", "Cancelled")};
    status["completionTime"] = "2026-01-01T00:00:02Z";
    status["result"] = {{"reason", "Cancelled"}};
  }
  return status;
}

class KubectlAyatoriTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(InstallCrds());
    ns_ = new std::string(CreateTestNamespace("plugin"));
  }
  static void TearDownTestSuite() {
    // Release the Jobs held by the test finalizer so that the namespace can go.
    for (const auto& name : *held_) {
      (void)RunKubectl({"patch", kJobs, name, "-n", *ns_, "--type=merge", "-p",
                        R"({"metadata":{"finalizers":null}})"});
    }
    (void)RunKubectl({"delete", "namespace", *ns_, "--wait=false"});
    delete ns_;
    ns_ = nullptr;
  }

  static const std::string& Namespace() { return *ns_; }

  // A Job created with kubectl (not the plugin) whose status derives as `state`.
  static void CreateJobIn(const std::string& name, const std::string& state,
                          const std::string& labels = "{}") {
    auto r = RunKubectl({"create", "-f", "-"},
                        "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\n"
                        "metadata: {name: " +
                            name + ", namespace: " + Namespace() + ", labels: " + labels +
                            "}\nspec: {task: {image: busybox, args: [echo, hi]}}\n");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    SetStatus(name, StatusFor(state));
  }

  static void SetStatus(const std::string& name, const nlohmann::json& status) {
    auto r = RunKubectl({"patch", kJobs, name, "-n", Namespace(), "--subresource=status",
                         "--type=merge", "-p", nlohmann::json{{"status", status}}.dump()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  static void Hold(const std::string& name) {
    auto r = RunKubectl({"patch", kJobs, name, "-n", Namespace(), "--type=merge", "-p",
                         R"({"metadata":{"finalizers":["test.ayatori.ddupan.top/hold"]}})"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    held_->push_back(name);
  }

  static std::string* ns_;
  static std::vector<std::string>* held_;
};

std::string* KubectlAyatoriTest::ns_ = nullptr;
std::vector<std::string>* KubectlAyatoriTest::held_ = new std::vector<std::string>();

TEST_F(KubectlAyatoriTest, GetShowsEveryDerivedStateInStableColumns) {
  const std::vector<std::string> states = {"Resolving", "Queued",     "Scheduling",    "Starting",
                                           "Running",   "Cancelling", "ResultUnknown", "Succeeded",
                                           "Failed",    "Cancelled",  "Deleting"};
  std::map<std::string, std::string> nameOf;
  for (const auto& state : states) {
    std::string name =
        "get-" + std::string(1, static_cast<char>(std::tolower(state[0]))) + state.substr(1);
    for (auto& c : name) c = static_cast<char>(std::tolower(c));
    nameOf[state] = name;
    std::string written = state == "Cancelling" ? "Running"
                          : state == "Deleting" ? "Failed"
                                                : state;
    ASSERT_NO_FATAL_FAILURE(CreateJobIn(name, written, "{suite: get}"));
  }
  // Cancelling: the plugin's own cancel on a Running Job.
  auto cancel = Plugin({"cancel", nameOf["Cancelling"], "-n", Namespace()});
  ASSERT_EQ(cancel.exitCode, 0) << cancel.err;
  EXPECT_THAT(cancel.out, HasSubstr("cancel requested"));
  EXPECT_EQ(GetJsonPath(kJobs, Namespace(), nameOf["Cancelling"], "{.spec.desiredState}"),
            "Cancelled");
  // Deleting: a finalizer keeps it with a deletionTimestamp.
  ASSERT_NO_FATAL_FAILURE(Hold(nameOf["Deleting"]));
  auto del = RunKubectl({"delete", kJobs, nameOf["Deleting"], "-n", Namespace(), "--wait=false"});
  ASSERT_EQ(del.exitCode, 0) << del.err;

  auto r = Plugin({"get", "-n", Namespace(), "-l", "suite=get"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), states.size() + 1) << r.out;
  EXPECT_THAT(Words(lines[0]), ElementsAre("NAME", "STATE", "CLASS", "REASON", "EXIT", "AGE"));
  const size_t stateColumn = lines[0].find("STATE");
  const size_t exitColumn = lines[0].find("EXIT");
  std::map<std::string, std::vector<std::string>> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    auto words = Words(lines[i]);
    ASSERT_EQ(words.size(), 6u) << lines[i];
    EXPECT_EQ(lines[i].find(words[1], words[0].size()), stateColumn) << lines[i];  // aligned
    EXPECT_EQ(lines[i].rfind(words[4], lines[i].size() - words[5].size() - 1), exitColumn)
        << lines[i];
    rows[words[0]] = words;
  }
  for (const auto& state : states) {
    SCOPED_TRACE(state);
    ASSERT_EQ(rows.count(nameOf[state]), 1u) << r.out;
    EXPECT_EQ(rows[nameOf[state]][1], state) << r.out;
  }
  EXPECT_EQ(rows[nameOf["Resolving"]][2], "<default>");
  EXPECT_EQ(rows[nameOf["Resolving"]][3], "NoDefaultJobClass");
  EXPECT_EQ(rows[nameOf["Queued"]][3], "Inadmissible");  // Kueue's reason
  EXPECT_EQ(rows[nameOf["Running"]][2], "docker");
  EXPECT_EQ(rows[nameOf["Failed"]][3], "ProcessFailed");
  EXPECT_EQ(rows[nameOf["Failed"]][4], "7");
  EXPECT_EQ(rows[nameOf["Succeeded"]][4], "0");
  EXPECT_EQ(rows[nameOf["ResultUnknown"]][3], "ResultUnknown");

  // wide: the backend reference kind, never its id.
  r = Plugin({"get", "-n", Namespace(), "-l", "suite=get", "-o", "wide"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(Words(Lines(r.out)[0]), ElementsAre("NAME", "STATE", "CLASS", "REASON", "EXIT", "AGE",
                                                  "DESIRED", "STARTED", "ADAPTER", "BACKEND"));
  EXPECT_THAT(r.out, HasSubstr("Container"));
  EXPECT_THAT(r.out, Not(HasSubstr("c0ffee")));

  // -A: a NAMESPACE column first, the Jobs of this namespace among others.
  r = Plugin({"get", "-A", "-l", "suite=get"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(Words(Lines(r.out)[0]),
              ElementsAre("NAMESPACE", "NAME", "STATE", "CLASS", "REASON", "EXIT", "AGE"));
  EXPECT_THAT(r.out, HasSubstr(Namespace() + "   " + nameOf["Running"]));

  // A selector that matches nothing says so on stderr, like kubectl, and succeeds.
  r = Plugin({"get", "-n", Namespace(), "-l", "suite=none"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("No resources found in " + Namespace() + " namespace."));
}

// A queued Job names its LocalQueue; this apiserver serves no Kueue visibility API (no
// APIService), so its position is unknown, which neither get nor describe treat as an error.
TEST_F(KubectlAyatoriTest, AQueuedJobShowsItsQueueWithoutTheVisibilityApi) {
  ASSERT_NO_FATAL_FAILURE(
      CreateJobIn("queued", "Queued", "{suite: queue, kueue.x-k8s.io/queue-name: small}"));
  auto r = Plugin({"get", "-n", Namespace(), "-l", "suite=queue"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_THAT(Words(lines[0]),
              ElementsAre("NAME", "STATE", "CLASS", "QUEUE", "POSITION", "REASON", "EXIT", "AGE"));
  auto row = Words(lines[1]);
  ASSERT_EQ(row.size(), 8u) << lines[1];
  row.pop_back();  // AGE
  EXPECT_THAT(
      row, ElementsAre("queued", "Queued", "docker", "small", "<none>", "Inadmissible", "<none>"));
  r = Plugin({"describe", "queued", "-n", Namespace()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nQueue:                 waiting in LocalQueue small, position "
                               "unknown: Kueue's visibility API (visibility.kueue.x-k8s.io/"
                               "v1beta2) is not served by this cluster\n"));
}

TEST_F(KubectlAyatoriTest, GetJsonAndYamlAreTheApiObjects) {
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("out-a", "Failed", "{suite: out}"));
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("out-b", "Running", "{suite: out}"));
  auto r = Plugin({"get", "out-a", "-n", Namespace(), "-o", "json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto job = nlohmann::json::parse(r.out);
  EXPECT_EQ(job["kind"], "Job");
  EXPECT_EQ(job["metadata"]["name"], "out-a");
  EXPECT_EQ(job["status"]["result"]["exitCode"], 7);
  EXPECT_FALSE(job["metadata"].contains("managedFields"));

  r = Plugin({"get", "-n", Namespace(), "-l", "suite=out", "-o", "json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto list = nlohmann::json::parse(r.out);
  EXPECT_EQ(list["kind"], "List");
  ASSERT_EQ(list["items"].size(), 2u);

  r = Plugin({"get", "out-b", "-n", Namespace(), "-o", "yaml"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  YAML::Node node = YAML::Load(r.out);
  EXPECT_EQ(node["kind"].as<std::string>(), "Job");
  EXPECT_EQ(node["metadata"]["uid"].as<std::string>(),
            GetJsonPath(kJobs, Namespace(), "out-b", "{.metadata.uid}"));
  EXPECT_EQ(node["status"]["execution"]["references"][0]["id"].as<std::string>(), "c0ffee");

  r = Plugin({"get", "-n", Namespace(), "-l", "suite=out", "-o", "name"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out,
            "job.execution.ayatori.ddupan.top/out-a\njob.execution.ayatori.ddupan.top/out-b\n");
  r = Plugin(
      {"get", "-n", Namespace(), "-l", "suite=out", "-o",
       R"(jsonpath={range .items[*]}{.metadata.name}={.status.conditions[-1].reason}{"\n"}{end})"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "out-a=ProcessFailed\nout-b=Running\n");
  r = Plugin({"get", "out-a", "-n", Namespace(), "-o", "jsonpath={.status.result.exitCode}"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "7");
}

// The lines of a running plugin's output (stdout and stderr) that name `job`.
std::vector<std::string> LinesNaming(const ControllerProcess& plugin, const std::string& job) {
  std::vector<std::string> out;
  for (const auto& line : Lines(plugin.Log())) {
    if (line.find(job) != std::string::npos) out.push_back(line);
  }
  return out;
}

TEST_F(KubectlAyatoriTest, GetWatchPrintsAChangePerLineUntilInterrupted) {
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("watch-a", "Running", "{suite: watch}"));
  const auto dir = std::filesystem::path(RequiredEnv("AYATORI_BINARY_DIR")) / "run" / "plugin";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "get-w.log");
  std::filesystem::remove(dir / "get-w-name.log");
  ControllerProcess table, names;
  ASSERT_TRUE(table
                  .Spawn({PluginBinary(), "--kubeconfig", TestenvVar("KUBECONFIG"), "get", "-w",
                          "-n", Namespace(), "-l", "suite=watch"},
                         (dir / "get-w.log").string())
                  .ok());
  ASSERT_TRUE(names
                  .Spawn({PluginBinary(), "--kubeconfig", TestenvVar("KUBECONFIG"), "get",
                          "watch-a", "-w", "-n", Namespace(), "-o", "name"},
                         (dir / "get-w-name.log").string())
                  .ok());
  // The first table, then (the watch starts at the list's resourceVersion, so no change between
  // the list and the watch is lost) a row per change.
  ASSERT_TRUE(Eventually([&] { return LinesNaming(table, "watch-a").size() == 1; },
                         std::chrono::seconds(30), kKubectlPoll))
      << table.Log();
  ASSERT_TRUE(Eventually([&] { return LinesNaming(names, "watch-a").size() == 1; },
                         std::chrono::seconds(30), kKubectlPoll))
      << names.Log();
  ASSERT_NO_FATAL_FAILURE(SetStatus("watch-a", StatusFor("Succeeded")));
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("watch-b", "Failed", "{suite: watch}"));
  ASSERT_TRUE(Eventually(
      [&] {
        auto b = LinesNaming(table, "watch-b");
        return LinesNaming(table, "watch-a").size() == 2 && !b.empty() &&
               Words(b.back()).at(1) == "Failed";
      },
      std::chrono::seconds(30), kKubectlPoll))
      << table.Log();
  EXPECT_TRUE(table.Running());
  auto lines = Lines(table.Log());
  EXPECT_THAT(Words(lines.at(0)), ElementsAre("NAME", "STATE", "CLASS", "REASON", "EXIT", "AGE"));
  EXPECT_EQ(Words(lines.at(1)).at(1), "Running") << table.Log();
  EXPECT_EQ(Words(LinesNaming(table, "watch-a").at(1)).at(1), "Succeeded") << table.Log();
  EXPECT_EQ(lines.at(2).find("Succeeded"), lines.at(0).find("STATE")) << table.Log();  // aligned
  // -o name on one Job: its name per change, nothing about the other Job.
  ASSERT_TRUE(Eventually([&] { return LinesNaming(names, "watch-a").size() == 2; },
                         std::chrono::seconds(30), kKubectlPoll))
      << names.Log();
  EXPECT_THAT(Lines(names.Log()), ::testing::Each("job.execution.ayatori.ddupan.top/watch-a"));
  EXPECT_TRUE(names.Running());
}

TEST_F(KubectlAyatoriTest, DeleteSaysWhatItDeletedAndFailsOnAMissingJob) {
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("del-a", "Running", "{suite: del}"));
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("del-b", "Succeeded", "{suite: del}"));
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("del-c", "Failed", "{suite: del}"));
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("del-d", "Failed", "{suite: del-sel}"));
  // A missing name among others: the others are deleted, the missing one said, exit 1.
  auto r = Plugin({"delete", "del-a", "nope", "del-b", "-n", Namespace()});
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_EQ(r.out,
            "job.execution.ayatori.ddupan.top \"del-a\" deleted\n"
            "job.execution.ayatori.ddupan.top \"del-b\" deleted\n");
  EXPECT_EQ(r.err, "error: job \"nope\" not found in namespace \"" + Namespace() +
                       "\": list the namespace's Jobs with `kubectl ayatori get -n " + Namespace() +
                       "`, or name another namespace with -n\n");
  for (const char* gone : {"del-a", "del-b"}) {
    EXPECT_THAT(RunKubectl({"get", kJobs, gone, "-n", Namespace()}).err, HasSubstr("NotFound"));
  }
  r = Plugin({"delete", "-l", "suite=del-sel", "-n", Namespace()});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "job.execution.ayatori.ddupan.top \"del-d\" deleted\n");
  EXPECT_EQ(RunKubectl({"get", kJobs, "del-c", "-n", Namespace()}).exitCode, 0);
  r = Plugin({"delete", "-l", "suite=del-sel", "-n", Namespace()});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("No resources found in " + Namespace() + " namespace."));

  // --all: every Job of the namespace named, none of another.
  const std::string other = CreateTestNamespace("plugin-del");
  for (const char* name : {"all-1", "all-2"}) {
    auto c = RunKubectl({"create", "-f", "-"},
                        "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\n"
                        "metadata: {name: " +
                            std::string(name) + ", namespace: " + other +
                            "}\nspec: {task: {image: busybox}}\n");
    ASSERT_EQ(c.exitCode, 0) << c.err;
  }
  r = Plugin({"delete", "--all", "-n", other});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out,
            "job.execution.ayatori.ddupan.top \"all-1\" deleted\n"
            "job.execution.ayatori.ddupan.top \"all-2\" deleted\n");
  EXPECT_EQ(RunKubectl({"get", kJobs, "del-c", "-n", Namespace()}).exitCode, 0);
  (void)RunKubectl({"delete", "namespace", other, "--wait=false"});
}

TEST_F(KubectlAyatoriTest, DescribeShowsStateWhyReferencesResourcesClassAndEvents) {
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("desc", "ResultUnknown"));
  const std::string uid = GetJsonPath(kJobs, Namespace(), "desc", "{.metadata.uid}");
  // An Event about the Job (as the controller's recorder writes them), and one about another
  // object that describe must not show.
  for (const auto& [name, objectUid, reason] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"desc.1", uid, "BackendUnreachable"}, {"other.1", "not-the-job", "Unrelated"}}) {
    nlohmann::json event = {{"apiVersion", "events.k8s.io/v1"},
                            {"kind", "Event"},
                            {"metadata", {{"name", name}, {"namespace", Namespace()}}},
                            {"eventTime", "2026-01-01T00:00:03.000000Z"},
                            {"reportingController", "execution.ayatori.ddupan.top/controller"},
                            {"reportingInstance", "test"},
                            {"action", "Observe"},
                            {"reason", reason},
                            {"type", "Warning"},
                            {"note", "the Docker engine did not answer"},
                            {"regarding",
                             {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                              {"kind", "Job"},
                              {"name", "desc"},
                              {"namespace", Namespace()},
                              {"uid", objectUid}}}};
    auto r = RunKubectl({"create", "-f", "-"}, event.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  auto r = Plugin({"describe", "desc", "-n", Namespace()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\nState:                 ResultUnknown\n"));
  EXPECT_THAT(r.out, HasSubstr("  Why:                 Succeeded=Unknown/ResultUnknown: "
                               "ResultUnknown (set by the test)\n"));
  EXPECT_THAT(r.out, HasSubstr("Resolved Class:        docker\n"));
  EXPECT_THAT(r.out, HasSubstr("  Requests:            cpu=100m, memory=64Mi\n"));
  EXPECT_THAT(r.out, HasSubstr("  References:          Container/c0ffee\n"));
  bool acceptedRow = false;
  for (const auto& line : Lines(r.out)) {
    auto words = Words(line);
    if (words.size() >= 3 && words[0] == "Accepted") {
      acceptedRow = words[1] == "True" && words[2] == "Valid";
    }
  }
  EXPECT_TRUE(acceptedRow) << r.out;
  EXPECT_THAT(r.out, HasSubstr("Warning   BackendUnreachable"));
  EXPECT_THAT(r.out, HasSubstr("the Docker engine did not answer"));
  EXPECT_THAT(r.out, Not(HasSubstr("Unrelated")));
}

TEST_F(KubectlAyatoriTest, WaitExitCodeMirrorsTheJob) {
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("wait-ok", "Succeeded"));
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("wait-failed", "Failed"));
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("wait-cancelled", "Cancelled"));
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("wait-running", "Running"));
  auto r = Plugin({"wait", "wait-ok", "-n", Namespace()});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("wait-ok Succeeded (Completed, exit code 0)"));
  r = Plugin({"wait", "wait-failed", "-n", Namespace()});
  EXPECT_EQ(r.exitCode, kExitJobFailed) << r.err;
  EXPECT_THAT(r.err, HasSubstr("wait-failed Failed (ProcessFailed, exit code 7)"));
  r = Plugin({"wait", "wait-cancelled", "-n", Namespace()});
  EXPECT_EQ(r.exitCode, kExitJobCancelled) << r.err;
  r = Plugin({"wait", "wait-running", "-n", Namespace(), "--timeout", "2s"});
  EXPECT_EQ(r.exitCode, kExitTimeout) << r.err;
  EXPECT_THAT(r.err, HasSubstr("timed out waiting for job \"wait-running\": it is Running"));

  // A wait that is under way sees the Job finish through its watch. (Its --timeout only bounds
  // the test if the status write failed.)
  auto waiting = std::async(std::launch::async, [&] {
    return Plugin({"wait", "wait-running", "-n", Namespace()});
  });
  EXPECT_TRUE(HoldsFor(
      [&] { return waiting.wait_for(std::chrono::seconds(0)) != std::future_status::ready; },
      std::chrono::seconds(2)));
  ASSERT_NO_FATAL_FAILURE(SetStatus("wait-running", StatusFor("Failed")));
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  r = waiting.get();
  EXPECT_EQ(r.exitCode, kExitJobFailed) << r.err;

  // ...and its deletion.
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("wait-deleted", "Running"));
  waiting = std::async(std::launch::async, [&] {
    return Plugin({"wait", "wait-deleted", "-n", Namespace()});
  });
  EXPECT_TRUE(HoldsFor(
      [&] { return waiting.wait_for(std::chrono::seconds(0)) != std::future_status::ready; },
      std::chrono::seconds(2)));
  auto del = RunKubectl({"delete", kJobs, "wait-deleted", "-n", Namespace()});
  ASSERT_EQ(del.exitCode, 0) << del.err;
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  r = waiting.get();
  EXPECT_EQ(r.exitCode, kExitJobDeleted) << r.err;
  EXPECT_THAT(r.err, HasSubstr("was deleted before it finished"));
}

TEST_F(KubectlAyatoriTest, RunCreatesTheJobFromFlags) {
  auto r = Plugin({"run",          "run-1",   "-n",       Namespace(), "--image",
                   "busybox:1.36", "--class", "docker",   "--env",     "GREETING=hello world",
                   "--cpu",        "250m",    "--memory", "64Mi",      "--deadline",
                   "10m",          "--ttl",   "1h",       "--",        "echo",
                   "-n",           "hi"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "job.execution.ayatori.ddupan.top/run-1 created\n");
  auto got = RunKubectl({"get", kJobs, "run-1", "-n", Namespace(), "-o", "json"});
  ASSERT_EQ(got.exitCode, 0) << got.err;
  auto spec = nlohmann::json::parse(got.out)["spec"];
  EXPECT_EQ(spec["jobClassName"], "docker");
  EXPECT_EQ(spec["task"]["image"], "busybox:1.36");
  EXPECT_EQ(spec["task"]["args"], nlohmann::json({"echo", "-n", "hi"}));
  EXPECT_FALSE(spec["task"].contains("command"));
  EXPECT_EQ(spec["task"]["env"],
            nlohmann::json::parse(R"([{"name":"GREETING","value":"hello world"}])"));
  EXPECT_EQ(spec["resources"],
            nlohmann::json::parse(R"({"limits":{"cpu":"250m","memory":"64Mi"}})"));
  EXPECT_EQ(spec["activeDeadlineSeconds"], 600);
  EXPECT_EQ(spec["ttlSecondsAfterFinished"], 3600);

  r = Plugin({"run", "run-2", "-n", Namespace(), "--image", "busybox", "--command", "--", "/bin/sh",
              "-c", "exit 3"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, Namespace(), "run-2", "{.spec.task.command}"),
            R"(["/bin/sh","-c","exit 3"])");

  // The same name again: what to do instead.
  r = Plugin({"run", "run-1", "-n", Namespace(), "--image", "busybox"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("job \"run-1\" already exists in namespace \"" + Namespace() +
                               "\": choose another name"));
  // The API server's validation comes through.
  r = Plugin({"run", "run-bad", "-n", Namespace(), "--image", "has space"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("spec.task.image"));
  // No controller runs here: --wait gives up at its timeout, exit code 5.
  r = Plugin(
      {"run", "run-3", "-n", Namespace(), "--image", "busybox", "--wait", "--timeout", "2s"});
  EXPECT_EQ(r.exitCode, kExitTimeout) << r.err;
  EXPECT_THAT(r.out, HasSubstr("run-3 created"));
}

TEST_F(KubectlAyatoriTest, RunLogsFollowsOnceStartedThenMirrorsTheJob) {
  // The controller's part is played by the test: the Job starts, then succeeds. The log API is
  // not served here, so the plugin says so and still waits for the Job: exit 0.
  auto running = std::async(std::launch::async, [&] {
    return Plugin({"run", "run-logs", "-n", Namespace(), "--image", "busybox", "--logs",
                   "--timeout", "60s", "--", "echo", "hi"});
  });
  ASSERT_TRUE(Eventually(
      [&] {
        return RunKubectl({"get", kJobs, "run-logs", "-n", Namespace()}).exitCode == 0;
      },
      std::chrono::seconds(30), kKubectlPoll));
  EXPECT_TRUE(HoldsFor(
      [&] { return running.wait_for(std::chrono::seconds(0)) != std::future_status::ready; },
      std::chrono::seconds(1)));
  ASSERT_NO_FATAL_FAILURE(SetStatus("run-logs", StatusFor("Running")));
  ASSERT_NO_FATAL_FAILURE(SetStatus("run-logs", StatusFor("Succeeded")));
  ASSERT_EQ(running.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  auto r = running.get();
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("run-logs created\n"));
  EXPECT_THAT(r.out, HasSubstr("run-logs Succeeded (Completed, exit code 0)"));
  EXPECT_THAT(r.err, HasSubstr("the Job log API is not installed in this cluster"));
}

TEST_F(KubectlAyatoriTest, RunWaitPrintsALinePerStateAsTheJobMoves) {
  // The controller's part is played by the test: each status is written once the plugin showed
  // the one before, so every state is seen (a watch may otherwise deliver only the last).
  const auto dir = std::filesystem::path(RequiredEnv("AYATORI_BINARY_DIR")) / "run" / "plugin";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "run-wait.log");
  ControllerProcess run;
  ASSERT_TRUE(
      run.Spawn({PluginBinary(), "--kubeconfig", TestenvVar("KUBECONFIG"), "run", "progress", "-n",
                 Namespace(), "--image", "busybox", "--wait", "--timeout", "120s"},
                (dir / "run-wait.log").string())
          .ok());
  // "HH:MM:SS STATE...": the progress lines printed so far, without their times.
  auto progress = [&] {
    std::vector<std::string> states;
    for (const auto& line : Lines(run.Log())) {
      if (line.size() > 9 && line[2] == ':' && line[5] == ':' && line[8] == ' ') {
        states.push_back(line.substr(9));
      }
    }
    return states;
  };
  auto shows = [&](size_t n) {
    return Eventually([&] { return progress().size() == n; }, std::chrono::seconds(30),
                      kKubectlPoll);
  };
  ASSERT_TRUE(shows(1)) << run.Log();
  for (const char* state : {"Scheduling", "Starting", "Running", "Succeeded"}) {
    const size_t shown = progress().size();
    ASSERT_NO_FATAL_FAILURE(SetStatus("progress", StatusFor(state)));
    ASSERT_TRUE(shows(shown + 1)) << state << "\n" << run.Log();
  }
  ASSERT_TRUE(run.Wait(std::chrono::seconds(30))) << run.Log();
  EXPECT_TRUE(WIFEXITED(run.exitStatus()) && WEXITSTATUS(run.exitStatus()) == 0) << run.Log();
  EXPECT_THAT(progress(), ElementsAre("Resolving", "Scheduling", "Starting (Scheduling)", "Running",
                                      "Succeeded (Completed, exit 0)"))
      << run.Log();
  EXPECT_THAT(run.Log(), HasSubstr("progress Succeeded (Completed, exit code 0)\n"));
  EXPECT_THAT(run.Log(), Not(HasSubstr("\r")));  // no spinner into a file
}

TEST_F(KubectlAyatoriTest, CancelSetsDesiredStateAndLeavesFinishedJobsAlone) {
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("cancel-done", "Succeeded"));
  auto r = Plugin({"cancel", "cancel-done", "-n", Namespace()});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("already finished (Succeeded): nothing to cancel"));
  EXPECT_EQ(GetJsonPath(kJobs, Namespace(), "cancel-done", "{.spec.desiredState}"), "Running");
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("cancel-run", "Running"));
  r = Plugin({"cancel", "cancel-run", "-n", Namespace()});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, Namespace(), "cancel-run", "{.spec.desiredState}"), "Cancelled");
  r = Plugin({"get", "cancel-run", "-n", Namespace()});
  EXPECT_EQ(Words(Lines(r.out).at(1)).at(1), "Cancelling");
}

TEST_F(KubectlAyatoriTest, ConfirmLostAsksAndSetsTheAnnotation) {
  const std::string annotation =
      "{.metadata.annotations.execution\\.ayatori\\.ddupan\\.top/confirm-backend-lost}";
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("lost", "ResultUnknown"));
  // Answering no changes nothing.
  auto r = Plugin({"confirm-lost", "lost", "-n", Namespace()}, "n\n");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("is lost? [y/N]"));
  EXPECT_THAT(r.err, HasSubstr("Container/c0ffee"));
  EXPECT_THAT(r.err, HasSubstr("Not confirmed: nothing changed"));
  EXPECT_EQ(GetJsonPath(kJobs, Namespace(), "lost", annotation), "");
  // No input at all (a script without --yes) changes nothing either.
  r = Plugin({"confirm-lost", "lost", "-n", Namespace()});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(GetJsonPath(kJobs, Namespace(), "lost", annotation), "");
  // y confirms.
  r = Plugin({"confirm-lost", "lost", "-n", Namespace(), "--reason", "node-7 burned (ticket 42)"},
             "y\n");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, Namespace(), "lost", annotation), "0:node-7 burned (ticket 42)");

  ASSERT_NO_FATAL_FAILURE(CreateJobIn("lost-yes", "ResultUnknown"));
  r = Plugin({"confirm-lost", "lost-yes", "-n", Namespace(), "--yes"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("lost-yes confirmed lost"));
  EXPECT_EQ(GetJsonPath(kJobs, Namespace(), "lost-yes", annotation),
            "0:confirmed with kubectl ayatori confirm-lost");

  // Only a ResultUnknown Job.
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("not-lost", "Running"));
  r = Plugin({"confirm-lost", "not-lost", "-n", Namespace(), "--yes"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("job \"not-lost\" is Running, not ResultUnknown"));
  EXPECT_EQ(GetJsonPath(kJobs, Namespace(), "not-lost", annotation), "");
}

TEST_F(KubectlAyatoriTest, VersionPrintsTheClientsAndThePublishedControllers) {
  // --client needs no cluster, not even a kubeconfig that can be read.
  auto r = RunProcess({PluginBinary(), "version", "--client", "--kubeconfig", "/nonexistent"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::MatchesRegex("Client Version: [0-9]+\\.[0-9]+\\.[0-9]+"
                                             "( \\(commit [0-9a-f]+\\))?\n"));
  const std::string client = r.out;
  // No controller has published its version in this namespace.
  r = Plugin({"version", "--controller-namespace", Namespace()});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.out, client + "Controller Version: unknown\n");
  EXPECT_THAT(r.err, HasSubstr("the ConfigMap " + Namespace() +
                               "/ayatori-controller-version does not exist"));
  // What a controller writes as it starts (src/controller/version_configmap.h).
  auto c = RunKubectl({"create", "configmap", "ayatori-controller-version", "-n", Namespace(),
                       "--from-literal=version=9.8.7", "--from-literal=commit=cafe12345678"});
  ASSERT_EQ(c.exitCode, 0) << c.err;
  r = Plugin({"version", "--controller-namespace", Namespace()});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, client + "Controller Version: 9.8.7 (commit cafe12345678)\n");
}

TEST_F(KubectlAyatoriTest, KubectlRunsThePluginFromPath) {
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("via-kubectl", "Running"));
  const std::string dir = std::filesystem::path(PluginBinary()).parent_path().string();
  const char* path = std::getenv("PATH");
  // env(1) replaces PATH (a second PATH entry in the environment would not win).
  const std::vector<std::string> withPath{"env", "PATH=" + dir + ":" + (path ? path : ""),
                                          Kubectl()};
  auto list = withPath;
  list.insert(list.end(), {"plugin", "list"});
  auto r = RunProcess(list);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(dir + "/kubectl-ayatori"));
  auto get = withPath;
  get.insert(get.end(), {"ayatori", "get", "via-kubectl", "-n", Namespace(), "--kubeconfig",
                         TestenvVar("KUBECONFIG")});
  r = RunProcess(get);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(Words(Lines(r.out).at(1)).at(1), "Running") << r.out;
}

// Completion as a user gets it: each shell loads the plugin's script and, for a Job name, the
// plugin lists the Jobs of the namespace and kubeconfig typed on the command line.
TEST_F(KubectlAyatoriTest, EveryShellCompletesJobNamesFromTheCluster) {
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("comp-alpha", "Running"));
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("comp-beta", "Succeeded"));
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("other-gamma", "Running"));
  for (const char* shell : {"bash", "zsh", "fish"}) {
    auto got = plugin::testing::CompleteIn(
        shell, {"--kubeconfig", TestenvVar("KUBECONFIG"), "-n", Namespace(), "logs", "comp-"});
    EXPECT_EQ(got.error, "") << shell;
    EXPECT_THAT(got.candidates, UnorderedElementsAre("comp-alpha", "comp-beta")) << shell;
    // Another namespace's Jobs are not offered.
    got = plugin::testing::CompleteIn(
        shell, {"--kubeconfig", TestenvVar("KUBECONFIG"), "-n", "default", "describe", "comp-"});
    EXPECT_EQ(got.error, "") << shell;
    EXPECT_THAT(got.candidates, IsEmpty()) << shell;
  }
}

// `kubectl ayatori <TAB>`: kubectl (1.26+) asks a program kubectl_complete-ayatori on PATH; the
// one docs/kubectl-ayatori.md ("completion") tells users to write hands the words to the plugin.
TEST_F(KubectlAyatoriTest, KubectlsOwnCompletionAsksThePluginThroughTheDocumentedHelper) {
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("kcomp-one", "Running"));
  const auto dir = std::filesystem::path(RequiredEnv("AYATORI_BINARY_DIR")) / "run" / "kcomp";
  std::filesystem::create_directories(dir);
  const std::string helper = (dir / "kubectl_complete-ayatori").string();
  std::ofstream(helper) << "#!/bin/sh\nexec kubectl-ayatori __complete \"$@\"\n";
  std::filesystem::permissions(helper, std::filesystem::perms::owner_all);
  const char* path = std::getenv("PATH");
  auto r = RunProcess({"env",
                       "PATH=" + dir.string() + ":" +
                           std::filesystem::path(PluginBinary()).parent_path().string() + ":" +
                           (path ? path : ""),
                       Kubectl(), "__complete", "ayatori", "--kubeconfig", TestenvVar("KUBECONFIG"),
                       "-n", Namespace(), "describe", "kcomp-"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(Lines(r.out), ElementsAre("kcomp-one", ":4")) << r.err;
}

// A kubeconfig whose user is an exec credential plugin (as on EKS, GKE, AKS): a script printing
// an ExecCredential with the test control plane's admin token.
TEST_F(KubectlAyatoriTest, ExecPluginUsersWorkAndFailingPluginsSayWhy) {
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("exec-user", "Running"));
  const auto dir = std::filesystem::path(RequiredEnv("AYATORI_BINARY_DIR")) / "run" / "plugin";
  std::filesystem::create_directories(dir);
  const std::string token = TestenvVar("TESTENV_TOKEN");
  auto writePlugin = [&](const std::string& name, const std::string& body) {
    std::string path = (dir / name).string();
    std::ofstream(path) << "#!/bin/sh\n" << body;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  };
  auto writeConfig = [&](const std::string& name, const std::string& plugin) {
    std::string path = (dir / name).string();
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                           "clusters: [{name: c, cluster: {server: '"
                        << TestenvVar("TESTENV_API") << "', certificate-authority: '"
                        << TestenvVar("TESTENV_CA")
                        << "'}}]\nusers:\n- name: sso-user\n  user:\n    exec:\n"
                           "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                           "      command: "
                        << plugin
                        << "\ncontexts: [{name: c, context: {cluster: c, user: sso-user}}]\n";
    return path;
  };
  std::string good = writePlugin("exec-good.sh",
                                 "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                                 "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"" +
                                     token + "\"}}'\n");
  auto r = Plugin({"get", "-A"}, "", writeConfig("exec-good.kubeconfig", good));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("exec-user"));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr(token)));

  // A failing plugin: the error names the user and the command, quotes its stderr, never stdout.
  std::string failing =
      writePlugin("exec-fail.sh", "echo " + token + "\necho 'SSO session expired' >&2\nexit 2\n");
  r = Plugin({"get", "-A"}, "", writeConfig("exec-fail.kubeconfig", failing));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("user \"sso-user\""));
  EXPECT_THAT(r.err, HasSubstr(failing));
  EXPECT_THAT(r.err, HasSubstr("SSO session expired"));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr(token)));

  // A plugin that prints 100 MiB is stopped at the limit, quickly and with a bounded message.
  std::string flood = writePlugin("exec-flood.sh", "head -c 104857600 /dev/zero | tr '\\0' x\n");
  const auto begin = std::chrono::steady_clock::now();
  r = Plugin({"get", "-A"}, "", writeConfig("exec-flood.kubeconfig", flood));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("printed more than"));
  EXPECT_LT(r.err.size(), 4096U);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(60));
}

TEST_F(KubectlAyatoriTest, ErrorsSayWhatToDo) {
  // A Job that does not exist, for every verb that names one.
  for (const std::vector<std::string>& args : {std::vector<std::string>{"get", "nope"},
                                               {"describe", "nope"},
                                               {"cancel", "nope"},
                                               {"wait", "nope"},
                                               {"confirm-lost", "nope", "--yes"},
                                               {"logs", "nope"}}) {
    SCOPED_TRACE(args[0]);
    std::vector<std::string> full = args;
    full.insert(full.end(), {"-n", Namespace()});
    auto r = Plugin(full);
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_EQ(r.err, "error: job \"nope\" not found in namespace \"" + Namespace() +
                         "\": list the namespace's Jobs with `kubectl ayatori get -n " +
                         Namespace() + "`, or name another namespace with -n\n");
  }
  // The log API is not served by this control plane.
  ASSERT_NO_FATAL_FAILURE(CreateJobIn("logs", "Running"));
  auto r = Plugin({"logs", "logs", "-n", Namespace()});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("the Job log API is not installed in this cluster"));
  EXPECT_THAT(r.err, HasSubstr("/namespaces/" + Namespace() + "/jobs/logs/log answered 404"));

  // Bad kubeconfigs: missing, not YAML, and one whose server is down.
  const auto dir = std::filesystem::path(RequiredEnv("AYATORI_BINARY_DIR")) / "run" / "plugin";
  std::filesystem::create_directories(dir);
  r = Plugin({"get"}, "", (dir / "missing").string());
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("error: kubeconfig " + (dir / "missing").string()));
  EXPECT_THAT(r.err, HasSubstr("Point --kubeconfig or KUBECONFIG at a valid kubeconfig file"));
  std::ofstream(dir / "garbage") << "{{{ not yaml";
  r = Plugin({"get"}, "", (dir / "garbage").string());
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr((dir / "garbage").string()));
  std::ofstream(dir / "down") << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                 "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                                 "users: [{name: u, user: {token: t}}]\n"
                                 "contexts: [{name: c, context: {cluster: c, user: u}}]\n";
  r = Plugin({"get"}, "", (dir / "down").string());
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("Is the cluster running"));

  // A user without access to Jobs (the test control plane's certificate user).
  std::ofstream(dir / "user") << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                 "clusters: [{name: c, cluster: {server: '"
                              << TestenvVar("TESTENV_API") << "', certificate-authority: '"
                              << TestenvVar("TESTENV_CA")
                              << "'}}]\nusers: [{name: u, user: {client-certificate: '"
                              << TestenvVar("TESTENV_USER_CERT") << "', client-key: '"
                              << TestenvVar("TESTENV_USER_KEY")
                              << "'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n";
  r = Plugin({"get", "-n", Namespace()}, "", (dir / "user").string());
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("forbidden"));
  EXPECT_THAT(r.err, HasSubstr("Ask your cluster administrator for access (RBAC)"));

  // Usage errors exit 2.
  r = Plugin({"get", "-o", "xml"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_THAT(r.err, StartsWith("error: --output \"xml\" is not supported: use one of json, yaml, "
                                "name, wide, jsonpath=TEMPLATE"));
}

}  // namespace
}  // namespace ayatori::testing
