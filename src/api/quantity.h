// resource.Quantity with the real Kubernetes grammar:
//   <quantity>       ::= <signedNumber><suffix>
//   <signedNumber>   ::= <number> | +<number> | -<number>
//   <number>         ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//   <suffix>         ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
//                      | e<signedInteger> | E<signedInteger>
// Values are kept exactly (no floating point) so "1" == "1000m" and "1Gi" > "1G" compare right.
// Like the apiserver, a value is rounded away from zero to nano precision (so a tiny positive
// request never becomes zero) and capped at +-(2^63-1).
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "ayatori/status.h"

namespace ayatori::api {

class Quantity {
 public:
  Quantity() = default;
  // Parses s; the error message quotes the input and says what is wrong.
  static StatusOr<Quantity> Parse(std::string_view s);
  // Aborts on a malformed literal; for constants in code and tests.
  static Quantity MustParse(std::string_view s);

  // The text as written by the user (round-trips through JSON unchanged).
  const std::string& str() const { return text_; }
  // Value in thousandths, rounded away from zero (Kubernetes MilliValue semantics: 1n -> 1,
  // -1n -> -1), saturating at the int64 range.
  int64_t MilliValue() const;
  // Value rounded away from zero to an integer (Kubernetes Value semantics: 100m -> 1).
  int64_t Value() const;
  bool IsZero() const { return nanos_hi_ == 0 && nanos_lo_ == 0; }
  bool IsNegative() const { return nanos_hi_ < 0; }

  // Numeric comparison: equal values written differently compare equal.
  std::strong_ordering operator<=>(const Quantity& other) const;
  bool operator==(const Quantity& other) const { return std::is_eq(*this <=> other); }

 private:
  // The value in units of 10^-9 as a two's complement 128-bit integer, split into two words so
  // that a Quantity keeps 8-byte alignment (an __int128 member would pad every
  // std::optional<Quantity> the informer caches to 16 bytes).
  uint64_t nanos_lo_ = 0;
  int64_t nanos_hi_ = 0;
  std::string text_ = "0";
};

}  // namespace ayatori::api
