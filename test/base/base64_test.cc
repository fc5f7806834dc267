#include "base/base64.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace ayatori::base {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Decoded(std::string_view text) {
  auto d = Base64Decode(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().ToString();
  return d.ok() ? *d : "<error>";
}

std::string DecodeError(std::string_view text) {
  auto d = Base64Decode(text);
  EXPECT_FALSE(d.ok()) << text << " decoded to " << (d.ok() ? *d : "");
  return d.ok() ? "" : d.status().message();
}

// RFC 4648 section 10.
const std::pair<const char*, const char*> kRfc4648Vectors[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

TEST(Base64Test, EncodesTheRfc4648Vectors) {
  for (const auto& [plain, encoded] : kRfc4648Vectors) EXPECT_EQ(Base64Encode(plain), encoded);
}

TEST(Base64Test, DecodesTheRfc4648VectorsWithAndWithoutPadding) {
  for (const auto& [plain, encoded] : kRfc4648Vectors) {
    std::string text = encoded;
    EXPECT_EQ(Decoded(text), plain) << text;
    while (!text.empty() && text.back() == '=') text.pop_back();
    EXPECT_EQ(Decoded(text), plain) << text;
  }
}

TEST(Base64Test, OpensslsTrailingZeroBytesAreNotPartOfTheValue) {
  // EVP_DecodeBlock alone would return "f\0\0" for Zg== and "fo\0" for Zm8=.
  EXPECT_EQ(Decoded("Zg==").size(), 1U);
  EXPECT_EQ(Decoded("Zm8=").size(), 2U);
  EXPECT_EQ(Decoded("Zg").size(), 1U);
  EXPECT_EQ(Decoded("AA=="), std::string(1, '\0')) << "a real zero byte stays";
  EXPECT_EQ(Decoded("AAA="), std::string(2, '\0'));
}

TEST(Base64Test, RoundTripsEveryByteAndEveryLength) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  for (std::size_t n = 0; n <= all.size(); n += 7) {
    const std::string s = all.substr(0, n);
    EXPECT_EQ(Decoded(Base64Encode(s)), s) << n;
  }
}

TEST(Base64Test, UrlSafeEncodingUsesDashAndUnderscoreAndKeepsPadding) {
  // 0xfb 0xff encodes to "+/8=" in the standard alphabet.
  EXPECT_EQ(Base64Encode("\xfb\xff"), "+/8=");
  EXPECT_EQ(Base64UrlEncode("\xfb\xff"), "-_8=");
}

TEST(Base64Test, WhitespaceIsSkippedAnywhere) {
  // A kubeconfig's folded value, and a value with a trailing newline from `base64` (1).
  EXPECT_EQ(Decoded("Zm9v\nYmFy\n"), "foobar");
  EXPECT_EQ(Decoded(" Zm9v\r\n\tYmE=\n"), "fooba");
  EXPECT_EQ(Decoded("Zm8 ="), "fo");
}

TEST(Base64Test, TheCasesTheTwoOldDecodersDisagreedOn) {
  // src/kube/config.cc refused the empty string; registry_auth.cc decoded it. A Secret key with an
  // empty value is valid in Kubernetes: it decodes to the empty string.
  EXPECT_EQ(Decoded(""), "");
  // registry_auth.cc refused whitespace (a folded value); config.cc skipped it.
  EXPECT_EQ(Decoded("dXNlcjpw\nYXNz"), "user:pass");
  // registry_auth.cc dropped any number of trailing '='; config.cc allowed at most two that
  // complete the last group.
  EXPECT_THAT(DecodeError("dXNlcjpwYXNz===="), HasSubstr("'=' do not complete the last group"));
  EXPECT_THAT(DecodeError("Zg==="), HasSubstr("'=' do not complete the last group"));
  EXPECT_THAT(DecodeError("Zm8=="), HasSubstr("'=' do not complete the last group"));
  // registry_auth.cc dropped '=' in the middle when only '=' followed; config.cc refused data
  // after padding.
  EXPECT_THAT(DecodeError("Zg==Zm8="), HasSubstr("data after the '=' padding at byte 4"));
}

TEST(Base64Test, RefusalsNameTheProblemAndNeverTheText) {
  EXPECT_THAT(DecodeError("c2VjcmV0*"), HasSubstr("byte 8 is not in the standard alphabet"));
  EXPECT_THAT(DecodeError("-_8="), HasSubstr("byte 0 is not in the standard alphabet"))
      << "the URL-safe alphabet is not decoded";
  EXPECT_THAT(DecodeError("Zm9vY"), HasSubstr("5 characters leave 1 in the last group"));
  EXPECT_THAT(DecodeError("="), HasSubstr("'=' do not complete"));
  EXPECT_THAT(DecodeError("c2VjcmV0\x01"), HasSubstr("byte 8"));
  for (const char* text : {"c2VjcmV0*", "c2VjcmV0Y", "c2VjcmV0==="}) {
    const std::string message = DecodeError(text);
    EXPECT_THAT(message, HasSubstr("not valid base64"));
    EXPECT_THAT(message, Not(HasSubstr("c2Vjc"))) << "the message must not quote the input";
  }
}

TEST(Base64Test, UnusedLowBitsAreIgnoredAsGoDoes) {
  // "Zh==" has non-zero bits below the one byte it holds; Go's StdEncoding decodes it as "f".
  EXPECT_EQ(Decoded("Zh=="), "f");
}

}  // namespace
}  // namespace ayatori::base
