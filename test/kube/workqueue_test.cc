#include "kube/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "kube/testing/fake_clock.h"
#include "test/support/wait.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;
using ayatori::testing::Eventually;
using testing::FakeClock;

TEST(WorkqueueTest, DeduplicatesKeysWaitingInTheQueue) {
  FakeClock clock;
  Workqueue q(clock);
  q.Add("ns/a");
  q.Add("ns/b");
  q.Add("ns/a");
  EXPECT_EQ(q.Len(), 2u);
  auto first = q.Get();
  auto second = q.Get();
  EXPECT_EQ(first.key, "ns/a");
  EXPECT_EQ(second.key, "ns/b");
  EXPECT_FALSE(first.shutdown);
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.ProcessingLen(), 2u);
}

TEST(WorkqueueTest, AddsWhileProcessingAreCoalescedAndRunAgainAfterDone) {
  FakeClock clock;
  Workqueue q(clock);
  q.Add("k");
  auto item = q.Get();
  ASSERT_EQ(item.key, "k");
  q.Add("k");
  q.Add("k");
  // Never handed out while it is being processed...
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_FALSE(q.GetFor(20ms).has_value());
  q.Done("k");
  // ...and exactly once afterwards.
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Get().key, "k");
  q.Done("k");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkqueueTest, DoneWithoutNewAddsDoesNotRequeue) {
  FakeClock clock;
  Workqueue q(clock);
  q.Add("k");
  q.Get();
  q.Done("k");
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.ProcessingLen(), 0u);
}

TEST(WorkqueueTest, NoKeyIsProcessedByTwoWorkersAtOnce) {
  FakeClock clock;
  Workqueue q(clock);
  std::mutex mu;
  std::set<std::string> inFlight;
  std::atomic<int> overlaps{0}, processed{0};
  std::vector<std::thread> workers;
  workers.reserve(4);
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      for (;;) {
        auto item = q.Get();
        if (item.shutdown) return;
        {
          std::lock_guard lock(mu);
          if (!inFlight.insert(item.key).second) ++overlaps;
        }
        std::this_thread::yield();
        {
          std::lock_guard lock(mu);
          inFlight.erase(item.key);
        }
        ++processed;
        q.Done(item.key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) q.Add("key-" + std::to_string(i % 5));
  EXPECT_TRUE(Eventually([&] { return q.Len() == 0 && q.ProcessingLen() == 0; }, 10s));
  q.ShutDown();
  for (auto& t : workers) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GE(processed.load(), 5);
}

TEST(WorkqueueTest, BackoffGrowsExponentiallyFrom5msAndIsCappedAt1000s) {
  FakeClock clock;
  Workqueue q(clock);
  std::vector<std::chrono::nanoseconds> delays;
  for (int i = 0; i < 40; ++i) {
    delays.push_back(q.NextBackoff("k"));
    q.AddRateLimited("k");
  }
  EXPECT_EQ(delays[0], 5ms);
  EXPECT_EQ(delays[1], 10ms);
  EXPECT_EQ(delays[2], 20ms);
  EXPECT_EQ(delays[10], 5ms * 1024);
  for (size_t i = 1; i < delays.size(); ++i) EXPECT_GE(delays[i], delays[i - 1]);
  EXPECT_EQ(delays.back(), 1000s);
  EXPECT_EQ(q.NumRequeues("k"), 40);
}

TEST(WorkqueueTest, RateLimitedAddBecomesReadyAfterItsBackoff) {
  FakeClock clock;
  Workqueue q(clock);
  q.AddRateLimited("k");  // 5 ms
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.WaitingLen(), 1u);
  clock.Advance(4ms);
  EXPECT_EQ(q.PromoteDue(), 0u);
  clock.Advance(1ms);
  EXPECT_EQ(q.PromoteDue(), 1u);
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.WaitingLen(), 0u);
}

TEST(WorkqueueTest, ForgetResetsTheBackoff) {
  FakeClock clock;
  Workqueue q(clock);
  q.AddRateLimited("k");
  q.AddRateLimited("k");
  q.AddRateLimited("k");
  EXPECT_EQ(q.NextBackoff("k"), 40ms);
  q.Forget("k");
  EXPECT_EQ(q.NumRequeues("k"), 0);
  EXPECT_EQ(q.NextBackoff("k"), 5ms);
  // Backoff is per key.
  q.AddRateLimited("other");
  EXPECT_EQ(q.NextBackoff("k"), 5ms);
}

