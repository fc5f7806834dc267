// Spec matrix (docs/design.md § The test matrix), category 解析 (resolution), on the real API
// server: a Job waits with Accepted=False while its JobClass, default class, Secret, ConfigMap or
// key is missing, makes no Ensure meanwhile, and starts exactly once when what it waits for
// appears; Secret values appear in no status, Event or log.
#include <random>

#include "test/controller/controller_fixture.h"
#include "test/support/process.h"
#include "test/support/testenv.h"

namespace ayatori::testing {
namespace {

class Resolution : public ControllerTest {
 protected:
  void TearDown() override {
    for (const auto& c : classes_) (void)H().DeleteJobClass(c);
    if (annotatedNamespace_) {
      (void)H().AnnotateNamespace(ns_, api::kDefaultClassAnnotation, std::nullopt);
    }
    ControllerTest::TearDown();
  }

  // A cluster-scoped JobClass of this test, deleted in TearDown.
  std::string ClassName(const std::string& suffix) {
    std::string name = ns_ + "-" + suffix;
    classes_.push_back(name);
    return name;
  }

  // Cluster default classes are cluster-wide state: these tests need to be the only ones
  // setting them.
  ::testing::AssertionResult NoForeignDefaultClasses() {
    auto defaults = H().DefaultJobClasses();
    if (defaults.empty()) return ::testing::AssertionSuccess();
    std::string names;
    for (const auto& n : defaults) names += n + " ";
    return ::testing::AssertionFailure()
           << "JobClasses annotated " << api::kIsDefaultClassAnnotation << "=true exist already ("
           << names << "); this test needs to control the cluster default";
  }

