#include "adapters/common/secret_reader.h"

#include <gtest/gtest.h>

#include "ayatori/json_get.h"
#include "kube/testing/fake_kube_client.h"

namespace ayatori::adapters {
namespace {

using kube::testing::FakeKubeClient;
using nlohmann::json;

const ResourceRef kSecrets{"", "v1", "secrets", true};

void PutSecret(FakeKubeClient& client, const std::string& value) {
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"namespace", "ns"}, {"name", "s"}}},
                 {"data", {{"k", value}}}};
  if (client.CountActions("create", "secrets") > 0) {
    ASSERT_TRUE(client.Delete(kSecrets, "ns", "s", {}).ok());
  }
  ASSERT_TRUE(client.Create(kSecrets, "ns", secret, {}).ok());
}

size_t Gets(const FakeKubeClient& client) { return client.CountActions("get", "secrets"); }

// The decoder of the tests: the value of key "k", an error when it is "bad".
StatusOr<std::string> Decode(const json& secret) {
  std::string v = GetString(SecretData(secret), "k");
  if (v == "bad") return Status(StatusCode::kFailedPrecondition, "undecodable");
  return v;
}

std::string ValueOf(const StatusOr<std::string>& v) { return v.ok() ? *v : v.status().ToString(); }

Status NamedGetError(const Status& st) {
  return Status(st.code(), "reading the test's Secret: " + st.message());
}

TEST(CachedSecretReaderTest, KeepsADecodedValueForItsTtlOnly) {
  FakeKubeClient client;
  PutSecret(client, "one");
  CachedSecretReader<std::string> reader(client, std::chrono::seconds(3600));
  EXPECT_EQ(ValueOf(reader.Read("ns", "s", "ns/s", Decode, NamedGetError)), "one");
  PutSecret(client, "two");
  const size_t before = Gets(client);
  EXPECT_EQ(ValueOf(reader.Read("ns", "s", "ns/s", Decode, NamedGetError)), "one");
  EXPECT_EQ(Gets(client), before) << "a kept value costs no GET";

  CachedSecretReader<std::string> expired(client, std::chrono::seconds(0));
  EXPECT_EQ(ValueOf(expired.Read("ns", "s", "ns/s", Decode, NamedGetError)), "two");
  EXPECT_EQ(ValueOf(expired.Read("ns", "s", "ns/s", Decode, NamedGetError)), "two");
  EXPECT_EQ(Gets(client), before + 2);
}

TEST(CachedSecretReaderTest, AValueThatDoesNotDecodeIsNotKeptSoAFixIsReadAtOnce) {
  FakeKubeClient client;
  PutSecret(client, "bad");
  CachedSecretReader<std::string> reader(client, std::chrono::seconds(3600));
  auto first = reader.Read("ns", "s", "ns/s", Decode, NamedGetError);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().message(), "undecodable");
  PutSecret(client, "fixed");
  EXPECT_EQ(ValueOf(reader.Read("ns", "s", "ns/s", Decode, NamedGetError)), "fixed");
}

TEST(CachedSecretReaderTest, AFailedGetIsDescribedByTheCaller) {
  FakeKubeClient client;
  CachedSecretReader<std::string> reader(client, std::chrono::seconds(3600));
  auto missing = reader.Read("ns", "absent", "ns/absent", Decode, NamedGetError);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message().rfind("reading the test's Secret: ", 0), 0u)
      << missing.status().message();
}

TEST(SecretDataTest, ASecretWithoutDataReadsAsEmpty) {
  EXPECT_EQ(SecretData(json::object()), json::object());
  EXPECT_EQ(SecretData(json{{"data", {{"k", "dg=="}}}})["k"], "dg==");
}

}  // namespace
}  // namespace ayatori::adapters
