#include "adapters/common/registry_auth.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/base64.h"

namespace ayatori::adapters {
namespace {

SensitiveString Config(const nlohmann::json& auths) {
  return SensitiveString(nlohmann::json{{"auths", auths}}.dump());
}

std::string AuthOf(const std::string& user, const std::string& password) {
  return base::Base64Encode(user + ":" + password);
}

ImageReference Ref(const std::string& image) {
  auto r = ParseImageReference(image);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ImageReference{};
}

const std::string kDigest = "sha256:" + std::string(64, 'a');

TEST(ImageReferenceTest, NormalisesLikeDocker) {
  struct Case {
    std::string image, name, registry, path, pullTag;
  } cases[] = {
      {"alpine", "alpine", "docker.io", "library/alpine", "latest"},
      {"alpine:3.22", "alpine", "docker.io", "library/alpine", "3.22"},
      {"docker.io/library/alpine:3.22", "docker.io/library/alpine", "docker.io", "library/alpine",
       "3.22"},
      {"index.docker.io/team/app", "index.docker.io/team/app", "docker.io", "team/app", "latest"},
      {"team/app:v1", "team/app", "docker.io", "team/app", "v1"},
      {"127.0.0.1:5000/ayatori/private:1", "127.0.0.1:5000/ayatori/private", "127.0.0.1:5000",
       "ayatori/private", "1"},
      {"localhost/x", "localhost/x", "localhost", "x", "latest"},
      {"Registry.Example.COM/a/b/c@" + kDigest, "Registry.Example.COM/a/b/c",
       "registry.example.com", "a/b/c", kDigest},
      {"r.io/a:tag@" + kDigest, "r.io/a", "r.io", "a", kDigest},
      {"[::1]:5000/a_b__c-d--e.f/g:v1.0-rc_1", "[::1]:5000/a_b__c-d--e.f/g", "[::1]:5000",
       "a_b__c-d--e.f/g", "v1.0-rc_1"},
  };
  for (const auto& c : cases) {
    auto r = ParseImageReference(c.image);
    ASSERT_TRUE(r.ok()) << c.image << ": " << r.status().ToString();
    EXPECT_EQ(r->name, c.name) << c.image;
    EXPECT_EQ(r->registry, c.registry) << c.image;
    EXPECT_EQ(r->path, c.path) << c.image;
    EXPECT_EQ(r->PullTag(), c.pullTag) << c.image;
  }
}

TEST(ImageReferenceTest, RejectsMalformedReferences) {
  for (const char* bad : {"", "a b", "x:", "/x", "x/", "a//b", "x@nodigest"}) {
    EXPECT_FALSE(ParseImageReference(bad).ok()) << "\"" << bad << "\"";
  }
}

// The OCI reference grammar (distribution/reference): what the Engine URL would otherwise carry
// (query, fragment, path traversal) is refused before any request.
TEST(ImageReferenceTest, FollowsTheOciReferenceGrammar) {
  for (const std::string& bad : std::vector<std::string>{"Alpine",
                                                         "team/App",
                                                         "a/../../containers/x",
                                                         "busybox?x=1",
                                                         "busybox#frag",
                                                         "a/.b",
                                                         "a_",
                                                         "a-",
                                                         "-a",
                                                         "a___b",
                                                         "busybox:.tag",
                                                         "busybox:-tag",
                                                         "busybox:" + std::string(129, 't'),
                                                         "bad_host:5000/x",
                                                         "r.io:port/x",
                                                         "a.-b.io/x",
                                                         "x@sha256:abcd",
                                                         "x@sha256:" + std::string(64, 'g'),
                                                         "x@256:" + std::string(64, 'a'),
                                                         std::string(256, 'a'),
                                                         "a/b%2Fc",
                                                         "a\\b"}) {
    auto r = ParseImageReference(bad);
    EXPECT_FALSE(r.ok()) << "\"" << bad << "\"";
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("invalid image reference"), std::string::npos);
    }
  }
  for (const std::string& good : std::vector<std::string>{
           "a", "a0/b1", "a.b_c__d-e---f", "localhost:5000/x", "[2001:db8::1]/x", "x:_tag",
           "x:TAG.1-2_3", "x@sha512:" + std::string(128, 'F'),
           "x@sha256+b64:" + std::string(32, '0'), std::string(255, 'a')}) {
    auto r = ParseImageReference(good);
    EXPECT_TRUE(r.ok()) << "\"" << good << "\": " << r.status().ToString();
  }
}

