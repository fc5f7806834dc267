#include "obs/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "obs/http_server.h"

namespace ayatori::obs {
namespace {

TEST(LogTest, JsonLinesCarryLevelMessageAndFields) {
  std::ostringstream out;
  ConfigureLogging(LogLevel::kInfo, LogFormat::kJson, &out);
  Info("reconciled", {{"namespace", "ci"}, {"name", "hello"}, {"uid", "u-1"}, {"writes", 3}});
  Debug("hidden");
  auto line = out.str();
  ASSERT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["msg"], "reconciled");
  EXPECT_EQ(j["namespace"], "ci");
  EXPECT_EQ(j["uid"], "u-1");
  EXPECT_EQ(j["writes"], 3);
  EXPECT_TRUE(j["ts"].get<std::string>().ends_with("Z"));
  ConfigureLogging(LogLevel::kInfo, LogFormat::kJson, &std::cerr);
}

TEST(LogTest, ParsesLevelsAndFormatsAndRejectsOthers) {
  LogLevel level{};
  LogFormat format{};
  EXPECT_TRUE(ParseLogLevel("debug", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  EXPECT_FALSE(ParseLogLevel("verbose", &level));
  EXPECT_TRUE(ParseLogFormat("text", &format));
  EXPECT_EQ(format, LogFormat::kText);
  EXPECT_FALSE(ParseLogFormat("xml", &format));
}

TEST(HttpServerTest, SplitHostPortAcceptsCommonFormsAndRejectsGarbage) {
  std::string host;
  int port = 0;
  EXPECT_TRUE(SplitHostPort("127.0.0.1:8080", &host, &port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8080);
  EXPECT_TRUE(SplitHostPort(":9090", &host, &port));
  EXPECT_EQ(host, "");
  EXPECT_TRUE(SplitHostPort("[::1]:0", &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_FALSE(SplitHostPort("8080", &host, &port));
  EXPECT_FALSE(SplitHostPort("host:http", &host, &port));
  EXPECT_FALSE(SplitHostPort("host:99999", &host, &port));
}

}  // namespace
}  // namespace ayatori::obs
