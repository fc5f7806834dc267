// `kubectl ayatori ui`'s server (cmd/kubectl-ayatori/ui/server.h) on 127.0.0.1, asked by
// httplib's client as a browser (or an attacker's page) would ask it, with FakeKubeClient as the
// cluster: the guard's refusals as the server answers them, the headers of every answer, the JSON
// API (the same row as `get`, a 403 as its own error, cancel's patch) and the log's framing.
#include "server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <condition_variable>
#include <mutex>

#include "api/json.h"
#include "assets.h"
#include "controller/kinds.h"
#include "format.h"
#include "kube/testing/fake_kube_client.h"
#include "statemachine/statemachine.h"

namespace ayatori::plugin::ui {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const std::string kToken(64, 'f');

api::Job FailedJob() {
  api::Job job;
  job.metadata.name = "broken";
  job.metadata.namespace_ = "ci";
  job.spec.task.image = "busybox";
  job.spec.task.env = {{"PASSWORD", "hunter2", std::nullopt}};
  const api::Time t = api::ParseTime("2026-12-01T12:00:00Z").value();
  job.status.conditions = {
      {"Accepted", api::ConditionStatus::kTrue, "Valid", "", 1, t},
      {"Scheduled", api::ConditionStatus::kTrue, "BackendCreated", "", 1, t},
      {"Succeeded", api::ConditionStatus::kFalse, "ProcessFailed", "exit code 3", 1, t}};
  job.status.startTime = t;
  job.status.completionTime = t;
  job.status.result = api::JobResult{3, "ProcessFailed"};
  return job;
}

api::Job RunningJob() {
  api::Job job = FailedJob();
  job.metadata.name = "running";
  job.status.conditions.back() = {"Succeeded", api::ConditionStatus::kUnknown,
                                  "Running",   "",
                                  1,           job.status.conditions.back().lastTransitionTime};
  job.status.completionTime.reset();
  job.status.result.reset();
  return job;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const api::Job& job : {FailedJob(), RunningJob()}) {
      auto created = client_.Create(controller::kJobs, "ci", api::ToJson(job), {});
      ASSERT_TRUE(created.ok());
      json withStatus = *created;  // Create drops the status, as the API server does
      withStatus["status"] = api::ToJson(job)["status"];
      ASSERT_TRUE(client_.UpdateStatus(controller::kJobs, "ci", withStatus, {}).ok());
    }
    ServerOptions options;
    options.namespace_ = "ci";
    server_ = std::make_unique<Server>(
        client_, [this](auto path, auto& stop, auto& onData) { return Stream(path, stop, onData); },
        options, kToken);
    ASSERT_TRUE(server_->Start().ok());
    host_ = "127.0.0.1:" + std::to_string(server_->port());
    http_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  // The server stops (and joins its threads) before the fields its stream reads are destroyed:
  // members go in reverse order of declaration, and those fields come after server_.
  void TearDown() override {
    http_.reset();
    server_.reset();
  }

  // The log stream's stand-in. It runs on a server thread; the test sets its script and reads
  // what it was asked under mu_ (TSan sees no order through the loopback socket between them).
  Status Stream(std::string_view path, const std::stop_token&,
                const std::function<bool(std::string_view)>& onData) {
    std::vector<std::string> chunks;
    Status status;
    {
      std::lock_guard lock(mu_);
      streamedPath_ = std::string(path);
      chunks = chunks_;
      status = streamStatus_;
    }
    for (const auto& chunk : chunks) {
      if (!onData(chunk)) return Status::Ok();
    }
    return status;
  }

  // What the stream answers to the next log request: these chunks, then `status`.
  void ScriptStream(std::vector<std::string> chunks, Status status = Status::Ok()) {
    std::lock_guard lock(mu_);
    chunks_ = std::move(chunks);
    streamStatus_ = std::move(status);
  }

  std::string StreamedPath() {
    std::lock_guard lock(mu_);
    return streamedPath_;
  }

  // What the page sends once signed in.
  httplib::Headers Page() const {
    return {{"Cookie", "ayatori-ui-" + std::to_string(server_->port()) + "=" + kToken},
            {kApiHeader, "1"}};
  }

  kube::testing::FakeKubeClient client_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> http_;
  std::string host_;
  std::mutex mu_;
  std::vector<std::string> chunks_;
  Status streamStatus_;
  std::string streamedPath_;
};

