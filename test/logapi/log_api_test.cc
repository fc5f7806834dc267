#include "logapi/log_api.h"

#include <gtest/gtest.h>

namespace ayatori::logapi {
namespace {

using nlohmann::json;

TEST(ParseRoute, KnowsTheDiscoveryPathsAndTheLogSubresource) {
  EXPECT_EQ(ParseRoute("/apis").kind, Route::Kind::kApiGroupList);
  EXPECT_EQ(ParseRoute("/apis/logs.execution.ayatori.ddupan.top").kind, Route::Kind::kApiGroup);
  EXPECT_EQ(ParseRoute("/apis/logs.execution.ayatori.ddupan.top/v1alpha1").kind,
            Route::Kind::kApiResourceList);
  Route r = ParseRoute(
      "/apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/ci/jobs/"
      "hello.x-1/log");
  EXPECT_EQ(r.kind, Route::Kind::kJobLog);
  EXPECT_EQ(r.namespace_, "ci");
  EXPECT_EQ(r.name, "hello.x-1");
}

TEST(ParseRoute, EverythingElseIsUnknown) {
  for (const char* path : {
           "/",
           "/api/v1",
           "/apis/execution.ayatori.ddupan.top/v1alpha1",
           "/apis/logs.execution.ayatori.ddupan.top/v1",
           "/apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/ci/jobs/x",
           "/apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/ci/jobs/x/exec",
           "/apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/CI/jobs/x/log",
           "/apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/ci/jobs/../log",
           "/apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/a.b/jobs/x/log",
       }) {
    EXPECT_EQ(ParseRoute(path).kind, Route::Kind::kUnknown) << path;
  }
}

TEST(Discovery, ServesTheLogSubresourceOfJobsInItsOwnGroup) {
  json list = ApiResourceList();
  EXPECT_EQ(list["groupVersion"], "logs.execution.ayatori.ddupan.top/v1alpha1");
  ASSERT_EQ(list["resources"].size(), 1u);
  EXPECT_EQ(list["resources"][0]["name"], "jobs/log");
  EXPECT_EQ(list["resources"][0]["namespaced"], true);
  EXPECT_EQ(list["resources"][0]["verbs"], json::array({"get"}));
  EXPECT_EQ(ApiGroup()["preferredVersion"]["version"], "v1alpha1");
  EXPECT_EQ(ApiGroupList()["groups"][0]["name"], kGroup);
}

TEST(ParseLogQuery, ReadsEveryOption) {
  auto o = ParseLogQuery(
      {{"follow", "true"}, {"tailLines", "10"}, {"sinceSeconds", "60"}, {"timestamps", "1"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->follow);
  EXPECT_TRUE(o->timestamps);
  EXPECT_EQ(o->tailLines, 10);
  EXPECT_EQ(o->sinceSeconds, 60);
  auto none = ParseLogQuery({{"pretty", "x"}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->follow);
  EXPECT_FALSE(none->tailLines);
}

TEST(ParseLogQuery, NamesTheBadParameter) {
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"tailLines", "-1"},
                                                        {"tailLines", "ten"},
                                                        {"sinceSeconds", "0"},
                                                        {"sinceSeconds", "5s"},
                                                        {"follow", "yes"}}) {
    auto o = ParseLogQuery({{key, value}});
    ASSERT_FALSE(o.ok()) << key << "=" << value;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(o.status().message().find(key), std::string::npos);
  }
}

TEST(StatusDocument, IsAKubernetesStatus) {
  json s = StatusDocument(403, "Forbidden", "no", "hello");
  EXPECT_EQ(s["kind"], "Status");
  EXPECT_EQ(s["status"], "Failure");
  EXPECT_EQ(s["code"], 403);
  EXPECT_EQ(s["reason"], "Forbidden");
  EXPECT_EQ(s["details"]["name"], "hello");
}

TEST(SubjectAccessReview, AsksForGetOnJobsLogOfTheLogGroupAsTheCaller) {
  UserInfo user{"alice", {"devs"}, {{"scopes", {"a"}}}};
  json r = LogSubjectAccessReview(user, "ci", "hello");
  EXPECT_EQ(r["kind"], "SubjectAccessReview");
  EXPECT_EQ(r["spec"]["user"], "alice");
  EXPECT_EQ(r["spec"]["groups"], json::array({"devs"}));
  EXPECT_EQ(r["spec"]["extra"]["scopes"], json::array({"a"}));
  const json& a = r["spec"]["resourceAttributes"];
  EXPECT_EQ(a["verb"], "get");
  EXPECT_EQ(a["group"], kGroup);
  EXPECT_EQ(a["resource"], "jobs");
  EXPECT_EQ(a["subresource"], "log");
  EXPECT_EQ(a["namespace"], "ci");
  EXPECT_EQ(a["name"], "hello");
}

TEST(SubjectAccessReview, VerdictFollowsStatusAllowed) {
  UserInfo user{"bob", {}, {}};
  EXPECT_TRUE(ReviewVerdict({{"status", {{"allowed", true}}}}, user, "ci", "hello").ok());
  Status denied = ReviewVerdict({{"status", {{"allowed", false}, {"reason", "no RBAC rule"}}}},
                                user, "ci", "hello");
  EXPECT_EQ(denied.code(), StatusCode::kForbidden);
  EXPECT_NE(denied.message().find("User \"bob\" cannot get resource \"jobs/log\""),
            std::string::npos);
  EXPECT_NE(denied.message().find("no RBAC rule"), std::string::npos);
  EXPECT_EQ(ReviewVerdict(json::object(), user, "ci", "hello").code(), StatusCode::kForbidden);
  EXPECT_EQ(
      ReviewVerdict({{"status", {{"allowed", true}, {"denied", true}}}}, user, "ci", "x").code(),
      StatusCode::kForbidden);
}

// Here for want of an adapters unit test of its own: the tail of a text kept whole (OpenSandbox).
TEST(LastLinesOffset, CountsLinesLikeKubectlTail) {
  EXPECT_EQ(LastLinesOffset("a\nb\nc\n", 2), 2u);
  EXPECT_EQ(LastLinesOffset("a\nb\nc", 2), 2u);
  EXPECT_EQ(LastLinesOffset("a\nb\n", 5), 0u);
  EXPECT_EQ(LastLinesOffset("a\nb\n", 0), 4u);
  EXPECT_EQ(LastLinesOffset("", 3), 0u);
}

// A transport error names the engine's address; the reader learns only the category.
TEST(BackendErrorForReader, AnUnreachableBackendIsNotNamedToTheReader) {
  const Status engine(StatusCode::kUnavailable,
                      "GET http://127.0.0.1:2375/v1.43/containers/abc/logs: Failed to connect to "
                      "127.0.0.1 port 2375 after 0 ms: Couldn't connect to server");
  Status s = BackendErrorForReader(engine, "job \"hello\"", "docker");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message().find("127.0.0.1"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("2375"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("docker backend could not be reached"), std::string::npos);
  EXPECT_NE(s.message().find("(unreachable)"), std::string::npos) << s.message();

  const Status socket(StatusCode::kDeadlineExceeded,
                      "unix:///run/secret-engine/docker.sock: Operation timed out");
  s = BackendErrorForReader(socket, "job \"hello\"", "docker");
  EXPECT_EQ(s.message().find("/run/secret-engine"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("(timed out)"), std::string::npos) << s.message();

  const Status server(StatusCode::kServerError, "https://sandbox.internal:8443/v1: HTTP 502");
  s = BackendErrorForReader(server, "job \"hello\"", "opensandbox");
  EXPECT_EQ(s.message().find("sandbox.internal"), std::string::npos) << s.message();
}

TEST(BackendErrorForReader, ErrorsAboutTheReadItselfKeepTheirMessage) {
  for (StatusCode code : {StatusCode::kNotFound, StatusCode::kFailedPrecondition,
                          StatusCode::kInvalidArgument, StatusCode::kForbidden}) {
    const Status refused(code, "container main is waiting to start: ContainerCreating");
    Status s = BackendErrorForReader(refused, "job \"hello\"", "kubernetes");
    EXPECT_EQ(s.code(), code);
    EXPECT_EQ(s.message(), refused.message());
  }
  EXPECT_TRUE(BackendErrorForReader(Status::Ok(), "job", "docker").ok());
}

}  // namespace
}  // namespace ayatori::logapi
