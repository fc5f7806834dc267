#include "kube/rest_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kube/api_error.h"
#include "kube/resource.h"
#include "kube/testing/fake_clock.h"
#include "test/kube/fake_http_transport.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::Contains;
using testing::FakeHttpTransport;
using testing::FakeResponse;
using ::testing::HasSubstr;
using ::testing::Pair;

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                        {"message", message}, {"reason", reason},   {"code", code}}
      .dump();
}

std::string Header(const HttpRequest& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

class RestClientTest : public ::testing::Test {
 protected:
  RestClientTest() {
    RestConfig cfg;
    cfg.server = "https://127.0.0.1:6443";
    cfg.bearerToken = "t0ken";
    RestClientOptions opts;
    opts.qps = 0;  // unlimited: these tests are about requests, not pacing
    opts.clock = &clock_;
    opts.sleep = [this](std::chrono::nanoseconds d) { sleeps_.push_back(d); };
    auto t = std::make_unique<FakeHttpTransport>();
    transport_ = t.get();
    client_ = std::make_unique<RestClient>(cfg, opts, std::move(t));
  }

  testing::FakeClock clock_;
  std::vector<std::chrono::nanoseconds> sleeps_;
  FakeHttpTransport* transport_;
  std::unique_ptr<RestClient> client_;
  const ResourceRef cm_ = ConfigMapsResource();
  const ResourceRef jobs_{"execution.ayatori.ddupan.top", "v1alpha1", "jobs", true};
};

TEST_F(RestClientTest, GetAddressesTheObjectAndSendsTheBearerToken) {
  transport_->Push({200, R"({"kind":"ConfigMap","metadata":{"name":"x"}})"});
  auto obj = client_->Get(cm_, "ns", "x");
  ASSERT_TRUE(obj.ok()) << obj.status().ToString();
  EXPECT_EQ((*obj)["metadata"]["name"], "x");
  HttpRequest r = transport_->LastRequest();
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.url, "https://127.0.0.1:6443/api/v1/namespaces/ns/configmaps/x");
  EXPECT_EQ(Header(r, "Authorization"), "Bearer t0ken");
  EXPECT_EQ(Header(r, "Accept"), "application/json");
  EXPECT_EQ(client_->RequestCount("get", "200"), 1u);
}

TEST_F(RestClientTest, ResourcePathsForGroupsClusterScopeAndSubresources) {
  EXPECT_EQ(ResourcePath(jobs_, "ci", "j1", "status"),
            "/apis/execution.ayatori.ddupan.top/v1alpha1/namespaces/ci/jobs/j1/status");
  EXPECT_EQ(ResourcePath(jobs_, ""), "/apis/execution.ayatori.ddupan.top/v1alpha1/jobs");
  ResourceRef classes{"execution.ayatori.ddupan.top", "v1alpha1", "jobclasses", false};
  EXPECT_EQ(ResourcePath(classes, "ignored", "default"),
            "/apis/execution.ayatori.ddupan.top/v1alpha1/jobclasses/default");
  EXPECT_EQ(ResourcePath(NamespacesResource(), "", "kube-system"),
            "/api/v1/namespaces/kube-system");
  EXPECT_EQ(ResourcePath(cm_, "ns", "a b"), "/api/v1/namespaces/ns/configmaps/a%20b");
  EXPECT_EQ(ObjectKey("ns", "n"), "ns/n");
  EXPECT_EQ(ObjectKey("", "n"), "n");
  EXPECT_EQ(SplitObjectKey("ns/n"), std::make_pair(std::string("ns"), std::string("n")));
  EXPECT_EQ(SplitObjectKey("n"), std::make_pair(std::string(""), std::string("n")));
}

TEST_F(RestClientTest, ListEncodesSelectorsAndPagingAndRestoresItemKinds) {
  transport_->Push({200, R"({"kind":"ConfigMapList","metadata":{"resourceVersion":"42",
      "continue":"tok"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})"});
  ListOptions o;
  o.labelSelector = "app in (a,b),tier!=db";
  o.fieldSelector = "metadata.name=a";
  o.limit = 2;
  auto list = client_->List(cm_, "ns", o);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->resourceVersion, "42");
  EXPECT_EQ(list->continueToken, "tok");
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[0]["kind"], "ConfigMap");
  EXPECT_EQ(list->items[0]["apiVersion"], "v1");
  EXPECT_EQ(transport_->LastRequest().url,
            "https://127.0.0.1:6443/api/v1/namespaces/ns/configmaps?"
            "labelSelector=app%20in%20%28a%2Cb%29%2Ctier%21%3Ddb&"
            "fieldSelector=metadata.name%3Da&limit=2");
}

