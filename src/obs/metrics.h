// A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
// exposition format (version 0.0.4). Thread-safe; label sets are created on first use.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "obs/metrics_catalog.h"

namespace ayatori::obs {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Inc(double v = 1);
  double Value() const;

 private:
  mutable std::mutex mu_;
  double value_ = 0;
};

class Gauge {
 public:
  void Set(double v);
  void Add(double v);
  double Value() const;

 private:
  mutable std::mutex mu_;
  double value_ = 0;
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<uint64_t> buckets_;  // non-cumulative, one per bound plus +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// A sample value or bucket bound as Prometheus' Go client prints it (strconv.FormatFloat(v, 'g',
// -1, 64)): the shortest digits that read back as v, exponent form below 1e-4 and from 1e6 up
// ("0.0025", "1.5e+06"), and NaN, +Inf, -Inf.
std::string FormatFloat(double v);

// Seconds-valued buckets from 1 ms to ~60 s.
std::vector<double> DefaultLatencyBuckets();

class Registry {
 public:
  // A metric of the catalog (metrics_catalog.h); `labels` carries exactly its label names, in
  // order (checked by assert).
  Counter& GetCounter(const MetricDef& def, const Labels& labels = {});
  Gauge& GetGauge(const MetricDef& def, const Labels& labels = {});
  Histogram& GetHistogram(const MetricDef& def, const Labels& labels = {},
                          std::vector<double> bounds = DefaultLatencyBuckets());

  // By name and help text: for metrics outside the catalog (the registry's own tests).
  Counter& GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& GetGauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& GetHistogram(const std::string& name, const std::string& help,
                          const Labels& labels = {},
                          std::vector<double> bounds = DefaultLatencyBuckets());
  // Called at render time to refresh gauges derived from other state (queue depth, jobs by state).
  void AddCollector(std::function<void(Registry&)> collector);
  // Text exposition format.
  std::string Render();

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  struct Family {
    Kind kind = Kind::kCounter;
    std::string help;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& GetFamily(const std::string& name, const std::string& help, Kind kind);

  std::mutex mu_;
  std::map<std::string, Family> families_;
  std::vector<std::function<void(Registry&)>> collectors_;
};

}  // namespace ayatori::obs
