#include "api/quantity.h"

#include <gtest/gtest.h>

#include <climits>
#include <string>

namespace ayatori::api {
namespace {

struct ValidCase {
  const char* text;
  int64_t milli;
  int64_t value;
};

TEST(QuantityTest, ParsesTheKubernetesGrammar) {
  const ValidCase cases[] = {
      {"0", 0, 0},
      {"100m", 100, 1},
      {"1.5", 1500, 2},
      {"512Mi", 512LL * 1024 * 1024 * 1000, 512LL * 1024 * 1024},
      {"1e3", 1'000'000, 1000},
      {"1E3", 1'000'000, 1000},
      {"1e+3", 1'000'000, 1000},
      {"1e-3", 1, 1},
      {"1E-3", 1, 1},
      {"1G", 1'000'000'000'000, 1'000'000'000},
      {"+1", 1000, 1},
      {"-1", -1000, -1},
      {".5", 500, 1},
      {"5.", 5000, 5},
      {"1.G", 1'000'000'000'000, 1'000'000'000},
      {"0.1Ki", 102'400, 103},
      {"1n", 1, 1},
      {"1u", 1, 1},
      {"-1n", -1, -1},
      {"0.0001", 1, 1},
      {"00012", 12'000, 12},
      {"1k", 1'000'000, 1000},
      {"1M", 1'000'000'000, 1'000'000},
      {"1T", 1'000'000'000'000'000, 1'000'000'000'000},
      {"1P", 1'000'000'000'000'000'000, 1'000'000'000'000'000},
      {"1E", LLONG_MAX, 1'000'000'000'000'000'000},
      {"1Ki", 1'024'000, 1024},
      {"1.5Gi", 1'610'612'736'000, 1'610'612'736},
      {"1Ti", 1'099'511'627'776'000, 1'099'511'627'776},
      {"1Pi", 1'125'899'906'842'624'000, 1'125'899'906'842'624},
      {"2Ei", LLONG_MAX, 2'305'843'009'213'693'952},
      {"-2Ei", LLONG_MIN, -2'305'843'009'213'693'952},
      {"-0", 0, 0},
      {"0.000Mi", 0, 0},
      {"9223372036854775807", LLONG_MAX, LLONG_MAX},
      // Beyond the apiserver's cap of 2^63-1: clamped, never overflowing.
      {"8Ei", LLONG_MAX, LLONG_MAX},
      {"1e1000", LLONG_MAX, LLONG_MAX},
      {"-1e999999999", LLONG_MIN, -LLONG_MAX},
      {"123456789012345678901234567890", LLONG_MAX, LLONG_MAX},
      // Below nano precision: rounded away from zero to 1n.
      {"1e-1000", 1, 1},
      {"0.0000000000000000000000000000001", 1, 1},
  };
  for (const ValidCase& c : cases) {
    SCOPED_TRACE(c.text);
    StatusOr<Quantity> q = Quantity::Parse(c.text);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_EQ(q->str(), c.text);
    EXPECT_EQ(q->MilliValue(), c.milli);
    EXPECT_EQ(q->Value(), c.value);
  }
}

TEST(QuantityTest, RejectsMalformedInputQuotingIt) {
  const char* cases[] = {
      "",     "1.2.3", "Mi",   "1 Gi", "1mi",   "abc",  "1e",  "1E+",          "1K",   "1ki",
      "--1",  "+-1",   ".",    "-",    "1e1.5", "1Ki ", " 1",  "1iB",          "1.5.", "e3",
      "1e3m", "1Mi2",  "0x10", "1,5",  "1e--3", "½",    "1Gb", "1e9999999999",
  };
  for (const char* text : cases) {
    SCOPED_TRACE(text);
    StatusOr<Quantity> q = Quantity::Parse(text);
    ASSERT_FALSE(q.ok());
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(q.status().message().find("\"" + std::string(text) + "\""), std::string::npos)
        << q.status().message();
  }
}

TEST(QuantityTest, ErrorMessagesSayWhatIsWrong) {
  EXPECT_EQ(Quantity::Parse("1mi").status().message(),
            "invalid quantity \"1mi\": unknown suffix \"mi\" (want one of n u m k M G T P E Ki Mi "
            "Gi Ti Pi Ei, or e<exponent>)");
  EXPECT_EQ(Quantity::Parse("1.2.3").status().message(),
            "invalid quantity \"1.2.3\": unexpected \".3\" after the number");
  EXPECT_NE(Quantity::Parse("1e").status().message().find("malformed exponent"), std::string::npos);
  EXPECT_NE(Quantity::Parse("Mi").status().message().find("expected a number"), std::string::npos);
}

TEST(QuantityTest, ComparesNumerically) {
  auto q = [](const char* s) { return Quantity::MustParse(s); };
  EXPECT_EQ(q("1"), q("1000m"));
  EXPECT_EQ(q("1e3"), q("1k"));
  EXPECT_EQ(q("0.5"), q("500m"));
  EXPECT_EQ(q("1Ki"), q("1024"));
  EXPECT_EQ(q("1Mi"), q("1048576"));
  EXPECT_EQ(q("0.1Ki"), q("102.4"));
  EXPECT_EQ(q("1E"), q("1e18"));
  EXPECT_EQ(q("128Mi"), q("0.125Gi"));
  EXPECT_EQ(q("1000000n"), q("1m"));
  EXPECT_EQ(q("-0"), q("0"));
  EXPECT_GT(q("1Gi"), q("1G"));
  EXPECT_GT(q("2Ei"), q("1E"));
  EXPECT_LT(q("100m"), q("1"));
  EXPECT_LT(q("999m"), q("1"));
  EXPECT_GT(q("1.000000001"), q("1"));
  EXPECT_LT(q("-1"), q("0"));
  EXPECT_LT(q("-2"), q("-1"));
  EXPECT_LT(q("-1n"), q("0"));
  // Values around 2^64 nanos (~18.4G units), where the representation's low word wraps.
  EXPECT_GT(q("20G"), q("18G"));
  EXPECT_LT(q("-20G"), q("-18G"));
  EXPECT_LT(q("-20G"), q("18G"));
  EXPECT_GT(q("18446744074"), q("18446744073"));
  EXPECT_NE(q("1Gi"), q("1G"));
  // The clamp makes everything beyond 2^63-1 equal to it.
  EXPECT_EQ(q("8Ei"), q("9223372036854775807"));
  EXPECT_EQ(q("1e-1000"), q("1n"));
  // A binary suffix on a fraction is expanded exactly before rounding: 2^60 * 10^-27 = 1.15..n.
  EXPECT_EQ(q("0.000000000000000000000000001Ei"), q("2n"));
}

TEST(QuantityTest, DefaultIsZero) {
  Quantity zero;
  EXPECT_TRUE(zero.IsZero());
  EXPECT_FALSE(zero.IsNegative());
  EXPECT_EQ(zero.str(), "0");
  EXPECT_EQ(zero, Quantity::MustParse("0m"));
  EXPECT_TRUE(Quantity::MustParse("-1n").IsNegative());
  EXPECT_FALSE(Quantity::MustParse("1n").IsZero());
  EXPECT_FALSE(Quantity::MustParse("-0").IsNegative());
}

TEST(QuantityTest, StaysCompact) {
  // The informer caches up to eight of these per Job.
  EXPECT_LE(sizeof(Quantity), 48u);
  EXPECT_LE(alignof(Quantity), 8u);
}

TEST(QuantityDeathTest, MustParseAbortsOnGarbage) {
  EXPECT_DEATH(Quantity::MustParse("lots"), "invalid quantity \"lots\"");
}

}  // namespace
}  // namespace ayatori::api