TEST(WorkqueueTest, AddAfterReleasesKeysInDueOrderAndTheEarliestTimeWins) {
  FakeClock clock;
  Workqueue q(clock);
  q.AddAfter("a", 10s);
  q.AddAfter("b", 5s);
  q.AddAfter("a", 2s);   // earlier: replaces 10 s
  q.AddAfter("b", 30s);  // later: ignored
  EXPECT_EQ(q.WaitingLen(), 2u);
  clock.Advance(2s);
  q.PromoteDue();
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Get().key, "a");
  clock.Advance(3s);
  q.PromoteDue();
  EXPECT_EQ(q.Get().key, "b");
  clock.Advance(60s);
  EXPECT_EQ(q.PromoteDue(), 0u);  // the replaced and the ignored times left nothing behind
  EXPECT_EQ(q.WaitingLen(), 0u);
}

TEST(WorkqueueTest, AddAfterWithoutDelayAddsAtOnceAndDelayedKeyDeduplicatesWithQueued) {
  FakeClock clock;
  Workqueue q(clock);
  q.AddAfter("a", 0s);
  EXPECT_EQ(q.Len(), 1u);
  q.AddAfter("a", 1s);
  clock.Advance(1s);
  q.PromoteDue();
  EXPECT_EQ(q.Len(), 1u);  // "a" was still queued: not twice
}

