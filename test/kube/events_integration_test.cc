// The Events recorder against the real API server: events.k8s.io/v1 objects pass validation,
// repeats become a series on one object.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/events.h"
#include "kube/resource.h"
#include "test/kube/integration_util.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;

class EventsIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = testing::Client(testing::AdminConfig());
    ns_ = testing::NewNamespace(*client_, "kube-events");
    auto cm = client_->Create(ConfigMapsResource(), ns_,
                              {{"metadata", {{"name", "subject"}}}, {"data", {{"a", "b"}}}}, {});
    ASSERT_TRUE(cm.ok()) << cm.status().ToString();
    subject_ = {"v1",
                "ConfigMap",
                ns_,
                "subject",
                (*cm)["metadata"]["uid"].get<std::string>(),
                (*cm)["metadata"]["resourceVersion"].get<std::string>()};
  }
  void TearDown() override {
    if (client_ && !ns_.empty()) (void)client_->Delete(NamespacesResource(), "", ns_, {});
  }
  std::vector<nlohmann::json> Events(const std::string& ns) {
    auto list = client_->List(EventsResource(), ns, {});
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    return list.ok() ? list->items : std::vector<nlohmann::json>{};
  }
  EventRecorderOptions Options() {
    EventRecorderOptions o;
    o.reportingController = "execution.ayatori.ddupan.top/controller";
    o.reportingInstance = "kube-events-test";
    o.seriesInterval = 1h;
    return o;
  }

  std::unique_ptr<RestClient> client_;
  std::string ns_;
  ObjectReference subject_;
};

TEST_F(EventsIntegrationTest, RecordsEventsAndFoldsRepeatsIntoASeries) {
  EventRecorder rec(*client_, SystemClock::Instance(), Options());
  rec.Record(subject_, EventType::kNormal, "Accepted", "Validate", "the Job is valid");
  ASSERT_TRUE(rec.Flush(10s));
  ASSERT_EQ(rec.Stats().failed, 0u);
  auto events = Events(ns_);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["reason"], "Accepted");
  EXPECT_EQ(events[0]["note"], "the Job is valid");
  EXPECT_EQ(events[0]["regarding"]["uid"], subject_.uid);
  EXPECT_EQ(events[0]["reportingController"], "execution.ayatori.ddupan.top/controller");

  for (int i = 0; i < 4; ++i) {
    rec.Record(subject_, EventType::kWarning, "BackendUnreachable", "Observe",
               "connection refused");
  }
  ASSERT_TRUE(rec.Flush(10s));
  rec.Record(subject_, EventType::kWarning, "BackendUnreachable", "Observe", "connection refused");
  ASSERT_TRUE(rec.Flush(10s));
  ASSERT_EQ(rec.Stats().failed, 0u);
  events = Events(ns_);
  ASSERT_EQ(events.size(), 2u);
  const nlohmann::json& warning =
      events[0]["reason"] == "BackendUnreachable" ? events[0] : events[1];
  EXPECT_EQ(warning["type"], "Warning");
  ASSERT_TRUE(warning.contains("series")) << warning.dump();
  EXPECT_EQ(warning["series"]["count"], 5);
  // API writes: two creates and at most one patch per Flush, however the sender's thread and
  // the Record() calls interleave.
  EXPECT_LE(rec.Stats().created + rec.Stats().seriesUpdates, 4u);
}

TEST_F(EventsIntegrationTest, LongNotesAreCutAndClusterScopedObjectsGoToDefault) {
  EventRecorder rec(*client_, SystemClock::Instance(), Options());
  ObjectReference ns{"v1", "Namespace", "", ns_, "", ""};
  rec.Record(ns, EventType::kNormal, "Observed", "Test", std::string(5000, 'x'));
  ASSERT_TRUE(rec.Flush(10s));
  EXPECT_EQ(rec.Stats().failed, 0u);
  bool found = false;
  for (const auto& e : Events("default")) {
    if (e["regarding"].value("name", "") == ns_) {
      found = true;
      EXPECT_EQ(e["note"].get<std::string>().size(), 1024u);
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace ayatori::kube
