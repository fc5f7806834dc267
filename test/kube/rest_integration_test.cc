// The REST client against the real kube-apiserver: CRUD, every error class, both kinds of auth,
// pagination, subresources, preconditions, watch resume and Gone, connection reuse.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <set>

#include "kube/resource.h"
#include "kube/rest_client.h"
#include "test/kube/integration_util.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;
using ayatori::testing::Eventually;
using ayatori::testing::TestenvVar;
using testing::Client;
using ::testing::HasSubstr;

nlohmann::json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"value", value}}}};
}

class RestIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = Client(testing::AdminConfig());
    ns_ = testing::NewNamespace(*client_, "kube-rest");
  }
  void TearDown() override {
    if (client_ && !ns_.empty()) (void)client_->Delete(NamespacesResource(), "", ns_, {});
  }

  std::unique_ptr<RestClient> client_;
  std::string ns_;
  const ResourceRef cm_ = ConfigMapsResource();
};

TEST_F(RestIntegrationTest, ClientCertificateAndBearerTokenBothAuthenticate) {
  auto version = client_->GetPath("/version");
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ((*version)["major"], "1");

  auto byToken = Client(testing::TokenConfig(TestenvVar("TESTENV_TOKEN")));
  auto list = byToken->List(cm_, ns_, {});
  ASSERT_TRUE(list.ok()) << list.status().ToString();

  auto byCert = Client(testing::CertConfig(TestenvVar("TESTENV_CERT"), TestenvVar("TESTENV_KEY")));
  ASSERT_TRUE(byCert->List(cm_, ns_, {}).ok());

  // The kubeconfig's second context uses the token.
  ConfigLoadOptions o;
  o.context = "testenv-token";
  auto cfg = LoadKubeconfigFile(TestenvVar("KUBECONFIG"), o);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_FALSE(cfg->bearerToken.empty());
  ASSERT_TRUE(Client(*cfg)->List(cm_, ns_, {}).ok());

  auto wrong = Client(testing::TokenConfig("not-a-token"));
  EXPECT_EQ(wrong->List(cm_, ns_, {}).status().code(), StatusCode::kUnauthorized);
}

TEST_F(RestIntegrationTest, TlsVerificationRejectsAServerTheCaDidNotSign) {
  RestConfig cfg = testing::TokenConfig(TestenvVar("TESTENV_TOKEN"));
  cfg.caPem = testing::ReadFileOrFail(TestenvVar("TESTENV_CERT"));  // not the CA
  auto r = Client(cfg)->GetPath("/version");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("certificate"));
}

