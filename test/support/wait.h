// Waiting on a condition with a deadline, for every test tier.
//
// Tests never use a sleep as synchronisation: a fixed sleep is either too short on a loaded
// machine (flaky) or too long everywhere else (slow), and it says nothing about what the test
// waits for. Instead a test states the condition and a deadline; these helpers poll it, sleeping
// only between checks, and the test asserts on the answer. One copy for all tests, so every wait
// behaves the same way: the condition is checked once more at the deadline, and the sleep between
// checks never overshoots it.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace ayatori::testing {

// Calls `done` every `poll` until it returns true or `timeout` passes; returns the last answer of
// `done`, which is checked once more at the deadline. Callers polling something expensive (an API
// server, kubectl, docker) pass a longer `poll`.
inline bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                       std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(poll, deadline - now));
  }
  return true;
}

// Checks that `holds` stays true for `duration`, polling every `poll` and once more at the end;
// false as soon as it does not. For asserting that something does NOT happen within a window.
inline bool HoldsFor(const std::function<bool()>& holds, std::chrono::milliseconds duration,
                     std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
  const auto end = std::chrono::steady_clock::now() + duration;
  while (holds()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= end) return true;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(poll, end - now));
  }
  return false;
}

}  // namespace ayatori::testing