// A cached image counts as the one a Job names only when the engine knows it under that name;
// the engine also resolves (prefixes of) image IDs, which name no repository.
TEST(ImageNamedByTest, OnlyATagOrDigestOfTheSameRepositoryMatches) {
  const nlohmann::json inspect = {{"Id", "sha256:" + std::string(64, 'c')},
                                  {"RepoTags", {"alpine:3.22", "127.0.0.1:5000/team/app:1"}},
                                  {"RepoDigests", {"127.0.0.1:5000/team/app@" + kDigest}}};
  EXPECT_TRUE(ImageNamedBy(inspect, Ref("alpine:3.22")));
  EXPECT_TRUE(ImageNamedBy(inspect, Ref("docker.io/library/alpine:3.22")));
  EXPECT_TRUE(ImageNamedBy(inspect, Ref("127.0.0.1:5000/team/app:1")));
  EXPECT_TRUE(ImageNamedBy(inspect, Ref("127.0.0.1:5000/team/app@" + kDigest)));
  EXPECT_FALSE(ImageNamedBy(inspect, Ref("alpine"))) << "latest is another tag";
  EXPECT_FALSE(ImageNamedBy(inspect, Ref("127.0.0.1:5000/team/other:1")));
  EXPECT_FALSE(ImageNamedBy(inspect, Ref("cccccccccccc"))) << "an ID prefix names no repository";
  EXPECT_FALSE(ImageNamedBy(inspect, Ref("sha256:" + std::string(64, 'c'))));
  EXPECT_FALSE(ImageNamedBy(inspect, Ref("alpine@" + kDigest))) << "a digest of another repo";
  EXPECT_FALSE(ImageNamedBy(nlohmann::json::object(), Ref("alpine:3.22")));
  EXPECT_FALSE(ImageNamedBy(nlohmann::json(), Ref("alpine:3.22")));
}

TEST(RegistryKeyTest, NormalisesDockerConfigKeys) {
  EXPECT_EQ(NormalizeRegistryKey("https://index.docker.io/v1/").host, "docker.io");
  EXPECT_EQ(NormalizeRegistryKey("https://index.docker.io/v1/").pathPrefix, "");
  EXPECT_EQ(NormalizeRegistryKey("index.docker.io").host, "docker.io");
  EXPECT_EQ(NormalizeRegistryKey("registry-1.docker.io").host, "docker.io");
  EXPECT_EQ(NormalizeRegistryKey("docker.io").host, "docker.io");
  EXPECT_EQ(NormalizeRegistryKey("http://127.0.0.1:5000").host, "127.0.0.1:5000");
  EXPECT_EQ(NormalizeRegistryKey("127.0.0.1:5000/v2/").pathPrefix, "");
  auto team = NormalizeRegistryKey("Registry.Example.com/team/");
  EXPECT_EQ(team.host, "registry.example.com");
  EXPECT_EQ(team.pathPrefix, "team");
}