TEST_F(RestIntegrationTest, ConfigMapCrud) {
  auto created = client_->Create(cm_, ns_, ConfigMap("a", "1"), {});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ((*created)["metadata"]["namespace"], ns_);
  auto got = client_->Get(cm_, ns_, "a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["data"]["value"], "1");

  nlohmann::json next = *got;
  next["data"]["value"] = "2";
  auto updated = client_->Update(cm_, ns_, next, {});
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ((*updated)["data"]["value"], "2");
  EXPECT_NE((*updated)["metadata"]["resourceVersion"], (*got)["metadata"]["resourceVersion"]);

  auto merged = client_->Patch(cm_, ns_, "a", PatchType::kMerge, {{"data", {{"extra", "x"}}}}, {});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ((*merged)["data"]["extra"], "x");

  nlohmann::json ops =
      nlohmann::json::array({{{"op", "test"}, {"path", "/data/value"}, {"value", "2"}},
                             {{"op", "replace"}, {"path", "/data/value"}, {"value", "3"}}});
  auto patched = client_->Patch(cm_, ns_, "a", PatchType::kJson, ops, {});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ((*patched)["data"]["value"], "3");

  auto applied = client_->Patch(cm_, ns_, "b", PatchType::kApply, ConfigMap("b", "ssa"), {});
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ((*applied)["data"]["value"], "ssa");

  ASSERT_TRUE(client_->Delete(cm_, ns_, "a", {}).ok());
  EXPECT_EQ(client_->Get(cm_, ns_, "a").status().code(), StatusCode::kNotFound);
  EXPECT_GE(client_->RequestCount("create", "201"), 1u);
  EXPECT_GE(client_->RequestCount("delete", "200"), 1u);
}

TEST_F(RestIntegrationTest, EveryErrorClassIsDecoded) {
  ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("a", "1"), {}).ok());
  auto v1 = *client_->Get(cm_, ns_, "a");

  EXPECT_EQ(client_->Get(cm_, ns_, "missing").status().code(), StatusCode::kNotFound);

  auto dup = client_->Create(cm_, ns_, ConfigMap("a", "1"), {});
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(dup.status().message(), HasSubstr("already exists"));

  nlohmann::json fresh = v1;
  fresh["data"]["value"] = "2";
  ASSERT_TRUE(client_->Update(cm_, ns_, fresh, {}).ok());
  nlohmann::json stale = v1;
  stale["data"]["value"] = "stale";
  EXPECT_EQ(client_->Update(cm_, ns_, stale, {}).status().code(), StatusCode::kConflict);

  auto invalid = client_->Create(cm_, ns_, ConfigMap("Bad_Name", "1"), {});
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalid);
  EXPECT_THAT(invalid.status().message(), HasSubstr("metadata.name"));

  auto user =
      Client(testing::CertConfig(TestenvVar("TESTENV_USER_CERT"), TestenvVar("TESTENV_USER_KEY")));
  auto forbidden = user->List(cm_, ns_, {});
  EXPECT_EQ(forbidden.status().code(), StatusCode::kForbidden);
  EXPECT_THAT(forbidden.status().message(), HasSubstr("testenv-user"));
  auto tokenUser = Client(testing::TokenConfig(TestenvVar("TESTENV_USER_TOKEN")));
  EXPECT_EQ(tokenUser->Get(cm_, ns_, "a").status().code(), StatusCode::kForbidden);

  DeleteOptions wrongUid;
  wrongUid.preconditionUid = "00000000-0000-0000-0000-000000000000";
  Status s = client_->Delete(cm_, ns_, "a", wrongUid);
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_THAT(s.message(), HasSubstr("UID in the precondition"));
  DeleteOptions wrongRv;
  wrongRv.preconditionResourceVersion = v1["metadata"]["resourceVersion"];
  EXPECT_EQ(client_->Delete(cm_, ns_, "a", wrongRv).code(), StatusCode::kConflict);

  nlohmann::json failingTest =
      nlohmann::json::array({{{"op", "test"}, {"path", "/data/value"}, {"value", "not-the-value"}},
                             {{"op", "replace"}, {"path", "/data/value"}, {"value", "x"}}});
  EXPECT_EQ(client_->Patch(cm_, ns_, "a", PatchType::kJson, failingTest, {}).status().code(),
            StatusCode::kInvalid);
  EXPECT_EQ((*client_->Get(cm_, ns_, "a"))["data"]["value"], "2");

  // The right preconditions delete it.
  DeleteOptions right;
  right.preconditionUid = v1["metadata"]["uid"];
  right.propagationPolicy = "Background";
  EXPECT_TRUE(client_->Delete(cm_, ns_, "a", right).ok());

  EXPECT_EQ(client_->Delete(cm_, ns_, "a", {}).code(), StatusCode::kNotFound);
}

