// WriteCountingKubeClient (test/support/counting_kube_client.h) over a FakeKubeClient: it counts
// every write request per object, accepted or refused, and forwards everything unchanged.
#include "test/support/counting_kube_client.h"

#include <gtest/gtest.h>

#include "kube/testing/fake_kube_client.h"

namespace ayatori::testing {
namespace {

const ResourceRef kJobs{"execution.ayatori.ddupan.top", "v1alpha1", "jobs", true};
const ResourceRef kClasses{"execution.ayatori.ddupan.top", "v1alpha1", "jobclasses", false};

nlohmann::json Object(const std::string& name) {
  return {{"metadata", {{"name", name}}}, {"spec", {{"image", "alpine"}}}};
}

TEST(WriteCountingKubeClientTest, CountsWritesPerObjectAndForwardsEverything) {
  kube::testing::FakeKubeClient server;
  WriteCountingKubeClient counting(server);

  auto created = counting.Create(kJobs, "ns", Object("a"), {});
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE(counting.Get(kJobs, "ns", "a").ok());  // reads are not counted
  nlohmann::json status = *created;
  status["status"] = {{"phase", "x"}};
  ASSERT_TRUE(counting.UpdateStatus(kJobs, "ns", status, {}).ok());
  // Refused by the server (stale resourceVersion): still a request, still counted.
  EXPECT_EQ(counting.Update(kJobs, "ns", *created, {}).status().code(), StatusCode::kConflict);
  ASSERT_TRUE(counting
                  .Patch(kJobs, "ns", "a", PatchType::kMerge,
                         {{"metadata", {{"labels", {{"k", "v"}}}}}}, {})
                  .ok());
  ASSERT_TRUE(counting.Delete(kJobs, "ns", "a", {}).ok());
  EXPECT_EQ(counting.Writes(kJobs, "ns", "a"), 5u);
  EXPECT_EQ(server.CountWrites(kJobs, "ns", "a"), 5u);  // all of them reached the server

  // Other objects are counted apart: another namespace, a cluster-scoped kind.
  ASSERT_TRUE(counting.Create(kJobs, "other", Object("a"), {}).ok());
  ASSERT_TRUE(counting.Create(kClasses, "ignored", Object("gold"), {}).ok());
  EXPECT_EQ(counting.Writes(kJobs, "other", "a"), 1u);
  EXPECT_EQ(counting.Writes(kClasses, "", "gold"), 1u);
  EXPECT_EQ(counting.Writes(kJobs, "ns", "b"), 0u);
  EXPECT_EQ(counting.TotalWrites(), 7u);
}

TEST(WriteCountingKubeClientTest, GeneratedNamesAreCountedUnderTheNameTheServerGave) {
  kube::testing::FakeKubeClient server;
  WriteCountingKubeClient counting(server);
  nlohmann::json object = {{"metadata", {{"generateName", "job-"}}}};
  auto created = counting.Create(kJobs, "ns", object, {});
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(counting.Writes(kJobs, "ns", (*created)["metadata"]["name"].get<std::string>()), 1u);
}

// What the test sees of a write on the API server is already counted: the count goes up before
// the request is sent, not when its answer comes (the answer may come after the test looked).
TEST(WriteCountingKubeClientTest, AWriteIsCountedBeforeItIsSent) {
  kube::testing::FakeKubeClient server;
  // Looks at the count from inside the request, as a test polling the API server could.
  class Inspecting final : public KubeClient {
   public:
    Inspecting(KubeClient& inner, const WriteCountingKubeClient*& counting)
        : inner_(inner), counting_(counting) {}
    uint64_t seen = 0;
    StatusOr<nlohmann::json> Get(const ResourceRef& r, std::string_view ns,
                                 std::string_view n) override {
      return inner_.Get(r, ns, n);
    }
    StatusOr<ObjectList> List(const ResourceRef& r, std::string_view ns,
                              const ListOptions& o) override {
      return inner_.List(r, ns, o);
    }
    StatusOr<nlohmann::json> Create(const ResourceRef& r, std::string_view ns,
                                    const nlohmann::json& obj, const WriteOptions& o) override {
      return inner_.Create(r, ns, obj, o);
    }
    StatusOr<nlohmann::json> Update(const ResourceRef& r, std::string_view ns,
                                    const nlohmann::json& obj, const WriteOptions& o) override {
      return inner_.Update(r, ns, obj, o);
    }
    StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& r, std::string_view ns,
                                          const nlohmann::json& obj,
                                          const WriteOptions& o) override {
      seen = counting_->Writes(r, ns, obj["metadata"]["name"].get<std::string>());
      return inner_.UpdateStatus(r, ns, obj, o);
    }
    StatusOr<nlohmann::json> Patch(const ResourceRef& r, std::string_view ns, std::string_view n,
                                   PatchType t, const nlohmann::json& p,
                                   const PatchOptions& o) override {
      return inner_.Patch(r, ns, n, t, p, o);
    }
    Status Delete(const ResourceRef& r, std::string_view ns, std::string_view n,
                  const DeleteOptions& o) override {
      return inner_.Delete(r, ns, n, o);
    }
    Status Watch(const ResourceRef& r, std::string_view ns, const WatchOptions& o,
                 std::stop_token stop, const WatchHandler& h) override {
      return inner_.Watch(r, ns, o, std::move(stop), h);
    }

   private:
    KubeClient& inner_;
    const WriteCountingKubeClient*& counting_;
  };
  const WriteCountingKubeClient* countingPtr = nullptr;
  Inspecting inspecting(server, countingPtr);
  WriteCountingKubeClient counting(inspecting);
  countingPtr = &counting;
  auto created = counting.Create(kJobs, "ns", Object("a"), {});
  ASSERT_TRUE(created.ok());
  nlohmann::json status = *created;
  status["status"] = {{"phase", "x"}};
  ASSERT_TRUE(counting.UpdateStatus(kJobs, "ns", status, {}).ok());
  EXPECT_EQ(inspecting.seen, 2u);  // the create and this update, while it was being sent
  EXPECT_EQ(counting.WriteLog(kJobs, "ns", "a").back(), "UPDATE /status: ok");
}

}  // namespace
}  // namespace ayatori::testing
