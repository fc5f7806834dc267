// Reading samples out of the Prometheus text exposition format, for the benchmark programs.
#pragma once

#include <functional>
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

// The sum of metric `name`'s samples that `keep` accepts (every sample when `keep` is empty).
inline double SumMetric(const std::string& text, const std::string& name,
                        const std::function<bool(const Sample&)>& keep = nullptr) {
  double sum = 0;
  for (const auto& s : ParseMetric(text, name)) {
    if (!keep || keep(s)) sum += s.value;
  }
  return sum;
}

inline bool HasMetric(const std::string& text, const std::string& name) {
  return !ParseMetric(text, name).empty();
}

// Metric `name` summed by the value of its label `label` ("" for samples without it).
inline std::map<std::string, double> SumByLabel(const std::string& text, const std::string& name,
                                                const std::string& label) {
  std::map<std::string, double> out;
  for (const auto& s : ParseMetric(text, name)) {
    auto it = s.labels.find(label);
    out[it == s.labels.end() ? "" : it->second] += s.value;
  }
  return out;
}

// Whether a verb of ayatori_api_requests_total writes.
inline bool IsControllerWriteVerb(const std::string& verb) {
  return verb == "create" || verb == "update" || verb == "patch" || verb == "delete";
}

// The controller's API writes so far, from its /metrics text.
inline double ControllerWrites(const std::string& text) {
  return SumMetric(text, "ayatori_api_requests_total", [](const Sample& s) {
    auto v = s.labels.find("verb");
    return v != s.labels.end() && IsControllerWriteVerb(v->second);
  });
}

// Whether the controller (its /metrics text) reconciled at least `jobs` times and its workqueue
// is empty.
inline bool ReconciledAll(const std::string& text, double jobs) {
  return SumMetric(text, "ayatori_reconcile_duration_seconds_count") >= jobs &&
         HasMetric(text, "ayatori_workqueue_depth") &&
         SumMetric(text, "ayatori_workqueue_depth") == 0;
}

}  // namespace ayatori::bench
