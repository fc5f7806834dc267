#include "kube/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include "kube/resource.h"
#include "kube/testing/fake_kube_client.h"
#include "test/support/wait.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;
using ayatori::testing::Eventually;
using ::testing::ElementsAre;
using testing::FakeKubeClient;
using ::testing::UnorderedElementsAre;

// The compact projection the tests cache.
struct Item {
  std::string name;
  std::string value;
  bool hadManagedFields = false;
  bool hadLastApplied = false;
};

std::shared_ptr<const Item> DecodeItem(const nlohmann::json& j) {
  auto item = std::make_shared<Item>();
  item->name = j["metadata"].value("name", "");
  if (j.contains("data")) item->value = j["data"].value("value", "");
  item->hadManagedFields = j["metadata"].contains("managedFields");
  item->hadLastApplied =
      j["metadata"].contains("annotations") &&
      j["metadata"]["annotations"].contains("kubectl.kubernetes.io/last-applied-configuration");
  return item;
}

nlohmann::json ConfigMap(const std::string& ns, const std::string& name, const std::string& value,
                         const std::map<std::string, std::string>& labels = {}) {
  nlohmann::json j = {{"apiVersion", "v1"},
                      {"kind", "ConfigMap"},
                      {"metadata", {{"name", name}, {"namespace", ns}}},
                      {"data", {{"value", value}}}};
  if (!labels.empty()) j["metadata"]["labels"] = labels;
  return j;
}

// Records handler calls as "add ns/a=v", "update ns/a v1->v2", "delete ns/a".
class Recorder {
 public:
  Informer<Item>::Handlers Handlers() {
    Informer<Item>::Handlers h;
    h.onAdd = [this](const std::string& k, const std::shared_ptr<const Item>& o) {
      Push("add " + k + "=" + o->value);
    };
    h.onUpdate = [this](const std::string& k, const std::shared_ptr<const Item>& o,
                        const std::shared_ptr<const Item>& n) {
      Push("update " + k + " " + o->value + "->" + n->value);
    };
    h.onDelete = [this](const std::string& k, const std::shared_ptr<const Item>&) {
      Push("delete " + k);
    };
    return h;
  }
  std::vector<std::string> Calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  size_t Size() {
    std::lock_guard lock(mu_);
    return calls_.size();
  }
  void Clear() {
    std::lock_guard lock(mu_);
    calls_.clear();
  }

 private:
  void Push(std::string s) {
    std::lock_guard lock(mu_);
    calls_.push_back(std::move(s));
  }
  std::mutex mu_;
  std::vector<std::string> calls_;
};

class InformerTest : public ::testing::Test {
 protected:
  InformerOptions Options() {
    InformerOptions o;
    o.initialBackoff = 5ms;
    o.maxBackoff = 50ms;
    o.log = [this](const std::string& line) {
      std::lock_guard lock(logMu_);
      logs_.push_back(line);
    };
    return o;
  }
  void Create(const nlohmann::json& obj) {
    auto r = fake_.Create(cm_, obj["metadata"]["namespace"].get<std::string>(), obj, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  FakeKubeClient fake_;
  const ResourceRef cm_ = ConfigMapsResource();
  std::mutex logMu_;
  std::vector<std::string> logs_;
};

TEST_F(InformerTest, SyncsTheInitialListAndCallsAddForEachObject) {
  Create(ConfigMap("ns", "a", "1"));
  Create(ConfigMap("ns", "b", "2"));
  Create(ConfigMap("other", "c", "3"));
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  EXPECT_FALSE(inf.HasSynced());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  EXPECT_EQ(inf.Size(), 3u);
  ASSERT_NE(inf.Get("ns/a"), nullptr);
  EXPECT_EQ(inf.Get("ns/a")->value, "1");
  EXPECT_EQ(inf.Get("missing/x"), nullptr);
  EXPECT_THAT(rec.Calls(), UnorderedElementsAre("add ns/a=1", "add ns/b=2", "add other/c=3"));
  EXPECT_THAT(inf.Keys(), UnorderedElementsAre("ns/a", "ns/b", "other/c"));
}

TEST_F(InformerTest, CacheFollowsCreatesUpdatesAndDeletes) {
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  ASSERT_TRUE(fake_.WaitForWatches(1, 5s));
  Create(ConfigMap("ns", "a", "1"));
  ASSERT_TRUE(Eventually([&] { return inf.Get("ns/a") != nullptr; }, 10s));
  auto cur = fake_.Get(cm_, "ns", "a");
  ASSERT_TRUE(cur.ok());
  (*cur)["data"]["value"] = "2";
  ASSERT_TRUE(fake_.Update(cm_, "ns", *cur, {}).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get("ns/a")->value == "2"; }, 10s));
  ASSERT_TRUE(fake_.Delete(cm_, "ns", "a", {}).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get("ns/a") == nullptr; }, 10s));
  EXPECT_THAT(rec.Calls(), ElementsAre("add ns/a=1", "update ns/a 1->2", "delete ns/a"));
  auto stats = inf.Stats();
  EXPECT_EQ(stats.lists, 1u);
  EXPECT_EQ(stats.events, 3u);
  EXPECT_EQ(stats.lastResourceVersion, std::to_string(fake_.CurrentResourceVersion()));
}

