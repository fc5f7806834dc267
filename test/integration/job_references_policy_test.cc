// The ValidatingAdmissionPolicy ayatori-job-references of config/policy (issue 26): a Job may
// reference only the Secrets and ConfigMaps its author may get. On a real kube-apiserver with
// RBAC, as the users the control plane knows: the author with get on the Secret creates the Job;
// without it (or with it in another namespace only) the Job is refused at creation with a message
// naming the object, where the Job references it and the missing permission; imagePullSecrets and
// ConfigMap references likewise; a user who may not create Jobs is refused by RBAC; a namespace
// the administrator labelled is left out; a Job cannot gain a reference by an update.
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
constexpr const char* kPolicyDenied = "ValidatingAdmissionPolicy 'ayatori-job-references'";
constexpr const char* kOptOutLabel = "execution.ayatori.ddupan.top/unchecked-job-references";

// The Job of the issue: its env reads key pw of Secret `secret` into PW and prints it.
std::string StealingJob(const std::string& ns, const std::string& name, const std::string& secret) {
  return "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\nmetadata: {name: " + name +
         ", namespace: " + ns +
         "}\nspec:\n  task:\n    image: busybox\n    command: [sh, -c, 'echo stolen=$PW']\n"
         "    env:\n    - name: PW\n      valueFrom: {secretKeyRef: {name: " +
         secret + ", key: pw}}\n";
}

std::string JobWithTask(const std::string& ns, const std::string& name, const std::string& task) {
  return "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\nmetadata: {name: " + name +
         ", namespace: " + ns + "}\nspec:\n  task: " + task + "\n";
}

class JobReferencesPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(InstallCrds());
    auto r = RunKubectl({"apply", "-k", SourcePath("config/policy")});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    ns_ = CreateTestNamespace("refs");
    other_ = CreateTestNamespace("refs-other");
    // The administrator's Secret of the issue, and more objects to reference.
    for (const auto& ns : {ns_, other_}) {
      r = RunKubectl(
          {"create", "secret", "generic", "admin-only", "-n", ns, "--from-literal=pw=x"});
      ASSERT_EQ(r.exitCode, 0) << r.err;
    }
    r = RunKubectl({"create", "configmap", "settings", "-n", ns_, "--from-literal=v=1"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    // testenv-user (the certificate user) may create Jobs in both namespaces and nothing else;
    // testenv-token-user (the token user) is given nothing: the stranger.
    for (const auto& ns : {ns_, other_}) {
      r = RunKubectl({"create", "role", "job-author", "-n", ns, "--verb=get,create,patch",
                      "--resource=jobs.execution.ayatori.ddupan.top"});
      ASSERT_EQ(r.exitCode, 0) << r.err;
      r = RunKubectl({"create", "rolebinding", "job-author", "-n", ns, "--role=job-author",
                      "--user=testenv-user"});
      ASSERT_EQ(r.exitCode, 0) << r.err;
    }
  }

  void TearDown() override {
    RunKubectl({"delete", "-k", SourcePath("config/policy"), "--ignore-not-found"});
  }

  // Grants `user` get on the named object of `resource` in `ns` (resourceNames).
  static void GrantGet(const std::string& ns, const std::string& resource,
                       const std::string& name) {
    const std::string role = "get-" + resource + "-" + name;
    auto r = RunKubectl({"create", "role", role, "-n", ns, "--verb=get", "--resource=" + resource,
                         "--resource-name=" + name});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    r = RunKubectl(
        {"create", "rolebinding", role, "-n", ns, "--role=" + role, "--user=testenv-user"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  static ProcessResult Create(const std::string& yaml, User user, bool dryRun = false) {
    std::vector<std::string> args{"create", "-f", "-"};
    if (dryRun) args.emplace_back("--dry-run=server");
    return RunKubectl(args, yaml, user);
  }

  // Server-side dry runs of `yaml` as the author until `admitted` is what the server says
  // (a new policy, binding, RBAC grant or namespace label takes effect within seconds).
  static ProcessResult WaitUntil(const std::string& yaml, bool admitted) {
    ProcessResult last;
    Eventually(
        [&] {
          last = Create(yaml, User::kCertUser, /*dryRun=*/true);
          return (last.exitCode == 0) == admitted;
        },
        std::chrono::seconds(30), kKubectlPoll);
    return last;
  }

  // The same until the server refuses `yaml` with a message that contains `text`.
  static ProcessResult WaitUntilRefusedWith(const std::string& yaml, const std::string& text) {
    ProcessResult last;
    Eventually(
        [&] {
          last = Create(yaml, User::kCertUser, /*dryRun=*/true);
          return last.exitCode != 0 && last.err.find(text) != std::string::npos;
        },
        std::chrono::seconds(30), kKubectlPoll);
    return last;
  }

  std::string ns_;
  std::string other_;
};

TEST_F(JobReferencesPolicyTest, TheIssuesJobIsRefusedUntilItsAuthorMayGetTheSecret) {
  const std::string steal = StealingJob(ns_, "steal", "admin-only");
  auto last = WaitUntil(steal, /*admitted=*/false);
  ASSERT_THAT(last.err, HasSubstr(kPolicyDenied)) << "the policy never refused the Job";

  // The Job of issue 26, created for real: refused, naming the Secret, where the Job references
  // it and the permission the author lacks; nothing is stored.
  auto r = Create(steal, User::kCertUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr(kPolicyDenied));
  EXPECT_THAT(r.err, HasSubstr("user testenv-user may not get Secret " + ns_ +
                               "/admin-only, which the Job references (env PW "
                               "valueFrom.secretKeyRef)"));
  EXPECT_THAT(r.err, HasSubstr("RBAC verb get on secrets in namespace " + ns_));
  EXPECT_NE(RunKubectl({"get", kJobs, "steal", "-n", ns_}).exitCode, 0) << "the Job was stored";

  // A user of another namespace: get on a Secret of the same name there is no grant here.
  GrantGet(other_, "secrets", "admin-only");
  ASSERT_EQ(WaitUntil(StealingJob(other_, "steal", "admin-only"), /*admitted=*/true).exitCode, 0);
  r = Create(steal, User::kCertUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("may not get Secret " + ns_ + "/admin-only"));

  // A stranger, who may not create Jobs at all, is refused by RBAC before any policy.
  r = Create(StealingJob(ns_, "stranger", "admin-only"), User::kTokenUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("cannot create resource \"jobs\""));

  // The author may get the Secret: the Job is created.
  GrantGet(ns_, "secrets", "admin-only");
  ASSERT_EQ(WaitUntil(steal, /*admitted=*/true).exitCode, 0);
  r = Create(steal, User::kCertUser);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  // The stranger can neither read nor list it.
  r = RunKubectl({"get", kJobs, "steal", "-n", ns_}, "", User::kTokenUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("cannot get resource \"jobs\""));
  r = RunKubectl({"get", kJobs, "-n", ns_}, "", User::kTokenUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("cannot list resource \"jobs\""));
  // A grant names the object: another Secret of the namespace stays out of reach.
  r = RunKubectl({"create", "secret", "generic", "other", "-n", ns_, "--from-literal=pw=y"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = Create(StealingJob(ns_, "steal-other", "other"), User::kCertUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("may not get Secret " + ns_ + "/other"));

  // Only CREATE is checked because nothing else can add a reference: spec.task is immutable.
  const std::string addReference =
      R"([{"op":"add","path":"/spec/task/env/-","value":{"name":"O","valueFrom":)"
      R"({"secretKeyRef":{"name":"other","key":"pw"}}}}])";
  r = RunKubectl({"patch", kJobs, "steal", "-n", ns_, "--type=json", "-p", addReference}, "",
                 User::kCertUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("spec.task is immutable"));
}

// An ordinary user of another namespace (team-b: may create Jobs and read Secrets there, nothing
// in team-a; played by impersonation). team-a's Secrets stay out of reach: a Job in team-a is
// RBAC's to refuse, and a Job in team-b names its Secrets in team-b only (a secretKeyRef has no
// namespace), so a name that exists only in team-a gets nothing of team-a's.
TEST_F(JobReferencesPolicyTest, AUserOfAnotherNamespaceCannotReachItsSecrets) {
  const std::string teamB = "team-b-user-" + other_;
  auto as = [&](std::vector<std::string> args, const std::string& input = "") {
    args.push_back("--as=" + teamB);
    return RunKubectl(args, input, User::kAdmin);
  };
  auto r = RunKubectl({"create", "rolebinding", "team-b-author", "-n", other_, "--role=job-author",
                       "--user=" + teamB});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = RunKubectl({"create", "secret", "generic", "only-in-a", "-n", ns_, "--from-literal=pw=a"});
  ASSERT_EQ(r.exitCode, 0) << r.err;

  // A Job in team-a: RBAC refuses the create before any policy.
  r = as({"create", "-f", "-"}, StealingJob(ns_, "cross", "admin-only"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("cannot create resource \"jobs\""));
  EXPECT_THAT(r.err, HasSubstr("in the namespace \"" + ns_ + "\""));

  // A Job in team-b naming team-a's Secret: the reference is team-b/only-in-a, which the user may
  // not get either; the refusal names team-b's object, never team-a's.
  const std::string cross = StealingJob(other_, "cross", "only-in-a");
  ProcessResult last;
  Eventually(
      [&] {
        last = as({"create", "-f", "-", "--dry-run=server"}, cross);
        return last.exitCode != 0 && last.err.find(kPolicyDenied) != std::string::npos;
      },
      std::chrono::seconds(30), kKubectlPoll);
  EXPECT_THAT(last.err, HasSubstr("user " + teamB + " may not get Secret " + other_ +
                                  "/only-in-a, which the Job references"));
  EXPECT_EQ(last.err.find(ns_ + "/"), std::string::npos) << last.err;
  EXPECT_NE(as({"get", "secret", "only-in-a", "-n", ns_}).exitCode, 0);

  // With get on team-b's Secrets the Job is admitted, and harmless: it references team-b's
  // only-in-a, which does not exist (the controller resolves references in the Job's namespace).
  r = RunKubectl(
      {"create", "role", "secret-reader", "-n", other_, "--verb=get", "--resource=secrets"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = RunKubectl({"create", "rolebinding", "team-b-secrets", "-n", other_, "--role=secret-reader",
                  "--user=" + teamB});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(Eventually(
      [&] {
        return as({"create", "-f", "-", "--dry-run=server"}, cross).exitCode == 0;
      },
      std::chrono::seconds(30), kKubectlPoll));
  r = as({"create", "-f", "-"}, cross);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = RunKubectl({"get", "secret", "only-in-a", "-n", other_});
  EXPECT_NE(r.exitCode, 0) << "team-b has no Secret only-in-a: the Job's reference finds nothing";
}

TEST_F(JobReferencesPolicyTest, ImagePullSecretsAndConfigMapsAreCheckedLikewise) {
  const std::string pull = JobWithTask(
      ns_, "pull", "{image: busybox, imagePullSecrets: [{name: regcred}, {name: admin-only}]}");
  auto last = WaitUntil(pull, /*admitted=*/false);
  ASSERT_THAT(last.err, HasSubstr(kPolicyDenied)) << "the policy never refused the Job";
  // regcred need not exist: what counts is whether the author could read it.
  auto r = Create(pull, User::kCertUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("may not get Secret " + ns_ +
                               "/regcred, which the Job references (imagePullSecrets)"));

  const std::string config = JobWithTask(
      ns_, "config",
      "{image: busybox, env: [{name: V, valueFrom: {configMapKeyRef: {name: settings, key: v}}}, "
      "{name: W, valueFrom: {configMapKeyRef: {name: settings, key: w, optional: true}}}]}");
  r = Create(config, User::kCertUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("user testenv-user may not get ConfigMap " + ns_ +
                               "/settings, which the Job references (env V "
                               "valueFrom.configMapKeyRef, env W valueFrom.configMapKeyRef)"));
  EXPECT_THAT(r.err, HasSubstr("RBAC verb get on configmaps in namespace " + ns_));

  GrantGet(ns_, "configmaps", "settings");
  ASSERT_EQ(WaitUntil(config, /*admitted=*/true).exitCode, 0);
  EXPECT_EQ(Create(config, User::kCertUser).exitCode, 0);
  // The ConfigMap grant is no Secret grant. Each pull Secret counts: with regcred granted, the
  // refusal names the next one (a refusal names the first object the author may not get).
  GrantGet(ns_, "secrets", "regcred");
  last = WaitUntilRefusedWith(pull, "/admin-only,");
  EXPECT_THAT(last.err, HasSubstr("may not get Secret " + ns_ +
                                  "/admin-only, which the Job references (imagePullSecrets)"));
  GrantGet(ns_, "secrets", "admin-only");
  ASSERT_EQ(WaitUntil(pull, /*admitted=*/true).exitCode, 0);
  EXPECT_EQ(Create(pull, User::kCertUser).exitCode, 0);

  // A Job without references is not examined; the cluster administrator may reference anything.
  EXPECT_EQ(Create(JobWithTask(ns_, "plain", "{image: busybox}"), User::kCertUser).exitCode, 0);
  r = Create(StealingJob(ns_, "admins", "admin-only"), User::kAdmin);
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

TEST_F(JobReferencesPolicyTest, ALabelledNamespaceIsLeftOutAndTooManyObjectsAreRefused) {
  const std::string steal = StealingJob(ns_, "steal", "admin-only");
  ASSERT_THAT(WaitUntil(steal, /*admitted=*/false).err, HasSubstr(kPolicyDenied));

  // More distinct objects than the policy checks (each check is an authorization request
  // within CEL's cost budget): refused with a message of its own, even for the administrator.
  std::string env = "[";
  for (int i = 0; i < 21; ++i) {
    env += std::string(i ? ", " : "") + "{name: S" + std::to_string(i) +
           ", valueFrom: {secretKeyRef: {name: s" + std::to_string(i) + ", key: k}}}";
  }
  env += "]";
  auto r = Create(JobWithTask(ns_, "many", "{image: busybox, env: " + env + "}"), User::kAdmin);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("the Job references 21 distinct Secrets and ConfigMaps"));

  // The administrator's documented opt-out: a labelled namespace is not checked.
  r = RunKubectl({"label", "namespace", ns_, std::string(kOptOutLabel) + "=true"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_EQ(WaitUntil(steal, /*admitted=*/true).exitCode, 0) << "the label was never honoured";
  // Any other value is no opt-out.
  r = RunKubectl({"label", "namespace", ns_, "--overwrite", std::string(kOptOutLabel) + "=yes"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(WaitUntil(steal, /*admitted=*/false).err, HasSubstr(kPolicyDenied));
}

}  // namespace
}  // namespace ayatori::testing
