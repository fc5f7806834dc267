// The ValidatingAdmissionPolicy ayatori-backend-lost-confirmer-scope of config/policy (issue 26):
// the ClusterRole ayatori-backend-lost-confirmer must grant patch on Jobs, and RBAC alone would
// let a confirmer cancel any Job, change its TTL, labels or annotations. On a real kube-apiserver,
// the attacker holds that role and nothing else: each change other than the confirmation is
// refused naming what it touched, the confirmation itself is accepted, and users who may update
// Jobs (editors, administrators) are not narrowed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/integration/crd_kubectl.h"
#include "test/support/process.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::testing {
namespace {

using ::testing::HasSubstr;

constexpr const char* kJobs = "jobs.execution.ayatori.ddupan.top";
constexpr const char* kAnnotation = "execution.ayatori.ddupan.top/confirm-backend-lost";
constexpr const char* kScopeDenied =
    "ValidatingAdmissionPolicy 'ayatori-backend-lost-confirmer-scope'";

class ConfirmerScopeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(InstallCrds());
    auto r = RunKubectl({"apply", "-k", SourcePath("config/policy")});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    ns_ = CreateTestNamespace("confirmer");
    confirmer_ = UniqueName("confirmer");
    const std::string job =
        "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\n"
        "metadata: {name: j, namespace: " +
        ns_ +
        ", labels: {team: \"a\"}, annotations: {example.com/note: "
        "\"kept\"}}\nspec: {task: {image: busybox}}\n";
    r = RunKubectl({"create", "-f", "-"}, job);
    ASSERT_EQ(r.exitCode, 0) << r.err;
    // The controller reports j as ResultUnknown: the only state a confirmation is accepted in.
    const std::string resultUnknown =
        R"({"status":{"conditions":[{"type":"Succeeded","status":"Unknown",)"
        R"("reason":"ResultUnknown","message":"backend unreachable",)"
        R"("observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}})";
    r = RunKubectl({"patch", kJobs, "j", "-n", ns_, "--subresource=status", "--type=merge", "-p",
                    resultUnknown});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    // The confirmer: the shipped role in this namespace, nothing else.
    r = RunKubectl({"create", "rolebinding", "confirmer", "-n", ns_,
                    "--clusterrole=ayatori-backend-lost-confirmer", "--user=" + confirmer_});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  void TearDown() override {
    RunKubectl({"delete", "-k", SourcePath("config/policy"), "--ignore-not-found"});
  }

  // kubectl as the confirmer (impersonated by the administrator).
  ProcessResult AsConfirmer(std::vector<std::string> args) {
    args.insert(args.end(), {"-n", ns_, "--as=" + confirmer_});
    return RunKubectl(args);
  }

  std::string ns_, confirmer_;
};

TEST_F(ConfirmerScopeTest, AConfirmerChangesNothingButTheConfirmation) {
  // The policy takes effect within seconds: wait for it on a server-side dry run of a cancel.
  const std::string cancel = R"({"spec":{"desiredState":"Cancelled"}})";
  ProcessResult last;
  ASSERT_TRUE(Eventually(
      [&] {
        last = AsConfirmer({"patch", kJobs, "j", "--type=merge", "-p", cancel, "--dry-run=server"});
        return last.exitCode != 0 && last.err.find(kScopeDenied) != std::string::npos;
      },
      std::chrono::seconds(30), kKubectlPoll))
      << "the policy never refused the confirmer's cancel: " << last.out << last.err;

  struct Attack {
    std::vector<std::string> args;
    std::string refusal;
  };
  const std::vector<Attack> attacks = {
      {{"patch", kJobs, "j", "--type=merge", "-p", cancel}, "not change the Job's spec"},
      {{"patch", kJobs, "j", "--type=merge", "-p", R"({"spec":{"ttlSecondsAfterFinished":1}})"},
       "not change the Job's spec"},
      {{"label", kJobs, "j", "team=b", "--overwrite"}, "not change the Job's labels"},
      {{"annotate", kJobs, "j", "example.com/note=changed", "--overwrite"},
       "not change the Job's other annotations"},
      {{"annotate", kJobs, "j", "example.com/note-"}, "not change the Job's other annotations"},
      {{"annotate", kJobs, "j", "example.com/new=x"}, "not change the Job's other annotations"},
      {{"patch", kJobs, "j", "--type=merge", "-p", R"({"metadata":{"finalizers":["x.io/hold"]}})"},
       "finalizers"},
      // The confirmation and a cancel in one request: refused as a whole.
      {{"patch", kJobs, "j", "--type=merge", "-p",
        R"({"metadata":{"annotations":{")" + std::string(kAnnotation) +
            R"(":"0:x"}},"spec":{"desiredState":"Cancelled"}})"},
       "not change the Job's spec"},
  };
  for (const auto& a : attacks) {
    auto r = AsConfirmer(a.args);
    EXPECT_NE(r.exitCode, 0) << a.args.back() << ": " << r.out;
    EXPECT_THAT(r.err, HasSubstr(kScopeDenied)) << a.args.back();
    EXPECT_THAT(r.err, HasSubstr("user " + confirmer_ + " may only confirm a lost backend"));
    EXPECT_THAT(r.err, HasSubstr(a.refusal)) << a.args.back();
  }
  // Nothing of the Job changed.
  EXPECT_EQ(GetJsonPath(kJobs, ns_, "j", "{.spec.desiredState}"), "Running");  // the default
  EXPECT_EQ(GetJsonPath(kJobs, ns_, "j", "{.metadata.labels.team}"), "a");
  EXPECT_EQ(GetJsonPath(kJobs, ns_, "j", "{.metadata.annotations.example\\.com/note}"), "kept");
  EXPECT_EQ(GetJsonPath(kJobs, ns_, "j", "{.metadata.finalizers}"), "");
  EXPECT_EQ(GetJsonPath(kJobs, ns_, "j",
                        "{.metadata.annotations.execution\\.ayatori\\.ddupan\\.top/"
                        "confirm-backend-lost}"),
            "");

  // The legitimate confirmation is accepted.
  auto r =
      AsConfirmer({"annotate", kJobs, "j", std::string(kAnnotation) + "=0:on-call: host gone"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, ns_, "j",
                        "{.metadata.annotations.execution\\.ayatori\\.ddupan\\.top/"
                        "confirm-backend-lost}"),
            "0:on-call: host gone");

  // A user who may update Jobs as well is an editor, not narrowed: the administrator cancels.
  r = RunKubectl({"patch", kJobs, "j", "-n", ns_, "--type=merge", "-p", cancel});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  // So is a confirmer who is also granted update.
  r = RunKubectl({"create", "role", "job-updater", "-n", ns_, "--verb=update",
                  "--resource=jobs.execution.ayatori.ddupan.top"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = RunKubectl({"create", "rolebinding", "job-updater", "-n", ns_, "--role=job-updater",
                  "--user=" + confirmer_});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(Eventually(
      [&] {
        last = AsConfirmer({"label", kJobs, "j", "team=b", "--overwrite"});
        return last.exitCode == 0;
      },
      std::chrono::seconds(30), kKubectlPoll))
      << "a confirmer with update stayed narrowed: " << last.err;
}

}  // namespace
}  // namespace ayatori::testing
