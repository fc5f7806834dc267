// The informer against the real kube-apiserver: the cache follows creates/updates/deletes, a
// killed stream resumes without a relist, a compacted resourceVersion forces a relist (410),
// selectors and cluster-scoped kinds work.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/informer.h"
#include "kube/object_metadata.h"
#include "kube/resource.h"
#include "test/kube/integration_util.h"
#include "test/support/wait.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;
using ayatori::testing::Eventually;
using ::testing::UnorderedElementsAre;

struct Cm {
  std::string name;
  std::string value;
  std::string resourceVersion;
};

std::shared_ptr<const Cm> DecodeCm(const nlohmann::json& j) {
  auto c = std::make_shared<Cm>();
  c->name = j["metadata"].value("name", "");
  c->resourceVersion = j["metadata"].value("resourceVersion", "");
  if (j.contains("data")) c->value = j["data"].value("value", "");
  return c;
}

nlohmann::json ConfigMap(const std::string& name, const std::string& value,
                         const std::string& app = "") {
  nlohmann::json j = {{"metadata", {{"name", name}}}, {"data", {{"value", value}}}};
  if (!app.empty()) j["metadata"]["labels"] = {{"app", app}};
  return j;
}

class InformerIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = testing::Client(testing::AdminConfig());
    ns_ = testing::NewNamespace(*client_, "kube-informer");
  }
  void TearDown() override {
    if (client_ && !ns_.empty()) (void)client_->Delete(NamespacesResource(), "", ns_, {});
  }
  InformerOptions Options() {
    InformerOptions o;
    o.namespace_ = ns_;
    o.initialBackoff = 50ms;
    return o;
  }

  std::unique_ptr<RestClient> client_;
  std::string ns_;
  const ResourceRef cm_ = ConfigMapsResource();
};

TEST_F(InformerIntegrationTest, CacheReflectsCreatesUpdatesAndDeletes) {
  ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("before", "0"), {}).ok());
  Informer<Cm> inf(*client_, cm_, Options(), DecodeCm);
  std::mutex mu;
  std::vector<std::string> calls;
  Informer<Cm>::Handlers h;
  h.onAdd = [&](const std::string& k, const auto&) {
    std::lock_guard l(mu);
    calls.push_back("add " + k);
  };
  h.onUpdate = [&](const std::string& k, const auto& o, const auto& n) {
    std::lock_guard l(mu);
    calls.push_back("update " + k + " " + o->value + "->" + n->value);
  };
  h.onDelete = [&](const std::string& k, const auto&) {
    std::lock_guard l(mu);
    calls.push_back("delete " + k);
  };
  inf.AddHandlers(h);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  ASSERT_NE(inf.Get(ns_ + "/before"), nullptr);

  ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("a", "1"), {}).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get(ns_ + "/a") != nullptr; }, 10s));
  ASSERT_TRUE(
      client_->Patch(cm_, ns_, "a", PatchType::kMerge, {{"data", {{"value", "2"}}}}, {}).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get(ns_ + "/a")->value == "2"; }, 10s));
  ASSERT_TRUE(client_->Delete(cm_, ns_, "a", {}).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get(ns_ + "/a") == nullptr; }, 10s));
  std::lock_guard l(mu);
  EXPECT_THAT(calls, ::testing::ElementsAre("add " + ns_ + "/before", "add " + ns_ + "/a",
                                            "update " + ns_ + "/a 1->2", "delete " + ns_ + "/a"));
  EXPECT_EQ(inf.Stats().lists, 1u);
}

TEST_F(InformerIntegrationTest, ResumesAfterTheStreamIsKilledWithoutRelisting) {
  Informer<Cm> inf(*client_, cm_, Options(), DecodeCm);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("a", "1"), {}).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get(ns_ + "/a") != nullptr; }, 10s));
  for (int round = 0; round < 3; ++round) {
    uint64_t watches = inf.Stats().watches;
    inf.AbortWatchForTest();
    // Changes right after the kill arrive through the resumed watch.
    std::string v = std::to_string(round + 2);
    ASSERT_TRUE(
        client_->Patch(cm_, ns_, "a", PatchType::kMerge, {{"data", {{"value", v}}}}, {}).ok());
    ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("r" + v, v), {}).ok());
    ASSERT_TRUE(Eventually(
        [&] {
          auto a = inf.Get(ns_ + "/a");
          return a && a->value == v && inf.Get(ns_ + "/r" + v) != nullptr;
        },
        10s));
    EXPECT_GT(inf.Stats().watches, watches);
  }
  auto stats = inf.Stats();
  EXPECT_EQ(stats.lists, 1u);
  EXPECT_EQ(stats.relistsAfterGone, 0u);
  EXPECT_EQ(inf.Size(), 4u);
}