TEST_F(RestIntegrationTest, TooOldResourceVersionIsGoneForListAndWatch) {
  // Events are not served from the watch cache, so etcd compaction is visible at once.
  const ResourceRef ev = EventsResource();
  auto list = client_->List(ev, ns_, {});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  std::string oldRv = list->resourceVersion;
  // A watch resumes *after* its version, so compact at least two revisions later.
  ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("bump1", "1"), {}).ok());
  ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("bump2", "1"), {}).ok());
  int64_t compacted = testing::CompactEtcd();
  ASSERT_GT(compacted, std::stoll(oldRv) + 1);

  ListOptions exact;
  exact.resourceVersion = oldRv;
  exact.resourceVersionMatch = "Exact";
  auto gone = client_->List(ev, ns_, exact);
  EXPECT_EQ(gone.status().code(), StatusCode::kGone) << gone.status().ToString();

  WatchOptions wo;
  wo.resourceVersion = oldRv;
  wo.timeoutSeconds = 10;
  Status w = client_->Watch(ev, ns_, wo, {}, [](WatchEvent&&) { return true; });
  EXPECT_EQ(w.code(), StatusCode::kGone) << w.ToString();
}

TEST_F(RestIntegrationTest, PaginatedListCoversEveryObject) {
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("cm-" + std::to_string(i), "v"), {}).ok());
  }
  ListOptions o;
  o.limit = 10;
  auto page = client_->List(cm_, ns_, o);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.size(), 10u);
  EXPECT_FALSE(page->continueToken.empty());
  uint64_t listsBefore = client_->RequestCount("list", "200");
  std::set<std::string> names;
  auto rv = ListAll(*client_, cm_, ns_, o, [&](nlohmann::json&& item) {
    names.insert(item["metadata"]["name"].get<std::string>());
  });
  ASSERT_TRUE(rv.ok()) << rv.status().ToString();
  EXPECT_FALSE(rv->empty());
  EXPECT_EQ(names.size(), 25u);
  EXPECT_EQ(client_->RequestCount("list", "200") - listsBefore, 3u);  // 10 + 10 + 5
}