// Metadata-only lists and watches ask the API server for PartialObjectMetadata by the Accept
// header (what client-go's metadata informers send); everything else asks for plain JSON.
TEST_F(RestClientTest, MetadataOnlyListAndWatchAskForPartialObjectMetadata) {
  transport_->Push({200, R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",
      "metadata":{"resourceVersion":"7"},"items":[{"kind":"PartialObjectMetadata",
      "apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","uid":"u1",
      "resourceVersion":"5"}}]})"});
  ListOptions lo;
  lo.metadataOnly = true;
  auto list = client_->List(ResourceRef{"", "v1", "secrets", true}, "", lo);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(Header(transport_->LastRequest(), "Accept"),
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->items[0]["kind"], "PartialObjectMetadata");  // the item's own kind is kept
  EXPECT_EQ(list->items[0]["apiVersion"], "meta.k8s.io/v1");

  FakeResponse r{200, ""};
  r.chunks.emplace_back(R"({"type":"ADDED","object":{"kind":"PartialObjectMetadata",)"
                        R"("metadata":{"name":"a","resourceVersion":"8"}}})"
                        "\n");
  transport_->Push(r);
  WatchOptions wo;
  wo.metadataOnly = true;
  int events = 0;
  Status s = client_->Watch(ResourceRef{"", "v1", "secrets", true}, "", wo, {},
                            [&](WatchEvent&&) { return ++events > 0; });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(events, 1);
  EXPECT_EQ(Header(transport_->LastRequest(), "Accept"),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1");

  transport_->Push({200, R"({"kind":"ConfigMapList","metadata":{},"items":[]})"});
  ASSERT_TRUE(client_->List(cm_, "ns", ListOptions{}).ok());
  EXPECT_EQ(Header(transport_->LastRequest(), "Accept"), "application/json");
}

TEST_F(RestClientTest, ListAllFollowsContinueTokensWithoutResourceVersion) {
  transport_->Push({200, R"({"metadata":{"resourceVersion":"7","continue":"c1"},
      "items":[{"metadata":{"name":"a"}}]})"});
  transport_->Push(
      {200, R"({"metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"b"}}]})"});
  std::vector<std::string> names;
  ListOptions o;
  o.limit = 1;
  auto rv = ListAll(*client_, cm_, "", o,
                    [&](nlohmann::json&& item) { names.push_back(item["metadata"]["name"]); });
  ASSERT_TRUE(rv.ok());
  EXPECT_EQ(*rv, "7");
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  auto reqs = transport_->Requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].url, "https://127.0.0.1:6443/api/v1/configmaps?limit=1&continue=c1");
}

TEST_F(RestClientTest, ApiErrorsAreDecodedIntoTypedCodes) {
  struct Case {
    int http;
    std::string reason;
    StatusCode want;
  } cases[] = {
      {404, "NotFound", StatusCode::kNotFound},
      {409, "AlreadyExists", StatusCode::kAlreadyExists},
      {409, "Conflict", StatusCode::kConflict},
      {410, "Expired", StatusCode::kGone},
      {410, "Gone", StatusCode::kGone},
      {422, "Invalid", StatusCode::kInvalid},
      {403, "Forbidden", StatusCode::kForbidden},
      {401, "Unauthorized", StatusCode::kUnauthorized},
      {400, "BadRequest", StatusCode::kInvalidArgument},
      {500, "InternalError", StatusCode::kServerError},
      {504, "Timeout", StatusCode::kServerError},
  };
  for (const auto& c : cases) {
    transport_->Push({c.http, StatusBody(c.http, c.reason, "msg for " + c.reason)});
    auto r = client_->Get(cm_, "ns", "x");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.want) << c.http << " " << c.reason;
    EXPECT_EQ(r.status().message(), "msg for " + c.reason);
  }
  EXPECT_EQ(client_->RequestCount("get", "409"), 2u);
}

