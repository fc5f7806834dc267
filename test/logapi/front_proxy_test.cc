#include "logapi/front_proxy.h"

#include <gtest/gtest.h>

namespace ayatori::logapi {
namespace {

using nlohmann::json;

RequestHeaderConfig Config() {
  RequestHeaderConfig c;
  c.clientCaPem = "-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n";
  c.allowedNames = {"front-proxy-client"};
  return c;
}

TEST(AuthenticateFrontProxy, TakesUserGroupsAndExtraFromHeadersOfAVerifiedProxy) {
  auto user = AuthenticateFrontProxy(Config(), "front-proxy-client",
                                     {{"x-remote-user", "alice"},
                                      {"X-Remote-Group", "devs"},
                                      {"X-Remote-Group", "system:authenticated"},
                                      {"X-Remote-Extra-Scopes", "a"},
                                      {"X-Remote-Extra-Acme.com%2Fproject", "p1"},
                                      {"Authorization", "Bearer secret-token"}});
  ASSERT_TRUE(user.ok()) << user.status().ToString();
  EXPECT_EQ(user->name, "alice");
  EXPECT_EQ(user->groups, (std::vector<std::string>{"devs", "system:authenticated"}));
  ASSERT_EQ(user->extra.size(), 2u);
  EXPECT_EQ(user->extra.at("scopes"), std::vector<std::string>{"a"});
  EXPECT_EQ(user->extra.at("acme.com/project"), std::vector<std::string>{"p1"});
}

TEST(AuthenticateFrontProxy, RefusesHeadersWithoutAVerifiedCertificate) {
  auto user = AuthenticateFrontProxy(
      Config(), std::nullopt,
      {{"X-Remote-User", "system:admin"}, {"X-Remote-Group", "system:masters"}});
  ASSERT_FALSE(user.ok());
  EXPECT_EQ(user.status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(user.status().message().find("system:admin"), std::string::npos);
}

TEST(AuthenticateFrontProxy, RefusesACommonNameThatIsNotAllowed) {
  auto user = AuthenticateFrontProxy(Config(), "someone-else", {{"X-Remote-User", "alice"}});
  ASSERT_FALSE(user.ok());
  EXPECT_EQ(user.status().code(), StatusCode::kUnauthorized);
  EXPECT_NE(user.status().message().find("someone-else"), std::string::npos);
}

TEST(AuthenticateFrontProxy, AnyCommonNameWhenNoNamesAreListed) {
  RequestHeaderConfig c = Config();
  c.allowedNames.clear();
  EXPECT_TRUE(AuthenticateFrontProxy(c, "anything", {{"X-Remote-User", "alice"}}).ok());
}

TEST(AuthenticateFrontProxy, RefusesARequestThatNamesNoUser) {
  auto user = AuthenticateFrontProxy(Config(), "front-proxy-client", {{"X-Remote-Group", "g"}});
  ASSERT_FALSE(user.ok());
  EXPECT_EQ(user.status().code(), StatusCode::kUnauthorized);
}

TEST(AuthenticateFrontProxy, UsesTheConfiguredHeaderNames) {
  RequestHeaderConfig c = Config();
  c.usernameHeaders = {"X-User"};
  c.groupHeaders = {"X-Groups"};
  c.extraHeaderPrefixes = {"X-Extra-"};
  auto user = AuthenticateFrontProxy(
      c, "front-proxy-client",
      {{"X-Remote-User", "ignored"}, {"X-User", "bob"}, {"X-Groups", "g"}, {"X-Extra-k", "v"}});
  ASSERT_TRUE(user.ok());
  EXPECT_EQ(user->name, "bob");
  EXPECT_EQ(user->groups, std::vector<std::string>{"g"});
  EXPECT_EQ(user->extra.at("k"), std::vector<std::string>{"v"});
}

TEST(RequestHeaderConfigFromConfigMap, ReadsWhatKubeApiserverPublishes) {
  json cm = {{"data",
              {{"client-ca-file", "CLIENT CA"},
               {"requestheader-client-ca-file", "FRONT PROXY CA"},
               {"requestheader-allowed-names", R"(["front-proxy-client"])"},
               {"requestheader-username-headers", R"(["X-Remote-User"])"},
               {"requestheader-group-headers", R"(["X-Remote-Group"])"},
               {"requestheader-extra-headers-prefix", R"(["X-Remote-Extra-"])"}}}};
  auto c = RequestHeaderConfigFromConfigMap(cm);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->clientCaPem, "FRONT PROXY CA");
  EXPECT_EQ(c->allowedNames, std::vector<std::string>{"front-proxy-client"});
  EXPECT_EQ(c->usernameHeaders, std::vector<std::string>{"X-Remote-User"});
  EXPECT_EQ(c->extraHeaderPrefixes, std::vector<std::string>{"X-Remote-Extra-"});
}

TEST(RequestHeaderConfigFromConfigMap, SaysWhenTheApiserverIsNotSetUpForAggregation) {
  auto c = RequestHeaderConfigFromConfigMap({{"data", {{"client-ca-file", "CA"}}}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.status().message().find("--requestheader-client-ca-file"), std::string::npos);
}

TEST(RequestHeaderConfigFromConfigMap, RefusesAMalformedList) {
  auto c = RequestHeaderConfigFromConfigMap(
      {{"data", {{"requestheader-client-ca-file", "CA"}, {"requestheader-allowed-names", "[1"}}}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("requestheader-allowed-names"), std::string::npos);
}

}  // namespace
}  // namespace ayatori::logapi
