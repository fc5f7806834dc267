// Wake-ups of waiting Jobs through the Job informer's index of what they wait on (WaitTargets in
// controller/resolver.h): an event on an object requeues exactly the Jobs that wait on it, never
// accepted Jobs, and the informers' first lists requeue nothing by themselves (Start() queues
// every Job once).
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <utility>

#include "test/controller/fake_api_controller.h"
#include "test/support/wait.h"

namespace ayatori::controller {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)
using ayatori::testing::Eventually;
using ayatori::testing::HoldsFor;
using testing::ConfigMapJson;
using testing::FakeApiController;
using testing::FromConfigMap;
using testing::FromSecret;
using testing::JobClassJson;
using testing::JobJson;
using testing::kTestParameters;
using testing::kTestParametersKind;
using testing::NamespaceJson;
using testing::SecretJson;

using Wake = std::pair<std::string, std::string>;  // Job key, what changed

class WakeupIndexTest : public ::testing::Test {
 protected:
  WakeupIndexTest() : env_(Options()) {}

  ControllerOptions Options() {
    ControllerOptions o;
    o.workers = 2;
    o.onWake = [this](const std::string& job, const std::string& target) {
      std::lock_guard lock(mu_);
      wakes_.emplace(job, target);
    };
    return o;
  }