TEST_F(InformerTest, StripsManagedFieldsAndLastAppliedConfigurationBeforeDecoding) {
  nlohmann::json obj = ConfigMap("ns", "a", "1");
  obj["metadata"]["managedFields"] = nlohmann::json::array({{{"manager", "kubectl"}}});
  obj["metadata"]["annotations"] = {{"kubectl.kubernetes.io/last-applied-configuration", "{}"},
                                    {"keep", "me"}};
  Create(obj);
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  auto item = inf.Get("ns/a");
  ASSERT_NE(item, nullptr);
  EXPECT_FALSE(item->hadManagedFields);
  EXPECT_FALSE(item->hadLastApplied);
}

TEST_F(InformerTest, ResumesFromTheLastResourceVersionAfterADroppedStream) {
  Create(ConfigMap("ns", "a", "1"));
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  ASSERT_TRUE(fake_.WaitForWatches(1, 5s));
  rec.Clear();
  // Changes while no watch is open are delivered on resume, without a relist.
  fake_.FailNext("watch", "*", Status(StatusCode::kUnavailable, "connection refused"), 3);
  fake_.CloseWatches();
  Create(ConfigMap("ns", "b", "2"));
  ASSERT_TRUE(fake_.Delete(cm_, "ns", "a", {}).ok());
  ASSERT_TRUE(
      Eventually([&] { return inf.Get("ns/b") != nullptr && inf.Get("ns/a") == nullptr; }, 10s));
  auto stats = inf.Stats();
  EXPECT_EQ(stats.lists, 1u);
  EXPECT_EQ(stats.relistsAfterGone, 0u);
  EXPECT_GE(stats.watches, 5u);  // first, three refused, the successful resume
  EXPECT_EQ(stats.watchErrors, 3u);
  EXPECT_THAT(rec.Calls(), ElementsAre("add ns/b=2", "delete ns/a"));
  EXPECT_EQ(fake_.CountActions("list"), 1u);
}

TEST_F(InformerTest, AbortWatchForTestResumesWithoutRelisting) {
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  ASSERT_TRUE(
      Eventually([&] { return inf.Stats().watches == 1 && fake_.OpenWatches() == 1; }, 10s));
  inf.AbortWatchForTest();
  ASSERT_TRUE(
      Eventually([&] { return inf.Stats().watches == 2 && fake_.OpenWatches() == 1; }, 10s));
  Create(ConfigMap("ns", "a", "1"));
  ASSERT_TRUE(Eventually([&] { return inf.Get("ns/a") != nullptr; }, 10s));
  EXPECT_EQ(inf.Stats().lists, 1u);
}

