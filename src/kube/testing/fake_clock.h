// A Clock whose time moves only when a test says so. Thread-safe.
#pragma once

#include <chrono>
#include <mutex>

#include "ayatori/clock.h"

namespace ayatori::kube::testing {

class FakeClock final : public Clock {
 public:
  FakeClock()
      : wall_(std::chrono::sys_days(std::chrono::year(2026) / 1 / 1)),
        steady_(std::chrono::steady_clock::time_point() + std::chrono::hours(1000)) {}
  explicit FakeClock(std::chrono::system_clock::time_point wall)
      : wall_(wall), steady_(std::chrono::steady_clock::time_point() + std::chrono::hours(1000)) {}

  std::chrono::system_clock::time_point Now() const override {
    std::lock_guard lock(mu_);
    return wall_;
  }
  std::chrono::steady_clock::time_point SteadyNow() const override {
    std::lock_guard lock(mu_);
    return steady_;
  }
  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard lock(mu_);
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
    steady_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  }

 private:
  mutable std::mutex mu_;
  std::chrono::system_clock::time_point wall_;
  std::chrono::steady_clock::time_point steady_;
};

}  // namespace ayatori::kube::testing
