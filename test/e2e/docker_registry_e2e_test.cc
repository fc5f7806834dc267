// A private image through the controller: the "docker_registry" fixture (hack/registry.sh: a
// docker-registry with htpasswd auth on 127.0.0.1) holds an image that only it has. A Job pulls
// it only with the right kubernetes.io/dockerconfigjson pull Secret; with a wrong one, or none, it
// fails with ImagePullFailed instead of running anything. The registry password never shows in
// the Job, its Events or the controller's log.
#include <gtest/gtest.h>

#include "kube/config.h"
#include "test/e2e/controller_e2e.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::e2e {
namespace {

// pullPolicy Always: every Job pulls, so a Job with a wrong Secret cannot use an image that an
// earlier Job pulled.
constexpr const char* kClass = "e2e-docker-registry";

class DockerRegistryE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    host_ = FixtureDockerHost();
    ASSERT_NO_FATAL_FAILURE(ReadPrivateRegistry(&registry_));
    // Only the registry has the image.
    Docker(host_, {"rmi", "-f", registry_.image});
    ASSERT_TRUE(InstallCrds());
    ASSERT_TRUE(ApplyDockerClass(kClass, {{"endpoint", host_},
                                          {"networkMode", "none"},
                                          {"pullPolicy", "Always"},
                                          {"stopGracePeriodSeconds", 1}}));
    ASSERT_NO_FATAL_FAILURE(
        StartControllerAndNamespace("e2e-registry", {"--docker-endpoint=" + host_}));
  }
  void TearDown() override {
    ControllerTest::TearDown();
    Docker(host_, {"rmi", "-f", registry_.image});
  }

  // A kubernetes.io/dockerconfigjson Secret for the registry with `password`.
  void ApplyPullSecret(const std::string& name, const std::string& password) {
    ASSERT_TRUE(e2e::ApplyPullSecret(registry_, ns_, name, password));
  }

  std::string CreatePullJob(const std::string& name, const std::string& pullSecret) {
    json task = {{"image", registry_.image}};
    if (!pullSecret.empty()) task["imagePullSecrets"] = {{{"name", pullSecret}}};
    return CreateJob(name, kClass, task);
  }

  // Neither password appears in the Job, the namespace's Events or the controller's log.
  void ExpectNoCredentialLeak(const std::string& name, const std::string& wrongPassword) {
    std::string job = Get(kJobResource, ns_, name).value_or(json()).dump();
    std::string events = EventsJson(ns_);
    std::string log = controller_.Log();
    for (const std::string& secret : {registry_.password, wrongPassword}) {
      EXPECT_EQ(job.find(secret), std::string::npos) << "a registry password is in Job " << name;
      EXPECT_EQ(events.find(secret), std::string::npos) << "a registry password is in an Event";
      EXPECT_EQ(log.find(secret), std::string::npos) << "a registry password is in the log";
    }
  }

  std::string host_;
  PrivateRegistry registry_;
};

TEST_F(DockerRegistryE2ETest, ThePrivateImageRunsWithTheRightPullSecret) {
  ApplyPullSecret("registry-ok", registry_.password);
  std::string uid = CreatePullJob("private", "registry-ok");
  ASSERT_FALSE(uid.empty());
  json job = WaitForFinished(ns_, "private", 180s);
  EXPECT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);
  auto ids = ContainersOf(host_, uid);
  ASSERT_EQ(ids.size(), 1u);
  // The image's CMD prints its marker file.
  EXPECT_EQ(ContainerLogs(host_, ids[0]), "private-image\n");
  // While the image was pulled (in the background), the Job said so.
  bool told = testing::Eventually(
      [&] {
        json events = json::parse(EventsJson(ns_), nullptr, false);
        if (!events.is_object()) return false;
        for (const auto& e : events.value("items", json::array())) {
          if (e.value("/involvedObject/uid"_json_pointer, "") == uid &&
              e.value("reason", "") == "ImagePulling" &&
              e.value("message", "").find("pulling image \"" + registry_.image + "\"") !=
                  std::string::npos) {
            return true;
          }
        }
        return false;
      },
      30s);
  EXPECT_TRUE(told) << "no ImagePulling Event about the Job: " << EventsJson(ns_);
  ExpectNoCredentialLeak("private", registry_.password);
}

