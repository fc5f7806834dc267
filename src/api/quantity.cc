#include "api/quantity.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ayatori::api {
namespace {

__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

constexpr int64_t kNanosPerUnit = 1'000'000'000;
// The apiserver caps every quantity at +-(2^63-1) units; in nanos that needs 93 bits.
constexpr Int128 kMaxNanos = Int128{INT64_MAX} * kNanosPerUnit;
constexpr size_t kMaxNanosDigits = 28;  // 9223372036854775807000000000
// Exponents longer than this are rejected, not clamped: a value so far out is a typo.
constexpr size_t kMaxExponentDigits = 9;

struct Suffix {
  int32_t exp10 = 0;  // the suffix multiplies by 10^exp10 ...
  int32_t exp2 = 0;   // ... and by 2^exp2
};

// The fixed suffixes of the grammar ("e<n>" is handled separately).
bool LookupSuffix(std::string_view s, Suffix& out) {
  struct Entry {
    std::string_view name;
    Suffix suffix;
  };
  static constexpr Entry kSuffixes[] = {
      {"", {0, 0}},    {"n", {-9, 0}},  {"u", {-6, 0}},  {"m", {-3, 0}},
      {"k", {3, 0}},   {"M", {6, 0}},   {"G", {9, 0}},   {"T", {12, 0}},
      {"P", {15, 0}},  {"E", {18, 0}},  {"Ki", {0, 10}}, {"Mi", {0, 20}},
      {"Gi", {0, 30}}, {"Ti", {0, 40}}, {"Pi", {0, 50}}, {"Ei", {0, 60}},
  };
  for (const Entry& e : kSuffixes) {
    if (e.name == s) {
      out = e.suffix;
      return true;
    }
  }
  return false;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses a string of at most kMaxNanosDigits + 1 decimal digits (fits easily in 128 bits).
Int128 DigitsToInt(std::string_view digits) {
  Int128 v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

// digits (most significant first, no leading zeros, not empty) * 2^exp2 * 10^exp10, rounded away
// from zero to an integer and capped at kMaxNanos.
Int128 ScaleToNanos(std::string digits, int32_t exp2, int64_t exp10) {
  if (exp2 > 0) {
    // One pass from the least significant digit: digit * 2^60 + carry stays below 2^64.
    uint64_t carry = 0;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
      uint64_t v = (static_cast<uint64_t>(*it - '0') << exp2) + carry;
      *it = static_cast<char>('0' + v % 10);
      carry = v / 10;
    }
    std::string head;
    for (; carry != 0; carry /= 10) head.insert(head.begin(), static_cast<char>('0' + carry % 10));
    digits.insert(0, head);
  }
  const int64_t n = static_cast<int64_t>(digits.size());
  if (exp10 >= 0) {
    if (n + exp10 > static_cast<int64_t>(kMaxNanosDigits)) return kMaxNanos;
    Int128 v = DigitsToInt(digits);
    for (int64_t i = 0; i < exp10; ++i) v *= 10;
    return v > kMaxNanos ? kMaxNanos : v;
  }
  // Negative exponent: the last -exp10 digits are a fraction of a nano, which rounds up.
  if (n <= -exp10) return 1;  // digits is non-zero, so this is a positive fraction of 1n
  const size_t whole_len = static_cast<size_t>(n + exp10);
  if (whole_len > kMaxNanosDigits) return kMaxNanos;
  Int128 v = DigitsToInt(std::string_view(digits).substr(0, whole_len));
  if (digits.find_first_not_of('0', whole_len) != std::string::npos) ++v;
  return v > kMaxNanos ? kMaxNanos : v;
}

// n / divisor rounded away from zero, saturated to int64.
int64_t DivideAwayFromZero(Int128 n, int64_t divisor) {
  Int128 q = n / divisor;
  Int128 r = n % divisor;
  if (r > 0) ++q;
  if (r < 0) --q;
  if (q > INT64_MAX) return INT64_MAX;
  if (q < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(q);
}

Int128 Combine(int64_t hi, uint64_t lo) {
  return static_cast<Int128>((static_cast<UInt128>(static_cast<uint64_t>(hi)) << 64) | lo);
}

}  // namespace

StatusOr<Quantity> Quantity::Parse(std::string_view s) {
  auto fail = [s](const std::string& why) -> Status {
    std::string quoted(s.substr(0, 64));
    if (s.size() > 64) quoted += "...";
    return Status(StatusCode::kInvalidArgument, "invalid quantity \"" + quoted + "\": " + why);
  };
  if (s.empty()) return fail("empty string (write 0 for zero)");

  size_t pos = 0;
  bool negative = false;
  if (s[pos] == '+' || s[pos] == '-') negative = s[pos++] == '-';
  const size_t int_begin = pos;
  while (pos < s.size() && IsDigit(s[pos])) ++pos;
  std::string_view int_part = s.substr(int_begin, pos - int_begin);
  std::string_view frac_part;
  if (pos < s.size() && s[pos] == '.') {
    const size_t frac_begin = ++pos;
    while (pos < s.size() && IsDigit(s[pos])) ++pos;
    frac_part = s.substr(frac_begin, pos - frac_begin);
  }
  if (int_part.empty() && frac_part.empty()) {
    return fail("expected a number such as 100m, 1.5, 512Mi or 1e3");
  }

  const std::string_view suffix_text = s.substr(pos);
  Suffix suffix;
  int64_t exponent = 0;
  if (!LookupSuffix(suffix_text, suffix)) {
    if (suffix_text[0] != 'e' && suffix_text[0] != 'E') {
      if (suffix_text.find_first_not_of("eEinumkKMGTP") == 0) {
        return fail("unexpected \"" + std::string(suffix_text) + "\" after the number");
      }
      return fail("unknown suffix \"" + std::string(suffix_text) +
                  "\" (want one of n u m k M G T P E Ki Mi Gi Ti Pi Ei, or e<exponent>)");
    }
    // e<signedInteger> / E<signedInteger>
    std::string_view exp_text = suffix_text.substr(1);
    bool exp_negative = false;
    if (!exp_text.empty() && (exp_text[0] == '+' || exp_text[0] == '-')) {
      exp_negative = exp_text[0] == '-';
      exp_text.remove_prefix(1);
    }
    if (exp_text.empty() || exp_text.find_first_not_of("0123456789") != std::string_view::npos) {
      return fail("malformed exponent \"" + std::string(suffix_text) +
                  "\" (want e or E followed by an integer, like 1e3)");
    }
    const size_t first_nonzero = exp_text.find_first_not_of('0');
    exp_text = first_nonzero == std::string_view::npos ? "" : exp_text.substr(first_nonzero);
    if (exp_text.size() > kMaxExponentDigits) return fail("exponent out of range");
    for (char c : exp_text) exponent = exponent * 10 + (c - '0');
    if (exp_negative) exponent = -exponent;
  }

  Quantity q;
  q.text_ = std::string(s);
  std::string digits;
  digits.reserve(int_part.size() + frac_part.size());
  digits.append(int_part).append(frac_part);
  const size_t first_nonzero = digits.find_first_not_of('0');
  if (first_nonzero == std::string::npos) return q;  // zero, whatever the sign and suffix
  digits.erase(0, first_nonzero);

  const int64_t exp10 = int64_t{suffix.exp10} + exponent - static_cast<int64_t>(frac_part.size()) +
                        9;  // + 9: count in nanos
  Int128 nanos = ScaleToNanos(std::move(digits), suffix.exp2, exp10);
  if (negative) nanos = -nanos;
  q.nanos_lo_ = static_cast<uint64_t>(nanos);
  q.nanos_hi_ = static_cast<int64_t>(nanos >> 64);
  return q;
}

Quantity Quantity::MustParse(std::string_view s) {
  StatusOr<Quantity> q = Parse(s);
  if (!q.ok()) {
    std::fprintf(stderr, "Quantity::MustParse: %s\n", q.status().message().c_str());
    std::abort();
  }
  return std::move(q).value();
}

int64_t Quantity::MilliValue() const {
  return DivideAwayFromZero(Combine(nanos_hi_, nanos_lo_), kNanosPerUnit / 1000);
}

int64_t Quantity::Value() const {
  return DivideAwayFromZero(Combine(nanos_hi_, nanos_lo_), kNanosPerUnit);
}

std::strong_ordering Quantity::operator<=>(const Quantity& other) const {
  // Two's complement order: the signed high word first, then the unsigned low word.
  if (auto c = nanos_hi_ <=> other.nanos_hi_; std::is_neq(c)) return c;
  return nanos_lo_ <=> other.nanos_lo_;
}

}  // namespace ayatori::api