TEST_F(InformerIntegrationTest, CompactionForcesARelistAndTheWatchGoesOn) {
  // Events are watched straight from etcd (no watch cache), so compaction yields 410.
  const ResourceRef ev = EventsResource();
  auto event = [&](const std::string& name, const std::string& ns) {
    return nlohmann::json{
        {"metadata", {{"name", name}, {"namespace", ns}}},
        {"eventTime", "2026-01-01T00:00:00.000000Z"},
        {"reportingController", "kubetest/informer"},
        {"reportingInstance", "test"},
        {"action", "Test"},
        {"reason", "Testing"},
        {"type", "Normal"},
        {"regarding",
         {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "x"}, {"namespace", ns}}}};
  };
  ASSERT_TRUE(client_->Create(ev, ns_, event("e1", ns_), {}).ok());
  struct Ev {
    std::string name;
  };
  Informer<Ev> inf(*client_, ev, Options(), [](const nlohmann::json& j) {
    return std::make_shared<const Ev>(Ev{j["metadata"].value("name", "")});
  });
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  ASSERT_EQ(inf.Size(), 1u);
  ASSERT_TRUE(Eventually([&] { return inf.Stats().watches >= 1; }, 10s));

  // Elsewhere the revision moves on; this informer sees nothing, so its version stays old.
  std::string other = testing::NewNamespace(*client_, "kube-informer-other");
  ASSERT_TRUE(client_->Create(ev, other, event("o1", other), {}).ok());
  ASSERT_TRUE(client_->Create(ev, other, event("o2", other), {}).ok());
  int64_t compacted = testing::CompactEtcd();
  ASSERT_GT(compacted, std::stoll(inf.Stats().lastResourceVersion) + 1);
  inf.AbortWatchForTest();
  ASSERT_TRUE(Eventually([&] { return inf.Stats().relistsAfterGone >= 1; }, 10s))
      << "last version " << inf.Stats().lastResourceVersion << ", compacted at " << compacted;
  ASSERT_TRUE(Eventually([&] { return inf.Stats().lists >= 2; }, 10s));
  EXPECT_EQ(inf.Size(), 1u);
  // After the relist it watches again from the new version.
  ASSERT_TRUE(client_->Delete(ev, ns_, "e1", {}).ok());
  ASSERT_TRUE(client_->Create(ev, ns_, event("e2", ns_), {}).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get(ns_ + "/e2") != nullptr && inf.Size() == 1; }, 10s));
  (void)client_->Delete(NamespacesResource(), "", other, {});
}

TEST_F(InformerIntegrationTest, LabelAndFieldSelectorsFilterTheWatch) {
  InformerOptions byLabel = Options();
  byLabel.labelSelector = "app=web";
  Informer<Cm> labelled(*client_, cm_, byLabel, DecodeCm);
  InformerOptions byField = Options();
  byField.fieldSelector = "metadata.name=db-0";
  Informer<Cm> named(*client_, cm_, byField, DecodeCm);
  labelled.Start();
  named.Start();
  ASSERT_TRUE(labelled.WaitForSync(10s));
  ASSERT_TRUE(named.WaitForSync(10s));
  ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("web-0", "1", "web"), {}).ok());
  ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("db-0", "1", "db"), {}).ok());
  ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("web-1", "1", "web"), {}).ok());
  ASSERT_TRUE(Eventually([&] { return labelled.Size() == 2 && named.Size() == 1; }, 10s));
  EXPECT_THAT(labelled.Keys(), UnorderedElementsAre(ns_ + "/web-0", ns_ + "/web-1"));
  EXPECT_THAT(named.Keys(), UnorderedElementsAre(ns_ + "/db-0"));
}

