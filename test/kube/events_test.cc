#include "kube/events.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <regex>

#include "kube/resource.h"
#include "kube/testing/fake_clock.h"
#include "kube/testing/fake_kube_client.h"
#include "test/support/wait.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::FakeKubeClient;

class EventsTest : public ::testing::Test {
 protected:
  EventRecorderOptions Options() {
    EventRecorderOptions o;
    o.reportingController = "execution.ayatori.ddupan.top/controller";
    o.reportingInstance = "controller-0";
    o.seriesInterval = 1h;  // series counts are written on Flush in these tests
    o.log = [](const std::string&) {};
    return o;
  }
  std::vector<nlohmann::json> Events(const std::string& ns) {
    auto list = fake_.List(EventsResource(), ns, {});
    EXPECT_TRUE(list.ok());
    return list.ok() ? list->items : std::vector<nlohmann::json>{};
  }

  FakeClock clock_;
  FakeKubeClient fake_;
  ObjectReference job_{"execution.ayatori.ddupan.top/v1alpha1", "Job", "ci", "hello", "uid-1", "7"};
};

TEST_F(EventsTest, WritesAnEventsV1EventAboutTheRegardingObject) {
  EventRecorder rec(fake_, clock_, Options());
  rec.Record(job_, EventType::kNormal, "Scheduled", "Create", "created batch/v1 Job hello-x");
  ASSERT_TRUE(rec.Flush(5s));
  auto events = Events("ci");
  ASSERT_EQ(events.size(), 1u);
  const auto& e = events[0];
  EXPECT_EQ(e["apiVersion"], "events.k8s.io/v1");
  EXPECT_THAT(e["metadata"]["name"].get<std::string>(), ::testing::StartsWith("hello."));
  EXPECT_EQ(e["reportingController"], "execution.ayatori.ddupan.top/controller");
  EXPECT_EQ(e["reportingInstance"], "controller-0");
  EXPECT_EQ(e["type"], "Normal");
  EXPECT_EQ(e["reason"], "Scheduled");
  EXPECT_EQ(e["action"], "Create");
  EXPECT_EQ(e["note"], "created batch/v1 Job hello-x");
  EXPECT_EQ(e["regarding"]["kind"], "Job");
  EXPECT_EQ(e["regarding"]["uid"], "uid-1");
  EXPECT_EQ(e["regarding"]["namespace"], "ci");
  EXPECT_TRUE(std::regex_match(e["eventTime"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")));
  EXPECT_FALSE(e.contains("series"));
  EXPECT_EQ(rec.Stats().created, 1u);
}

TEST_F(EventsTest, ClusterScopedObjectsGetEventsInDefault) {
  EventRecorder rec(fake_, clock_, Options());
  ObjectReference cls{"execution.ayatori.ddupan.top/v1alpha1", "JobClass", "", "default", "u2", ""};
  rec.Record(cls, EventType::kWarning, "InvalidParameters", "Validate", "parametersRef not found");
  ASSERT_TRUE(rec.Flush(5s));
  auto events = Events("default");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "Warning");
  EXPECT_FALSE(events[0]["regarding"].contains("namespace"));
}

TEST_F(EventsTest, RepeatsWithinTheWindowIncrementTheSeriesInsteadOfCreating) {
  EventRecorder rec(fake_, clock_, Options());
  rec.Record(job_, EventType::kWarning, "BackendUnreachable", "Observe", "dial tcp: refused");
  ASSERT_TRUE(rec.Flush(5s));
  for (int i = 0; i < 4; ++i) {
    clock_.Advance(10s);
    rec.Record(job_, EventType::kWarning, "BackendUnreachable", "Observe", "dial tcp: refused");
  }
  ASSERT_TRUE(rec.Flush(5s));
  auto events = Events("ci");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["series"]["count"], 5);
  EXPECT_TRUE(events[0]["series"].contains("lastObservedTime"));
  auto stats = rec.Stats();
  EXPECT_EQ(stats.created, 1u);
  EXPECT_EQ(stats.deduplicated, 4u);
  EXPECT_EQ(stats.seriesUpdates, 1u);  // four repeats, one write
  EXPECT_EQ(fake_.CountActions("create", "events.events.k8s.io"), 1u);
  EXPECT_EQ(fake_.CountActions("patch", "events.events.k8s.io"), 1u);
}

TEST_F(EventsTest, RepeatsBeforeTheCreateLandAreCreatedWithTheirSeries) {
  EventRecorder rec(fake_, clock_, Options());
  rec.Record(job_, EventType::kNormal, "Started", "Run", "");
  rec.Record(job_, EventType::kNormal, "Started", "Run", "");
  ASSERT_TRUE(rec.Flush(5s));
  auto events = Events("ci");
  ASSERT_EQ(events.size(), 1u);
  // Depending on timing the second call folded before or after the create; either way one
  // Event with count 2 exists.
  EXPECT_EQ(events[0]["series"]["count"], 2);
}

TEST_F(EventsTest, DifferentNotesAndExpiredWindowsCreateNewEvents) {
  EventRecorderOptions o = Options();
  o.dedupWindow = 10min;
  EventRecorder rec(fake_, clock_, o);
  rec.Record(job_, EventType::kNormal, "Progress", "Run", "step 1");
  rec.Record(job_, EventType::kNormal, "Progress", "Run", "step 2");
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(Events("ci").size(), 2u);
  clock_.Advance(11min);
  rec.Record(job_, EventType::kNormal, "Progress", "Run", "step 1");
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(Events("ci").size(), 3u);
}

TEST_F(EventsTest, NewEventsAreRateLimitedPerObject) {
  EventRecorderOptions o = Options();
  o.perObjectBurst = 3;
  o.perObjectQps = 1.0 / 60;
  EventRecorder rec(fake_, clock_, o);
  for (int i = 0; i < 5; ++i) {
    rec.Record(job_, EventType::kNormal, "Progress", "Run", "step " + std::to_string(i));
  }
  ObjectReference other = job_;
  other.uid = "uid-2";
  other.name = "other";
  rec.Record(other, EventType::kNormal, "Progress", "Run", "own budget");
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(Events("ci").size(), 4u);
  EXPECT_EQ(rec.Stats().droppedRateLimited, 2u);
  clock_.Advance(60s);
  rec.Record(job_, EventType::kNormal, "Progress", "Run", "step 5");
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(Events("ci").size(), 5u);
}

TEST_F(EventsTest, NotesAreSanitizedAndCutTo1KiBOnACharacterBoundary) {
  EventRecorderOptions o = Options();
  o.sanitizeNote = [](std::string_view note) {
    return std::regex_replace(std::string(note), std::regex("password=[^ ]*"), "password=***");
  };
  EventRecorder rec(fake_, clock_, o);
  EXPECT_EQ(rec.PrepareNote("login password=hunter2 failed"), "login password=*** failed");
  std::string longNote(1023, 'a');
  longNote += "\xC3\xA9";  // "é": would straddle the 1024-byte limit
  longNote += std::string(100, 'b');
  std::string cut = rec.PrepareNote(longNote);
  EXPECT_EQ(cut.size(), 1023u);
  rec.Record(job_, EventType::kWarning, "Failed", "Run", longNote);
  ASSERT_TRUE(rec.Flush(5s));
  auto events = Events("ci");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_LE(events[0]["note"].get<std::string>().size(), 1024u);
}

TEST_F(EventsTest, AnExpiredEventIsCreatedAgainWhenItsSeriesGrows) {
  EventRecorder rec(fake_, clock_, Options());
  rec.Record(job_, EventType::kNormal, "Waiting", "Run", "queued");
  ASSERT_TRUE(rec.Flush(5s));
  auto events = Events("ci");
  ASSERT_EQ(events.size(), 1u);
  // The API server's event TTL removed it.
  ASSERT_TRUE(
      fake_.Delete(EventsResource(), "ci", events[0]["metadata"]["name"].get<std::string>(), {})
          .ok());
  rec.Record(job_, EventType::kNormal, "Waiting", "Run", "queued");
  ASSERT_TRUE(rec.Flush(5s));
  events = Events("ci");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["series"]["count"], 2);
}

