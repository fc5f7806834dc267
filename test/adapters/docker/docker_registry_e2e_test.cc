// Private images: the fixture "docker_registry" (hack/registry.sh) runs Debian's docker-registry
// with htpasswd auth on 127.0.0.1 holding an image that the fixture's dockerd does not have. The
// adapter pulls it only with a matching kubernetes.io/dockerconfigjson pull secret; every other
// case fails with ImagePullFailed and a message that names the problem, never the password.
#include <gtest/gtest.h>

#include "adapters/docker/docker_adapter.h"
#include "base/base64.h"
#include "test/adapters/docker/e2e_support.h"
#include "test/support/testenv.h"

namespace ayatori::adapters::docker {
namespace {

using e2e::KeyOf;
using e2e::PhaseName;
using nlohmann::json;

class DockerRegistryE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = e2e::FixtureEndpoint();
    auto vars = e2e::ReadEnvFile(testing::RequiredEnv("AYATORI_REGISTRY_DIR") + "/env.sh");
    addr_ = vars["REGISTRY_ADDR"];
    user_ = vars["REGISTRY_USER"];
    password_ = vars["REGISTRY_PASSWORD"];
    image_ = vars["REGISTRY_IMAGE"];
    ASSERT_FALSE(image_.empty()) << "the docker_registry fixture wrote no REGISTRY_IMAGE";
    // Every case must really talk to the registry: the image must not be cached locally.
    e2e::RemoveImage(endpoint_, image_);
  }
  void TearDown() override {
    for (const auto& key : created_) EXPECT_TRUE(adapter_.Delete(key).ok());
    e2e::RemoveImage(endpoint_, image_);
  }

  SensitiveString PullSecret(const std::string& registry, const std::string& user,
                             const std::string& password) {
    return SensitiveString(
        json{{"auths", {{registry, {{"auth", base::Base64Encode(user + ":" + password)}}}}}}
            .dump());
  }

  Observation Ensure(std::vector<SensitiveString> pullConfigs) {
    auto r = e2e::MakeRequest(endpoint_, "private", image_, {});
    r.imagePullConfigs = std::move(pullConfigs);
    created_.push_back(KeyOf(r));
    Observation o = adapter_.Ensure(r);
    if (o.phase == ExecutionPhase::kRunning || o.phase == ExecutionPhase::kPending) {
      o = e2e::WaitForStopped(adapter_, KeyOf(r, o));
    }
    EXPECT_EQ(o.message.find(password_), std::string::npos) << "the password leaked: " << o.message;
    return o;
  }

  std::string endpoint_, addr_, user_, password_, image_;
  DockerAdapter adapter_;
  std::vector<ExecutionKey> created_;
};

TEST_F(DockerRegistryE2ETest, TheRightPullSecretPullsAndRunsThePrivateImage) {
  // A second, unrelated secret first: the matching entry is found in the later one.
  Observation o = Ensure(
      {PullSecret("other.example.com", "x", "y"), PullSecret("http://" + addr_, user_, password_)});
  ASSERT_EQ(o.phase, ExecutionPhase::kSucceeded) << PhaseName(o);
  auto logs = adapter_.Logs(created_.back(), 1024);
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  EXPECT_EQ(*logs, "private-image\n") << "the image's own CMD ran";
}

TEST_F(DockerRegistryE2ETest, AWrongPasswordIsImagePullFailed) {
  Observation o = Ensure({PullSecret(addr_, user_, password_ + "-wrong")});
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed) << PhaseName(o);
  EXPECT_EQ(o.reason, "ImagePullFailed");
  EXPECT_NE(o.message.find("unauthorized"), std::string::npos) << o.message;
}

TEST_F(DockerRegistryE2ETest, NoPullSecretIsImagePullFailed) {
  Observation o = Ensure({});
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed) << PhaseName(o);
  EXPECT_EQ(o.reason, "ImagePullFailed");
  EXPECT_NE(o.message.find("credentials"), std::string::npos) << o.message;
}

TEST_F(DockerRegistryE2ETest, ASecretForAnotherRegistryIsImagePullFailedWithoutAnAnonymousTry) {
  Observation o = Ensure({PullSecret("127.0.0.2:5000", user_, password_)});
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed) << PhaseName(o);
  EXPECT_EQ(o.reason, "ImagePullFailed");
  EXPECT_NE(o.message.find("no imagePullSecret has credentials for registry \"" + addr_),
            std::string::npos)
      << o.message;
}

TEST_F(DockerRegistryE2ETest, AMalformedSecretIsImagePullFailed) {
  Observation o =
      Ensure({SensitiveString("{\"auths\": {\"" + addr_ + "\": {\"auth\": \"%%%\"}}}")});
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed) << PhaseName(o);
  EXPECT_EQ(o.reason, "ImagePullFailed");
  EXPECT_NE(o.message.find("imagePullSecrets[0]"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace ayatori::adapters::docker
