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
#include <unordered_set>

#include "ayatori/clock.h"
#include "ayatori/kube_client.h"
#include "kube/token_bucket.h"

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
  uint64_t seriesUpdates = 0;  // series.count writes
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

 private:
  struct Series {
    std::string eventName;  // "" until created
    std::string eventNamespace;
    nlohmann::json event;      // the event as first created (to re-create it if it expired)
    int64_t count = 1;         // occurrences so far
    int64_t writtenCount = 0;  // count last written to the API
    std::chrono::system_clock::time_point lastObserved;
    std::chrono::steady_clock::time_point lastSeen;
    bool queued = false;  // a create is queued
  };

  void Loop(std::stop_token stop);
  void Write(const std::string& key);
  void Log(const std::string& line) const;
  void ExpireLocked(std::chrono::steady_clock::time_point now);

  KubeClient& client_;
  const Clock& clock_;
  const EventRecorderOptions options_;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::condition_variable idleCv_;
  std::unordered_map<std::string, Series> series_;                        // by dedup key
  std::unordered_map<std::string, std::unique_ptr<TokenBucket>> limits_;  // by regarding object
  std::deque<std::string> createQueue_;                                   // dedup keys to create
  std::unordered_set<std::string> dirtySeries_;  // dedup keys whose count changed
  bool flushRequested_ = false;
  bool busy_ = false;
  std::chrono::steady_clock::time_point lastSeriesWrite_{};
  EventRecorderStats stats_;

  std::jthread thread_;
};

}  // namespace ayatori::kube
