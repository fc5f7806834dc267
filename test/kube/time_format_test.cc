#include "kube/time_format.h"

#include <gtest/gtest.h>

namespace ayatori::kube {
namespace {

using namespace std::chrono;

TEST(TimeFormatTest, FormatsTimeAndMicroTime) {
  auto t = sys_days(year(2026) / 3 / 4) + hours(5) + minutes(6) + seconds(7) + microseconds(89);
  EXPECT_EQ(FormatTime(t), "2026-03-04T05:06:07Z");
  EXPECT_EQ(FormatMicroTime(t), "2026-03-04T05:06:07.000089Z");
}

TEST(TimeFormatTest, ParsesBothFormsAndOffsets) {
  auto base = sys_days(year(2026) / 3 / 4) + hours(5) + minutes(6) + seconds(7);
  EXPECT_EQ(ParseTime("2026-03-04T05:06:07Z"), base);
  EXPECT_EQ(ParseTime("2026-03-04T05:06:07.5Z"), base + milliseconds(500));
  EXPECT_EQ(ParseTime("2026-03-04T07:06:07+02:00"), base);
  EXPECT_EQ(ParseTime(FormatMicroTime(base + microseconds(12))), base + microseconds(12));
  EXPECT_FALSE(ParseTime("2026-03-04 05:06:07Z").has_value());
  EXPECT_FALSE(ParseTime("2026-13-04T05:06:07Z").has_value());
  EXPECT_FALSE(ParseTime("2026-03-04T05:06:07").has_value());
  EXPECT_FALSE(ParseTime("").has_value());
}

}  // namespace
}  // namespace ayatori::kube
