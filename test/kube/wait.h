// Waiting on a condition with a deadline (never a bare sleep as synchronisation).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace ayatori::kube::testing {

// Polls `condition` every few milliseconds until it holds or `timeout` passes.
inline bool WaitUntil(const std::function<bool()>& condition,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace ayatori::kube::testing
