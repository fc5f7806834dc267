#include "adapters/docker/image_puller.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>

#include "adapters/common/observations.h"
#include "fake_docker_engine.h"
#include "test/support/wait.h"

namespace ayatori::adapters::docker {
namespace {

using testing::FakeDockerEngine;

constexpr const char* kImage = "registry.local:5000/team/app:1";
// {"auths": {"registry.local:5000": {"username": "robot", "password": "hunter2-pull"}}}
constexpr const char* kPullSecret =
    R"({"auths":{"registry.local:5000":{"username":"robot","password":"hunter2-pull"}}})";

ExecutionRequest Request(const std::string& image = kImage) {
  ExecutionRequest r;
  r.job.metadata.namespace_ = "ci";
  r.job.metadata.name = "hello-x";
  r.job.metadata.uid = "5cb0e2a4-1111-2222-3333-444455556666";
  r.job.spec.task.image = image;
  return r;
}

std::shared_ptr<EngineClient> ClientOf(const FakeDockerEngine& engine) {
  auto endpoint = ParseEngineEndpoint(engine.endpoint(), false);
  EXPECT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  return std::make_shared<EngineClient>(*endpoint, TlsMaterial{}, "1.41", EngineTimeouts{});
}

std::string Describe(const std::optional<Observation>& o) {
  if (!o) return "the image is there";
  return std::string(ExecutionPhaseName(o->phase)) + "/" + o->reason + ": " + o->message;
}

TEST(PullAnswerObservationTest, MapsTheEnginesVerdictOnThePull) {
  const std::string progress = R"({"status":"Pulling from team/app"})"
                               "\n"
                               R"({"status":"Status: Downloaded newer image"})"
                               "\n";
  EXPECT_EQ(PullAnswerObservation(HttpResponse{200, progress}, kImage), std::nullopt);

  // A 200 whose progress stream ends in an error: the pull failed.
  auto streamed = PullAnswerObservation(
      HttpResponse{200, progress + R"({"errorDetail":{"message":"denied"},"error":"denied: no"})"},
      kImage);
  ASSERT_TRUE(streamed);
  EXPECT_EQ(streamed->phase, ExecutionPhase::kFailed);
  EXPECT_EQ(streamed->reason, kReasonImagePullFailed);
  EXPECT_NE(streamed->message.find("denied: no"), std::string::npos) << streamed->message;
  EXPECT_NE(streamed->message.find(kImage), std::string::npos) << streamed->message;
  auto detailOnly =
      PullAnswerObservation(HttpResponse{200, R"({"errorDetail":{"message":"quota"}})"}, kImage);
  ASSERT_TRUE(detailOnly);
  EXPECT_NE(detailOnly->message.find("quota"), std::string::npos) << detailOnly->message;

  auto refused =
      PullAnswerObservation(HttpResponse{404, R"({"message":"manifest unknown"})"}, kImage);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->reason, kReasonImagePullFailed);
  EXPECT_NE(refused->message.find("manifest unknown"), std::string::npos) << refused->message;

