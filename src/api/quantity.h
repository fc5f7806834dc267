// resource.Quantity with the real Kubernetes grammar:
//   <quantity> ::= <signedNumber><suffix>
//   <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
//                | e<signedNumber> | E<signedNumber>
// Values are kept exactly (no floating point) so "1" == "1000m" and "1Gi" > "1G" compare right.
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
  // Value in thousandths, rounded up (Kubernetes MilliValue semantics), saturating at int64.
  int64_t MilliValue() const;
  // Value rounded up to an integer (Kubernetes Value semantics), saturating at int64.
  int64_t Value() const;
  bool IsZero() const { return unscaled_ == 0; }
  bool IsNegative() const { return unscaled_ < 0; }

  // Numeric comparison: equal values written differently compare equal.
  std::strong_ordering operator<=>(const Quantity& other) const;
  bool operator==(const Quantity& other) const { return (*this <=> other) == 0; }

 private:
  // value = unscaled_ * 10^-scale_ exactly; binary suffixes are expanded into the integer.
  __int128 unscaled_ = 0;
  int32_t scale_ = 0;
  std::string text_ = "0";
};

}  // namespace ayatori::api