TEST_F(ServerTest, ExchangesTheTokenForAStrictHttpOnlyCookie) {
  auto res = http_->Get("/?token=" + kToken);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 303);
  EXPECT_EQ(res->get_header_value("Location"), "/");  // the token leaves the address bar
  const std::string cookie = res->get_header_value("Set-Cookie");
  EXPECT_THAT(cookie, HasSubstr("HttpOnly"));
  EXPECT_THAT(cookie, HasSubstr("SameSite=Strict"));
  EXPECT_THAT(cookie, HasSubstr(kToken));

  auto page = http_->Get("/", {{"Cookie", cookie.substr(0, cookie.find(';'))}});
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_THAT(page->body, HasSubstr("<script type=\"module\" src=\"/static/app.js\">"));
}

TEST_F(ServerTest, RefusesAWrongOrMissingToken) {
  for (const std::string& path : std::vector<std::string>{
           "/", "/?token=" + std::string(64, 'e'), "/?token=", "/api/jobs", "/static/app.js"}) {
    auto res = http_->Get(path, {{kApiHeader, "1"}});
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 401) << path;
    EXPECT_EQ(res->get_header_value("Set-Cookie"), "") << path;
    EXPECT_THAT(res->body, HasSubstr("not signed in")) << path;
  }
}

TEST_F(ServerTest, RefusesAnotherHostEvenWithTheCookie) {
  httplib::Headers headers = Page();
  headers.emplace("Host", "rebound.evil.example:" + std::to_string(server_->port()));
  auto res = http_->Get("/api/jobs", headers);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 421);
  EXPECT_THAT(res->body, Not(HasSubstr("broken")));
}

TEST_F(ServerTest, RefusesAForeignOrigin) {
  httplib::Headers headers = Page();
  headers.emplace("Origin", "http://evil.example");
  auto res = http_->Post("/api/namespaces/ci/jobs/running/cancel", headers, "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_EQ(client_.CountActions("patch"), 0u);
  auto read = http_->Get("/api/jobs", headers);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, 403);
}

TEST_F(ServerTest, RefusesAnApiCallWithoutTheHeader) {
  httplib::Headers headers = {
      {"Cookie", "ayatori-ui-" + std::to_string(server_->port()) + "=" + kToken}};
  auto res = http_->Get("/api/jobs", headers);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_THAT(res->body, HasSubstr(kApiHeader));
}

TEST_F(ServerTest, EveryAnswerHasTheStrictPolicyAndNoCors) {
  httplib::Headers evil = Page();
  evil.emplace("Origin", "http://evil.example");
  for (const auto& [path, headers] : std::vector<std::pair<std::string, httplib::Headers>>{
           {"/", Page()}, {"/api/jobs", Page()}, {"/api/jobs", {}}, {"/api/jobs", evil}}) {
    auto res = http_->Get(path, headers);
    ASSERT_TRUE(res) << path;
    const std::string csp = res->get_header_value("Content-Security-Policy");
    EXPECT_THAT(csp, HasSubstr("script-src 'self'")) << path;
    EXPECT_THAT(csp, HasSubstr("default-src 'none'")) << path;
    EXPECT_THAT(csp, Not(HasSubstr("unsafe-inline"))) << path;
    EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff") << path;
    EXPECT_FALSE(res->has_header("Access-Control-Allow-Origin")) << path;
  }
  auto options = http_->Options("/api/jobs", evil);
  ASSERT_TRUE(options);
  EXPECT_NE(options->status, 200);
  EXPECT_FALSE(options->has_header("Access-Control-Allow-Origin"));
}

TEST_F(ServerTest, ListsJobsWithGetsOwnRow) {
  auto res = http_->Get("/api/jobs?namespace=ci", Page());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  ASSERT_EQ(body["items"].size(), 2u);
  const json& broken = body["items"][0];
  EXPECT_EQ(broken["name"], "broken");
  // The cells of `get -A -o wide`, computed by the same function.
  auto job = api::JobFromJson(client_.Get(controller::kJobs, "ci", "broken").value()).value();
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  const auto cells = JobRowCells(job, {true, true}, now);
  EXPECT_EQ(broken["state"], cells[2]);
  EXPECT_EQ(broken["state"], "Failed");
  EXPECT_EQ(broken["reason"], "ProcessFailed");
  EXPECT_EQ(broken["exit"], "3");
  EXPECT_EQ(body["items"][1]["state"], "Running");
}