// Each error class answers with the HTTP status and reason that CodeFor reads back as it.
TEST(HttpErrorFor, IsTheInverseOfCodeFor) {
  for (StatusCode code :
       {StatusCode::kInvalidArgument, StatusCode::kUnauthorized, StatusCode::kForbidden,
        StatusCode::kNotFound, StatusCode::kAlreadyExists, StatusCode::kConflict, StatusCode::kGone,
        StatusCode::kInvalid, StatusCode::kTooManyRequests}) {
    const HttpError http = HttpErrorFor(code);
    EXPECT_EQ(CodeFor(http.code, http.reason), code) << http.code << " " << http.reason;
  }
  EXPECT_EQ(HttpErrorFor(StatusCode::kGone), (HttpError{410, "Gone"}));
  EXPECT_EQ(HttpErrorFor(StatusCode::kFailedPrecondition), (HttpError{400, "BadRequest"}));
  for (StatusCode code :
       {StatusCode::kUnavailable, StatusCode::kDeadlineExceeded, StatusCode::kCancelled}) {
    EXPECT_EQ(HttpErrorFor(code), (HttpError{503, "ServiceUnavailable"}));
  }
  EXPECT_EQ(HttpErrorFor(StatusCode::kServerError), (HttpError{500, "InternalError"}));
  EXPECT_EQ(HttpErrorFor(StatusCode::kInternal), (HttpError{500, "InternalError"}));
}

TEST_F(RestClientTest, InvalidCausesAreDecoded) {
  ApiError e = DecodeApiError(422, R"({"kind":"Status","code":422,"reason":"Invalid",
      "message":"ConfigMap \"Bad\" is invalid","details":{"causes":[
      {"reason":"FieldValueInvalid","message":"bad name","field":"metadata.name"}]}})");
  EXPECT_EQ(e.code, StatusCode::kInvalid);
  ASSERT_EQ(e.causes.size(), 1u);
  EXPECT_EQ(e.causes[0].field, "metadata.name");
  EXPECT_EQ(e.causes[0].reason, "FieldValueInvalid");
}

TEST_F(RestClientTest, NonStatusErrorBodiesStillGiveTheClass) {
  transport_->Push({502, "<html>bad gateway</html>\n"});
  auto r = client_->Get(cm_, "ns", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kServerError);
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr("502"), HasSubstr("bad gateway")));
}

