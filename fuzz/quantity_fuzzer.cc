// resource.Quantity text (api/quantity.h): any bytes parse to a Quantity or a clear error, and a
// parsed Quantity keeps its text and behaves like a number.
#include <cstdint>
#include <string_view>

#include "api/quantity.h"
#include "fuzz/fuzz_check.h"

using namespace ayatori;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  StatusOr<api::Quantity> q = api::Quantity::Parse(text);
  if (!q.ok()) {
    FUZZ_CHECK(q.status().code() == StatusCode::kInvalidArgument);
    FUZZ_CHECK(!q.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(q->str() == text);
  StatusOr<api::Quantity> again = api::Quantity::Parse(q->str());
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == *q);

  const int64_t milli = q->MilliValue();
  const int64_t units = q->Value();
  if (q->IsZero()) {
    FUZZ_CHECK(milli == 0 && units == 0);
    FUZZ_CHECK(*q == api::Quantity());
  } else if (q->IsNegative()) {
    // Rounded away from zero: a value that is not zero never becomes zero.
    FUZZ_CHECK(milli < 0 && units < 0);
    FUZZ_CHECK(*q < api::Quantity());
  } else {
    FUZZ_CHECK(milli > 0 && units > 0);
    FUZZ_CHECK(*q > api::Quantity());
  }
  // Whole units are the thousandths rounded away from zero (up to saturation).
  if (milli > INT64_MIN / 2 && milli < INT64_MAX / 2) {
    const int64_t fromMilli =
        milli / 1000 + (milli % 1000 > 0 ? 1 : 0) - (milli % 1000 < 0 ? 1 : 0);
    FUZZ_CHECK(units == fromMilli);
  }
  return 0;
}