TEST_F(ServerTest, AForbiddenListIsItsOwnError) {
  client_.FailNext("list", "*", Status(StatusCode::kForbidden, "jobs is forbidden: User \"u\""));
  auto res = http_->Get("/api/jobs?namespace=ci", Page());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  const json body = json::parse(res->body);
  EXPECT_EQ(body["error"]["reason"], "Forbidden");
  EXPECT_THAT(body["error"]["message"].get<std::string>(), HasSubstr("forbidden"));
}

TEST_F(ServerTest, RefusesNamesThatAreNotNames) {
  auto bad = http_->Get("/api/jobs?namespace=..%2Fx", Page());
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto path = http_->Get("/api/namespaces/CI/jobs/x", Page());
  ASSERT_TRUE(path);
  EXPECT_EQ(path->status, 404);
}

TEST_F(ServerTest, DetailsExplainTheStateWithoutEnvValues) {
  auto res = http_->Get("/api/namespaces/ci/jobs/broken", Page());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  EXPECT_EQ(body["row"]["state"], "Failed");
  EXPECT_THAT(body["why"].get<std::string>(), HasSubstr("ProcessFailed"));
  EXPECT_THAT(body["describe"].get<std::string>(), HasSubstr("PASSWORD (literal)"));
  EXPECT_THAT(res->body, Not(HasSubstr("hunter2")));
  EXPECT_TRUE(body["finished"].get<bool>());

  auto missing = http_->Get("/api/namespaces/ci/jobs/nope", Page());
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(ServerTest, CancelSendsWhatCancelSends) {
  httplib::Headers headers = Page();
  headers.emplace("Origin", "http://" + host_);
  auto res = http_->Post("/api/namespaces/ci/jobs/running/cancel", headers, "", "text/plain");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["cancelled"], true);
  std::vector<json> patches;
  for (const auto& action : client_.Actions()) {
    if (action.verb == "patch") patches.push_back(action.body);
  }
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0], json({{"spec", {{"desiredState", "Cancelled"}}}}));

  auto finished = http_->Post("/api/namespaces/ci/jobs/broken/cancel", headers, "", "text/plain");
  ASSERT_TRUE(finished);
  EXPECT_EQ(json::parse(finished->body)["cancelled"], false);
  EXPECT_EQ(json::parse(finished->body)["state"], "Failed");
}

TEST_F(ServerTest, RefusesALargeBody) {
  httplib::Headers headers = Page();
  headers.emplace("Origin", "http://" + host_);
  auto res = http_->Post("/api/namespaces/ci/jobs/running/cancel", headers,
                         std::string(kMaxRequestBody + 1, 'x'), "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(client_.CountActions("patch"), 0u);
}

// Each event's data is one JSON line: what the task prints cannot end an event or forge one.
TEST_F(ServerTest, RelaysTheLogAsFramedEvents) {
  const std::string euro = "\xe2\x82\xac";
  const std::string script = "<script>alert(1)</script>\n\nevent: end\ndata: {}\n\n";
  ScriptStream({script, euro.substr(0, 1), euro.substr(1) + "\x1b[31mred\x1b[0m\n"});
  auto res = http_->Get("/api/namespaces/ci/jobs/running/log?follow=true&tailLines=10", Page());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_EQ(StreamedPath(), LogPath("ci", "running", {true, 10, std::nullopt}));
  std::string text;
  std::vector<std::string> types;
  size_t pos = 0;
  while (pos < res->body.size()) {
    const size_t end = res->body.find("\n\n", pos);
    ASSERT_NE(end, std::string::npos) << res->body;
    const std::string block = res->body.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = block.find('\n');
    ASSERT_NE(nl, std::string::npos) << block;
    types.push_back(block.substr(7, nl - 7));
    ASSERT_EQ(block.compare(nl + 1, 6, "data: "), 0) << block;
    const json data = json::parse(block.substr(nl + 7));
    if (types.back() == "log") text += data.get<std::string>();
  }
  EXPECT_EQ(types, (std::vector<std::string>{"log", "log", "end"}));
  EXPECT_EQ(text, script + euro + "\x1b[31mred\x1b[0m\n");
}

TEST_F(ServerTest, ALogErrorAfterTheStartIsAnErrorEvent) {
  ScriptStream({"line\n"}, Status(StatusCode::kForbidden, "jobs/log is forbidden"));
  auto res = http_->Get("/api/namespaces/ci/jobs/running/log", Page());
  ASSERT_TRUE(res);
  EXPECT_THAT(res->body, HasSubstr("event: error\ndata: {"));
  EXPECT_THAT(res->body, HasSubstr("\"reason\":\"Forbidden\""));
  auto tail = http_->Get("/api/namespaces/ci/jobs/running/log?tailLines=-1", Page());
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->status, 400);
}

