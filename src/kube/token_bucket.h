// A token bucket (client-go's flowcontrol.NewTokenBucketRateLimiter): `burst` tokens, refilled at
// `qps` per second. Time comes from a Clock so unit tests drive it with a fake clock.
#pragma once

#include <chrono>
#include <mutex>
#include <stop_token>

#include "ayatori/clock.h"

namespace ayatori::kube {

class TokenBucket {
 public:
  // qps <= 0 disables limiting. burst < 1 is treated as 1.
  TokenBucket(double qps, int burst, const Clock& clock);

  // Takes a token if one is available now.
  bool TryAccept();
  // Takes the next token, possibly one not yet refilled, and returns how long the caller must
  // wait before using it (zero when it was available). Reservations queue up fairly.
  // `count` > 1 takes that many at once (requests that must go out back to back).
  std::chrono::nanoseconds Reserve(int count = 1);
  // Reserve(count) and sleep for the delay (real time); false if `stop` was requested meanwhile.
  bool Wait(const std::stop_token& stop = {}, int count = 1);
  // Returns `count` reserved tokens that were not used (never above the burst).
  void GiveBack(int count);

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void RefillLocked(std::chrono::steady_clock::time_point now);

  const double qps_;
  const int burst_;
  const Clock& clock_;
  std::mutex mu_;
  double tokens_;  // may go negative: reserved tokens not refilled yet
  std::chrono::steady_clock::time_point last_;
};

}  // namespace ayatori::kube