TEST_F(EventsTest, WriteFailuresAreCountedAndTheNextOccurrenceTriesAgain) {
  fake_.FailNext("create", "events.events.k8s.io", Status(StatusCode::kForbidden, "no RBAC"));
  EventRecorder rec(fake_, clock_, Options());
  rec.Record(job_, EventType::kNormal, "Started", "Run", "x");
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(rec.Stats().failed, 1u);
  EXPECT_TRUE(Events("ci").empty());
  rec.Record(job_, EventType::kNormal, "Started", "Run", "x");
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(Events("ci").size(), 1u);
}

// Counts creates and patches and keeps nothing, so that a heap measurement sees only the
// recorder's own memory (FakeKubeClient stores every Event it is given).
class FakeCountingKubeClient final : public KubeClient {
 public:
  StatusOr<nlohmann::json> Get(const ResourceRef&, std::string_view, std::string_view) override {
    return Status(StatusCode::kNotFound, "not stored");
  }
  StatusOr<ObjectList> List(const ResourceRef&, std::string_view, const ListOptions&) override {
    return ObjectList{};
  }
  StatusOr<nlohmann::json> Create(const ResourceRef&, std::string_view,
                                  const nlohmann::json& object, const WriteOptions&) override {
    ++creates;
    return object;
  }
  StatusOr<nlohmann::json> Update(const ResourceRef&, std::string_view,
                                  const nlohmann::json& object, const WriteOptions&) override {
    return object;
  }
  StatusOr<nlohmann::json> UpdateStatus(const ResourceRef&, std::string_view,
                                        const nlohmann::json& object,
                                        const WriteOptions&) override {
    return object;
  }
  StatusOr<nlohmann::json> Patch(const ResourceRef&, std::string_view, std::string_view, PatchType,
                                 const nlohmann::json& patch, const PatchOptions&) override {
    ++patches;
    return patch;
  }
  Status Delete(const ResourceRef&, std::string_view, std::string_view,
                const DeleteOptions&) override {
    return Status();
  }
  Status Watch(const ResourceRef&, std::string_view, const WatchOptions&, std::stop_token,
               const WatchHandler&) override {
    return Status();
  }