// A client that leaves a followed log of a silent Job: the next heartbeat fails to reach it and
// the read of the log API is stopped, so no server thread waits for output forever.
TEST_F(ServerTest, ALeftSilentLogIsStoppedByItsHeartbeat) {
  server_->Stop();
  ServerOptions options;
  options.namespace_ = "ci";
  options.logHeartbeat = std::chrono::milliseconds(50);
  std::mutex m;
  std::condition_variable changed;
  bool streaming = false, stopped = false;
  server_ = std::make_unique<Server>(
      client_,
      [&](std::string_view, const std::stop_token& stop,
          const std::function<bool(std::string_view)>&) {
        std::unique_lock<std::mutex> lock(m);
        streaming = true;
        changed.notify_all();
        std::condition_variable_any wait;
        wait.wait(lock, stop, [] { return false; });  // a Job that prints nothing
        stopped = true;
        changed.notify_all();
        return Status::Ok();
      },
      options, kToken);
  ASSERT_TRUE(server_->Start().ok());
  httplib::Client http("127.0.0.1", server_->port());
  size_t heartbeats = 0;
  auto res = http.Get("/api/namespaces/ci/jobs/running/log?follow=true", Page(),
                      [&](const char* data, size_t size) {
                        heartbeats += std::string_view(data, size) == ": keep-alive\n\n" ? 1 : 0;
                        return heartbeats < 2;  // the client leaves
                      });
  EXPECT_EQ(heartbeats, 2u);
  std::unique_lock<std::mutex> lock(m);
  EXPECT_TRUE(streaming);
  EXPECT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return stopped; }))
      << "the log API's read was not stopped after the client left";
}

// The page's state filter offers every state DeriveState can give a row (the enum's order).
TEST(AssetsTest, TheStateFilterNamesEveryDerivedState) {
  const Asset* app = FindAsset("/app.js");
  ASSERT_NE(app, nullptr);
  const size_t start = app->body.find("const STATES = [");
  ASSERT_NE(start, std::string_view::npos);
  const std::string_view list = app->body.substr(start, app->body.find("];", start) - start);
  std::string expected;
  for (int s = 0; s <= static_cast<int>(statemachine::State::kDeleting); ++s) {
    if (!expected.empty()) expected += ", ";
    expected +=
        "'" + std::string(statemachine::StateName(static_cast<statemachine::State>(s))) + "'";
  }
  std::string actual(list.substr(list.find('[') + 1));
  std::string flat;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] == '\n') continue;
    if (actual[i] == ' ' && !flat.empty() && flat.back() == ' ') continue;
    flat += actual[i];
  }
  EXPECT_EQ(flat, expected);
}

TEST(ServerStartTest, RefusesAnAddressThatIsNotLoopback) {
  kube::testing::FakeKubeClient client;
  for (const char* address : {"0.0.0.0", "192.168.1.2", "::", "localhost", "127.0.0.1.evil"}) {
    ServerOptions options;
    options.address = address;
    Server server(client, nullptr, options, kToken);
    const Status s = server.Start();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << address;
    EXPECT_THAT(s.message(), HasSubstr("loopback")) << address;
  }
}

TEST(ServerUtf8Test, KeepsACutCharacterForTheNextChunk) {
  std::string carry;
  EXPECT_EQ(TakeCompleteUtf8(carry, "ab\xe2\x82"), "ab");
  EXPECT_EQ(carry, "\xe2\x82");
  EXPECT_EQ(TakeCompleteUtf8(carry, "\xac!"), "\xe2\x82\xac!");
  EXPECT_EQ(carry, "");
}

}  // namespace
}  // namespace ayatori::plugin::ui
