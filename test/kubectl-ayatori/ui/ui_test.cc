// `kubectl ayatori ui` (cmd/kubectl-ayatori/ui) as the user runs it, against the real test
// control plane (kube-apiserver + etcd, no controller): the binary prints its URL, and httplib's
// client plays the page: the token exchanged for the cookie, the Job list with the states `get`
// shows, a failed Job's details, cancel as `kubectl ayatori cancel` sends it, and a user
// without access to Jobs answered 403 as its own error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "test/integration/crd_kubectl.h"
#include "test/support/controller_process.h"
#include "test/support/process.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kJobs = "jobs.execution.ayatori.ddupan.top";

std::string PluginBinary() {
  return RequiredEnv("AYATORI_BINARY_DIR") + "/cmd/kubectl-ayatori/kubectl-ayatori";
}

std::filesystem::path RunDir() {
  auto dir = std::filesystem::path(RequiredEnv("AYATORI_BINARY_DIR")) / "run" / "plugin-ui";
  std::filesystem::create_directories(dir);
  return dir;
}

json Cond(const char* type, const char* status, const char* reason) {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", std::string(reason) + " (set by the test)"},
          {"lastTransitionTime", "2026-01-01T00:00:00Z"}};
}

// A running `kubectl ayatori ui`, its port and token read from the URL it printed.
struct Ui {
  ControllerProcess process;
  int port = 0;
  std::string token;

  void Start(const std::vector<std::string>& args, const std::string& kubeconfig,
             const std::string& logName) {
    std::vector<std::string> argv = {PluginBinary(), "--kubeconfig", kubeconfig, "ui",
                                     "--no-browser"};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string log = (RunDir() / logName).string();
    std::filesystem::remove(log);
    ASSERT_TRUE(process.Spawn(argv, log).ok());
    const std::regex url(R"(http://127\.0\.0\.1:([0-9]+)/\?token=([0-9a-f]{64}))");
    std::smatch m;
    ASSERT_TRUE(Eventually(
        [&] {
          const std::string text = process.Log();
          if (!std::regex_search(text, m, url)) return false;
          port = std::stoi(m[1]);
          token = m[2];
          return true;
        },
        std::chrono::seconds(30), std::chrono::milliseconds(50)))
        << process.Log();
  }

  httplib::Headers Page() const {
    return {{"Cookie", "ayatori-ui-" + std::to_string(port) + "=" + token}, {"X-Ayatori-UI", "1"}};
  }

  json GetJson(const std::string& path, int expected = 200) const {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Get(path, Page());
    EXPECT_TRUE(res) << path;
    if (!res) return {};
    EXPECT_EQ(res->status, expected) << path << ": " << res->body;
    return json::parse(res->body, nullptr, false);
  }
};

class UiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(InstallCrds());
    ns_ = new std::string(CreateTestNamespace("plugin-ui"));
  }
  static void TearDownTestSuite() {
    (void)RunKubectl({"delete", "namespace", *ns_, "--wait=false"});
    delete ns_;
    ns_ = nullptr;
  }

  static void CreateJob(const std::string& name, const json& status) {
    auto r = RunKubectl({"create", "-f", "-"},
                        "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\n"
                        "metadata: {name: " +
                            name + ", namespace: " + *ns_ +
                            "}\nspec: {task: {image: busybox, args: [echo, hi], env: [{name: "
                            "TOKEN, value: s3cr3t-value}]}}\n");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    r = RunKubectl({"patch", kJobs, name, "-n", *ns_, "--subresource=status", "--type=merge", "-p",
                    json{{"status", status}}.dump()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  static std::string* ns_;
};

std::string* UiTest::ns_ = nullptr;

json Running() {
  return {{"conditions",
           {Cond("Accepted", "True", "Valid"), Cond("Scheduled", "True", "BackendCreated"),
            Cond("Succeeded", "Unknown", "Running")}},
          {"startTime", "2026-01-01T00:00:01Z"}};
}

json Failed() {
  return {{"conditions",
           {Cond("Accepted", "True", "Valid"), Cond("Scheduled", "True", "BackendCreated"),
            Cond("Succeeded", "False", "ProcessFailed")}},
          {"startTime", "2026-01-01T00:00:01Z"},
          {"completionTime", "2026-01-01T00:00:02Z"},
          {"result", {{"exitCode", 7}, {"reason", "ProcessFailed"}}}};
}

TEST_F(UiTest, ServesTheJobsOfTheNamespaceAsGetShowsThem) {
  ASSERT_NO_FATAL_FAILURE(CreateJob("ui-running", Running()));
  ASSERT_NO_FATAL_FAILURE(CreateJob("ui-failed", Failed()));
  Ui ui;
  ASSERT_NO_FATAL_FAILURE(ui.Start({"-n", *ns_}, TestenvVar("KUBECONFIG"), "list.log"));

  // The printed URL signs the browser in, then leaves the address bar.
  httplib::Client client("127.0.0.1", ui.port);
  auto signIn = client.Get("/?token=" + ui.token);
  ASSERT_TRUE(signIn);
  EXPECT_EQ(signIn->status, 303);
  EXPECT_THAT(signIn->get_header_value("Set-Cookie"), HasSubstr("SameSite=Strict"));
  auto refused = client.Get("/api/jobs", {{"X-Ayatori-UI", "1"}});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);

  const json config = ui.GetJson("/api/config");
  EXPECT_EQ(config["namespace"], *ns_);
  const json jobs = ui.GetJson("/api/jobs?namespace=" + *ns_);
  std::map<std::string, json> byName;
  for (const auto& item : jobs["items"]) byName[item["name"]] = item;
  ASSERT_EQ(byName.count("ui-running"), 1u) << jobs.dump();
  ASSERT_EQ(byName.count("ui-failed"), 1u) << jobs.dump();
  EXPECT_EQ(byName["ui-running"]["state"], "Running");
  EXPECT_EQ(byName["ui-failed"]["state"], "Failed");
  EXPECT_EQ(byName["ui-failed"]["reason"], "ProcessFailed");
  EXPECT_EQ(byName["ui-failed"]["exit"], "7");
  EXPECT_EQ(byName["ui-failed"]["namespace"], *ns_);
  // The same cells as `kubectl ayatori get` prints.
  auto get = RunProcess(
      {PluginBinary(), "--kubeconfig", TestenvVar("KUBECONFIG"), "get", "ui-failed", "-n", *ns_});
  ASSERT_EQ(get.exitCode, 0) << get.err;
  const auto words = Words(Lines(get.out).at(1));
  EXPECT_EQ(words.at(1), byName["ui-failed"]["state"]);
  EXPECT_EQ(words.at(3), byName["ui-failed"]["reason"]);
  EXPECT_EQ(words.at(4), byName["ui-failed"]["exit"]);

  // A failed Job's details say why, without env values.
  const json failed = ui.GetJson("/api/namespaces/" + *ns_ + "/jobs/ui-failed");
  EXPECT_EQ(failed["row"]["state"], "Failed");
  EXPECT_THAT(failed["why"].get<std::string>(), HasSubstr("ProcessFailed"));
  EXPECT_THAT(failed["describe"].get<std::string>(), HasSubstr("TOKEN (literal)"));
  EXPECT_THAT(failed.dump(), Not(HasSubstr("s3cr3t-value")));
  EXPECT_TRUE(ui.GetJson("/api/namespaces/" + *ns_ + "/jobs/ui-failed/events")["items"].is_array());
  const json missing = ui.GetJson("/api/namespaces/" + *ns_ + "/jobs/nope", 404);
  EXPECT_EQ(missing["error"]["reason"], "NotFound");
  const json namespaces = ui.GetJson("/api/namespaces");
  EXPECT_THAT(namespaces["items"].get<std::vector<std::string>>(), ::testing::Contains(*ns_));
  EXPECT_TRUE(ui.GetJson("/api/classes")["items"].is_array());

  // Cancel: the patch `kubectl ayatori cancel` sends; a finished Job is left alone.
  httplib::Headers post = ui.Page();
  post.emplace("Origin", "http://127.0.0.1:" + std::to_string(ui.port));
  auto cancelled =
      client.Post("/api/namespaces/" + *ns_ + "/jobs/ui-running/cancel", post, "", "text/plain");
  ASSERT_TRUE(cancelled);
  ASSERT_EQ(cancelled->status, 200) << cancelled->body;
  auto desired =
      RunKubectl({"get", kJobs, "ui-running", "-n", *ns_, "-o", "jsonpath={.spec.desiredState}"});
  EXPECT_EQ(desired.out, "Cancelled");
  auto finished =
      client.Post("/api/namespaces/" + *ns_ + "/jobs/ui-failed/cancel", post, "", "text/plain");
  ASSERT_TRUE(finished);
  EXPECT_EQ(json::parse(finished->body)["cancelled"], false);
  auto untouched =
      RunKubectl({"get", kJobs, "ui-failed", "-n", *ns_, "-o", "jsonpath={.spec.desiredState}"});
  EXPECT_NE(untouched.out, "Cancelled");

  // The log API is not served by this control plane: the stream is one error event.
  auto log = client.Get("/api/namespaces/" + *ns_ + "/jobs/ui-running/log", ui.Page());
  ASSERT_TRUE(log);
  EXPECT_EQ(log->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_THAT(log->body, HasSubstr("event: error\ndata: {\"code\":404"));
  EXPECT_TRUE(ui.process.Running());
  EXPECT_TRUE(ui.process.Stop(std::chrono::seconds(10))) << "SIGTERM ends it";
  EXPECT_THAT(ui.process.Log(), Not(HasSubstr("s3cr3t-value")));
}

TEST_F(UiTest, AUserWithoutAccessSeesForbidden) {
  const auto path = RunDir() / "user.kubeconfig";
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                         "clusters: [{name: c, cluster: {server: '"
                      << TestenvVar("TESTENV_API") << "', certificate-authority: '"
                      << TestenvVar("TESTENV_CA")
                      << "'}}]\nusers: [{name: u, user: {client-certificate: '"
                      << TestenvVar("TESTENV_USER_CERT") << "', client-key: '"
                      << TestenvVar("TESTENV_USER_KEY")
                      << "'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n";
  Ui ui;
  ASSERT_NO_FATAL_FAILURE(ui.Start({"-n", *ns_}, path.string(), "forbidden.log"));
  const json jobs = ui.GetJson("/api/jobs?namespace=" + *ns_, 403);
  EXPECT_EQ(jobs["error"]["code"], 403);
  EXPECT_EQ(jobs["error"]["reason"], "Forbidden");
  EXPECT_THAT(jobs["error"]["message"].get<std::string>(), HasSubstr("forbidden"));
  const json job = ui.GetJson("/api/namespaces/" + *ns_ + "/jobs/ui-failed", 403);
  EXPECT_EQ(job["error"]["reason"], "Forbidden");
}

TEST_F(UiTest, RefusesAnAddressThatIsNotLoopback) {
  auto r = RunProcess({PluginBinary(), "--kubeconfig", TestenvVar("KUBECONFIG"), "ui",
                       "--no-browser", "--address", "0.0.0.0"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("is not a loopback address"));
}

}  // namespace
}  // namespace ayatori::testing
