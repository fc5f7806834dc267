// A rate-limited work queue of object keys with client-go's semantics
// (k8s.io/client-go/util/workqueue):
//  - a key is queued at most once (dirty set), and never handed to two workers at once;
//  - a key added while it is being processed is queued again only after Done();
//  - AddAfter delays an add; when a key is waiting more than once the earliest time wins;
//  - AddRateLimited delays by the key's exponential backoff (base * 2^failures, capped), and
//    Forget resets it after a success;
//  - ShutDown makes Get return shutdown=true once the ready keys are handed out; later adds are
//    ignored and waiting (delayed) keys are dropped.
//  - With WorkqueueOptions::priority, ready keys are handed out by level (0 first), FIFO within a
//    level. A key's level is asked when it is added (outside the queue's lock, so the function
//    may read caches whose handlers add keys); adding a queued key again at a lower level moves it
//    up. A delayed key's level is asked when it is due (its next round may do something else
//    by then); a key re-queued by Done() the lowest level of the adds made while it was processed.
//  - With WorkqueueOptions::shareOf, the ready keys of a level are handed out in turns between
//    shares (round robin, FIFO within a share): a share with thousands of keys queued delays
//    another share's next key by at most one key per share ahead of it, not by its whole backlog.
//    The controller makes each namespace a share, so that one tenant's flood cannot starve the
//    others (docs/security.md).
// Delays are measured with the Clock's steady time. Blocked Get() calls sleep until the earliest
// delayed key is due; with a fake clock, call PromoteDue() after advancing it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ayatori/clock.h"

namespace ayatori::kube {

struct WorkqueueOptions {
  std::chrono::nanoseconds baseDelay = std::chrono::milliseconds(5);
  std::chrono::nanoseconds maxDelay = std::chrono::seconds(1000);
  // Levels 0..priorityLevels-1; priority(key) is clamped into that range. Without a function
  // every key is level 0 (one FIFO, client-go's order).
  int priorityLevels = 1;
  std::function<int(const std::string& key)> priority;
  // The share a key belongs to; without a function every key is in one share (FIFO per level).
  std::function<std::string(const std::string& key)> shareOf;
};

class Workqueue {
 public:
  explicit Workqueue(const Clock& clock, WorkqueueOptions options = {});
  Workqueue(const Workqueue&) = delete;
  Workqueue& operator=(const Workqueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, std::chrono::nanoseconds delay);
  // AddAfter(key, the key's next backoff delay) and counts a failure.
  void AddRateLimited(const std::string& key);
  // Clears the key's failure count (call after it was processed successfully).
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;
  // The delay the next AddRateLimited(key) will use.
  std::chrono::nanoseconds NextBackoff(const std::string& key) const;

  struct Item {
    std::string key;
    bool shutdown = false;
  };
  // Blocks until a key is ready (or shutdown). The caller must call Done(key) when finished.
  Item Get();
  // Like Get but waits at most `timeout` of real time; nullopt when nothing became ready.
  std::optional<Item> GetFor(std::chrono::nanoseconds timeout);
  void Done(const std::string& key);

  void ShutDown();
  bool ShuttingDown() const;

  // Moves delayed keys whose time has come into the ready queue; returns how many.
  size_t PromoteDue();

  size_t Len() const;         // ready keys (the depth metric)
  size_t WaitingLen() const;  // delayed keys
  size_t ProcessingLen() const;

 private:
  int LevelOf(const std::string& key) const;
  void AddLocked(const std::string& key, int level);
  // The next key of the lowest non-empty level (the front key of the share whose turn it is),
  // skipping entries left behind by a move up.
  std::optional<std::string> PopLocked();
  // Appends a key to its share's FIFO at a level (the share takes its turn if it had none).
  void PushLocked(const std::string& key, int level);
  // Moves the due keys into the ready queues at the level priority() gives them now (the lock
  // is released while it is asked); returns how many.
  size_t PromoteDueLocked(std::unique_lock<std::mutex>& lock);
  std::optional<std::chrono::steady_clock::time_point> NextDueLocked() const;
  std::chrono::nanoseconds BackoffFor(int failures) const;

  const Clock& clock_;
  const WorkqueueOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Ready keys: per level, one FIFO per share and the shares' turns (a share is in `turns` exactly
  // while its FIFO is not empty). A key moved up leaves a stale entry behind: an entry is live
  // only while its key is dirty, not processing, and at that level (level_).
  struct Level {
    std::unordered_map<std::string, std::deque<std::string>> byShare;
    std::deque<std::string> turns;
  };
  std::vector<Level> queues_;
  size_t ready_ = 0;  // live entries
  std::unordered_set<std::string> dirty_;
  // The level of each dirty key: where it is queued, or where Done() will queue it.
  std::unordered_map<std::string, int> level_;
  std::unordered_set<std::string> processing_;
  // Delayed keys: by due time, and each key's current due time (earliest wins).
  std::multimap<std::chrono::steady_clock::time_point, std::string> waiting_;
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> waitingDue_;
  std::unordered_map<std::string, int> failures_;
  bool shuttingDown_ = false;
};

}  // namespace ayatori::kube