TEST(SelectRegistryCredentialsTest, NoSecretsMeansAnonymous) {
  auto r = SelectRegistryCredentials({}, Ref("alpine"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

TEST(SelectRegistryCredentialsTest, MatchesTheImagesRegistryByAuthField) {
  auto r = SelectRegistryCredentials(
      {Config({{"other.io", {{"auth", AuthOf("x", "y")}}},
               {"127.0.0.1:5000", {{"auth", AuthOf("alice", "s3:cr:et")}}}})},
      Ref("127.0.0.1:5000/ayatori/private:1"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->username, "alice");
  EXPECT_EQ((*r)->password.reveal(), "s3:cr:et")
      << "only the first ':' separates user and password";
  EXPECT_EQ((*r)->serverAddress, "127.0.0.1:5000");
}

TEST(SelectRegistryCredentialsTest, AcceptsUsernameAndPasswordFields) {
  auto r = SelectRegistryCredentials(
      {Config({{"https://registry.example.com", {{"username", "bob"}, {"password", "pw"}}}})},
      Ref("registry.example.com/app"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->username, "bob");
  EXPECT_EQ((*r)->password.reveal(), "pw");
}

TEST(SelectRegistryCredentialsTest, DockerHubKeysMatchImagesWithoutRegistry) {
  for (const char* key : {"https://index.docker.io/v1/", "index.docker.io", "docker.io"}) {
    auto r = SelectRegistryCredentials({Config({{key, {{"auth", AuthOf("hub", "pw")}}}})},
                                       Ref("alpine:3.22"));
    ASSERT_TRUE(r.ok()) << key << ": " << r.status().ToString();
    ASSERT_TRUE(r->has_value()) << key;
    EXPECT_EQ((*r)->username, "hub");
    EXPECT_EQ((*r)->serverAddress, "https://index.docker.io/v1/");
  }
}

TEST(SelectRegistryCredentialsTest, LaterSecretsAreSearchedAndTheLongestPathPrefixWins) {
  auto r =
      SelectRegistryCredentials({Config({{"other.io", {{"auth", AuthOf("o", "o")}}}}),
                                 Config({{"r.io", {{"auth", AuthOf("general", "g")}}},
                                         {"r.io/team", {{"auth", AuthOf("team", "t")}}},
                                         {"r.io/teamother", {{"auth", AuthOf("wrong", "w")}}}})},
                                Ref("r.io/team/app:1"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->username, "team");
}

TEST(SelectRegistryCredentialsTest, NoMatchingRegistryIsAnErrorNotAnonymous) {
  auto r = SelectRegistryCredentials({Config({{"other.io", {{"auth", AuthOf("u", "topsecret")}}}})},
                                     Ref("127.0.0.1:5000/ayatori/private:1"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("127.0.0.1:5000"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("other.io"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("topsecret"), std::string::npos);
  // A registry on another port is another registry.
  EXPECT_FALSE(
      SelectRegistryCredentials({Config({{"127.0.0.1:5001", {{"auth", AuthOf("u", "p")}}}})},
                                Ref("127.0.0.1:5000/x"))
          .ok());
}

TEST(SelectRegistryCredentialsTest, MalformedSecretsAreErrorsThatDoNotQuoteThem) {
  const std::string secret = "hunter2-secret";
  std::vector<SensitiveString> malformed = {
      SensitiveString("{not json " + secret),
      SensitiveString("[\"" + secret + "\"]"),
      SensitiveString(nlohmann::json{{secret, {{"auth", AuthOf("u", "p")}}}}.dump()),  // no auths
      Config({{"r.io", {{"auth", "!!!" + secret}}}}),                                  // not base64
      Config({{"r.io", {{"auth", base::Base64Encode("no-colon-" + secret)}}}}),
      Config({{"r.io", {{"email", secret}}}}),  // no credentials at all
      Config({{"r.io", secret}}),
  };
  for (size_t i = 0; i < malformed.size(); ++i) {
    auto r = SelectRegistryCredentials({malformed[i]}, Ref("r.io/app"));
    ASSERT_FALSE(r.ok()) << "case " << i;
    EXPECT_EQ(r.status().message().find(secret), std::string::npos)
        << "case " << i << ": " << r.status().message();
    EXPECT_NE(r.status().message().find("imagePullSecrets[0]"), std::string::npos)
        << r.status().message();
  }
}

// Found by fuzz/dockerconfigjson_fuzzer.cc: an "auth" that decoded to bytes that are not UTF-8
// made RegistryAuthHeaderValue throw (nlohmann's dump refuses them).
TEST(SelectRegistryCredentialsTest, AuthThatIsNotUtf8IsAnError) {
  for (const std::string& password :
       {std::string("s3\xff"), std::string("\xc3"), std::string("\xc0\xaf"),  // cut, overlong
        std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80")}) {      // surrogate, >10FFFF
    auto r = SelectRegistryCredentials({Config({{"r.io", {{"auth", AuthOf("u", password)}}}})},
                                       Ref("r.io/app"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("not UTF-8"), std::string::npos) << r.status().message();
  }
  auto r = SelectRegistryCredentials(
      {Config({{"r.io", {{"auth", AuthOf("ü", "p\xc3\xa4\xe2\x82\xac\xf0\x9f\x94\x91")}}}})},
      Ref("r.io/app"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value().password.reveal(), "p\xc3\xa4\xe2\x82\xac\xf0\x9f\x94\x91");

  // Credentials made by hand never make the header throw.
  RegistryCredentials c;
  c.username = "u";
  c.password = SensitiveString("\xff");
  EXPECT_FALSE(RegistryAuthHeaderValue(c).reveal().empty());
}

TEST(RegistryAuthHeaderTest, IsBase64UrlOfTheDockerAuthConfig) {
  RegistryCredentials c;
  c.username = "alice";
  c.password = SensitiveString("p?>>?w");  // bytes that differ between base64 alphabets
  c.serverAddress = "127.0.0.1:5000";
  std::string header = RegistryAuthHeaderValue(c).reveal();
  EXPECT_EQ(header.find_first_of("+/"), std::string::npos) << header;
  std::string standard = header;
  for (char& ch : standard) {
    if (ch == '-') ch = '+';
    if (ch == '_') ch = '/';
  }
  auto decoded = base::Base64Decode(standard);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  auto doc = nlohmann::json::parse(*decoded);
  EXPECT_EQ(doc["username"], "alice");
  EXPECT_EQ(doc["password"], "p?>>?w");
  EXPECT_EQ(doc["serveraddress"], "127.0.0.1:5000");
}

}  // namespace
}  // namespace ayatori::adapters