  // The engine could not be asked: not a failure of the Job, and its address is not shown.
  auto unreachable = PullAnswerObservation(
      Status(StatusCode::kUnavailable,
             std::string(kTransportErrorPrefix) + "Timeout (connect to 10.9.8.7 port 2376)"),
      kImage);
  ASSERT_TRUE(unreachable);
  EXPECT_EQ(unreachable->phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(unreachable->reason, kReasonBackendUnreachable);
  EXPECT_EQ(unreachable->message.find("10.9.8.7"), std::string::npos) << unreachable->message;
}

TEST(ImagePullerTest, IfNotPresentUsesTheImageTheEngineHasByItsNameAndPullsOtherwise) {
  FakeDockerEngine engine;
  auto client = ClientOf(engine);
  ImagePuller puller(std::chrono::seconds(10));
  engine.Answer("GET /images/", 200,
                R"({"Id":"sha256:1","RepoTags":[")" + std::string(kImage) + R"("]})");
  auto o = puller.Ensure(client, engine.endpoint(), Request(), PullPolicy::kIfNotPresent);
  EXPECT_EQ(o, std::nullopt) << Describe(o);
  EXPECT_EQ(engine.Count("POST /images/create"), 0);

  // Found only by (a prefix of) its ID, naming another repository: not this image; pulled.
  engine.Answer("GET /images/", 200, R"({"Id":"sha256:1","RepoTags":["other.local/x:1"]})");
  engine.Answer("POST /images/create", 200, R"({"status":"Downloaded newer image"})");
  o = puller.Ensure(client, engine.endpoint(), Request(), PullPolicy::kIfNotPresent);
  EXPECT_EQ(o, std::nullopt) << Describe(o);
  ASSERT_EQ(engine.Count("POST /images/create"), 1);
  EXPECT_EQ(engine.Requests().back().path,
            "/images/create?fromImage=registry.local%3A5000%2Fteam%2Fapp&tag=1");
}

TEST(ImagePullerTest, NeverDoesNotPullAnImageTheEngineLacks) {
  FakeDockerEngine engine;
  ImagePuller puller(std::chrono::seconds(10));
  auto o = puller.Ensure(ClientOf(engine), engine.endpoint(), Request(), PullPolicy::kNever);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->reason, kReasonImagePullFailed);
  EXPECT_NE(o->message.find("pullPolicy is Never"), std::string::npos) << o->message;
  EXPECT_EQ(engine.Count("POST /images/create"), 0);
}

// A Job with credentials pulls even what the engine has cached (the registry checks them), and
// the repository stays private: a Job without credentials pulls it too, any tag, and never gets
// the cached copy another Job's credentials brought in.
TEST(ImagePullerTest, APrivateRepositoryIsPulledWithTheJobsOwnCredentialsEveryTime) {
  FakeDockerEngine engine;
  auto client = ClientOf(engine);
  ImagePuller puller(std::chrono::seconds(10));
  engine.Answer("GET /images/", 200,
                R"({"Id":"sha256:1","RepoTags":[")" + std::string(kImage) + R"("]})");
  engine.Answer("POST /images/create", 200, R"({"status":"Downloaded newer image"})");
  auto withCredentials = Request();
  withCredentials.imagePullConfigs = {SensitiveString(kPullSecret)};
  auto o = puller.Ensure(client, engine.endpoint(), withCredentials, PullPolicy::kIfNotPresent);
  EXPECT_EQ(o, std::nullopt) << Describe(o);
  ASSERT_EQ(engine.Count("POST /images/create"), 1);
  EXPECT_EQ(engine.Count("GET /images/"), 0) << "credentials always pull";
  EXPECT_TRUE(engine.Requests().back().headers.contains("x-registry-auth"));

  for (const char* image : {kImage, "registry.local:5000/team/app:2"}) {
    o = puller.Ensure(client, engine.endpoint(), Request(image), PullPolicy::kIfNotPresent);
    EXPECT_EQ(o, std::nullopt) << Describe(o);
    EXPECT_FALSE(engine.Requests().back().headers.contains("x-registry-auth")) << image;
  }
  EXPECT_EQ(engine.Count("POST /images/create"), 3);
  EXPECT_EQ(engine.Count("GET /images/"), 0) << "the cache is not looked at for a private image";

  // Credentials for another registry fail the pull; they are not left out for an anonymous one.
  auto wrong = Request("elsewhere.local/app:1");
  wrong.imagePullConfigs = {SensitiveString(kPullSecret)};
  o = puller.Ensure(client, engine.endpoint(), wrong, PullPolicy::kIfNotPresent);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->reason, kReasonImagePullFailed);
  EXPECT_EQ(o->message.find("hunter2-pull"), std::string::npos) << o->message;
  EXPECT_EQ(engine.Count("POST /images/create"), 3);
}

// Once the adapter started, a pull runs in the background: the Job hears ImagePulling, is woken
// when the pull ended, and its next Ensure gets the pull's result without a second pull.
TEST(ImagePullerTest, ABackgroundPullWakesTheJobThatWaitsAndKeepsItsResultForIt) {
  FakeDockerEngine engine;
  auto client = ClientOf(engine);
  ImagePuller puller(std::chrono::seconds(10));
  engine.Answer("POST /images/create", 404, R"({"message":"manifest unknown"})");
  std::mutex mu;
  std::set<std::string> woken;
  puller.SetNotify([&](const std::string& ns, const std::string& name) {
    std::lock_guard lock(mu);
    woken.insert(ns + "/" + name);
  });
  auto o = puller.Ensure(client, engine.endpoint(), Request(), PullPolicy::kAlways);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->phase, ExecutionPhase::kPending);
  EXPECT_EQ(o->reason, "ImagePulling");
  ASSERT_TRUE(ayatori::testing::Eventually(
      [&] {
        std::lock_guard lock(mu);
        return woken.contains("ci/hello-x");
      },
      std::chrono::seconds(10)))
      << "the Job waiting on the pull is woken when it ends";
  o = puller.Ensure(client, engine.endpoint(), Request(), PullPolicy::kAlways);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->reason, kReasonImagePullFailed) << Describe(o);
  EXPECT_NE(o->message.find("manifest unknown"), std::string::npos) << o->message;
  EXPECT_EQ(engine.Count("POST /images/create"), 1);
  puller.SetNotify(nullptr);
}

}  // namespace
}  // namespace ayatori::adapters::docker
