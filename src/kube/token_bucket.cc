#include "kube/token_bucket.h"

#include <algorithm>
#include <condition_variable>
#include <thread>

namespace ayatori::kube {

TokenBucket::TokenBucket(double qps, int burst, const Clock& clock)
    : qps_(qps),
      burst_(std::max(burst, 1)),
      clock_(clock),
      tokens_(std::max(burst, 1)),
      last_(clock.SteadyNow()) {}

void TokenBucket::RefillLocked(std::chrono::steady_clock::time_point now) {
  if (now <= last_) return;
  double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min<double>(burst_, tokens_ + elapsed * qps_);
  last_ = now;
}

bool TokenBucket::TryAccept() {
  if (qps_ <= 0) return true;
  std::lock_guard lock(mu_);
  RefillLocked(clock_.SteadyNow());
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

std::chrono::nanoseconds TokenBucket::Reserve(int count) {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  std::lock_guard lock(mu_);
  RefillLocked(clock_.SteadyNow());
  tokens_ -= std::max(count, 1);
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(-tokens_ / qps_));
}

void TokenBucket::GiveBack(int count) {
  if (qps_ <= 0 || count <= 0) return;
  std::lock_guard lock(mu_);
  RefillLocked(clock_.SteadyNow());
  tokens_ = std::min<double>(burst_, tokens_ + count);
}

bool TokenBucket::Wait(const std::stop_token& stop, int count) {
  auto delay = Reserve(count);
  if (delay <= std::chrono::nanoseconds(0)) return !stop.stop_requested();
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, delay, [] { return false; });
  return !stop.stop_requested();
}

}  // namespace ayatori::kube
