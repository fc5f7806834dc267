#include "kube/time_format.h"

#include <gtest/gtest.h>

#include "base/time.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono;

TEST(TimeFormatTest, FormatsTimeAndMicroTime) {
  auto t = sys_days(year(2026) / 3 / 4) + hours(5) + minutes(6) + seconds(7) + microseconds(89);
  EXPECT_EQ(FormatTime(t), "2026-03-04T05:06:07Z");
  EXPECT_EQ(FormatMicroTime(t), "2026-03-04T05:06:07.000089Z");
}

// base::ParseTime (test/base/time_test.cc has its cases) reads what these write.
TEST(TimeFormatTest, BaseParseTimeReadsBothForms) {
  auto t = sys_days(year(2026) / 3 / 4) + hours(5) + minutes(6) + seconds(7) + microseconds(12);
  EXPECT_EQ(base::ParseTime(FormatMicroTime(t)).value(), t);
  EXPECT_EQ(base::ParseTime(FormatTime(t)).value(), floor<seconds>(t));
}

}  // namespace
}  // namespace ayatori::kube
