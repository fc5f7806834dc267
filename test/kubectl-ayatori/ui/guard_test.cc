// The checks of `kubectl ayatori ui`'s guard (cmd/kubectl-ayatori/ui/guard.h), each played by the
// attacker it stops: a rebound DNS name, a foreign page, a request without the token or header.
#include "guard.h"

#include <gtest/gtest.h>

#include <set>

namespace ayatori::plugin::ui {
namespace {

GuardConfig Config() {
  return {HostsFor("127.0.0.1", 8123), std::string(64, 'a'), "ayatori-ui-8123"};
}

RequestFacts SignedIn(std::string method, std::string path) {
  RequestFacts r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.host = "127.0.0.1:8123";
  r.cookie = "other=1; ayatori-ui-8123=" + std::string(64, 'a');
  r.api = "1";
  return r;
}

TEST(GuardTest, AllowsTheSignedInPage) {
  EXPECT_EQ(Check(Config(), SignedIn("GET", "/api/jobs")).kind, Verdict::Kind::kAllow);
  RequestFacts post = SignedIn("POST", "/api/namespaces/a/jobs/b/cancel");
  post.origin = "http://127.0.0.1:8123";
  EXPECT_EQ(Check(Config(), post).kind, Verdict::Kind::kAllow);
  RequestFacts localhost = SignedIn("GET", "/");
  localhost.host = "localhost:8123";
  EXPECT_EQ(Check(Config(), localhost).kind, Verdict::Kind::kAllow);
}

TEST(GuardTest, RefusesAnotherHostAsDnsRebinding) {
  for (const char* host : {"evil.example:8123", "127.0.0.1:8124", "127.0.0.1", "localhost",
                           "127.0.0.1:8123.evil.example", ""}) {
    RequestFacts r = SignedIn("GET", "/api/jobs");
    r.host = host;
    const Verdict v = Check(Config(), r);
    EXPECT_EQ(v.kind, Verdict::Kind::kRefuse) << host;
    EXPECT_EQ(v.code, 421) << host;
  }
  RequestFacts none = SignedIn("GET", "/");
  none.host.reset();
  EXPECT_EQ(Check(Config(), none).code, 421);
}

TEST(GuardTest, RefusesAForeignOrigin) {
  for (const char* origin : {"http://evil.example", "null", "http://127.0.0.1:8124",
                             "https://127.0.0.1:8123", "http://127.0.0.1:8123.evil.example"}) {
    RequestFacts r = SignedIn("POST", "/api/namespaces/a/jobs/b/cancel");
    r.origin = origin;
    const Verdict v = Check(Config(), r);
    EXPECT_EQ(v.kind, Verdict::Kind::kRefuse) << origin;
    EXPECT_EQ(v.code, 403) << origin;
  }
}

TEST(GuardTest, RefusesAChangeWithoutOrigin) {
  const Verdict v = Check(Config(), SignedIn("POST", "/api/namespaces/a/jobs/b/cancel"));
  EXPECT_EQ(v.kind, Verdict::Kind::kRefuse);
  EXPECT_EQ(v.code, 403);
}

TEST(GuardTest, RefusesWithoutTheCookie) {
  for (const char* cookie :
       {"", "ayatori-ui-8123=", "ayatori-ui-8124=aaaa",
        "xayatori-ui-8123=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "ayatori-ui-8123=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"}) {
    RequestFacts r = SignedIn("GET", "/api/jobs");
    r.cookie = cookie;
    const Verdict v = Check(Config(), r);
    EXPECT_EQ(v.kind, Verdict::Kind::kRefuse) << cookie;
    EXPECT_EQ(v.code, 401) << cookie;
  }
}

TEST(GuardTest, ExchangesTheRightTokenForTheCookieOnPagesOnly) {
  RequestFacts page = SignedIn("GET", "/");
  page.cookie.reset();
  page.token = std::string(64, 'a');
  EXPECT_EQ(Check(Config(), page).kind, Verdict::Kind::kExchange);
  page.token = std::string(64, 'b');
  EXPECT_EQ(Check(Config(), page).code, 401);
  // The token is not an API credential: only the cookie is.
  RequestFacts api = SignedIn("GET", "/api/jobs");
  api.cookie.reset();
  api.token = std::string(64, 'a');
  EXPECT_EQ(Check(Config(), api).code, 401);
}

TEST(GuardTest, RefusesAnApiCallWithoutTheHeader) {
  for (const std::optional<std::string>& header :
       {std::optional<std::string>(), std::optional<std::string>("0"),
        std::optional<std::string>("")}) {
    RequestFacts r = SignedIn("GET", "/api/jobs");
    r.api = header;
    const Verdict v = Check(Config(), r);
    EXPECT_EQ(v.kind, Verdict::Kind::kRefuse);
    EXPECT_EQ(v.code, 403);
  }
  RequestFacts page = SignedIn("GET", "/static/app.js");
  page.api.reset();  // a <script src> cannot send it, and needs not
  EXPECT_EQ(Check(Config(), page).kind, Verdict::Kind::kAllow);
}

TEST(GuardTest, CookieValueFindsTheExactName) {
  EXPECT_EQ(CookieValue("a=1; b=2", "b"), "2");
  EXPECT_EQ(CookieValue("ab=1;b=2", "b"), "2");
  EXPECT_EQ(CookieValue("ab=1", "b"), std::nullopt);
  EXPECT_EQ(CookieValue("", "b"), std::nullopt);
  EXPECT_EQ(CookieValue("b", "b"), std::nullopt);
}

TEST(GuardTest, HostsOfLoopbackAddresses) {
  EXPECT_EQ(HostsFor("127.0.0.1", 80), (std::vector<std::string>{"127.0.0.1:80", "localhost:80"}));
  EXPECT_EQ(HostsFor("::1", 80), (std::vector<std::string>{"[::1]:80", "localhost:80"}));
}

TEST(GuardTest, TokensAreLongAndDiffer) {
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    auto token = NewToken();
    ASSERT_TRUE(token.ok()) << token.status().message();
    EXPECT_EQ(token->size(), 64u);
    seen.insert(*token);
  }
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_TRUE(ConstantTimeEqual("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEqual("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEqual("abc", "ab"));
}

TEST(GuardTest, TheCookieIsHttpOnlyAndStrict) {
  const std::string header = SetCookieHeader(Config());
  EXPECT_NE(header.find("HttpOnly"), std::string::npos);
  EXPECT_NE(header.find("SameSite=Strict"), std::string::npos);
  EXPECT_EQ(header.rfind("ayatori-ui-8123=", 0), 0u);
}

}  // namespace
}  // namespace ayatori::plugin::ui
