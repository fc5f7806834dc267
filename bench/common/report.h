// What the benchmark programs of bench/ measure and print alike: elapsed seconds, MiB,
// percentiles, the MET/MISSED verdict of a target and the machine's load.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace ayatori::bench {

// Seconds from `t` until now.
inline double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

inline double MiB(int64_t kib) { return static_cast<double>(kib) / 1024.0; }

// The p-quantile (p in 0..1) of `v`: the sample of rank round(p * (n - 1)) in sorted order; -1
// when `v` is empty.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(std::lround(p * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

// The nearest-rank percentile (percent in 0..100) of `v`, which must not be empty.
inline double NearestRankPercentile(std::vector<double> v, double percent) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(percent / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

// The word every target line of a benchmark ends with.
inline const char* MetOrMissed(bool met) { return met ? "MET" : "MISSED"; }

// The 1-, 5- and 15-minute load averages of /proc/loadavg, space-separated.
inline std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string l1, l5, l15;
  in >> l1 >> l5 >> l15;
  return l1 + " " + l5 + " " + l15;
}

}  // namespace ayatori::bench