  std::set<Wake> Wakes() {
    std::lock_guard lock(mu_);
    return wakes_;
  }
  void ClearWakes() {
    std::lock_guard lock(mu_);
    wakes_.clear();
  }
  // The wake-ups that `change` causes: waits until `expected` happened, then that nothing else
  // does for a while.
  void ExpectWakes(const std::function<void()>& change, const std::set<Wake>& expected) {
    ClearWakes();
    change();
    EXPECT_TRUE(Eventually([&] { return Wakes().size() >= expected.size(); }, 10s));
    EXPECT_TRUE(HoldsFor([&] { return Wakes() == expected; }, 300ms)) << Describe(Wakes());
  }
  static std::string Describe(const std::set<Wake>& wakes) {
    std::string out = "wake-ups:";
    for (const auto& [job, target] : wakes) out += " " + job + "<-" + target;
    return out;
  }
  void Create(const ResourceRef& ref, const nlohmann::json& object) {
    Status s = env_.Create(ref, object);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void Replace(const ResourceRef& ref, const nlohmann::json& object) {
    Status s = env_.Replace(ref, object);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::mutex mu_;
  std::set<Wake> wakes_;
  FakeApiController env_;
};

TEST_F(WakeupIndexTest, AnEventWakesExactlyTheJobsWaitingOnThatObject) {
  Create(kNamespaces, NamespaceJson("team-a"));
  Create(kNamespaces, NamespaceJson("team-b"));
  Create(kJobClasses, JobClassJson("test"));
  Create(kJobClasses, JobClassJson("with-params", false, kTestParametersKind, "p1"));
  Create(kSecrets, SecretJson("team-a", "present", {"k"}));
  Create(kJobs, JobJson("team-a", "accepted", "test", {FromSecret("present", "k")}));
  Create(kJobs, JobJson("team-a", "wants-s1", "test", {FromSecret("s1", "k")}));
  Create(kJobs, JobJson("team-a", "pulls-s1", "test", {}, {"s1"}));
  Create(kJobs, JobJson("team-b", "wants-s1", "test", {FromSecret("s1", "k")}));
  Create(kJobs, JobJson("team-a", "wants-s2", "test", {FromSecret("s2", "k")}));
  Create(kJobs, JobJson("team-a", "wants-cm", "test", {FromConfigMap("cm", "k")}));
  Create(kJobs, JobJson("team-a", "wants-gold", "gold"));
  Create(kJobs, JobJson("team-a", "any-class", ""));
  Create(kJobs, JobJson("team-b", "any-class", ""));
  Create(kJobs, JobJson("team-a", "wants-params", "with-params"));
  ASSERT_TRUE(env_.Start().ok());
  ASSERT_TRUE(Eventually([&] { return env_.Accepted("team-a", "accepted") == "True"; }, 10s));
  for (const char* waiting : {"wants-s1", "wants-cm", "wants-params", "any-class"}) {
    ASSERT_TRUE(Eventually([&] { return env_.Accepted("team-a", waiting) == "False"; }, 10s))
        << waiting;
  }
  EXPECT_TRUE(Wakes().empty()) << Describe(Wakes());

  // A Secret: the Jobs of its namespace that refer to it, by env or as a pull secret.
  ExpectWakes([&] { Create(kSecrets, SecretJson("team-a", "s1", {"k"})); },
              {{"team-a/wants-s1", "Secret/team-a/s1"}, {"team-a/pulls-s1", "Secret/team-a/s1"}});
  EXPECT_TRUE(Eventually([&] { return env_.Accepted("team-a", "wants-s1") == "True"; }, 10s));
  // A new key in a Secret only an accepted Job refers to: nothing waits on it.
  ExpectWakes([&] { Replace(kSecrets, SecretJson("team-a", "present", {"k", "k2"})); }, {});

  // A ConfigMap without the key first (the Job waits on), then a change of a value only, then
  // the key. The controller watches metadata only and cannot tell a value from a key: every new
  // resourceVersion wakes the waiting Job, which reads the ConfigMap again.
  ExpectWakes([&] { Create(kConfigMaps, ConfigMapJson("team-a", "cm", {"other"})); },
              {{"team-a/wants-cm", "ConfigMap/team-a/cm"}});
  ExpectWakes([&] { Replace(kConfigMaps, ConfigMapJson("team-a", "cm", {"other"}, "new")); },
              {{"team-a/wants-cm", "ConfigMap/team-a/cm"}});
  EXPECT_EQ(env_.Accepted("team-a", "wants-cm"), "False");
  ExpectWakes(
      [&] {
        Replace(kConfigMaps, ConfigMapJson("team-a", "cm", {"other", "k"}));
      },
      {{"team-a/wants-cm", "ConfigMap/team-a/cm"}});
  EXPECT_TRUE(Eventually([&] { return env_.Accepted("team-a", "wants-cm") == "True"; }, 10s));

  // A JobClass: the Jobs that name it; not the Jobs without a class name (it is no default).
  ExpectWakes([&] { Create(kJobClasses, JobClassJson("gold")); },
              {{"team-a/wants-gold", "JobClass/gold"}});

  // A namespace's default class: the Jobs without a class name in that namespace. Then the class
  // it names appears: the same Jobs.
  ExpectWakes([&] { Replace(kNamespaces, NamespaceJson("team-b", "silver")); },
              {{"team-b/any-class", "Namespace/team-b"}});
  ExpectWakes([&] { Create(kJobClasses, JobClassJson("silver")); },
              {{"team-b/any-class", "Namespace/team-b"}});
  EXPECT_TRUE(Eventually([&] { return env_.Accepted("team-b", "any-class") == "True"; }, 10s));

  // A class becomes the cluster default: the Jobs without a class name that still wait.
  ExpectWakes([&] { Replace(kJobClasses, JobClassJson("gold", /*isDefault=*/true)); },
              {{"team-a/any-class", "DefaultJobClass"}});
  EXPECT_TRUE(Eventually([&] { return env_.Accepted("team-a", "any-class") == "True"; }, 10s));

  // Parameters: the Jobs of the classes that refer to them.
  ExpectWakes(
      [&] {
        Create(kTestParameters, {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                                 {"kind", kTestParametersKind},
                                 {"metadata", {{"name", "p1"}}},
                                 {"spec", {{"endpoint", "unix:///var/run/docker.sock"}}}});
      },
      {{"team-a/wants-params", "JobClass/with-params"}});
  EXPECT_TRUE(Eventually([&] { return env_.Accepted("team-a", "wants-params") == "True"; }, 10s));

  // Never woken: the Job of another namespace and the one waiting on a Secret nobody created.
  EXPECT_EQ(env_.Accepted("team-b", "wants-s1"), "False");
  EXPECT_EQ(env_.Accepted("team-a", "wants-s2"), "False");
}

// The informers of Secrets and ConfigMaps ask for metadata only, and a Secret is read by GET
// only for the Job that forwards it; a GET that fails is retried with the workqueue's backoff
// until it succeeds, and the Job is accepted once, with no verdict written in between.
TEST_F(WakeupIndexTest, SecretsAreWatchedAsMetadataAndAFailedReadIsRetriedWithBackoff) {
  Create(kNamespaces, NamespaceJson("team-a"));
  Create(kJobClasses, JobClassJson("test"));
  Create(kSecrets, SecretJson("team-a", "s", {"k"}));
  auto& client = env_.client();
  client.FailNext("get", "secrets", Status(StatusCode::kUnavailable, "connection refused"), 3);
  Create(kJobs, JobJson("team-a", "forwards", "test", {FromSecret("s", "k")}));
  ASSERT_TRUE(env_.Start().ok());
  ASSERT_TRUE(Eventually([&] { return env_.Accepted("team-a", "forwards") == "True"; }, 20s));
  // Three failed reads, one to accept; the create's read may still be on its way.
  EXPECT_GE(client.CountActions("get", "secrets"), 4U);
  EXPECT_GE(env_.Counter("ayatori_workqueue_retries_total"), 3);
  // No write in between said Accepted=False: a failed read is no verdict on the Job.
  for (const auto& a : client.Actions()) {
    if (a.name != "forwards" || a.subresource != "status") continue;
    auto written = api::JobFromJson(a.body);
    if (!written.ok()) continue;
    for (const auto& c : written->status.conditions) {
      EXPECT_FALSE(c.type == api::kConditionAccepted && c.status == api::ConditionStatus::kFalse)
          << c.reason << ": " << c.message;
    }
  }
}

TEST_F(WakeupIndexTest, TheFirstListsWakeNothingAndStartReconcilesEveryJob) {
  constexpr int kCount = 300;
  Create(kJobClasses, JobClassJson("test"));
  for (int i = 0; i < kCount; ++i) {
    const std::string n = std::to_string(i);
    Create(kSecrets, SecretJson("team-a", "secret-" + n, {"k"}));
    Create(kJobs, JobJson("team-a", "job-" + n, "test", {FromSecret("secret-" + n, "k")}));
  }
  ASSERT_TRUE(env_.Start().ok());
  EXPECT_TRUE(Eventually(
      [&] {
        for (int i = 0; i < kCount; ++i) {
          if (env_.Accepted("team-a", "job-" + std::to_string(i)) != "True") return false;
        }
        return true;
      },
      30s));
  EXPECT_TRUE(Wakes().empty()) << Describe(Wakes());
  EXPECT_EQ(env_.Counter("ayatori_waiting_job_wakeups_total"), 0);
}

}  // namespace
}  // namespace ayatori::controller
