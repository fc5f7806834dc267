#include "obs/metrics.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string_view>

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

namespace {

// The label names of `labels` equal those the declaration lists.
[[maybe_unused]] bool LabelsMatch(const MetricDef& def, const Labels& labels) {
  std::string names;
  for (const auto& [k, v] : labels) names += (names.empty() ? "" : ",") + k;
  return names == def.labels;
}

}  // namespace

Counter& Registry::GetCounter(const MetricDef& def, const Labels& labels) {
  assert(def.type == MetricType::kCounter && LabelsMatch(def, labels));
  return GetCounter(std::string(def.name), std::string(def.help), labels);
}

Gauge& Registry::GetGauge(const MetricDef& def, const Labels& labels) {
  assert(def.type == MetricType::kGauge && LabelsMatch(def, labels));
  return GetGauge(std::string(def.name), std::string(def.help), labels);
}

Histogram& Registry::GetHistogram(const MetricDef& def, const Labels& labels,
                                  std::vector<double> bounds) {
  assert(def.type == MetricType::kHistogram && LabelsMatch(def, labels));
  return GetHistogram(std::string(def.name), std::string(def.help), labels, std::move(bounds));
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

std::string FormatFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return "0";  // -0 too, as the Go client prints it
  // The shortest digits that read back as v, in the form "-d.ddde-XX".
  std::array<char, 64> buf{};
  auto [end, ec] =
      std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::scientific);
  if (ec != std::errc()) return "NaN";  // cannot happen: 64 bytes hold any double
  std::string_view sci(buf.data(), static_cast<size_t>(end - buf.data()));
  const bool negative = sci.front() == '-';
  if (negative) sci.remove_prefix(1);
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  int exp = 0;
  std::from_chars(sci.data() + e + (sci[e + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exp);

  std::string out = negative ? "-" : "";
  const int n = static_cast<int>(digits.size());
  if (exp < -4 || exp >= 6) {
    // Go's %e: d[.ddd]e±XX with at least two exponent digits.
    out += digits[0];
    if (n > 1) out += "." + digits.substr(1);
    out += exp < 0 ? "e-" : "e+";
    const int absExp = std::abs(exp);
    if (absExp < 10) out += '0';
    out += std::to_string(absExp);
  } else if (exp < 0) {
    out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else if (n <= exp + 1) {
    out += digits + std::string(static_cast<size_t>(exp + 1 - n), '0');
  } else {
    const size_t integerDigits = static_cast<size_t>(exp) + 1;
    out += digits.substr(0, integerDigits) + "." + digits.substr(integerDigits);
  }
  return out;
}

namespace {

// The exposition format escapes backslash and newline in HELP text, and also the double quote in
// label values.
std::string Escape(const std::string& v, bool quote) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || (quote && c == '"')) {
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
    out += k + "=\"" + Escape(v, /*quote=*/true) + "\"";
  }
  if (!extraName.empty()) {
    if (!first) out += ",";
    out += extraName + "=\"" + extraValue + "\"";
  }
  return out + "}";
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
    out << "# HELP " << name << " " << Escape(family.help, /*quote=*/false) << "\n";
    switch (family.kind) {
      case Kind::kCounter:
        out << "# TYPE " << name << " counter\n";
        for (const auto& [labels, c] : family.counters) {
          out << name << FormatLabels(labels) << " " << FormatFloat(c->Value()) << "\n";
        }
        break;
      case Kind::kGauge:
        out << "# TYPE " << name << " gauge\n";
        for (const auto& [labels, g] : family.gauges) {
          out << name << FormatLabels(labels) << " " << FormatFloat(g->Value()) << "\n";
        }
        break;
      case Kind::kHistogram:
        out << "# TYPE " << name << " histogram\n";
        for (const auto& [labels, h] : family.histograms) {
          auto s = h->Read();
          const std::string count = FormatFloat(static_cast<double>(s.count));
          for (size_t i = 0; i < s.bounds.size(); ++i) {
            out << name << "_bucket" << FormatLabels(labels, "le", FormatFloat(s.bounds[i])) << " "
                << FormatFloat(static_cast<double>(s.cumulative[i])) << "\n";
          }
          out << name << "_bucket" << FormatLabels(labels, "le", "+Inf") << " " << count << "\n";
          out << name << "_sum" << FormatLabels(labels) << " " << FormatFloat(s.sum) << "\n";
          out << name << "_count" << FormatLabels(labels) << " " << count << "\n";
        }
        break;
    }
  }
  return out.str();
}

}  // namespace ayatori::obs