TEST_F(InformerTest, RelistsAfterGoneAndReportsWhatChangedMeanwhile) {
  Create(ConfigMap("ns", "keep", "1"));
  Create(ConfigMap("ns", "change", "1"));
  Create(ConfigMap("ns", "remove", "1"));
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  ASSERT_TRUE(fake_.WaitForWatches(1, 5s));
  rec.Clear();
  // The informer cannot watch while the history it would resume from is compacted away.
  fake_.FailNext("watch", "*", Status(StatusCode::kUnavailable, "connection refused"), 1000000);
  fake_.CloseWatches();
  ASSERT_TRUE(Eventually([&] { return fake_.OpenWatches() == 0; }, 10s));
  auto cur = fake_.Get(cm_, "ns", "change");
  (*cur)["data"]["value"] = "2";
  ASSERT_TRUE(fake_.Update(cm_, "ns", *cur, {}).ok());
  ASSERT_TRUE(fake_.Delete(cm_, "ns", "remove", {}).ok());
  Create(ConfigMap("ns", "new", "1"));
  fake_.Compact();
  // Let the watch through again: the resume from the old version is Gone, so it relists.
  fake_.ClearFailures();
  ASSERT_TRUE(Eventually([&] { return inf.Stats().lists == 2 && fake_.OpenWatches() == 1; }, 10s));
  EXPECT_EQ(inf.Stats().relistsAfterGone, 1u);
  EXPECT_THAT(inf.Keys(), UnorderedElementsAre("ns/keep", "ns/change", "ns/new"));
  EXPECT_EQ(inf.Get("ns/change")->value, "2");
  EXPECT_THAT(rec.Calls(),
              UnorderedElementsAre("add ns/new=1", "update ns/change 1->2", "delete ns/remove"));
  // And it keeps watching from the relist's version.
  Create(ConfigMap("ns", "after", "1"));
  ASSERT_TRUE(Eventually([&] { return inf.Get("ns/after") != nullptr; }, 10s));
  std::lock_guard lock(logMu_);
  EXPECT_THAT(logs_, ::testing::Contains(::testing::HasSubstr("too old")));
}

TEST_F(InformerTest, BookmarksAdvanceTheResourceVersion) {
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  ASSERT_TRUE(fake_.WaitForWatches(1, 5s));
  fake_.SendBookmark();
  ASSERT_TRUE(Eventually([&] { return inf.Stats().bookmarks == 1; }, 10s));
  EXPECT_EQ(inf.Stats().lastResourceVersion, std::to_string(fake_.CurrentResourceVersion()));
  EXPECT_EQ(inf.Size(), 0u);
}

TEST_F(InformerTest, NamespaceAndLabelSelectorLimitWhatIsCached) {
  Create(ConfigMap("ns", "a", "1", {{"app", "x"}}));
  Create(ConfigMap("ns", "b", "1", {{"app", "y"}}));
  Create(ConfigMap("other", "c", "1", {{"app", "x"}}));
  InformerOptions o = Options();
  o.namespace_ = "ns";
  o.labelSelector = "app=x";
  Informer<Item> inf(fake_, cm_, o, DecodeItem);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  ASSERT_TRUE(fake_.WaitForWatches(1, 5s));
  Create(ConfigMap("ns", "d", "1", {{"app", "x"}}));
  Create(ConfigMap("ns", "e", "1", {{"app", "z"}}));
  Create(ConfigMap("other", "f", "1", {{"app", "x"}}));
  ASSERT_TRUE(Eventually([&] { return inf.Get("ns/d") != nullptr; }, 10s));
  EXPECT_THAT(inf.Keys(), UnorderedElementsAre("ns/a", "ns/d"));
}

