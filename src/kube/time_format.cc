#include "kube/time_format.h"

#include <cstdio>

namespace ayatori::kube {
namespace {

std::string Format(std::chrono::system_clock::time_point t, bool micros) {
  using namespace std::chrono;
  auto us = time_point_cast<microseconds>(t);
  auto days = floor<std::chrono::days>(us);
  year_month_day ymd{days};
  hh_mm_ss hms{us - days};
  char buf[40];
  if (micros) {
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%06dZ", int(ymd.year()),
                  unsigned(ymd.month()), unsigned(ymd.day()), int(hms.hours().count()),
                  int(hms.minutes().count()), int(hms.seconds().count()),
                  int(hms.subseconds().count()));
  } else {
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", int(ymd.year()),
                  unsigned(ymd.month()), unsigned(ymd.day()), int(hms.hours().count()),
                  int(hms.minutes().count()), int(hms.seconds().count()));
  }
  return buf;
}

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::string FormatTime(std::chrono::system_clock::time_point t) { return Format(t, false); }
std::string FormatMicroTime(std::chrono::system_clock::time_point t) { return Format(t, true); }

std::optional<std::chrono::system_clock::time_point> ParseTime(std::string_view s) {
  using namespace std::chrono;
  int y, mo, d, h, mi, sec;
  if (!Digits(s, 0, 4, &y) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, &mo) ||
      s[7] != '-' || !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' ||
      !Digits(s, 17, 2, &sec)) {
    return std::nullopt;
  }
  size_t pos = 19;
  nanoseconds frac{0};
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int64_t scale = 100000000;
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      frac += nanoseconds((s[pos] - '0') * scale);
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  minutes offset{0};
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om)) {
      return std::nullopt;
    }
    offset = hours(oh) + minutes(om);
    if (s[pos] == '-') offset = -offset;
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  year_month_day ymd{year(y), month(static_cast<unsigned>(mo)), day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  auto tp = sys_days(ymd) + hours(h) + minutes(mi) + seconds(sec) + frac - offset;
  return time_point_cast<system_clock::duration>(tp);
}

}  // namespace ayatori::kube
