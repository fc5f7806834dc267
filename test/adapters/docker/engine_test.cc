#include "adapters/docker/engine.h"

#include <gtest/gtest.h>

namespace ayatori::adapters::docker {
namespace {

TEST(EngineEndpointTest, ParsesUnixTcpAndHttp) {
  auto unix = ParseEngineEndpoint("unix:///run/ayatori/docker.sock", false);
  ASSERT_TRUE(unix.ok());
  EXPECT_EQ(unix->socketPath, "/run/ayatori/docker.sock");
  EXPECT_EQ(unix->baseUrl, "http://localhost");

  auto tcp = ParseEngineEndpoint("tcp://127.0.0.1:2375", false);
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ(tcp->socketPath, "");
  EXPECT_EQ(tcp->baseUrl, "http://127.0.0.1:2375");

  auto tls = ParseEngineEndpoint("tcp://127.0.0.1:2376/", true);
  ASSERT_TRUE(tls.ok());
  EXPECT_EQ(tls->baseUrl, "https://127.0.0.1:2376") << "tcp:// with TLS material is https";

  EXPECT_EQ(ParseEngineEndpoint("https://[::1]:2376", false)->baseUrl, "https://[::1]:2376");

  for (const char* bad : {"", "unix://relative.sock", "unix://", "tcp://", "tcp://h:1/path",
                          "ftp://h:1", "/var/run/docker.sock"}) {
    EXPECT_FALSE(ParseEngineEndpoint(bad, false).ok()) << bad;
  }
}

TEST(EngineErrorMessageTest, PrefersTheEngineMessage) {
  EXPECT_EQ(EngineErrorMessage({404, R"({"message":"No such container: x"})"}),
            "No such container: x");
  EXPECT_EQ(EngineErrorMessage({502, "bad gateway\n"}), "HTTP 502: bad gateway");
  EXPECT_EQ(EngineErrorMessage({500, ""}), "HTTP 500");
}

TEST(ApiVersionTest, ComparesNumerically) {
  EXPECT_LT(CompareApiVersions("1.40", "1.41"), 0);
  EXPECT_GT(CompareApiVersions("1.100", "1.41"), 0);
  EXPECT_EQ(CompareApiVersions("1.41", "1.41"), 0);
  EXPECT_GT(CompareApiVersions("2.0", "1.99"), 0);
}

}  // namespace
}  // namespace ayatori::adapters::docker
