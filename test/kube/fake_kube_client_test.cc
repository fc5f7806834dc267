// The fake must behave like the API server where callers branch on it, or controller unit tests
// prove nothing; these tests pin that behaviour down.
#include "kube/testing/fake_kube_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "kube/resource.h"
#include "kube/testing/fake_clock.h"

namespace ayatori::kube::testing {
namespace {

using namespace std::chrono_literals;

const ResourceRef kJobs{"execution.ayatori.ddupan.top", "v1alpha1", "jobs", true};

nlohmann::json Job(const std::string& name) {
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}}},
          {"spec", {{"image", "alpine"}}}};
}

TEST(FakeKubeClientTest, CreateFillsMetadataAndRejectsDuplicates) {
  FakeKubeClient fake;
  auto created = fake.Create(kJobs, "ns", Job("a"), {});
  ASSERT_TRUE(created.ok());
  const auto& md = (*created)["metadata"];
  EXPECT_EQ(md["namespace"], "ns");
  EXPECT_EQ(md["generation"], 1);
  EXPECT_FALSE(md["uid"].get<std::string>().empty());
  EXPECT_FALSE(md["resourceVersion"].get<std::string>().empty());
  EXPECT_EQ(fake.Create(kJobs, "ns", Job("a"), {}).status().code(), StatusCode::kAlreadyExists);
  nlohmann::json gen = Job("");
  gen["metadata"] = {{"generateName", "hello-"}};
  auto g = fake.Create(kJobs, "ns", gen, {});
  ASSERT_TRUE(g.ok());
  EXPECT_THAT((*g)["metadata"]["name"].get<std::string>(), ::testing::StartsWith("hello-"));
  EXPECT_EQ(fake.Get(kJobs, "ns", "missing").status().code(), StatusCode::kNotFound);
}

TEST(FakeKubeClientTest, StaleResourceVersionConflictsAndGenerationCountsSpecChanges) {
  FakeKubeClient fake;
  auto v1 = *fake.Create(kJobs, "ns", Job("a"), {});
  nlohmann::json labelled = v1;
  labelled["metadata"]["labels"] = {{"x", "y"}};
  auto v2 = fake.Update(kJobs, "ns", labelled, {});
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ((*v2)["metadata"]["generation"], 1);  // metadata only
  nlohmann::json stale = v1;
  stale["spec"]["image"] = "busybox";
  EXPECT_EQ(fake.Update(kJobs, "ns", stale, {}).status().code(), StatusCode::kConflict);
  nlohmann::json fresh = *v2;
  fresh["spec"]["image"] = "busybox";
  auto v3 = fake.Update(kJobs, "ns", fresh, {});
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ((*v3)["metadata"]["generation"], 2);
  // A no-op update does not bump the resourceVersion.
  auto v4 = fake.Update(kJobs, "ns", *v3, {});
  EXPECT_EQ((*v4)["metadata"]["resourceVersion"], (*v3)["metadata"]["resourceVersion"]);
}

TEST(FakeKubeClientTest, StatusSubresourceSeparatesStatusFromTheRest) {
  FakeKubeClient fake;
  nlohmann::json withStatus = Job("a");
  withStatus["status"] = {{"phase", "ignored on create"}};
  auto v1 = *fake.Create(kJobs, "ns", withStatus, {});
  EXPECT_FALSE(v1.contains("status"));
  nlohmann::json s = v1;
  s["status"] = {{"observedGeneration", 1}};
  s["spec"]["image"] = "ignored by /status";
  auto v2 = fake.UpdateStatus(kJobs, "ns", s, {});
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ((*v2)["status"]["observedGeneration"], 1);
  EXPECT_EQ((*v2)["spec"]["image"], "alpine");
  nlohmann::json m = *v2;
  m["status"] = {{"observedGeneration", 99}};
  auto v3 = fake.Update(kJobs, "ns", m, {});
  EXPECT_EQ((*v3)["status"]["observedGeneration"], 1);  // Update ignores status
  PatchOptions po;
  po.subresource = "status";
  auto v4 = fake.Patch(kJobs, "ns", "a", PatchType::kMerge,
                       {{"metadata", {{"resourceVersion", (*v3)["metadata"]["resourceVersion"]}}},
                        {"status", {{"observedGeneration", 2}}}},
                       po);
  ASSERT_TRUE(v4.ok()) << v4.status().ToString();
  EXPECT_EQ((*v4)["status"]["observedGeneration"], 2);
  // A merge patch carrying a stale resourceVersion is a precondition failure.
  auto stale = fake.Patch(kJobs, "ns", "a", PatchType::kMerge,
                          {{"metadata", {{"resourceVersion", "1"}}}, {"status", {{"x", 1}}}}, po);
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict);
}

