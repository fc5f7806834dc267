#include "base/url.h"

#include <gtest/gtest.h>

#include <string>

namespace ayatori::base {
namespace {

TEST(PercentEncodeTest, KeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(PercentEncode("AZaz09-._~"), "AZaz09-._~");
  EXPECT_EQ(PercentEncode(""), "");
}

TEST(PercentEncodeTest, EncodesEverythingThatCouldEndASegmentOrAValue) {
  EXPECT_EQ(PercentEncode("a/b?c&d=e#f g+h%"), "a%2Fb%3Fc%26d%3De%23f%20g%2Bh%25");
  EXPECT_EQ(PercentEncode("127.0.0.1:5000/x"), "127.0.0.1%3A5000%2Fx");
  EXPECT_EQ(PercentEncode(R"({"label":["a=b"]})"), "%7B%22label%22%3A%5B%22a%3Db%22%5D%7D");
}

TEST(PercentEncodeTest, EncodesEveryOtherByteAsUpperCaseHex) {
  EXPECT_EQ(PercentEncode(std::string("\0\x7f\x80\xff", 4)), "%00%7F%80%FF");
  EXPECT_EQ(PercentEncode("\xc3\xa9"), "%C3%A9") << "UTF-8 byte by byte";
  for (int c = 0; c < 256; ++c) {
    const std::string one(1, static_cast<char>(c));
    const std::string out = PercentEncode(one);
    EXPECT_TRUE(out == one || out.size() == 3) << c;
    EXPECT_EQ(out.find_first_of("/?&=#+ "), std::string::npos) << c;
  }
}

}  // namespace
}  // namespace ayatori::base
