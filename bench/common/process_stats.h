// What /proc says about a process (and the machine), for the benchmark programs of bench/.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

namespace ayatori::bench {

// A "Vm...:  N kB" line of /proc/<pid>/status in KiB (VmRSS, VmHWM = peak RSS), -1 if unknown.
inline int64_t StatusKiB(int pid, const std::string& field = "VmRSS") {
  if (pid <= 0) return -1;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

inline int64_t RssKiB(int pid) { return StatusKiB(pid, "VmRSS"); }

// User + system CPU seconds a process used so far, -1 if unknown.
inline double CpuSeconds(int pid) {
  if (pid <= 0) return -1;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  double ticks = 0;
  // Fields after the command: state(3) ... utime(14) stime(15).
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(f);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Busy and total CPU seconds of the machine (all cores) from /proc/stat.
inline std::pair<double, double> MachineCpu() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  double busy = 0, total = 0;
  for (int i = 0; i < 8; ++i) {
    double v = 0;
    in >> v;
    total += v;
    if (i != 3 && i != 4) busy += v;  // idle, iowait
  }
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  return {busy / tick, total / tick};
}

}  // namespace ayatori::bench