TEST_F(InformerIntegrationTest, ClusterScopedKindAndPaginatedInitialList) {
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(client_->Create(cm_, ns_, ConfigMap("p" + std::to_string(i), "v"), {}).ok());
  }
  InformerOptions paged = Options();
  paged.pageSize = 10;
  Informer<Cm> cms(*client_, cm_, paged, DecodeCm);
  uint64_t listsBefore = client_->RequestCount("list", "200");
  cms.Start();
  ASSERT_TRUE(cms.WaitForSync(10s));
  EXPECT_EQ(cms.Size(), 25u);
  EXPECT_EQ(client_->RequestCount("list", "200") - listsBefore, 3u);

  InformerOptions all;
  all.initialBackoff = 50ms;
  Informer<Cm> namespaces(*client_, NamespacesResource(), all, DecodeCm);
  namespaces.Start();
  ASSERT_TRUE(namespaces.WaitForSync(10s));
  EXPECT_NE(namespaces.Get(ns_), nullptr);
  EXPECT_NE(namespaces.Get("default"), nullptr);
  std::string fresh = testing::NewNamespace(*client_, "kube-informer-ns");
  ASSERT_TRUE(Eventually([&] { return namespaces.Get(fresh) != nullptr; }, 10s));
  (void)client_->Delete(NamespacesResource(), "", fresh, {});
}

}  // namespace
}  // namespace ayatori::kube

namespace ayatori::kube {
namespace {

// A metadata-only informer of Secrets, as the controller runs it: the real API server honours the
// PartialObjectMetadata Accept headers of the list and of the watch, so neither the initial list
// nor any watch event carries the Secret's data, and every change still arrives (a new
// resourceVersion), including a key added to an existing Secret.
TEST_F(InformerIntegrationTest, MetadataOnlyInformerOfSecretsNeverReceivesTheirData) {
  const ResourceRef secrets = SecretsResource();
  const std::string value = "c2VjcmV0LXZhbHVlLTQy";  // base64 of a value that must not arrive
  nlohmann::json before = {{"metadata", {{"name", "before"}}}, {"data", {{"token", value}}}};
  ASSERT_TRUE(client_->Create(secrets, ns_, before, {}).ok());

  std::mutex mu;
  std::vector<std::string> seen;  // every object the decoder got, as JSON text
  std::vector<std::string> calls;
  InformerOptions o = Options();
  o.metadataOnly = true;
  Informer<ObjectMetadata> inf(*client_, secrets, o, [&](const nlohmann::json& j) {
    std::lock_guard l(mu);
    seen.push_back(j.dump());
    auto m = DecodeObjectMetadata(j);
    return m.ok() ? std::make_shared<const ObjectMetadata>(*m) : nullptr;
  });
  Informer<ObjectMetadata>::Handlers h;
  h.onAdd = [&](const std::string& k, const auto&) {
    std::lock_guard l(mu);
    calls.push_back("add " + k);
  };
  h.onUpdate = [&](const std::string& k, const auto& old, const auto& now) {
    std::lock_guard l(mu);
    if (old->resourceVersion != now->resourceVersion) calls.push_back("update " + k);
  };
  h.onDelete = [&](const std::string& k, const auto&) {
    std::lock_guard l(mu);
    calls.push_back("delete " + k);
  };
  inf.AddHandlers(h);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(10s));
  auto cached = inf.Get(ns_ + "/before");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ(cached->name, "before");
  EXPECT_EQ(cached->namespace_, ns_);
  EXPECT_FALSE(cached->uid.empty());
  EXPECT_FALSE(cached->resourceVersion.empty());

  nlohmann::json after = {{"metadata", {{"name", "after"}}}, {"data", {{"token", value}}}};
  ASSERT_TRUE(client_->Create(secrets, ns_, after, {}).ok());
  // A key added: only the metadata's resourceVersion tells.
  ASSERT_TRUE(
      client_->Patch(secrets, ns_, "before", PatchType::kMerge, {{"data", {{"other", value}}}}, {})
          .ok());
  ASSERT_TRUE(client_->Delete(secrets, ns_, "after", {}).ok());
  const std::vector<std::string> want = {"add " + ns_ + "/before", "add " + ns_ + "/after",
                                         "update " + ns_ + "/before", "delete " + ns_ + "/after"};
  EXPECT_TRUE(Eventually(
      [&] {
        std::lock_guard l(mu);
        return calls == want;
      },
      10s))
      << ::testing::PrintToString(calls);

  std::lock_guard l(mu);
  ASSERT_GE(seen.size(), 4u);  // the list's item and three watch events
  for (const auto& j : seen) {
    EXPECT_EQ(j.find(value), std::string::npos) << j;
    EXPECT_EQ(j.find("\"data\""), std::string::npos) << j;
    EXPECT_NE(j.find("\"PartialObjectMetadata\""), std::string::npos) << j;
  }
}

}  // namespace
}  // namespace ayatori::kube