TEST(WorkqueueTest, BlockedGetWakesWhenADelayedKeyBecomesDue) {
  FakeClock clock;
  Workqueue q(clock);
  q.AddAfter("later", 30s);
  auto got = std::async(std::launch::async, [&] { return q.Get(); });
  EXPECT_EQ(got.wait_for(50ms), std::future_status::timeout);
  clock.Advance(30s);
  q.PromoteDue();
  ASSERT_EQ(got.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(got.get().key, "later");
}

TEST(WorkqueueTest, ShutDownWakesBlockedGetAndIgnoresLaterAdds) {
  FakeClock clock;
  Workqueue q(clock);
  auto got = std::async(std::launch::async, [&] { return q.Get(); });
  EXPECT_EQ(got.wait_for(20ms), std::future_status::timeout);
  q.ShutDown();
  ASSERT_EQ(got.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(got.get().shutdown);
  EXPECT_TRUE(q.ShuttingDown());
  q.Add("k");
  q.AddAfter("k", 1s);
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_EQ(q.WaitingLen(), 0u);
  EXPECT_TRUE(q.Get().shutdown);
}

TEST(WorkqueueTest, ShutDownStillHandsOutKeysQueuedBeforeIt) {
  FakeClock clock;
  Workqueue q(clock);
  q.Add("a");
  q.AddAfter("delayed", 1s);
  q.ShutDown();
  auto item = q.Get();
  EXPECT_EQ(item.key, "a");
  EXPECT_FALSE(item.shutdown);
  q.Done("a");
  EXPECT_TRUE(q.Get().shutdown);  // the delayed key was dropped
}

// Levels from a map the test changes as it goes, like the controller's cache of Job states.
WorkqueueOptions Levels(const std::map<std::string, int>* levels) {
  WorkqueueOptions o;
  o.priorityLevels = 3;
  o.priority = [levels](const std::string& key) {
    auto it = levels->find(key);
    return it == levels->end() ? 2 : it->second;
  };
  return o;
}

TEST(WorkqueueTest, HandsOutLowerLevelsFirstAndFifoWithinALevel) {
  FakeClock clock;
  std::map<std::string, int> levels = {{"new1", 1}, {"new2", 1}, {"start", 0}, {"done", 2}};
  Workqueue q(clock, Levels(&levels));
  q.Add("done");
  q.Add("new1");
  q.Add("start");
  q.Add("new2");
  q.Add("unknown");  // not in the map: the function's default, level 2
  EXPECT_EQ(q.Len(), 5u);
  std::vector<std::string> order(5);
  for (auto& key : order) key = q.Get().key;
  EXPECT_EQ(order, (std::vector<std::string>{"start", "new1", "new2", "done", "unknown"}));
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkqueueTest, AddingAQueuedKeyAtALowerLevelMovesItUpOnce) {
  FakeClock clock;
  std::map<std::string, int> levels = {{"a", 2}, {"b", 2}, {"c", 1}};
  Workqueue q(clock, Levels(&levels));
  q.Add("a");
  q.Add("b");
  q.Add("c");
  levels["b"] = 0;
  q.Add("b");
  levels["a"] = 2;
  q.Add("a");  // same level: stays where it is
  EXPECT_EQ(q.Len(), 3u);
  EXPECT_EQ(q.Get().key, "b");
  EXPECT_EQ(q.Get().key, "c");
  EXPECT_EQ(q.Get().key, "a");
  // The entry "b" left at level 2 is not handed out a second time.
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_FALSE(q.GetFor(20ms).has_value());
}

TEST(WorkqueueTest, AKeyAddedWhileProcessingIsQueuedAtTheLowestLevelAskedAfterDone) {
  FakeClock clock;
  std::map<std::string, int> levels = {{"k", 2}, {"other", 1}};
  Workqueue q(clock, Levels(&levels));
  q.Add("k");
  ASSERT_EQ(q.Get().key, "k");
  q.Add("k");  // level 2
  levels["k"] = 0;
  q.Add("k");  // level 0 wins
  q.Add("other");
  q.Done("k");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.Get().key, "k");
  EXPECT_EQ(q.Get().key, "other");
  EXPECT_FALSE(q.GetFor(20ms).has_value());
}

// A delayed key is queued at the level its round has when it is due (the controller: a Job that
// waited to report its execution may have reported it and finished meanwhile).
TEST(WorkqueueTest, ADelayedKeyTakesTheLevelItHasWhenDue) {
  FakeClock clock;
  std::map<std::string, int> levels = {{"late", 0}, {"now", 1}, {"later", 2}};
  Workqueue q(clock, Levels(&levels));
  q.AddAfter("late", 1s);
  q.AddAfter("later", 1s);
  q.Add("now");
  levels["late"] = 2;   // nothing urgent left
  levels["later"] = 0;  // now urgent
  clock.Advance(2s);
  EXPECT_EQ(q.PromoteDue(), 2u);
  EXPECT_EQ(q.Get().key, "later");
  EXPECT_EQ(q.Get().key, "now");
  EXPECT_EQ(q.Get().key, "late");
}

TEST(WorkqueueTest, LevelsOutOfRangeAreClamped) {
  FakeClock clock;
  std::map<std::string, int> levels = {{"high", -5}, {"low", 99}, {"mid", 1}};
  Workqueue q(clock, Levels(&levels));
  q.Add("low");
  q.Add("mid");
  q.Add("high");
  EXPECT_EQ(q.Get().key, "high");
  EXPECT_EQ(q.Get().key, "mid");
  EXPECT_EQ(q.Get().key, "low");
}

WorkqueueOptions SharesByNamespace() {
  WorkqueueOptions o;
  o.shareOf = [](const std::string& key) { return key.substr(0, key.find('/')); };
  return o;
}

// The attacker queues a thousand keys first; the other namespaces' keys come out among the
// first few, one per turn, instead of after the thousand.
TEST(WorkqueueTest, AShareWithAThousandKeysQueuedDoesNotDelayAnotherShareBehindThem) {
  FakeClock clock;
  Workqueue q(clock, SharesByNamespace());
  for (int i = 0; i < 1000; ++i) q.Add("flood/job-" + std::to_string(i));
  q.Add("team-a/one");
  q.Add("team-a/two");
  q.Add("team-b/one");
  std::vector<std::string> first(6);
  for (auto& key : first) {
    key = q.Get().key;
    q.Done(key);
  }
  EXPECT_EQ(first, (std::vector<std::string>{"flood/job-0", "team-a/one", "team-b/one",
                                             "flood/job-1", "team-a/two", "flood/job-2"}));
  // The rest of the flood, in its own order, and nothing handed out twice.
  for (int i = 3; i < 1000; ++i) {
    auto item = q.Get();
    EXPECT_EQ(item.key, "flood/job-" + std::to_string(i));
    q.Done(item.key);
  }
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_FALSE(q.GetFor(20ms).has_value());
}

TEST(WorkqueueTest, SharesTakeTurnsWithinALevelAndLevelsStillComeFirst) {
  FakeClock clock;
  std::map<std::string, int> levels = {{"a/1", 1}, {"a/2", 1}, {"b/1", 1}, {"b/urgent", 0}};
  WorkqueueOptions o = Levels(&levels);
  o.shareOf = SharesByNamespace().shareOf;
  Workqueue q(clock, o);
  q.Add("a/1");
  q.Add("a/2");
  q.Add("b/1");
  q.Add("b/urgent");
  std::vector<std::string> order(4);
  for (auto& key : order) key = q.Get().key;
  EXPECT_EQ(order, (std::vector<std::string>{"b/urgent", "a/1", "b/1", "a/2"}));
}

// A key moved up leaves a stale entry in its share's FIFO at the old level; the share's turn
// skips it and hands out its next live key, and a share left with only stale entries drops out.
TEST(WorkqueueTest, AShareWhoseOnlyEntryMovedUpGivesItsTurnAway) {
  FakeClock clock;
  std::map<std::string, int> levels = {{"a/1", 1}, {"b/1", 1}, {"b/2", 1}};
  WorkqueueOptions o = Levels(&levels);
  o.shareOf = SharesByNamespace().shareOf;
  Workqueue q(clock, o);
  q.Add("a/1");
  q.Add("b/1");
  q.Add("b/2");
  levels["a/1"] = 0;
  q.Add("a/1");
  std::vector<std::string> order(3);
  for (auto& key : order) key = q.Get().key;
  EXPECT_EQ(order, (std::vector<std::string>{"a/1", "b/1", "b/2"}));
  EXPECT_EQ(q.Len(), 0u);
  EXPECT_FALSE(q.GetFor(20ms).has_value());
}

}  // namespace
}  // namespace ayatori::kube
