// The clock seam (LevelDB's Env idea): everything that reads time takes a Clock so that deadline,
// TTL and backoff logic is tested with a fake clock, never with sleeps.
#pragma once

#include <chrono>

namespace ayatori {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time for API timestamps (startTime, completionTime, lastTransitionTime).
  virtual std::chrono::system_clock::time_point Now() const = 0;
  // Monotonic time for timers and backoff.
  virtual std::chrono::steady_clock::time_point SteadyNow() const = 0;
};

class SystemClock final : public Clock {
 public:
  std::chrono::system_clock::time_point Now() const override {
    return std::chrono::system_clock::now();
  }
  std::chrono::steady_clock::time_point SteadyNow() const override {
    return std::chrono::steady_clock::now();
  }
  static SystemClock& Instance() {
    static SystemClock clock;
    return clock;
  }
};

}  // namespace ayatori