// --watch-namespaces: an install whose Roles grant list/watch only in some namespaces must never
// ask for all namespaces (the API server would answer Forbidden), and must never see the others.
TEST_F(InformerTest, SeveralNamespacesAreListedAndWatchedOneByOneAndNothingElse) {
  Create(ConfigMap("team-a", "a", "1"));
  Create(ConfigMap("team-b", "b", "1"));
  Create(ConfigMap("team-c", "c", "1"));
  InformerOptions o = Options();
  o.namespaces = {"team-a", "team-b"};
  Informer<Item> inf(fake_, cm_, o, DecodeItem);
  inf.AddIndex("value", [](const Item& i) { return std::vector<std::string>{i.value}; });
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  ASSERT_TRUE(fake_.WaitForWatches(2, 5s));
  Create(ConfigMap("team-b", "d", "2"));
  Create(ConfigMap("team-c", "e", "2"));
  ASSERT_TRUE(Eventually([&] { return inf.Get("team-b/d") != nullptr; }, 10s));
  EXPECT_THAT(inf.Keys(), UnorderedElementsAre("team-a/a", "team-b/b", "team-b/d"));
  EXPECT_EQ(inf.Size(), 3u);
  EXPECT_EQ(inf.List().size(), 3u);
  EXPECT_EQ(inf.Get("team-c/c"), nullptr);
  EXPECT_THAT(inf.IndexKeys("value", "1"), UnorderedElementsAre("team-a/a", "team-b/b"));
  EXPECT_EQ(inf.ByIndex("value", "2").size(), 1u);
  EXPECT_THAT(rec.Calls(),
              UnorderedElementsAre("add team-a/a=1", "add team-b/b=1", "add team-b/d=2"));
  std::vector<std::string> asked;
  for (const auto& a : fake_.Actions()) {
    if (a.verb == "list" || a.verb == "watch") asked.push_back(a.verb + " " + a.namespace_);
  }
  EXPECT_THAT(asked,
              UnorderedElementsAre("list team-a", "list team-b", "watch team-a", "watch team-b"));
  EXPECT_EQ(inf.Stats().lists, 2u);
  EXPECT_EQ(inf.Stats().watches, 2u);
}

TEST_F(InformerTest, SeveralNamespacesSyncOnlyWhenEveryOneHas) {
  fake_.FailNext("list", cm_.GroupResource(), Status(StatusCode::kForbidden, "forbidden"), 1000);
  InformerOptions o = Options();
  o.namespaces = {"team-a", "team-b"};
  Informer<Item> inf(fake_, cm_, o, DecodeItem);
  inf.Start();
  EXPECT_FALSE(inf.WaitForSync(200ms));
  EXPECT_FALSE(inf.HasSynced());
  fake_.ClearFailures();
  EXPECT_TRUE(inf.WaitForSync(10s));
}

TEST_F(InformerTest, ClusterScopedKeysAreBareNames) {
  const ResourceRef nsRes = NamespacesResource();
  ASSERT_TRUE(fake_.Create(nsRes, "", {{"metadata", {{"name", "team-a"}}}}, {}).ok());
  Informer<Item> inf(fake_, nsRes, Options(), DecodeItem);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  EXPECT_THAT(inf.Keys(), ElementsAre("team-a"));
}

TEST_F(InformerTest, ListsInPages) {
  for (int i = 0; i < 5; ++i) Create(ConfigMap("ns", "cm" + std::to_string(i), "1"));
  InformerOptions o = Options();
  o.pageSize = 2;
  Informer<Item> inf(fake_, cm_, o, DecodeItem);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  EXPECT_EQ(inf.Size(), 5u);
  EXPECT_EQ(fake_.CountActions("list"), 3u);
}

TEST_F(InformerTest, ListFailuresAreRetriedWithBackoff) {
  Create(ConfigMap("ns", "a", "1"));
  fake_.FailNext("list", "*", Status(StatusCode::kForbidden, "configmaps is forbidden"), 2);
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  EXPECT_EQ(inf.Size(), 1u);
  EXPECT_EQ(inf.Stats().listErrors, 2u);
  std::lock_guard lock(logMu_);
  EXPECT_THAT(logs_, ::testing::Contains(::testing::HasSubstr("forbidden")));
}

TEST_F(InformerTest, UndecodableObjectsAreSkippedAndCounted) {
  Create(ConfigMap("ns", "good", "1"));
  Create(ConfigMap("ns", "bad", "1"));
  Informer<Item> inf(fake_, cm_, Options(), [](const nlohmann::json& j) {
    if (j["metadata"]["name"] == "bad") throw std::runtime_error("no spec");
    return DecodeItem(j);
  });
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  EXPECT_THAT(inf.Keys(), ElementsAre("ns/good"));
  EXPECT_EQ(inf.Stats().decodeErrors, 1u);
}