  std::atomic<uint64_t> creates{0};
  std::atomic<uint64_t> patches{0};
};

ObjectReference NumberedJob(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "job-%06d", i);
  char uid[40];  // the shape of a real uid (36 characters: one heap allocation as a key)
  std::snprintf(uid, sizeof uid, "00000000-0000-4000-8000-%012d", i);
  return {"execution.ayatori.ddupan.top/v1alpha1", "Job", "ci", name, uid, "12345"};
}

TEST_F(EventsTest, KeepsLittleMemoryPerRegardingObject) {
  constexpr int kObjects = 10000;
  FakeCountingKubeClient counting;
  EventRecorderOptions o = Options();
  o.queueCapacity = size_t{2} * kObjects;
  EventRecorder rec(counting, clock_, o);
  std::vector<ObjectReference> refs;
  refs.reserve(kObjects);
  for (int i = 0; i < kObjects; ++i) refs.push_back(NumberedJob(i));
  // Warm up the writer thread (its malloc arena) before measuring.
  rec.Record(NumberedJob(-1), EventType::kNormal, "Warmup", "Run", "");
  ASSERT_TRUE(rec.Flush(5s));

  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < kObjects; ++i) {
    rec.Record(refs[i], EventType::kNormal, "Started", "Run", "the backend started the Job");
    rec.Record(refs[i], EventType::kNormal, "Succeeded", "Run", "the Job completed");
  }
  ASSERT_TRUE(rec.Flush(60s));
  const size_t after = mallinfo2().uordblks;

  EXPECT_EQ(rec.TrackedObjects(), static_cast<size_t>(kObjects) + 1);
  EXPECT_EQ(counting.creates.load(), 2u * kObjects + 1);
  EXPECT_EQ(rec.Stats().created, 2u * kObjects + 1);
  const double perObject = after > before ? static_cast<double>(after - before) / kObjects : 0.0;
  std::printf("EventRecorder heap per regarding object with two Events: %.0f bytes\n", perObject);
  RecordProperty("bytes_per_regarding_object", static_cast<int>(perObject));
  EXPECT_LE(perObject, 400.0);
}

