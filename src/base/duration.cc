#include "base/duration.h"

#include <cstdint>
#include <limits>
#include <string>

namespace ayatori::base {

StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument,
                  "\"" + std::string(text) + "\" is not a duration: " + why +
                      " (use numbers with units ms, s, m, h, e.g. 500ms, 90s, 10m, 1h30m)");
  };
  if (text.empty()) return bad("it is empty");
  constexpr std::size_t kMaxDigits = 9;
  int64_t total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    int64_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      n = n * 10 + (text[i] - '0');
      if (++i - start > kMaxDigits) return bad("a number has more than 9 digits");
    }
    if (i == start) {
      return bad("expected a number at \"" + std::string(text.substr(start)) + "\"");
    }
    int64_t unitMs = 0;
    if (text.substr(i, 2) == "ms") {
      unitMs = 1;
      i += 2;
    } else if (i < text.size() && text[i] == 's') {
      unitMs = 1000;
      ++i;
    } else if (i < text.size() && text[i] == 'm') {
      unitMs = int64_t{60} * 1000;
      ++i;
    } else if (i < text.size() && text[i] == 'h') {
      unitMs = int64_t{60} * 60 * 1000;
      ++i;
    } else if (i == text.size()) {
      return bad("the number " + std::string(text.substr(start)) + " has no unit");
    } else {
      return bad("unknown unit at \"" + std::string(text.substr(i)) + "\"");
    }
    // 9 digits of hours is 3.6e15 ms: the product fits; only the sum can overflow.
    const int64_t ms = n * unitMs;
    if (total > std::numeric_limits<int64_t>::max() - ms) return bad("it is too long");
    total += ms;
  }
  return std::chrono::milliseconds(total);
}

}  // namespace ayatori::base