TEST_F(InformerTest, HandlersAddedAfterStartSeeTheCachedObjects) {
  Create(ConfigMap("ns", "a", "1"));
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  EXPECT_THAT(rec.Calls(), ElementsAre("add ns/a=1"));
}

TEST_F(InformerTest, IndexesFollowTheCache) {
  Create(ConfigMap("ns", "a", "red"));
  Create(ConfigMap("ns", "b", "blue"));
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  inf.AddIndex("value", [](const Item& i) { return std::vector<std::string>{i.value}; });
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  ASSERT_EQ(inf.ByIndex("value", "red").size(), 1u);
  EXPECT_EQ(inf.ByIndex("value", "red")[0]->name, "a");
  auto cur = fake_.Get(cm_, "ns", "b");
  (*cur)["data"]["value"] = "red";
  ASSERT_TRUE(fake_.Update(cm_, "ns", *cur, {}).ok());
  ASSERT_TRUE(Eventually([&] { return inf.ByIndex("value", "red").size() == 2; }, 10s));
  EXPECT_TRUE(inf.ByIndex("value", "blue").empty());
  EXPECT_TRUE(inf.ByIndex("nope", "red").empty());
  EXPECT_THAT(inf.IndexKeys("value", "red"), UnorderedElementsAre("ns/a", "ns/b"));
  EXPECT_TRUE(inf.IndexKeys("value", "blue").empty());
  EXPECT_TRUE(inf.IndexKeys("nope", "red").empty());
  ASSERT_TRUE(fake_.Delete(cm_, "ns", "a", {}).ok());
  ASSERT_TRUE(Eventually([&] { return inf.IndexKeys("value", "red").size() == 1; }, 10s));
  EXPECT_THAT(inf.IndexKeys("value", "red"), ElementsAre("ns/b"));
}

TEST_F(InformerTest, StopEndsTheWatchPromptly) {
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  ASSERT_TRUE(fake_.WaitForWatches(1, 5s));
  auto start = std::chrono::steady_clock::now();
  inf.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(fake_.OpenWatches(), 0u);
}

// An informer runs once: a cache that stopped following the server is never offered as synced
// again (a restarted informer would keep its old synced flag and stale objects).
TEST_F(InformerTest, StopIsFinal) {
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(5s));
  inf.Stop();
  const size_t lists = fake_.CountActions("list");
  inf.Start();
  EXPECT_EQ(fake_.OpenWatches(), 0u);
  EXPECT_TRUE(
      ayatori::testing::HoldsFor([&] { return fake_.CountActions("list") == lists; }, 300ms))
      << "Start() after Stop() listed again";
}

// A stopped informer that never synced answers WaitForSync at once instead of at the timeout.
TEST_F(InformerTest, WaitForSyncOfAStoppedInformerReturnsAtOnce) {
  fake_.FailNext("list", "*", Status(StatusCode::kForbidden, "forbidden"), 1000000);
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  inf.Start();
  ASSERT_TRUE(Eventually([&] { return fake_.CountActions("list") > 0; }, 5s));
  inf.Stop();
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(inf.WaitForSync(30s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST_F(InformerTest, WaitForSyncEndsWhenCancelled) {
  fake_.FailNext("list", "*", Status(StatusCode::kForbidden, "forbidden"), 1000000);
  Informer<Item> inf(fake_, cm_, Options(), DecodeItem);
  inf.Start();
  std::stop_source cancel;
  std::atomic<bool> returned{false};
  std::atomic<bool> synced{true};
  std::jthread waiter([&] {
    synced = inf.WaitForSync(30s, cancel.get_token());
    returned = true;
  });
  ASSERT_TRUE(Eventually([&] { return fake_.CountActions("list") > 0; }, 5s));
  EXPECT_FALSE(returned);
  cancel.request_stop();
  ASSERT_TRUE(Eventually([&] { return returned.load(); }, 1s)) << "the cancel was ignored";
  EXPECT_FALSE(synced);
  inf.Stop();
}

}  // namespace
}  // namespace ayatori::kube