TEST_F(RestClientTest, TransportFailuresAreUnavailableAndCountedAsError) {
  transport_->Push(FakeResponse::Failure(Status(StatusCode::kUnavailable, "connection refused")));
  auto r = client_->Get(cm_, "ns", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(client_->RequestCount("get", "<error>"), 1u);
}

TEST_F(RestClientTest, TooManyRequestsIsRetriedAfterTheAdvisedDelay) {
  transport_->Push({429, StatusBody(429, "TooManyRequests", "slow down"), "2"});
  transport_->Push({200, R"({"metadata":{"name":"x"}})"});
  auto r = client_->Get(cm_, "ns", "x");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(sleeps_.size(), 1u);
  EXPECT_EQ(sleeps_[0], 2s);
  EXPECT_EQ(client_->RequestCount("get", "429"), 1u);
  EXPECT_EQ(client_->RequestCount("get", "200"), 1u);
}

TEST_F(RestClientTest, RetriesAreBoundedAndDelaysClamped) {
  for (int i = 0; i < 10; ++i) {
    transport_->Push({429, StatusBody(429, "TooManyRequests", "slow down"), "3600"});
  }
  auto r = client_->Get(cm_, "ns", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kTooManyRequests);
  EXPECT_EQ(transport_->Requests().size(), 6u);  // 1 + maxRetries (5)
  ASSERT_EQ(sleeps_.size(), 5u);
  for (auto d : sleeps_) EXPECT_EQ(d, 10s);  // clamped to maxRetryAfter
}

TEST_F(RestClientTest, TooManyRequestsWithoutRetryAfterIsNotRetried) {
  transport_->Push({429, StatusBody(429, "TooManyRequests", "slow down")});
  auto r = client_->Get(cm_, "ns", "x");
  EXPECT_EQ(r.status().code(), StatusCode::kTooManyRequests);
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(RestClientTest, ServerErrorWithRetryAfterIsRetried) {
  transport_->Push({503, StatusBody(503, "ServiceUnavailable", "starting"), "1"});
  transport_->Push({201, R"({"metadata":{"name":"x"}})"});
  auto r = client_->Create(cm_, "ns", {{"metadata", {{"name", "x"}}}}, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(sleeps_.size(), 1u);
}

TEST_F(RestClientTest, WritesUseTheRightMethodsPathsAndContentTypes) {
  for (int i = 0; i < 6; ++i) transport_->Push({200, R"({"metadata":{"name":"x"}})"});
  nlohmann::json obj = {{"metadata", {{"name", "x"}, {"resourceVersion", "5"}}}};
  WriteOptions wo;
  wo.fieldManager = "ayatori";
  wo.dryRun = true;
  ASSERT_TRUE(client_->Create(jobs_, "ci", obj, wo).ok());
  ASSERT_TRUE(client_->Update(jobs_, "ci", obj, {}).ok());
  ASSERT_TRUE(client_->UpdateStatus(jobs_, "ci", obj, {}).ok());
  PatchOptions po;
  po.subresource = "status";
  ASSERT_TRUE(client_->Patch(jobs_, "ci", "x", PatchType::kMerge, {{"status", {}}}, po).ok());
  ASSERT_TRUE(client_
                  ->Patch(jobs_, "ci", "x", PatchType::kJson,
                          nlohmann::json::array({{{"op", "test"}, {"path", "/a"}, {"value", 1}}}),
                          {})
                  .ok());
  DeleteOptions d;
  d.preconditionUid = "u1";
  d.preconditionResourceVersion = "5";
  d.propagationPolicy = "Background";
  ASSERT_TRUE(client_->Delete(jobs_, "ci", "x", d).ok());
  auto reqs = transport_->Requests();
  ASSERT_EQ(reqs.size(), 6u);
  const std::string base =
      "https://127.0.0.1:6443/apis/execution.ayatori.ddupan.top/v1alpha1/namespaces/ci/jobs";
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].url, base + "?fieldManager=ayatori&dryRun=All");
  EXPECT_EQ(Header(reqs[0], "Content-Type"), "application/json");
  EXPECT_EQ(reqs[1].method, "PUT");
  EXPECT_EQ(reqs[1].url, base + "/x");
  EXPECT_EQ(nlohmann::json::parse(reqs[1].body)["metadata"]["resourceVersion"], "5");
  EXPECT_EQ(reqs[2].url, base + "/x/status");
  EXPECT_EQ(reqs[3].method, "PATCH");
  EXPECT_EQ(reqs[3].url, base + "/x/status");
  EXPECT_EQ(Header(reqs[3], "Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(Header(reqs[4], "Content-Type"), "application/json-patch+json");
  EXPECT_EQ(reqs[5].method, "DELETE");
  auto body = nlohmann::json::parse(reqs[5].body);
  EXPECT_EQ(body["preconditions"]["uid"], "u1");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "5");
  EXPECT_EQ(body["propagationPolicy"], "Background");
  auto counts = client_->RequestCounts();
  EXPECT_THAT(counts, Contains(Pair(Pair("update", "200"), 2u)));
  EXPECT_THAT(counts, Contains(Pair(Pair("patch", "200"), 2u)));
}

TEST_F(RestClientTest, UpdateWithoutNameIsRejectedLocally) {
  auto r = client_->Update(cm_, "ns", {{"metadata", nlohmann::json::object()}}, {});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(transport_->Requests().empty());
}

TEST_F(RestClientTest, RequestObserverSeesEveryRequestWithItsObject) {
  std::vector<std::string> seen;
  client_->SetRequestObserver([&](const RequestRecord& r) {
    seen.push_back(std::string(r.verb) + " " + std::string(r.resource) + " " +
                   std::string(r.namespace_) + "/" + std::string(r.name) + " " +
                   std::string(r.subresource) + " " + std::to_string(r.httpCode));
  });
  transport_->Push({200, "{}"});
  transport_->Push({409, StatusBody(409, "Conflict", "stale")});
  PatchOptions status;
  status.subresource = "status";
  ASSERT_TRUE(client_->Patch(jobs_, "ci", "j", PatchType::kMerge, {}, status).ok());
  EXPECT_FALSE(client_->Update(cm_, "ns", {{"metadata", {{"name", "c"}}}}, {}).ok());
  EXPECT_THAT(seen,
              ::testing::ElementsAre("patch jobs.execution.ayatori.ddupan.top ci/j status 200",
                                     "update configmaps ns/c  409"));
}

TEST_F(RestClientTest, WatchDecodesEventsSplitAcrossChunks) {
  std::string a = R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})";
  std::string b = R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"2"}}})";
  std::string c = R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})";
  std::string d = R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"10"}}})";
  std::string all = a + "\n" + b + "\n" + c + "\n" + d + "\n";
  FakeResponse r{200, ""};
  for (size_t i = 0; i < all.size(); i += 7) r.chunks.push_back(all.substr(i, 7));
  transport_->Push(r);
  std::vector<std::string> got;
  WatchOptions o;
  o.resourceVersion = "0";
  o.labelSelector = "app=x";
  o.timeoutSeconds = 300;
  Status s = client_->Watch(cm_, "ns", o, {}, [&](WatchEvent&& ev) {
    got.push_back(std::string(WatchEventTypeName(ev.type)) + " " +
                  ev.object["metadata"]["resourceVersion"].get<std::string>());
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_THAT(got, ::testing::ElementsAre("ADDED 1", "MODIFIED 2", "BOOKMARK 9", "DELETED 10"));
  EXPECT_EQ(transport_->LastRequest().url,
            "https://127.0.0.1:6443/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=0&"
            "allowWatchBookmarks=true&labelSelector=app%3Dx&timeoutSeconds=300");
  EXPECT_EQ(transport_->LastRequest().timeout, 330s);
  EXPECT_EQ(client_->RequestCount("watch", "200"), 1u);
}

TEST_F(RestClientTest, WatchErrorEventEndsTheWatchWithItsCode) {
  FakeResponse r{200, ""};
  r.chunks = {R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
              "\n"
              R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired",)"
              R"x("message":"too old resource version: 1 (50)"}})x"
              "\n"
              R"({"type":"ADDED","object":{"metadata":{"name":"never"}}})"
              "\n"};
  transport_->Push(r);
  int events = 0;
  Status s = client_->Watch(cm_, "", {}, {}, [&](WatchEvent&&) {
    ++events;
    return true;
  });
  EXPECT_EQ(s.code(), StatusCode::kGone);
  EXPECT_THAT(s.message(), HasSubstr("too old"));
  EXPECT_EQ(events, 1);
}

TEST_F(RestClientTest, WatchHttpErrorIsDecoded) {
  transport_->Push({410, StatusBody(410, "Expired", "too old")});
  Status s = client_->Watch(cm_, "", {}, {}, [](WatchEvent&&) { return true; });
  EXPECT_EQ(s.code(), StatusCode::kGone);
  transport_->Push({403, StatusBody(403, "Forbidden", "no")});
  s = client_->Watch(cm_, "", {}, {}, [](WatchEvent&&) { return true; });
  EXPECT_EQ(s.code(), StatusCode::kForbidden);
}

TEST_F(RestClientTest, WatchHandlerCanEndTheStream) {
  FakeResponse r{200, ""};
  r.chunks = {R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
              "\n"
              R"({"type":"ADDED","object":{"metadata":{"name":"b"}}})"
              "\n"};
  transport_->Push(r);
  int events = 0;
  Status s = client_->Watch(cm_, "", {}, {}, [&](WatchEvent&&) {
    ++events;
    return false;
  });
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(events, 1);
}

TEST_F(RestClientTest, UndecodableWatchLineIsAnError) {
  FakeResponse r{200, ""};
  r.chunks = {"{not json\n"};
  transport_->Push(r);
  Status s = client_->Watch(cm_, "", {}, {}, [](WatchEvent&&) { return true; });
  EXPECT_EQ(s.code(), StatusCode::kInternal);
}

TEST(RestClientTokenFileTest, RotatedTokenFileIsReadAgain) {
  char tmpl[] = "/tmp/ayatori-token-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::string path = dir + "/token";
  std::ofstream(path) << "first\n";
  RestConfig cfg;
  cfg.server = "https://s";
  cfg.bearerTokenFile = path;
  auto t = std::make_unique<FakeHttpTransport>();
  FakeHttpTransport* transport = t.get();
  RestClientOptions opts;
  opts.qps = 0;
  RestClient client(cfg, opts, std::move(t));
  transport->Push({200, "{}"});
  transport->Push({200, "{}"});
  transport->Push({200, "{}"});
  ASSERT_TRUE(client.Get(ConfigMapsResource(), "ns", "a").ok());
  EXPECT_EQ(Header(transport->LastRequest(), "Authorization"), "Bearer first");
  // Kubelet rotates projected tokens by swapping in a new file.
  std::ofstream(dir + "/token.new") << "second";
  std::filesystem::rename(dir + "/token.new", path);
  ASSERT_TRUE(client.Get(ConfigMapsResource(), "ns", "a").ok());
  EXPECT_EQ(Header(transport->LastRequest(), "Authorization"), "Bearer second");
  // A vanished file keeps the last good token.
  std::filesystem::remove(path);
  ASSERT_TRUE(client.Get(ConfigMapsResource(), "ns", "a").ok());
  EXPECT_EQ(Header(transport->LastRequest(), "Authorization"), "Bearer second");
  std::filesystem::remove_all(dir);
}

}  // namespace