TEST_F(DockerRegistryE2ETest, AWrongPullSecretOrNoneFailsWithImagePullFailed) {
  const std::string wrong = "wrong-" + RandomToken();
  ApplyPullSecret("registry-wrong", wrong);
  std::string uidWrong = CreatePullJob("wrong-secret", "registry-wrong");
  std::string uidNone = CreatePullJob("no-secret", "");
  ASSERT_FALSE(uidWrong.empty() || uidNone.empty());
  for (const auto& [name, uid] :
       {std::pair<std::string, std::string>{"wrong-secret", uidWrong}, {"no-secret", uidNone}}) {
    json job = WaitForFinished(ns_, name, 180s);
    EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ImagePullFailed") << Describe(job);
    EXPECT_EQ(job.value("/status/result/reason"_json_pointer, ""), "ImagePullFailed")
        << Describe(job);
    // Nothing ran: the failure came before the task started.
    EXPECT_FALSE(job.contains("/status/startTime"_json_pointer)) << Describe(job);
    EXPECT_TRUE(job.contains("/status/completionTime"_json_pointer)) << Describe(job);
    EXPECT_TRUE(ContainersOf(host_, uid).empty()) << name;
  }
  EXPECT_NE(Docker(host_, {"image", "inspect", registry_.image}).exitCode, 0)
      << "the private image was pulled without the right credentials";
  ExpectNoCredentialLeak("wrong-secret", wrong);
}

// A private image cached on a shared engine (pullPolicy IfNotPresent) is used only by Jobs whose
// own credentials can pull it: a Job with pull credentials always pulls, and a Job without any
// pulls too once the image is known to be private (it came with credentials).
TEST_F(DockerRegistryE2ETest, ACachedPrivateImageIsNotUsedWithoutAccess) {
  constexpr const char* kCachedClass = "e2e-docker-registry-cached";
  ASSERT_TRUE(ApplyDockerClass(kCachedClass, {{"endpoint", host_},
                                              {"networkMode", "none"},
                                              {"pullPolicy", "IfNotPresent"},
                                              {"stopGracePeriodSeconds", 1}}));
  auto pullJob = [&](const std::string& name, const std::string& pullSecret) {
    json task = {{"image", registry_.image}};
    if (!pullSecret.empty()) task["imagePullSecrets"] = {{{"name", pullSecret}}};
    EXPECT_FALSE(CreateJob(name, kCachedClass, task).empty());
    return WaitForFinished(ns_, name, 180s);
  };
  ApplyPullSecret("registry-ok", registry_.password);
  const std::string wrong = "wrong-" + RandomToken();
  ApplyPullSecret("registry-wrong", wrong);
  json first = pullJob("first", "registry-ok");
  ASSERT_EQ(ConditionSummary(first, "Succeeded"), "True/Completed") << Describe(first);
  ASSERT_EQ(Docker(host_, {"image", "inspect", registry_.image}).exitCode, 0)
      << "the image is cached";

  for (const auto& [name, secret] :
       {std::pair<std::string, std::string>{"cached-wrong", "registry-wrong"},
        {"cached-none", ""}}) {
    json job = pullJob(name, secret);
    EXPECT_EQ(ConditionSummary(job, "Succeeded"), "False/ImagePullFailed") << Describe(job);
    EXPECT_FALSE(job.contains("/status/startTime"_json_pointer)) << Describe(job);
  }
  json again = pullJob("again", "registry-ok");
  EXPECT_EQ(ConditionSummary(again, "Succeeded"), "True/Completed") << Describe(again);
  ExpectNoCredentialLeak("cached-wrong", wrong);
}

}  // namespace
}  // namespace ayatori::e2e