TEST(FakeKubeClientTest, JsonPatchTestFailureIsInvalid) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(kJobs, "ns", Job("a"), {}).ok());
  nlohmann::json patch =
      nlohmann::json::array({{{"op", "test"}, {"path", "/spec/image"}, {"value", "nginx"}},
                             {{"op", "replace"}, {"path", "/spec/image"}, {"value", "x"}}});
  EXPECT_EQ(fake.Patch(kJobs, "ns", "a", PatchType::kJson, patch, {}).status().code(),
            StatusCode::kInvalid);
  patch[0]["value"] = "alpine";
  auto ok = fake.Patch(kJobs, "ns", "a", PatchType::kJson, patch, {});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["spec"]["image"], "x");
}

TEST(FakeKubeClientTest, FinalizersDelayDeletionUntilRemoved) {
  FakeKubeClient fake;
  nlohmann::json j = Job("a");
  j["metadata"]["finalizers"] = {"example.com/cleanup"};
  auto v1 = *fake.Create(kJobs, "ns", j, {});
  DeleteOptions wrongUid;
  wrongUid.preconditionUid = "nope";
  EXPECT_EQ(fake.Delete(kJobs, "ns", "a", wrongUid).code(), StatusCode::kConflict);
  ASSERT_TRUE(fake.Delete(kJobs, "ns", "a", {}).ok());
  auto terminating = fake.Get(kJobs, "ns", "a");
  ASSERT_TRUE(terminating.ok());
  EXPECT_TRUE((*terminating)["metadata"].contains("deletionTimestamp"));
  nlohmann::json done = *terminating;
  done["metadata"]["finalizers"] = nlohmann::json::array();
  ASSERT_TRUE(fake.Update(kJobs, "ns", done, {}).ok());
  EXPECT_EQ(fake.Get(kJobs, "ns", "a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(fake.CountWrites(kJobs, "ns", "a"), 4u);  // create, 2 deletes, update
}

TEST(FakeKubeClientTest, GracefulDeletionBumpsGenerationAndUsesTheClock) {
  FakeClock clock(std::chrono::sys_days(std::chrono::year(2023) / 11 / 14));
  FakeKubeClient fake;
  fake.SetClock(&clock);
  nlohmann::json j = Job("a");
  j["metadata"]["finalizers"] = {"example.com/cleanup"};
  auto created = *fake.Create(kJobs, "ns", j, {});
  EXPECT_EQ(created["metadata"]["creationTimestamp"], "2023-11-14T00:00:00Z");
  clock.Advance(90s);
  ASSERT_TRUE(fake.Delete(kJobs, "ns", "a", {}).ok());
  auto terminating = *fake.Get(kJobs, "ns", "a");
  EXPECT_EQ(terminating["metadata"]["deletionTimestamp"], "2023-11-14T00:01:30Z");
  EXPECT_EQ(terminating["metadata"]["generation"], 2);
  ASSERT_TRUE(fake.Delete(kJobs, "ns", "a", {}).ok());  // a second DELETE changes nothing
  EXPECT_EQ((*fake.Get(kJobs, "ns", "a"))["metadata"]["generation"], 2);
}

TEST(FakeKubeClientTest, PeekAllListsWithoutRecording) {
  FakeKubeClient fake;
  ASSERT_TRUE(fake.Create(kJobs, "ns", Job("a"), {}).ok());
  ASSERT_TRUE(fake.Create(kJobs, "ns", Job("b"), {}).ok());
  ASSERT_TRUE(fake.Create(kJobs, "other", Job("c"), {}).ok());
  fake.ClearActions();
  EXPECT_EQ(fake.PeekAll(kJobs, "ns").size(), 2u);
  EXPECT_EQ(fake.PeekAll(kJobs).size(), 3u);
  EXPECT_EQ(fake.Actions().size(), 0u);
}

TEST(FakeKubeClientTest, ListFiltersAndPaginates) {
  FakeKubeClient fake;
  for (int i = 0; i < 5; ++i) {
    nlohmann::json j = Job("j" + std::to_string(i));
    j["metadata"]["labels"] = {{"tier", i % 2 == 0 ? "even" : "odd"}};
    ASSERT_TRUE(fake.Create(kJobs, "ns", j, {}).ok());
  }
  ASSERT_TRUE(fake.Create(kJobs, "other", Job("x"), {}).ok());
  ListOptions o;
  o.labelSelector = "tier=even";
  EXPECT_EQ(fake.List(kJobs, "ns", o)->items.size(), 3u);
  o.labelSelector = "tier notin (even)";
  EXPECT_EQ(fake.List(kJobs, "ns", o)->items.size(), 2u);
  o.labelSelector = "";
  o.fieldSelector = "metadata.name=j3";
  EXPECT_EQ(fake.List(kJobs, "ns", o)->items.size(), 1u);
  EXPECT_EQ(fake.List(kJobs, "", ListOptions{})->items.size(), 6u);
  ListOptions page;
  page.limit = 2;
  std::vector<std::string> names;
  auto rv = ListAll(fake, kJobs, "ns", page,
                    [&](nlohmann::json&& item) { names.push_back(item["metadata"]["name"]); });
  ASSERT_TRUE(rv.ok());
  EXPECT_THAT(names, ::testing::ElementsAre("j0", "j1", "j2", "j3", "j4"));
  EXPECT_EQ(fake.CountActions("list"), 7u);  // 4 + 3 pages
}

TEST(FakeKubeClientTest, LabelSelectorGrammar) {
  std::map<std::string, std::string> l = {{"app", "web"}, {"tier", "front"}};
  std::string err;
  EXPECT_TRUE(MatchesLabelSelector("", l, &err));
  EXPECT_TRUE(MatchesLabelSelector("app=web,tier==front", l, &err));
  EXPECT_FALSE(MatchesLabelSelector("app!=web", l, &err));
  EXPECT_TRUE(MatchesLabelSelector("app, !missing", l, &err));
  EXPECT_FALSE(MatchesLabelSelector("missing", l, &err));
  EXPECT_TRUE(MatchesLabelSelector("app in (db, web)", l, &err));
  EXPECT_FALSE(MatchesLabelSelector("app notin (db,web)", l, &err));
  EXPECT_TRUE(MatchesLabelSelector("missing notin (x)", l, &err));
}

TEST(FakeKubeClientTest, WatchReplaysFromAVersionAndIsGoneAfterCompaction) {
  FakeKubeClient fake;
  auto a = *fake.Create(kJobs, "ns", Job("a"), {});
  std::string rvA = a["metadata"]["resourceVersion"];
  ASSERT_TRUE(fake.Create(kJobs, "ns", Job("b"), {}).ok());
  ASSERT_TRUE(fake.Delete(kJobs, "ns", "a", {}).ok());
  std::vector<std::string> seen;
  WatchOptions o;
  o.resourceVersion = rvA;
  std::stop_source stop;
  auto done = std::async(std::launch::async, [&] {
    return fake.Watch(kJobs, "ns", o, stop.get_token(), [&](WatchEvent&& ev) {
      seen.push_back(std::string(WatchEventTypeName(ev.type)) + " " +
                     ev.object["metadata"]["name"].get<std::string>());
      return seen.size() < 2;
    });
  });
  ASSERT_EQ(done.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(done.get().ok());
  EXPECT_THAT(seen, ::testing::ElementsAre("ADDED b", "DELETED a"));
  fake.Compact();
  EXPECT_EQ(fake.Watch(kJobs, "ns", o, {}, [](WatchEvent&&) { return true; }).code(),
            StatusCode::kGone);
}

TEST(FakeKubeClientTest, WatchEndsOnStopAndOnCloseWatches) {
  FakeKubeClient fake;
  std::stop_source stop;
  auto stopped = std::async(std::launch::async, [&] {
    return fake.Watch(kJobs, "", {}, stop.get_token(), [](WatchEvent&&) { return true; });
  });
  auto closed = std::async(std::launch::async, [&] {
    return fake.Watch(kJobs, "", {}, {}, [](WatchEvent&&) { return true; });
  });
  ASSERT_TRUE(fake.WaitForWatches(2, 5s));
  stop.request_stop();
  ASSERT_EQ(stopped.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(stopped.get().code(), StatusCode::kCancelled);
  fake.CloseWatches();
  ASSERT_EQ(closed.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(closed.get().ok());
}

TEST(FakeKubeClientTest, FailNextInjectsErrorsAndRecordsTheCall) {
  FakeKubeClient fake;
  fake.FailNext("create", kJobs.GroupResource(), Status(StatusCode::kServerError, "etcd down"));
  EXPECT_EQ(fake.Create(kJobs, "ns", Job("a"), {}).status().code(), StatusCode::kServerError);
  EXPECT_TRUE(fake.Create(kJobs, "ns", Job("a"), {}).ok());
  EXPECT_EQ(fake.CountActions("create", kJobs.GroupResource()), 2u);
  EXPECT_EQ(fake.Actions()[0].body["metadata"]["name"], "a");
}

}  // namespace
}  // namespace ayatori::kube::testing
