#include "base/time.h"

#include <string>

namespace ayatori::base {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::minutes;

// The `n` digits at `pos` as a number; clears `ok` when one is missing or not a digit.
int DigitsAt(std::string_view s, size_t pos, size_t n, bool& ok) {
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (i >= s.size() || s[i] < '0' || s[i] > '9') {
      ok = false;
      return 0;
    }
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// ".digits" at `pos` (advanced past it), as microseconds; digits past the sixth are dropped.
bool ReadFraction(std::string_view s, size_t& pos, microseconds& fraction) {
  if (pos >= s.size() || s[pos] != '.') return true;
  const size_t first = ++pos;
  long long scale = 100000;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
    fraction += microseconds((s[pos] - '0') * scale);
    scale /= 10;
    ++pos;
  }
  return pos != first;
}

// "Z" or "+hh:mm" / "-hh:mm" at `pos` (advanced past it), as the offset from UTC.
bool ReadOffset(std::string_view s, size_t& pos, minutes& offset) {
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
    return true;
  }
  if (pos >= s.size() || (s[pos] != '+' && s[pos] != '-')) return false;
  bool ok = true;
  const int oh = DigitsAt(s, pos + 1, 2, ok);
  const int om = DigitsAt(s, pos + 4, 2, ok);
  if (!ok || s[pos + 3] != ':' || oh > 23 || om > 59) return false;
  offset = hours(oh) + minutes(om);
  if (s[pos] == '-') offset = -offset;
  pos += 6;
  return true;
}

}  // namespace

StatusOr<Rfc3339Time> ParseTime(std::string_view text) {
  using namespace std::chrono;
  const Status invalid(StatusCode::kInvalidArgument,
                       "invalid time \"" + std::string(text.substr(0, 64)) +
                           "\": want RFC 3339 such as 2026-11-29T08:00:00Z");
  // 2026-11-29T08:00:00[.fraction](Z|+hh:mm|-hh:mm)
  bool ok = text.size() >= 20;
  const int y = DigitsAt(text, 0, 4, ok);
  const int mo = DigitsAt(text, 5, 2, ok);
  const int d = DigitsAt(text, 8, 2, ok);
  const int h = DigitsAt(text, 11, 2, ok);
  const int mi = DigitsAt(text, 14, 2, ok);
  const int s = DigitsAt(text, 17, 2, ok);
  if (!ok || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't') ||
      text[13] != ':' || text[16] != ':') {
    return invalid;
  }
  size_t pos = 19;
  microseconds fraction{0};
  minutes offset{0};
  if (!ReadFraction(text, pos, fraction) || !ReadOffset(text, pos, offset)) return invalid;
  const year_month_day date{year(y), month(static_cast<unsigned>(mo)),
                            day(static_cast<unsigned>(d))};
  if (pos != text.size() || !date.ok() || h > 23 || mi > 59 || s > 59) return invalid;
  return Rfc3339Time(sys_days(date)) + hours(h) + minutes(mi) + seconds(s) + fraction - offset;
}

}  // namespace ayatori::base
