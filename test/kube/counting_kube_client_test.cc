// WriteCountingKubeClient (test/support/counting_kube_client.h) over a FakeKubeClient: it counts
// every write request per object, accepted or refused, and forwards everything unchanged.
#include "test/support/counting_kube_client.h"

#include <gtest/gtest.h>

#include "kube/testing/fake_kube_client.h"
#include "kube/testing/forwarding_kube_client.h"

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
  class Inspecting final : public kube::testing::ForwardingKubeClient {
   public:
    Inspecting(KubeClient& inner, const WriteCountingKubeClient*& counting)
        : ForwardingKubeClient(inner), counting_(counting) {}
    uint64_t seen = 0;
    StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& r, std::string_view ns,
                                          const nlohmann::json& obj,
                                          const WriteOptions& o) override {
      seen = counting_->Writes(r, ns, obj["metadata"]["name"].get<std::string>());
      return ForwardingKubeClient::UpdateStatus(r, ns, obj, o);
    }

   private:
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
