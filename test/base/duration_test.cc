#include "base/duration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

namespace ayatori::base {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

milliseconds Parsed(std::string_view text) {
  auto d = ParseDuration(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().ToString();
  return d.ok() ? *d : milliseconds(-1);
}

std::string Error(std::string_view text) {
  auto d = ParseDuration(text);
  EXPECT_FALSE(d.ok()) << text;
  return d.ok() ? "" : d.status().message();
}

TEST(ParseDurationTest, EachUnit) {
  EXPECT_EQ(Parsed("500ms"), milliseconds(500));
  EXPECT_EQ(Parsed("15s"), milliseconds(15000));
  EXPECT_EQ(Parsed("2m"), milliseconds(120000));
  EXPECT_EQ(Parsed("1h"), milliseconds(3600000));
}

TEST(ParseDurationTest, SequencesAddUpAsInGo) {
  EXPECT_EQ(Parsed("1h30m"), std::chrono::minutes(90));
  EXPECT_EQ(Parsed("1m30s"), std::chrono::seconds(90));
  EXPECT_EQ(Parsed("2s500ms"), milliseconds(2500));
  EXPECT_EQ(Parsed("1m1m"), std::chrono::minutes(2));
  EXPECT_EQ(Parsed("1ms1m"), milliseconds(60001)) << "ms is read before m";
}

TEST(ParseDurationTest, ZeroIsADurationTheCallerMayRefuse) {
  EXPECT_EQ(Parsed("0s"), milliseconds(0));
  EXPECT_EQ(Parsed("0h0m"), milliseconds(0));
}

TEST(ParseDurationTest, LargestNumbersDoNotOverflow) {
  EXPECT_EQ(Parsed("999999999h"), std::chrono::hours(999999999));
  EXPECT_THAT(Error("1000000000h"), HasSubstr("more than 9 digits"));
}

TEST(ParseDurationTest, ErrorsNameTheTextAndTheProblem) {
  EXPECT_THAT(Error(""), HasSubstr("\"\" is not a duration: it is empty"));
  EXPECT_THAT(Error("15"), HasSubstr("\"15\" is not a duration: the number 15 has no unit"));
  EXPECT_THAT(Error("1h30"), HasSubstr("the number 30 has no unit"));
  EXPECT_THAT(Error("1d"), HasSubstr("unknown unit at \"d\""));
  EXPECT_THAT(Error("10 minutes"), HasSubstr("unknown unit at \" minutes\""));
  EXPECT_THAT(Error("m"), HasSubstr("expected a number at \"m\""));
  EXPECT_THAT(Error("-5s"), HasSubstr("expected a number at \"-5s\""));
  EXPECT_THAT(Error("1.5h"), HasSubstr("unknown unit at \".5h\""));
  EXPECT_THAT(Error("10us"), HasSubstr("unknown unit at \"us\""));
  EXPECT_THAT(Error("5s "), HasSubstr("expected a number at \" \""));
  EXPECT_THAT(Error("1x"), HasSubstr("e.g. 500ms, 90s, 10m, 1h30m"));
}

}  // namespace
}  // namespace ayatori::base