// An exec user: the token is asked of the provider per request, and a 401 makes the client ask
// the plugin again and retry once (like client-go).
TEST_F(RestClientTest, ExecTokenIsAskedPerRequestAndRenewedOnceAfter401) {
  int runs = 0;
  ExecConfig ec;
  ec.user = "u";
  ec.command = "get-token";
  RestConfig cfg;
  cfg.server = "https://127.0.0.1:6443";
  cfg.exec = std::make_shared<ExecCredentialProvider>(
      ec,
      [&runs](const ExecConfig&) -> StatusOr<ExecCredential> {
        ++runs;
        ExecCredential c;
        c.token = "tok-" + std::to_string(runs);
        return c;
      },
      [] { return std::chrono::system_clock::now(); });
  RestClientOptions opts;
  opts.qps = 0;
  auto t = std::make_unique<FakeHttpTransport>();
  FakeHttpTransport* transport = t.get();
  RestClient client(cfg, opts, std::move(t));

  transport->Push({200, R"({"kind":"ConfigMap"})"});
  ASSERT_TRUE(client.Get(cm_, "ns", "x").ok());
  transport->Push({401, StatusBody(401, "Unauthorized", "Unauthorized")});
  transport->Push({200, R"({"kind":"ConfigMap"})"});
  ASSERT_TRUE(client.Get(cm_, "ns", "x").ok());
  auto reqs = transport->Requests();
  ASSERT_EQ(reqs.size(), 3U);
  EXPECT_EQ(Header(reqs[0], "Authorization"), "Bearer tok-1");
  EXPECT_EQ(Header(reqs[1], "Authorization"), "Bearer tok-1");  // cached
  EXPECT_EQ(Header(reqs[2], "Authorization"), "Bearer tok-2");  // re-run after the 401
  EXPECT_EQ(runs, 2);

  // A second 401 in a row is the answer, not a loop.
  transport->Push({401, StatusBody(401, "Unauthorized", "Unauthorized")});
  transport->Push({401, StatusBody(401, "Unauthorized", "Unauthorized")});
  auto denied = client.Get(cm_, "ns", "x");
  EXPECT_FALSE(denied.ok());
  EXPECT_EQ(transport->Requests().size(), 5U);
  EXPECT_EQ(runs, 3);
}

TEST_F(RestClientTest, FailingExecPluginFailsTheRequestWithItsMessage) {
  ExecConfig ec;
  ec.user = "u";
  RestConfig cfg;
  cfg.server = "https://127.0.0.1:6443";
  cfg.exec = std::make_shared<ExecCredentialProvider>(
      ec,
      [](const ExecConfig&) -> StatusOr<ExecCredential> {
        return Status(StatusCode::kUnauthorized, "kubeconfig user \"u\": exec plugin x: failed");
      },
      [] { return std::chrono::system_clock::now(); });
  auto t = std::make_unique<FakeHttpTransport>();
  FakeHttpTransport* transport = t.get();
  RestClient client(cfg, {}, std::move(t));
  auto got = client.Get(cm_, "ns", "x");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("exec plugin x: failed"));
  EXPECT_TRUE(transport->Requests().empty());  // nothing sent without credentials
}

}  // namespace ayatori::kube
