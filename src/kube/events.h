// An events.k8s.io/v1 Event recorder (client-go's tools/events, simplified):
//  - Record() never blocks on the API: events are queued and written by one background thread;
//  - an event equal to one recorded within dedupWindow (same regarding object, type, reason,
//    action and note) is not created again: its series.count is incremented and written at most
//    once per seriesInterval (and on Flush), so a hot loop costs bounded API writes;
//  - new events are rate-limited per regarding object (token bucket, like client-go's spam
//    filter); excess and queue overflow are dropped and counted;
//  - notes pass through `sanitizeNote` and are cut to 1 KiB (the API's limit).
// CALLERS MUST NOT PUT SECRET VALUES (Secret data, tokens, passwords, registry auth) INTO
// reason, action or note: Events are readable by anyone who can read the namespace.
//
// Memory: a controller records ~2 Events per Job (Started, then a terminal one) for thousands of
// Jobs, so what is kept per regarding object is small (~350 bytes for two Events, measured by
// events_test.cc) and nothing is kept forever. Per regarding object: the namespace its Events go
// to, its name (for Event names), its rate-limit state (tokens + last refill) and per distinct
// event a series: a 64-bit hash of the content as the dedup key, the Event name's suffix, counts
// and times, but no Event body. The body lives only where a write needs it: in the create queue
// until the create is written, and in a series whose count grew until its count is written (the
// Event may have expired in the API meanwhile and must then be created again). Series idle for
// dedupWindow are dropped; an object is dropped when it has no series left and its bucket has
// refilled (a full bucket is the same as no state). Expiry runs at most every dedupWindow / 10,
// from Record() and from the writer thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ayatori/clock.h"
#include "ayatori/kube_client.h"

namespace ayatori::kube {

enum class EventType { kNormal, kWarning };

struct ObjectReference {
  std::string apiVersion;
  std::string kind;
  std::string namespace_;  // "" for cluster-scoped objects (their Events go to "default")
  std::string name;
  std::string uid;
  std::string resourceVersion;
};

struct EventRecorderOptions {
  std::string reportingController;  // e.g. "execution.ayatori.ddupan.top/controller"
  std::string reportingInstance;    // e.g. the pod name
  std::chrono::milliseconds dedupWindow{std::chrono::minutes(10)};
  std::chrono::milliseconds seriesInterval{std::chrono::seconds(30)};
  int perObjectBurst = 25;          // new events per regarding object ...
  double perObjectQps = 1.0 / 300;  // ... refilled at one per 5 minutes
  size_t queueCapacity = 1000;
  size_t maxNoteBytes = 1024;
  // Applied to every note before it is cut to maxNoteBytes (e.g. to mask URLs with userinfo).
  std::function<std::string(std::string_view)> sanitizeNote;
  std::function<void(const std::string&)> log;  // write failures; nullptr = stderr
};

struct EventRecorderStats {
  uint64_t created = 0;        // Event objects created
  uint64_t seriesUpdates = 0;  // series.count patches (created + seriesUpdates = API writes)
  uint64_t deduplicated = 0;   // Record() calls folded into an existing series
  uint64_t droppedRateLimited = 0;
  uint64_t droppedQueueFull = 0;
  uint64_t failed = 0;  // API writes that failed
};

class EventRecorder {
 public:
  EventRecorder(KubeClient& client, const Clock& clock, EventRecorderOptions options);
  ~EventRecorder();  // writes what is queued (bounded by a short timeout), then stops
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  void Record(const ObjectReference& regarding, EventType type, std::string_view reason,
              std::string_view action, std::string_view note);

  // Writes everything queued, including pending series counts; false on timeout.
  bool Flush(std::chrono::milliseconds timeout);
  EventRecorderStats Stats() const;

  // The note as it will be written: sanitized, then cut to maxNoteBytes on a UTF-8 boundary.
  std::string PrepareNote(std::string_view note) const;

  // For tests: how many regarding objects have state (series or a spent rate-limit bucket).
  size_t TrackedObjects() const;

 private:
  // What an Event says; kept only until the write that needs it (see the header comment).
  struct EventContent {
    ObjectReference regarding;
    EventType type = EventType::kNormal;
    std::string reason;
    std::string action;
    std::string note;  // already prepared
    std::chrono::system_clock::time_point eventTime;
  };
  // One distinct event about one object.
  struct Series {
    uint64_t key = 0;     // hash of (reason, action, note, type): the dedup key within the object
    uint64_t unique = 0;  // the Event is named "<nameBase>.<hex unique>"; 0 until created
    int32_t count = 1;    // occurrences so far (the API's series.count is an int32)
    int32_t writtenCount = 0;  // count last written to the API
    std::chrono::system_clock::time_point lastObserved;
    std::chrono::steady_clock::time_point lastSeen;
    std::unique_ptr<EventContent> repeated;  // set while a grown count is not written yet
    bool queued = false;                     // a create is queued or being written
    bool dirty = false;                      // listed in dirty_: its count is to be written
  };
  // Everything kept about one regarding object.
  struct TrackedObject {
    std::string eventNamespace;
    std::string nameBase;  // the regarding name as Event names start with it
    double tokens = 0;     // rate limit: tokens left at `refilled`
    std::chrono::steady_clock::time_point refilled;
    std::vector<Series> series;
  };
  struct SeriesId {
    std::string objectKey;
    uint64_t seriesKey = 0;
  };
  struct CreateRequest {
    SeriesId id;
    EventContent content;
  };

  void Loop(const std::stop_token& stop);
  // Writes the create (content set) or the count (content empty) of one series.
  void Write(const SeriesId& id, std::unique_ptr<EventContent> content);
  nlohmann::json EventJson(const EventContent& c, const std::string& ns,
                           const std::string& name) const;
  void Log(const std::string& line) const;
  Series* FindLocked(const SeriesId& id, TrackedObject** object = nullptr);
  void MarkDirtyLocked(const std::string& objectKey, Series& s);
  bool TakeTokenLocked(TrackedObject& object, std::chrono::steady_clock::time_point now) const;
  bool BucketFullLocked(const TrackedObject& object,
                        std::chrono::steady_clock::time_point now) const;
  void MaybeExpireLocked(std::chrono::steady_clock::time_point now);
  std::chrono::milliseconds ExpiryPeriod() const;

  KubeClient& client_;
  const Clock& clock_;
  const EventRecorderOptions options_;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::condition_variable idleCv_;
  std::unordered_map<std::string, TrackedObject> objects_;  // by regarding uid or kind/ns/name
  std::deque<CreateRequest> createQueue_;
  std::vector<SeriesId> dirty_;  // series whose count changed (Series::dirty set)
  bool flushRequested_ = false;
  bool busy_ = false;
  std::chrono::steady_clock::time_point lastSeriesWrite_{};
  std::chrono::steady_clock::time_point lastExpiry_{};
  EventRecorderStats stats_;

  std::jthread thread_;
};

}  // namespace ayatori::kube
