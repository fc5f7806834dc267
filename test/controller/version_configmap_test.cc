// The controller's version ConfigMap (src/controller/version_configmap.h): created, updated when
// another version starts, left alone when it already says the same.
#include "controller/version_configmap.h"

#include <gtest/gtest.h>

#include "kube/testing/fake_kube_client.h"

namespace ayatori::controller {
namespace {

const ResourceRef kConfigMaps{"", "v1", "configmaps", true};

TEST(PublishVersionTest, CreatesThenUpdatesOnlyWhenTheVersionChanged) {
  kube::testing::FakeKubeClient client;
  ASSERT_TRUE(PublishVersion(client, "ayatori-system", "0.1.0", "abc").ok());
  auto stored = client.Peek(kConfigMaps, "ayatori-system", kVersionConfigMapName);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ((*stored)["data"], nlohmann::json({{"version", "0.1.0"}, {"commit", "abc"}}));
  const std::string first = (*stored)["metadata"]["resourceVersion"];

  // A restart of the same build writes nothing.
  ASSERT_TRUE(PublishVersion(client, "ayatori-system", "0.1.0", "abc").ok());
  EXPECT_EQ(client.Peek(kConfigMaps, "ayatori-system", kVersionConfigMapName)
                .value()["metadata"]["resourceVersion"],
            first);
  EXPECT_EQ(client.CountActions("update", "configmaps"), 0u);
  EXPECT_EQ(client.CountActions("create", "configmaps"), 1u);

  // An upgrade names the new build.
  ASSERT_TRUE(PublishVersion(client, "ayatori-system", "0.2.0", "def").ok());
  EXPECT_EQ(client.Peek(kConfigMaps, "ayatori-system", kVersionConfigMapName).value()["data"],
            nlohmann::json({{"version", "0.2.0"}, {"commit", "def"}}));
}

TEST(PublishVersionTest, TheServersRefusalComesBack) {
  kube::testing::FakeKubeClient client;
  client.FailNext("create", "configmaps", Status(StatusCode::kForbidden, "no"));
  EXPECT_EQ(PublishVersion(client, "ayatori-system", "0.1.0", "abc").code(),
            StatusCode::kForbidden);
  client.FailNext("get", "configmaps", Status(StatusCode::kForbidden, "no"));
  EXPECT_EQ(PublishVersion(client, "ayatori-system", "0.1.0", "abc").code(),
            StatusCode::kForbidden);
}

}  // namespace
}  // namespace ayatori::controller