TEST_F(RestIntegrationTest, StatusSubresourceAndFinalizers) {
  const ResourceRef crds = CustomResourceDefinitionsResource();
  const ResourceRef widgets{"kubetest.ayatori.ddupan.top", "v1", "widgets", true};
  nlohmann::json crd = {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata", {{"name", "widgets.kubetest.ayatori.ddupan.top"}}},
      {"spec",
       {{"group", "kubetest.ayatori.ddupan.top"},
        {"scope", "Namespaced"},
        {"names", {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"}}},
        {"versions",
         {{{"name", "v1"},
           {"served", true},
           {"storage", true},
           {"subresources", {{"status", nlohmann::json::object()}}},
           {"schema",
            {{"openAPIV3Schema",
              {{"type", "object"},
               {"properties",
                {{"spec", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
                 {"status",
                  {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}}}}}};
  auto created = client_->Create(crds, "", crd, {});
  ASSERT_TRUE(created.ok() || created.status().code() == StatusCode::kAlreadyExists)
      << created.status().ToString();
  nlohmann::json w = {{"apiVersion", "kubetest.ayatori.ddupan.top/v1"},
                      {"kind", "Widget"},
                      {"metadata", {{"name", "w"}, {"finalizers", {"kubetest/hold"}}}},
                      {"spec", {{"size", 1}}}};
  // The new kind is served once the CRD is established.
  StatusOr<nlohmann::json> obj = Status(StatusCode::kNotFound, "");
  ASSERT_TRUE(Eventually(
      [&] {
        obj = client_->Create(widgets, ns_, w, {});
        return obj.ok();
      },
      10s));
  EXPECT_EQ((*obj)["metadata"]["generation"], 1);

  nlohmann::json withStatus = *obj;
  withStatus["status"] = {{"phase", "Ready"}};
  auto st = client_->UpdateStatus(widgets, ns_, withStatus, {});
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ((*st)["status"]["phase"], "Ready");
  EXPECT_EQ((*st)["metadata"]["generation"], 1);  // status writes do not bump the generation

  PatchOptions statusPatch;
  statusPatch.subresource = "status";
  nlohmann::json p = {{"metadata", {{"resourceVersion", (*st)["metadata"]["resourceVersion"]}}},
                      {"status", {{"phase", "Done"}}}};
  auto patched = client_->Patch(widgets, ns_, "w", PatchType::kMerge, p, statusPatch);
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ((*patched)["status"]["phase"], "Done");
  // The same resourceVersion again is now stale: the merge patch is a precondition.
  EXPECT_EQ(client_->Patch(widgets, ns_, "w", PatchType::kMerge, p, statusPatch).status().code(),
            StatusCode::kConflict);

  // Delete leaves it terminating until the finalizer goes.
  ASSERT_TRUE(client_->Delete(widgets, ns_, "w", {}).ok());
  auto terminating = client_->Get(widgets, ns_, "w");
  ASSERT_TRUE(terminating.ok());
  EXPECT_TRUE((*terminating)["metadata"].contains("deletionTimestamp"));
  ASSERT_TRUE(client_
                  ->Patch(widgets, ns_, "w", PatchType::kMerge,
                          {{"metadata", {{"finalizers", nullptr}}}}, {})
                  .ok());
  EXPECT_TRUE(Eventually(
      [&] { return client_->Get(widgets, ns_, "w").status().code() == StatusCode::kNotFound; },
      10s));
}

TEST_F(RestIntegrationTest, WatchDeliversChangesAndStopsPromptly) {
  auto list = client_->List(cm_, ns_, {});
  ASSERT_TRUE(list.ok());
  std::stop_source stop;
  std::mutex mu;
  std::vector<std::string> seen;
  WatchOptions wo;
  wo.resourceVersion = list->resourceVersion;
  auto done = std::async(std::launch::async, [&] {
    return client_->Watch(cm_, ns_, wo, stop.get_token(), [&](WatchEvent&& ev) {
      if (ev.type == WatchEventType::kBookmark) return true;
      std::lock_guard lock(mu);
      seen.push_back(std::string(WatchEventTypeName(ev.type)) + " " +
                     ev.object["metadata"]["name"].get<std::string>());
      return true;
    });
  });
  ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("w1", "1"), {}).ok());
  ASSERT_TRUE(client_->Patch(cm_, ns_, "w1", PatchType::kMerge, {{"data", {{"v", "2"}}}}, {}).ok());
  ASSERT_TRUE(client_->Delete(cm_, ns_, "w1", {}).ok());
  ASSERT_TRUE(Eventually(
      [&] {
        std::lock_guard lock(mu);
        return seen.size() >= 3;
      },
      10s));
  auto t0 = std::chrono::steady_clock::now();
  stop.request_stop();
  ASSERT_EQ(done.wait_for(5s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(done.get().code(), StatusCode::kCancelled);
  std::lock_guard lock(mu);
  EXPECT_THAT(seen, ::testing::ElementsAre("ADDED w1", "MODIFIED w1", "DELETED w1"));
}

TEST_F(RestIntegrationTest, KeepAliveReusesConnections) {
  auto fresh = Client(testing::AdminConfig());
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(fresh->Get(NamespacesResource(), "", ns_).ok());
  EXPECT_LE(fresh->ConnectionsOpened(), 2u);
  EXPECT_EQ(fresh->RequestCount("get", "200"), 30u);
}

TEST_F(RestIntegrationTest, RotatedTokenFileIsPickedUp) {
  char tmpl[] = "/tmp/ayatori-kube-token-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::ofstream(dir + "/token") << TestenvVar("TESTENV_USER_TOKEN") << "\n";
  RestConfig cfg = testing::TokenConfig("");
  cfg.bearerTokenFile = dir + "/token";
  auto c = Client(cfg);
  EXPECT_EQ(c->List(cm_, ns_, {}).status().code(), StatusCode::kForbidden);
  std::ofstream(dir + "/token.new") << TestenvVar("TESTENV_TOKEN") << "\n";
  std::filesystem::rename(dir + "/token.new", dir + "/token");
  EXPECT_TRUE(c->List(cm_, ns_, {}).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ayatori::kube
