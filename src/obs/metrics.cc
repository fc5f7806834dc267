#include "obs/metrics.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace ayatori::obs {

void Counter::Inc(double v) {
  std::lock_guard lock(mu_);
  value_ += v;
}
double Counter::Value() const {
  std::lock_guard lock(mu_);
  return value_;
}
void Gauge::Set(double v) {
  std::lock_guard lock(mu_);
  value_ = v;
}
void Gauge::Add(double v) {
  std::lock_guard lock(mu_);
  value_ += v;
}
double Gauge::Value() const {
  std::lock_guard lock(mu_);
  return value_;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(bounds_.size() + 1, 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::Observe(double v) {
  std::lock_guard lock(mu_);
  auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
  buckets_[static_cast<size_t>(it - bounds_.begin())]++;
  sum_ += v;
  count_++;
}

Histogram::Snapshot Histogram::Read() const {
  std::lock_guard lock(mu_);
  Snapshot s;
  s.bounds = bounds_;
  uint64_t acc = 0;
  for (auto b : buckets_) {
    acc += b;
    s.cumulative.push_back(acc);
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

std::vector<double> DefaultLatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

Registry::Family& Registry::GetFamily(const std::string& name, const std::string& help, Kind kind) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.kind = kind;
    it->second.help = help;
  } else if (it->second.kind != kind) {
    // A programming error: one metric name used with two types.
    throw std::logic_error("metric " + name + " registered with two types");
  }
  return it->second;
}

Counter& Registry::GetCounter(const std::string& name, const std::string& help,
                              const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& slot = GetFamily(name, help, Kind::kCounter).counters[labels];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& Registry::GetGauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& slot = GetFamily(name, help, Kind::kGauge).gauges[labels];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& Registry::GetHistogram(const std::string& name, const std::string& help,
                                  const Labels& labels, std::vector<double> bounds) {
  std::lock_guard lock(mu_);
  auto& slot = GetFamily(name, help, Kind::kHistogram).histograms[labels];
  if (!slot) slot = std::make_unique<Histogram>(std::move(bounds));
  return *slot;
}

void Registry::AddCollector(std::function<void(Registry&)> collector) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collector));
}

namespace {

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatLabels(const Labels& labels, const std::string& extraName = "",
                         const std::string& extraValue = "") {
  if (labels.empty() && extraName.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ",";
    first = false;
    out += k + "=\"" + EscapeLabelValue(v) + "\"";
  }
  if (!extraName.empty()) {
    if (!first) out += ",";
    out += extraName + "=\"" + extraValue + "\"";
  }
  return out + "}";
}

std::string FormatNumber(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace

std::string Registry::Render() {
  std::vector<std::function<void(Registry&)>> collectors;
  {
    std::lock_guard lock(mu_);
    collectors = collectors_;
  }
  for (auto& c : collectors) c(*this);

  std::lock_guard lock(mu_);
  std::ostringstream out;
  for (const auto& [name, family] : families_) {
    out << "# HELP " << name << " " << family.help << "\n";
    switch (family.kind) {
      case Kind::kCounter:
        out << "# TYPE " << name << " counter\n";
        for (const auto& [labels, c] : family.counters) {
          out << name << FormatLabels(labels) << " " << FormatNumber(c->Value()) << "\n";
        }
        break;
      case Kind::kGauge:
        out << "# TYPE " << name << " gauge\n";
        for (const auto& [labels, g] : family.gauges) {
          out << name << FormatLabels(labels) << " " << FormatNumber(g->Value()) << "\n";
        }
        break;
      case Kind::kHistogram:
        out << "# TYPE " << name << " histogram\n";
        for (const auto& [labels, h] : family.histograms) {
          auto s = h->Read();
          for (size_t i = 0; i < s.bounds.size(); ++i) {
            out << name << "_bucket" << FormatLabels(labels, "le", FormatNumber(s.bounds[i])) << " "
                << s.cumulative[i] << "\n";
          }
          out << name << "_bucket" << FormatLabels(labels, "le", "+Inf") << " " << s.count << "\n";
          out << name << "_sum" << FormatLabels(labels) << " " << FormatNumber(s.sum) << "\n";
          out << name << "_count" << FormatLabels(labels) << " " << s.count << "\n";
        }
        break;
    }
  }
  return out.str();
}

}  // namespace ayatori::obs
