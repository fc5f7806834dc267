#include "kube/token_bucket.h"

#include <gtest/gtest.h>

#include "kube/testing/fake_clock.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

TEST(TokenBucketTest, AllowsABurstThenRefillsAtQps) {
  FakeClock clock;
  TokenBucket b(/*qps=*/10, /*burst=*/3, clock);
  EXPECT_TRUE(b.TryAccept());
  EXPECT_TRUE(b.TryAccept());
  EXPECT_TRUE(b.TryAccept());
  EXPECT_FALSE(b.TryAccept());
  clock.Advance(99ms);
  EXPECT_FALSE(b.TryAccept());
  clock.Advance(1ms);
  EXPECT_TRUE(b.TryAccept());
  EXPECT_FALSE(b.TryAccept());
}

TEST(TokenBucketTest, IdleTimeDoesNotAccumulateBeyondBurst) {
  FakeClock clock;
  TokenBucket b(100, 2, clock);
  clock.Advance(1h);
  EXPECT_TRUE(b.TryAccept());
  EXPECT_TRUE(b.TryAccept());
  EXPECT_FALSE(b.TryAccept());
}

TEST(TokenBucketTest, ReservationsQueueUpAtOneIntervalEach) {
  FakeClock clock;
  TokenBucket b(10, 1, clock);
  EXPECT_EQ(b.Reserve(), 0ns);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(b.Reserve()), 100ms);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(b.Reserve()), 200ms);
  clock.Advance(300ms);
  // The two reserved tokens were consumed by the refill; the bucket is empty, not negative.
  EXPECT_EQ(b.Reserve(), 0ns);
  EXPECT_FALSE(b.TryAccept());
}

TEST(TokenBucketTest, NonPositiveQpsDisablesLimiting) {
  FakeClock clock;
  TokenBucket b(0, 1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(b.TryAccept());
  EXPECT_EQ(b.Reserve(), 0ns);
}

TEST(TokenBucketTest, WaitReturnsFalseWhenStopped) {
  FakeClock clock;
  TokenBucket b(0.001, 1, clock);  // the second token is 1000 s away
  EXPECT_TRUE(b.Wait());
  std::stop_source stop;
  stop.request_stop();
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(b.Wait(stop.get_token()));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

}  // namespace
// ReserveRequests: several tokens taken at once (a read and the create that must follow it), and
// the unused ones given back.
TEST(TokenBucketTest, ReservesSeveralTokensAtOnceAndTakesBackTheUnused) {
  FakeClock clock;
  TokenBucket bucket(10, 2, clock);
  EXPECT_EQ(bucket.Reserve(2), std::chrono::nanoseconds(0));  // the whole burst
  EXPECT_FALSE(bucket.TryAccept());
  bucket.GiveBack(1);
  EXPECT_TRUE(bucket.TryAccept());
  EXPECT_FALSE(bucket.TryAccept());
  // Two more now wait two refill intervals (100 ms each at 10 qps).
  EXPECT_EQ(bucket.Reserve(2), std::chrono::milliseconds(200));
  bucket.GiveBack(100);  // never more than the burst
  clock.Advance(std::chrono::seconds(10));
  EXPECT_TRUE(bucket.TryAccept());
  EXPECT_TRUE(bucket.TryAccept());
  EXPECT_FALSE(bucket.TryAccept());
}

}  // namespace ayatori::kube
