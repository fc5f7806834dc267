#include "adapters/common/redaction.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "adapters/common/observations.h"

namespace ayatori::adapters {
namespace {

using nlohmann::json;

ExecutionRequest Request() {
  ExecutionRequest r;
  r.job.metadata.namespace_ = "ci";
  r.job.metadata.name = "hello-x";
  r.job.metadata.uid = "5cb0e2a4-1111-2222-3333-444455556666";
  r.job.spec.task.image = "ayatori.local/busybox:1";
  return r;
}

TEST(RedactorTest, HidesResolvedValuesInMessages) {
  auto r = Request();
  r.resolvedEnv = {{"TOKEN", SensitiveString("s3cr3t-value")}, {"N", SensitiveString("1")}};
  EXPECT_EQ(RedactRequestValues("invalid env TOKEN=s3cr3t-value, again s3cr3t-value; N=1", r),
            "invalid env TOKEN=[redacted], again [redacted]; N=1");
  EXPECT_EQ(RedactRequestValues("nothing here", r), "nothing here");
}

// The issue's exfiltration value inside an engine error, and every kind of value the controller
// read for the task: env from a Secret, a literal, the registry credentials of a pull secret.
TEST(RedactorTest, EveryValueReadForTheTaskIsReplacedInsideAnEngineError) {
  auto r = Request();
  r.job.spec.task.env = {{"MODE", std::string("literal-mode"), std::nullopt}};
  r.resolvedEnv = {{"MODE", SensitiveString("literal-mode")},
                   {"PW", SensitiveString("TOPSECRET-42")}};
  // {"auths": {"registry.local": {"username": "robot", "password": "hunter2-pull",
  //  "auth": base64("robot:hunter2-pull")}}}
  r.imagePullConfigs = {
      SensitiveString(R"({"auths":{"registry.local":{"username":"robot","password":"hunter2-pull",)"
                      R"("auth":"cm9ib3Q6aHVudGVyMi1wdWxs"}}})")};
  Redactor redactor;
  redactor.AddRequest(r);
  redactor.Add("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMG\n-----END PRIVATE KEY-----\n");
  const std::string engine =
      "Error response from daemon: invalid env PW=TOPSECRET-42 MODE=literal-mode; pull "
      "registry.local as robot:hunter2-pull (auth cm9ib3Q6aHVudGVyMi1wdWxs) denied";
  const std::string redacted = redactor.Apply(engine);
  for (const char* secret : {"TOPSECRET-42", "literal-mode", "hunter2-pull", "cm9ib3Q6"}) {
    EXPECT_EQ(redacted.find(secret), std::string::npos) << secret << " in: " << redacted;
  }
  EXPECT_NE(redacted.find("invalid env PW=[redacted]"), std::string::npos) << redacted;
  // The user name is not a secret; "robot:hunter2-pull" (the decoded auth) is replaced whole.
  EXPECT_NE(redacted.find("as [redacted] (auth [redacted])"), std::string::npos) << redacted;
}

TEST(RedactorTest, ShortValuesAreKeptAndALongerValueIsReplacedWhole) {
  Redactor redactor;
  redactor.Add("on");  // shorter than kMinRedactedBytes: replacing it would garble every message
  redactor.Add("pass");
  redactor.Add("password-1234");
  EXPECT_EQ(redactor.Apply("on: password-1234 / pass"), "on: [redacted] / [redacted]");
}

TEST(RedactorTest, AContainersEnvIsRedactedButTheJobsIdentityIsNot) {
  json inspect;
  inspect["Config"]["Env"] = json::array({"PW=TOPSECRET-42", "AYATORI_JOB_NAME=hello-job",
                                          "AYATORI_JOB_NAMESPACE=team-a", "EMPTY=", "NOEQUALS", 7});
  Redactor redactor;
  redactor.AddContainerEnv(inspect);
  EXPECT_EQ(redactor.Apply("OCI runtime: PW=TOPSECRET-42 in job hello-job of team-a"),
            "OCI runtime: PW=[redacted] in job hello-job of team-a");
  Redactor none;
  none.AddContainerEnv(json::object());  // malformed inspect answers add nothing
  EXPECT_EQ(none.Apply("TOPSECRET-42"), "TOPSECRET-42");
}

// What an adapter's public call returns from the one behind it: the message redacted, the
// rest of the answer as it was.
TEST(RedactorTest, RedactedAnswersKeepAllButTheValues) {
  Redactor r;
  r.Add("TOPSECRET-42");
  Observation o;
  o.phase = ExecutionPhase::kFailed;
  o.reason = "BackendRejected";
  o.message = "refused env PW=TOPSECRET-42";
  const Observation redacted = r.Redacted(o);
  EXPECT_EQ(redacted.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(redacted.reason, "BackendRejected");
  EXPECT_EQ(redacted.message, "refused env PW=[redacted]");

  EXPECT_TRUE(r.Redacted(Status::Ok()).ok());
  const Status s = r.Redacted(Status(StatusCode::kUnavailable, "no TOPSECRET-42 here"));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "no [redacted] here");

  // A value is the caller's own data (logs): passed on as it is.
  StatusOr<std::string> value = r.Redacted(StatusOr<std::string>("TOPSECRET-42"));
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, "TOPSECRET-42");
  StatusOr<std::string> error =
      r.Redacted(StatusOr<std::string>(Status(StatusCode::kNotFound, "TOPSECRET-42 gone")));
  EXPECT_EQ(error.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(error.status().message(), "[redacted] gone");
}

}  // namespace
}  // namespace ayatori::adapters
