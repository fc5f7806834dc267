#include "adapters/docker/stream.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace ayatori::adapters::docker {
namespace {

std::string Frame(uint8_t stream, const std::string& payload) {
  std::string f(8, '\0');
  f[0] = static_cast<char>(stream);
  uint32_t n = static_cast<uint32_t>(payload.size());
  f[4] = static_cast<char>((n >> 24) & 0xff);
  f[5] = static_cast<char>((n >> 16) & 0xff);
  f[6] = static_cast<char>((n >> 8) & 0xff);
  f[7] = static_cast<char>(n & 0xff);
  return f + payload;
}

struct Collected {
  std::vector<std::pair<LogStream, std::string>> pieces;
  std::string stdoutText, stderrText, all;
  LogDemuxer::Sink Sink() {
    return [this](LogStream s, std::string_view b) {
      pieces.emplace_back(s, std::string(b));
      (s == LogStream::kStderr ? stderrText : stdoutText) += b;
      all += b;
    };
  }
};

TEST(LogDemuxerTest, SplitsStdoutAndStderrInOrder) {
  Collected c;
  LogDemuxer d(c.Sink());
  ASSERT_TRUE(d.Feed(Frame(1, "out1\n") + Frame(2, "err1\n") + Frame(1, "out2\n")).ok());
  ASSERT_TRUE(d.Finish().ok());
  EXPECT_EQ(c.stdoutText, "out1\nout2\n");
  EXPECT_EQ(c.stderrText, "err1\n");
  EXPECT_EQ(c.all, "out1\nerr1\nout2\n");
}

TEST(LogDemuxerTest, ReassemblesFramesSplitAtEveryByte) {
  std::string stream = Frame(1, "hello ") + Frame(2, "") + Frame(2, "world") + Frame(1, "!");
  Collected c;
  LogDemuxer d(c.Sink());
  for (char ch : stream) ASSERT_TRUE(d.Feed(std::string_view(&ch, 1)).ok());
  ASSERT_TRUE(d.Finish().ok());
  EXPECT_EQ(c.stdoutText, "hello !");
  EXPECT_EQ(c.stderrText, "world");
}

TEST(LogDemuxerTest, DecodesPayloadLengthsAsBigEndian) {
  std::string big(70000, 'x');  // length 0x00011170 uses three header bytes
  Collected c;
  LogDemuxer d(c.Sink());
  ASSERT_TRUE(d.Feed(Frame(1, big) + Frame(2, "tail")).ok());
  ASSERT_TRUE(d.Finish().ok());
  EXPECT_EQ(c.stdoutText.size(), 70000u);
  EXPECT_EQ(c.stderrText, "tail");
}

TEST(LogDemuxerTest, PayloadBytesThatLookLikeHeadersAreData) {
  std::string tricky = Frame(2, "abc");  // a header inside a payload
  Collected c;
  LogDemuxer d(c.Sink());
  ASSERT_TRUE(d.Feed(Frame(1, tricky)).ok());
  ASSERT_TRUE(d.Finish().ok());
  EXPECT_EQ(c.stdoutText, tricky);
  EXPECT_EQ(c.stderrText, "");
}

TEST(LogDemuxerTest, RejectsAStreamThatIsNotMultiplexed) {
  Collected c;
  LogDemuxer d(c.Sink());
  Status st = d.Feed("plain tty output\n");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("TTY"), std::string::npos) << st.message();
  EXPECT_FALSE(d.Feed(Frame(1, "x")).ok()) << "decoding stays stopped after a bad header";
}

TEST(LogDemuxerTest, RejectsNonZeroPaddingBytes) {
  std::string f = Frame(1, "x");
  f[2] = 1;
  Collected c;
  LogDemuxer d(c.Sink());
  EXPECT_FALSE(d.Feed(f).ok());
}

TEST(LogDemuxerTest, FinishReportsATruncatedFrame) {
  Collected c;
  LogDemuxer headerOnly(c.Sink());
  ASSERT_TRUE(headerOnly.Feed(Frame(1, "abcdef").substr(0, 5)).ok());
  EXPECT_FALSE(headerOnly.Finish().ok());
  LogDemuxer shortPayload(c.Sink());
  ASSERT_TRUE(shortPayload.Feed(Frame(1, "abcdef").substr(0, 10)).ok());
  EXPECT_FALSE(shortPayload.Finish().ok());
}

TEST(TailBufferTest, KeepsTheLastBytes) {
  TailBuffer t(5);
  t.Append("abc");
  EXPECT_EQ(t.str(), "abc");
  t.Append("defg");
  EXPECT_EQ(t.str(), "cdefg");
  for (int i = 0; i < 100; ++i) t.Append("z");
  EXPECT_EQ(t.str(), "zzzzz");
  t.Append("0123456789");
  EXPECT_EQ(t.str(), "56789");
  TailBuffer none(0);
  none.Append("abc");
  EXPECT_EQ(none.str(), "");
}

}  // namespace
}  // namespace ayatori::adapters::docker