  std::vector<std::string> classes_;
  bool annotatedNamespace_ = false;
};

// Spec row: 解析 | JobClass 后创建 | 不提前 Ensure，引用出现后继续.
TEST_F(Resolution, JobClassCreatedAfterJob) {
  const std::string className = ClassName("late");
  api::Job job = Create(
      "late-class",
      {{"jobClassName", className}, {"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "1"}})}}}});
  ASSERT_TRUE(WaitFor("late-class", AcceptedIs(ConditionStatus::kFalse, "JobClassNotFound"),
                      "Accepted=False/JobClassNotFound", &job));
  EXPECT_TRUE(HasCondition(job, api::kConditionSucceeded, ConditionStatus::kUnknown, "Pending"))
      << Describe(job);
  EXPECT_FALSE(job.status.resolvedJobClass.has_value()) << Describe(job);
  // Waiting costs no backend call and no API write beyond the first.
  EXPECT_TRUE(HoldsFor(
      [&] {
        return Calls(job.metadata.uid, Call::kEnsure) == 0 &&
               Backend().Creations(job.metadata.uid) == 0;
      },
      1s));

  ASSERT_TRUE(H().ApplyJobClass(className).ok());
  ASSERT_TRUE(WaitFor("late-class", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &job));
  EXPECT_TRUE(HasCondition(job, api::kConditionAccepted, ConditionStatus::kTrue, "Valid"));
  ASSERT_TRUE(job.status.resolvedJobClass.has_value());
  EXPECT_EQ(job.status.resolvedJobClass->name, className);
  EXPECT_FALSE(job.status.resolvedJobClass->uid.empty());
  EXPECT_EQ(Backend().Creations(job.metadata.uid), 1);
  EXPECT_EQ(Backend().EnsureCalls(job.metadata.uid), 1);
}

// NoDefaultJobClass: no class named, no namespace default, no cluster default. The Job waits
// and is re-examined when the namespace gets a default.
TEST_F(Resolution, NoDefaultJobClass) {
  ASSERT_TRUE(NoForeignDefaultClasses());
  api::Job job = Create(
      "no-default",
      {{"jobClassName", nullptr}, {"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}})}}}});
  ASSERT_TRUE(WaitFor("no-default", AcceptedIs(ConditionStatus::kFalse, "NoDefaultJobClass"),
                      "Accepted=False/NoDefaultJobClass", &job));
  EXPECT_EQ(Calls(job.metadata.uid, Call::kEnsure), 0);

  annotatedNamespace_ = true;
  ASSERT_TRUE(H().AnnotateNamespace(ns_, api::kDefaultClassAnnotation, kTestJobClass).ok());
  ASSERT_TRUE(WaitFor("no-default", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True after the namespace got a default class", &job));
  ASSERT_TRUE(job.status.resolvedJobClass.has_value());
  EXPECT_EQ(job.status.resolvedJobClass->name, kTestJobClass);
  EXPECT_EQ(Backend().Creations(job.metadata.uid), 1);
}

// AmbiguousDefaultJobClass: two cluster defaults. The Job waits; when one stops being the
// default, it resolves to the other.
TEST_F(Resolution, AmbiguousDefaultJobClass) {
  ASSERT_TRUE(NoForeignDefaultClasses());
  const std::string a = ClassName("default-a"), b = ClassName("default-b");
  ASSERT_TRUE(H().ApplyJobClass(a, {}, {{api::kIsDefaultClassAnnotation, "true"}}).ok());
  ASSERT_TRUE(H().ApplyJobClass(b, {}, {{api::kIsDefaultClassAnnotation, "true"}}).ok());
  // The JobClass informer must have seen both defaults before the Job is resolved.
  ASSERT_TRUE(Eventually(
      [&] {
        return H().controller().cache().GetJobClass(a) && H().controller().cache().GetJobClass(b);
      },
      20s));
  api::Job job = Create(
      "ambiguous",
      {{"jobClassName", nullptr}, {"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "0"}})}}}});
  ASSERT_TRUE(WaitFor("ambiguous", AcceptedIs(ConditionStatus::kFalse, "AmbiguousDefaultJobClass"),
                      "Accepted=False/AmbiguousDefaultJobClass", &job));
  const api::Condition* accepted = FindCondition(job, api::kConditionAccepted);
  ASSERT_NE(accepted, nullptr);
  EXPECT_NE(accepted->message.find(a), std::string::npos) << accepted->message;
  EXPECT_NE(accepted->message.find(b), std::string::npos) << accepted->message;
  EXPECT_TRUE(HoldsFor([&] { return Calls(job.metadata.uid, Call::kEnsure) == 0; }, 500ms));

  ASSERT_TRUE(H().ApplyJobClass(a, {}, {{api::kIsDefaultClassAnnotation, "false"}}).ok());
  ASSERT_TRUE(WaitFor("ambiguous", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True once one default is left", &job));
  ASSERT_TRUE(job.status.resolvedJobClass.has_value());
  EXPECT_EQ(job.status.resolvedJobClass->name, b);
  EXPECT_EQ(Backend().Creations(job.metadata.uid), 1);
}

// The namespace annotation names the class, and wins over an ambiguous cluster default. The
// class found is written once: a later change of the default does not re-resolve the Job.
TEST_F(Resolution, NamespaceDefaultJobClass) {
  ASSERT_TRUE(NoForeignDefaultClasses());
  const std::string a = ClassName("default-a"), b = ClassName("default-b");
  const std::string team = ClassName("team");
  ASSERT_TRUE(H().ApplyJobClass(a, {}, {{api::kIsDefaultClassAnnotation, "true"}}).ok());
  ASSERT_TRUE(H().ApplyJobClass(b, {}, {{api::kIsDefaultClassAnnotation, "true"}}).ok());
  ASSERT_TRUE(H().ApplyJobClass(team).ok());
  annotatedNamespace_ = true;
  ASSERT_TRUE(H().AnnotateNamespace(ns_, api::kDefaultClassAnnotation, team).ok());
  // The namespace informer must have seen the annotation before the Job is resolved.
  ASSERT_TRUE(Eventually(
      [&] { return H().controller().cache().NamespaceDefaultJobClass(ns_) == team; }, 20s));

  api::Job job = Create("ns-default", {{"jobClassName", nullptr}});
  ASSERT_TRUE(WaitFor("ns-default", IsScheduled, "Scheduled", &job));
  ASSERT_TRUE(job.status.resolvedJobClass.has_value());
  EXPECT_EQ(job.status.resolvedJobClass->name, team);
  const std::string classUid = job.status.resolvedJobClass->uid;

  ASSERT_TRUE(H().AnnotateNamespace(ns_, api::kDefaultClassAnnotation, a).ok());
  Backend().FinishExecution(job.metadata.uid, 0);
  ASSERT_TRUE(WaitFor("ns-default", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &job));
  EXPECT_EQ(job.status.resolvedJobClass->name, team);
  EXPECT_EQ(job.status.resolvedJobClass->uid, classUid);
}

std::string RandomSecret() {
  std::random_device rd;
  std::string s = "s3cr3t-";
  for (int i = 0; i < 24; ++i) s.push_back("abcdefghijklmnopqrstuvwxyz0123456789"[rd() % 36]);
  return s;
}

// Spec row: 解析 | Secret/ConfigMap 或 key 后创建 | 不泄露值，解析后只启动一次.
TEST_F(Resolution, SecretAndKeyCreatedLater) {
  sensitive_ = true;  // the captured logs are checked for the value; never print them
  const std::string secret = RandomSecret();
  nlohmann::json env = Env({{"AYATORI_TEST_RUN_SECONDS", "1"}});
  env.push_back(
      {{"name", "TOKEN"}, {"valueFrom", {{"secretKeyRef", {{"name", "tok"}, {"key", "token"}}}}}});
  api::Job job = Create("secret-later", {{"task", {{"env", env}}}});
  ASSERT_TRUE(WaitFor("secret-later", AcceptedIs(ConditionStatus::kFalse, "SecretNotFound"),
                      "Accepted=False/SecretNotFound", &job));
  EXPECT_EQ(Calls(job.metadata.uid, Call::kEnsure), 0);

  // The Secret appears without the key.
  ASSERT_TRUE(H().ApplySecret(ns_, "tok", {{"other", "not-the-token"}}).ok());
  ASSERT_TRUE(WaitFor("secret-later", AcceptedIs(ConditionStatus::kFalse, "KeyNotFound"),
                      "Accepted=False/KeyNotFound", &job));
  EXPECT_EQ(Calls(job.metadata.uid, Call::kEnsure), 0);

  ASSERT_TRUE(H().ApplySecret(ns_, "tok", {{"other", "not-the-token"}, {"token", secret}}).ok());
  ASSERT_TRUE(WaitFor("secret-later", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &job));
  const std::string uid = job.metadata.uid;
  EXPECT_EQ(Backend().Creations(uid), 1);
  EXPECT_EQ(Backend().EnsureCalls(uid), 1);
  // The value reached the execution (the backend needs it) ...
  auto envOf = Backend().EnvOf(uid);
  EXPECT_TRUE(envOf.contains("TOKEN") && envOf["TOKEN"] == secret)
      << "the execution did not get the Secret's value in TOKEN";
  // ... and nothing else: not the status, not an Event, not a log line.
  H().StopController();  // flushes the Events
  auto json = H().GetJobJson(ns_, "secret-later");
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->dump().find(secret), std::string::npos) << "the Job contains the Secret's value";
  auto events = RunProcess(
      {Kubectl(), "--kubeconfig", H().kubeconfig(), "get", "events", "-n", ns_, "-o", "json"});
  ASSERT_EQ(events.exitCode, 0) << events.err;
  EXPECT_NE(events.out.find("secret-later"), std::string::npos)
      << "no Event of the Job found at all; the check below would prove nothing";
  EXPECT_EQ(events.out.find(secret), std::string::npos) << "an Event contains the Secret's value";
  std::string logs = H().logs().Text();
  EXPECT_NE(logs.find(uid), std::string::npos)
      << "the controller logged nothing about the Job; the check below would prove nothing";
  EXPECT_EQ(logs.find(secret), std::string::npos) << "the controller's log contains the value";
}

// The same for a ConfigMap: ConfigMapNotFound, then KeyNotFound, then one start; the value is
// not copied into the status either.
TEST_F(Resolution, ConfigMapAndKeyCreatedLater) {
  const std::string value = "config-value-" + ns_;
  nlohmann::json env = Env({{"AYATORI_TEST_RUN_SECONDS", "0"}});
  env.push_back({{"name", "CONFIG"},
                 {"valueFrom", {{"configMapKeyRef", {{"name", "cfg"}, {"key", "value"}}}}}});
  api::Job job = Create("config-later", {{"task", {{"env", env}}}});
  ASSERT_TRUE(WaitFor("config-later", AcceptedIs(ConditionStatus::kFalse, "ConfigMapNotFound"),
                      "Accepted=False/ConfigMapNotFound", &job));
  ASSERT_TRUE(H().ApplyConfigMap(ns_, "cfg", {{"unrelated", "x"}}).ok());
  ASSERT_TRUE(WaitFor("config-later", AcceptedIs(ConditionStatus::kFalse, "KeyNotFound"),
                      "Accepted=False/KeyNotFound", &job));
  EXPECT_EQ(Calls(job.metadata.uid, Call::kEnsure), 0);
  ASSERT_TRUE(H().ApplyConfigMap(ns_, "cfg", {{"unrelated", "x"}, {"value", value}}).ok());
  ASSERT_TRUE(WaitFor("config-later", SucceededIs(ConditionStatus::kTrue, "Completed"),
                      "Succeeded=True", &job));
  EXPECT_EQ(Backend().Creations(job.metadata.uid), 1);
  EXPECT_EQ(Backend().EnvOf(job.metadata.uid)["CONFIG"], value);
  auto json = H().GetJobJson(ns_, "config-later");
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->dump().find(value), std::string::npos) << json->dump();
}

// A refusal is final: Accepted=False and Succeeded=False with the same reason, no execution.
TEST_F(Resolution, BackendRejectedFailsWithoutExecution) {
  api::Job job =
      Create("rejected", {{"task", {{"env", Env({{"AYATORI_TEST_REJECT", "no such hardware"}})}}}});
  ASSERT_TRUE(WaitFor("rejected", SucceededIs(ConditionStatus::kFalse, "BackendRejected"),
                      "Succeeded=False/BackendRejected", &job));
  EXPECT_TRUE(
      HasCondition(job, api::kConditionAccepted, ConditionStatus::kFalse, "BackendRejected"));
  EXPECT_TRUE(job.status.completionTime.has_value());
  EXPECT_FALSE(job.status.startTime.has_value());
  EXPECT_EQ(Calls(job.metadata.uid, Call::kEnsure), 0);
}

}  // namespace
}  // namespace ayatori::testing
