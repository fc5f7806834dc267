// Work spread over threads, for the benchmark programs that create many objects at once.
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

namespace ayatori::bench {

// Calls body(i) for every i in [0, count) on `threads` threads, each taking the next i; returns
// when all are done.
inline void ParallelFor(int count, int threads, const std::function<void(int)>& body) {
  std::atomic<int> next{0};
  std::vector<std::jthread> workers;
  workers.reserve(static_cast<size_t>(threads));
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&] {
      for (int i = next++; i < count; i = next++) body(i);
    });
  }
}

}  // namespace ayatori::bench
