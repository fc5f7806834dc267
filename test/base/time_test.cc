#include "base/time.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace ayatori::base {
namespace {

using namespace std::chrono;  // NOLINT(google-build-using-namespace)

TEST(ParseTimeTest, ReadsRfc3339WithItsFractionAndOffset) {
  const auto eight = sys_days(year(2026) / 11 / 29) + hours(8);
  const auto base = sys_days(year(2026) / 3 / 4) + hours(5) + minutes(6) + seconds(7);
  struct Case {
    const char* text = nullptr;
    Rfc3339Time want;
  };
  const Case cases[] = {
      {"2026-11-29T08:00:00Z", eight},
      {"2026-11-29t08:00:00z", eight},
      {"2026-11-29T08:00:00.999999999Z", eight + microseconds(999999)},
      {"2026-11-29T08:00:00.5+00:00", eight + milliseconds(500)},
      {"2026-11-29T10:00:00+02:00", eight},
      {"2026-11-29T03:30:00-04:30", eight},
      {"2026-11-30T07:59:59+23:59", eight + seconds(59)},
      {"1970-01-01T00:00:00Z", Rfc3339Time{}},
      {"0001-01-01T00:00:00Z", sys_days(year(1) / 1 / 1)},
      {"2024-02-29T23:59:59Z", sys_days(year(2024) / 3 / 1) - seconds(1)},
      {"2026-03-04T05:06:07Z", base},
      {"2026-03-04T05:06:07.5Z", base + milliseconds(500)},
      {"2026-03-04T07:06:07+02:00", base},
      {"2026-03-04T05:06:07.000012Z", base + microseconds(12)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto t = ParseTime(c.text);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(*t, c.want);
  }
}

TEST(ParseTimeTest, RefusesWhatIsNotRfc3339NamingTheText) {
  for (const char* bad :
       {"", "2026-11-29", "2026-11-29T08:00:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
        "2026-11-29T24:00:00Z", "2026-11-29T08:60:00Z", "2026-11-29T08:00:60Z",
        "2026-11-29T08:00:00.Z", "2026-11-29T08:00:00+0200", "2026-11-29T08:00:00+02",
        "2026-11-29T08:00:00Zjunk", "2026-11-29 08:00:00Z", "26-11-29T08:00:00Z",
        "2026-1a-29T08:00:00Z", "2026-11-29T08:00:00+24:00", "2026-03-04 05:06:07Z",
        "2026-03-04T05:06:07"}) {
    SCOPED_TRACE(bad);
    auto t = ParseTime(bad);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(std::string("\"") + bad + "\""), std::string::npos);
  }
}

}  // namespace
}  // namespace ayatori::base
