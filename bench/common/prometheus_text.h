// Reading samples out of the Prometheus text exposition format, for the benchmark programs.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace ayatori::bench {

struct Sample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

// The samples of metric `name` (not of metrics whose name only starts with it).
inline std::vector<Sample> ParseMetric(const std::string& text, const std::string& name) {
  std::vector<Sample> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0) continue;
    size_t pos = name.size();
    Sample s;
    if (pos < line.size() && line[pos] == '{') {
      size_t end = line.find('}', pos);
      if (end == std::string::npos) continue;
      std::string labels = line.substr(pos + 1, end - pos - 1);
      size_t i = 0;
      while (i < labels.size()) {
        size_t eq = labels.find('=', i);
        if (eq == std::string::npos || eq + 1 >= labels.size() || labels[eq + 1] != '"') break;
        size_t close = labels.find('"', eq + 2);
        if (close == std::string::npos) break;
        s.labels[labels.substr(i, eq - i)] = labels.substr(eq + 2, close - eq - 2);
        i = close + 1;
        if (i < labels.size() && labels[i] == ',') ++i;
      }
      pos = end + 1;
    } else if (pos < line.size() && line[pos] != ' ') {
      continue;  // another metric whose name starts with `name`
    }
    try {
      s.value = std::stod(line.substr(pos));
    } catch (...) {
      continue;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ayatori::bench
