// Decoding PartialObjectMetadata (kube/object_metadata.h): what the metadata-only informers of
// Secrets and ConfigMaps keep, and the projection the fake API server serves.
#include "kube/object_metadata.h"

#include <gtest/gtest.h>

namespace ayatori::kube {
namespace {

using nlohmann::json;

TEST(ObjectMetadataTest, DecodesWhatTheApiServerSendsForAMetadataOnlyRead) {
  // As kube-apiserver sends one item of a PartialObjectMetadataList (abridged).
  json item = json::parse(R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
      "metadata":{"name":"db-password","namespace":"team-a",
      "uid":"0b7e4c38-5d6e-4a52-9a8f-1f0c6d8f7a10","resourceVersion":"4711",
      "creationTimestamp":"2026-12-01T18:00:00Z","labels":{"app":"db"},
      "managedFields":[{"manager":"kubectl"}]}})");
  auto m = DecodeObjectMetadata(item);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->namespace_, "team-a");
  EXPECT_EQ(m->name, "db-password");
  EXPECT_EQ(m->uid, "0b7e4c38-5d6e-4a52-9a8f-1f0c6d8f7a10");
  EXPECT_EQ(m->resourceVersion, "4711");
}

TEST(ObjectMetadataTest, ClusterScopedObjectsHaveNoNamespace) {
  auto m = DecodeObjectMetadata(json{{"metadata", {{"name", "n"}, {"uid", "u"}}}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->namespace_, "");
  EXPECT_EQ(m->resourceVersion, "");
}

TEST(ObjectMetadataTest, MalformedMetadataIsAClearErrorNotACrash) {
  for (const auto& [bad, why] : std::vector<std::pair<json, std::string>>{
           {json::array(), "not a JSON object"},
           {json{{"kind", "PartialObjectMetadata"}}, "metadata is missing"},
           {json{{"metadata", "x"}}, "metadata is missing"},
           {json{{"metadata", {{"namespace", "ns"}}}}, "metadata.name is missing"},
           {json{{"metadata", {{"name", 3}}}}, "metadata.name is not a string"},
           {json{{"metadata", {{"name", "a"}, {"resourceVersion", 12}}}},
            "metadata.resourceVersion is not a string"},
       }) {
    auto m = DecodeObjectMetadata(bad);
    ASSERT_FALSE(m.ok()) << bad.dump();
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(why), std::string::npos) << m.status().message();
  }
}

TEST(ObjectMetadataTest, ProjectionKeepsTheMetadataAndDropsTheContent) {
  json secret = {{"kind", "Secret"},
                 {"apiVersion", "v1"},
                 {"metadata", {{"name", "s"}, {"namespace", "ns"}, {"resourceVersion", "3"}}},
                 {"type", "Opaque"},
                 {"data", {{"token", "c2VjcmV0"}}}};
  json partial = PartialObjectMetadataOf(secret);
  EXPECT_EQ(partial, (json{{"kind", "PartialObjectMetadata"},
                           {"apiVersion", "meta.k8s.io/v1"},
                           {"metadata", secret["metadata"]}}));
  EXPECT_EQ(partial.dump().find("c2VjcmV0"), std::string::npos);
  EXPECT_EQ(PartialObjectMetadataOf(json::array())["metadata"], json::object());
}

}  // namespace
}  // namespace ayatori::kube