TEST_F(EventsTest, IdleSeriesAndRefilledObjectsAreForgottenAndRepeatsCreateNewEvents) {
  EventRecorderOptions o = Options();
  o.dedupWindow = 10min;
  o.perObjectBurst = 25;
  o.perObjectQps = 1.0 / 600;  // two tokens take 20 minutes to come back
  EventRecorder rec(fake_, clock_, o);
  for (int i = 0; i < 3; ++i) {
    rec.Record(NumberedJob(i), EventType::kNormal, "Started", "Run", "");
    rec.Record(NumberedJob(i), EventType::kNormal, "Succeeded", "Run", "");
  }
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(rec.TrackedObjects(), 3u);
  EXPECT_EQ(Events("ci").size(), 6u);

  // The series are idle for the window, but the buckets have not refilled: objects stay.
  clock_.Advance(10min);
  rec.Record(NumberedJob(100), EventType::kNormal, "Started", "Run", "");
  EXPECT_EQ(rec.TrackedObjects(), 4u);
  ASSERT_TRUE(rec.Flush(5s));  // a series whose create is queued is kept

  // Refilled buckets and no series: nothing is left of the first three objects (nor of job 100,
  // whose one token came back and whose series went idle).
  clock_.Advance(10min);
  rec.Record(NumberedJob(200), EventType::kNormal, "Started", "Run", "");
  EXPECT_EQ(rec.TrackedObjects(), 1u);

  rec.Record(NumberedJob(0), EventType::kNormal, "Started", "Run", "");
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(rec.TrackedObjects(), 2u);
  EXPECT_EQ(rec.Stats().deduplicated, 0u);
  EXPECT_EQ(rec.Stats().created, 9u);
  int startedOfJob0 = 0;
  for (const auto& e : Events("ci")) {
    if (e["regarding"]["name"] == "job-000000" && e["reason"] == "Started") ++startedOfJob0;
    EXPECT_FALSE(e.contains("series")) << e.dump();
  }
  EXPECT_EQ(startedOfJob0, 2);
}

TEST_F(EventsTest, TheWriterThreadForgetsIdleObjectsWithoutFurtherRecords) {
  EventRecorderOptions o = Options();
  o.dedupWindow = 1s;  // expiry runs every 100 ms of real time from the writer thread
  o.perObjectQps = 0;  // no rate limit: an object without series is forgotten at once
  EventRecorder rec(fake_, clock_, o);
  rec.Record(job_, EventType::kNormal, "Started", "Run", "");
  rec.Record(job_, EventType::kNormal, "Succeeded", "Run", "");
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(rec.TrackedObjects(), 1u);
  clock_.Advance(2s);
  ayatori::testing::Eventually([&] { return rec.TrackedObjects() == 0; }, 10s, 10ms);
  EXPECT_EQ(rec.TrackedObjects(), 0u);
}

TEST_F(EventsTest, ARefilledBucketAllowsABurstAgainButNoMore) {
  EventRecorderOptions o = Options();
  o.perObjectBurst = 3;
  o.perObjectQps = 1.0 / 60;
  EventRecorder rec(fake_, clock_, o);
  auto record = [&](const ObjectReference& ref, int from, int n) {
    for (int i = from; i < from + n; ++i) {
      rec.Record(ref, EventType::kNormal, "Progress", "Run", "step " + std::to_string(i));
    }
  };
  ObjectReference other = NumberedJob(2);
  record(job_, 0, 5);
  record(other, 0, 3);  // its own budget
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(rec.Stats().created, 6u);
  EXPECT_EQ(rec.Stats().droppedRateLimited, 2u);

  clock_.Advance(30s);  // half a token
  record(job_, 5, 1);
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(rec.Stats().created, 6u);
  EXPECT_EQ(rec.Stats().droppedRateLimited, 3u);

  clock_.Advance(1h);  // refilled to the burst, not beyond
  record(job_, 10, 5);
  ASSERT_TRUE(rec.Flush(5s));
  EXPECT_EQ(rec.Stats().created, 9u);
  EXPECT_EQ(rec.Stats().droppedRateLimited, 5u);
  EXPECT_EQ(Events("ci").size(), 9u);
}

}  // namespace
}  // namespace ayatori::kube
