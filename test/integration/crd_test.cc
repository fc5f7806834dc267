// The CRDs, samples and admission policy of config/ on a real kube-apiserver: the CRDs install and
// become Established, every sample is really created, unknown fields are rejected (or pruned when
// the client disables strict validation), status is written only through the status
// subresource, the printer columns show what docs/api.md promises, a Job at the size limits stays
// within the CEL cost budget, and only users granted confirm-backend-lost may confirm a lost
// backend. The constraint-by-constraint table is in crd_validation_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test/integration/crd_kubectl.h"
#include "test/support/process.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<std::string> kCrdNames = {
    "jobs.execution.ayatori.ddupan.top",
    "jobclasses.execution.ayatori.ddupan.top",
    "kubernetesexecutionparameters.execution.ayatori.ddupan.top",
    "opensandboxexecutionparameters.execution.ayatori.ddupan.top",
    "dockerexecutionparameters.execution.ayatori.ddupan.top",
};
constexpr const char* kJobs = "jobs.execution.ayatori.ddupan.top";

std::string MinimalJob(const std::string& ns, const std::string& name) {
  return "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\nmetadata: {name: " + name +
         ", namespace: " + ns + "}\nspec: {task: {image: busybox}}\n";
}

ProcessResult CreateJob(const std::string& ns, const std::string& name) {
  return RunKubectl({"create", "-f", "-"}, MinimalJob(ns, name));
}

ProcessResult PatchStatus(const std::string& ns, const std::string& name,
                          const std::string& patch) {
  return RunKubectl(
      {"patch", kJobs, name, "-n", ns, "--subresource=status", "--type=merge", "-p", patch});
}

TEST(CrdTest, CrdsInstallAndBecomeEstablished) {
  // Both ways of installing: the kustomization and the plain directory.
  auto r = RunKubectl({"apply", "-k", SourcePath("config/crd")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = RunKubectl({"apply", "-f", SourcePath("config/crd/")});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> wait{"wait", "--for", "condition=established", "--timeout=60s"};
  for (const auto& name : kCrdNames) wait.push_back("crd/" + name);
  r = RunKubectl(wait);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  for (const auto& name : kCrdNames) {
    SCOPED_TRACE(name);
    auto get = RunKubectl({"get", "crd", name, "-o", "json"});
    ASSERT_EQ(get.exitCode, 0) << get.err;
    auto crd = nlohmann::json::parse(get.out);
    EXPECT_EQ(crd["spec"]["group"], "execution.ayatori.ddupan.top");
    EXPECT_EQ(crd["spec"]["scope"], name == kCrdNames[0] ? "Namespaced" : "Cluster");
    EXPECT_THAT(crd["spec"]["names"]["categories"].dump(), HasSubstr("\"ayatori\""));
    ASSERT_EQ(crd["spec"]["versions"].size(), 1u);
    EXPECT_EQ(crd["spec"]["versions"][0]["name"], "v1alpha1");
    EXPECT_TRUE(crd["spec"]["versions"][0]["subresources"].contains("status"));
    // Structural through and through: nothing is kept without a schema.
    EXPECT_THAT(crd["spec"].dump(), Not(HasSubstr("x-kubernetes-preserve-unknown-fields")));
    for (const auto& cond : crd["status"]["conditions"]) {
      EXPECT_NE(cond["type"], "NonStructuralSchema") << cond.dump();
      if (cond["type"] == "Established" || cond["type"] == "NamesAccepted") {
        EXPECT_EQ(cond["status"], "True") << cond.dump();
      }
    }
  }
  // The short name and the category work for users.
  std::string ns = CreateTestNamespace("crd-names");
  ASSERT_EQ(CreateJob(ns, "short").exitCode, 0);
  r = RunKubectl({"get", "ajob", "short", "-n", ns, "-o", "name"});
  EXPECT_EQ(r.out, "job.execution.ayatori.ddupan.top/short\n") << r.err;
  r = RunKubectl({"get", "ayatori", "-n", ns, "-o", "name"});
  EXPECT_THAT(r.out, HasSubstr("job.execution.ayatori.ddupan.top/short")) << r.err;
}

// Removes cluster-scoped sample objects when the test ends, so that a default JobClass does not
// leak into other tests of the same control plane.
struct DeleteFiles {
  std::vector<std::string> files;
  ~DeleteFiles() {
    for (const auto& f : files) RunKubectl({"delete", "-f", f, "--ignore-not-found"});
  }
};

TEST(CrdTest, EverySampleIsCreated) {
  ASSERT_TRUE(InstallCrds());
  namespace fs = std::filesystem;
  const std::string dir = SourcePath("config/samples");
  DeleteFiles cleanup;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string file = entry.path().filename();
    if (file.find("jobclass") == 0 || file.find("executionparameters") != std::string::npos) {
      cleanup.files.push_back(entry.path());
    }
  }
  auto r = RunKubectl({"apply", "-k", dir});
  ASSERT_EQ(r.exitCode, 0) << r.err;

  // Every file is a sample that now exists: the kustomization lists all of them but job.yaml,
  // which uses generateName and is created on its own.
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.insert(entry.path().filename());
  ASSERT_TRUE(files.count("job.yaml"));
  for (const auto& file : files) {
    if (file == "kustomization.yaml" || file == "job.yaml") continue;
    SCOPED_TRACE(file);
    auto get = RunKubectl({"get", "-f", dir + "/" + file, "-o", "name"});
    EXPECT_EQ(get.exitCode, 0) << file << " was not created by kubectl apply -k: " << get.err;
  }
  auto job = RunKubectl({"create", "-f", dir + "/job.yaml", "-o", "name"});
  ASSERT_EQ(job.exitCode, 0) << job.err;
  EXPECT_THAT(job.out, HasSubstr("job.execution.ayatori.ddupan.top/hello-"));
  std::string name = job.out.substr(job.out.find('/') + 1);
  name.erase(name.find_last_not_of('\n') + 1);
  EXPECT_EQ(GetJsonPath(kJobs, "ci", name, "{.spec.task.env[1].valueFrom.secretKeyRef.name}"),
            "example-token");
  EXPECT_EQ(GetJsonPath(kJobs, "ci", name, "{.spec.resources.limits.memory}"), "512Mi");

  // The spec's example Job names the Docker sample class, which is the default class.
  EXPECT_EQ(GetJsonPath("jobclasses.execution.ayatori.ddupan.top", "", "default",
                        "{.metadata.annotations.execution\\.ayatori\\.ddupan\\.top/"
                        "is-default-class}"),
            "true");
  EXPECT_EQ(GetJsonPath("jobclasses.execution.ayatori.ddupan.top", "", "default",
                        "{.spec.controllerName}"),
            "execution.ayatori.ddupan.top/docker");
  EXPECT_EQ(GetJsonPath("secrets", "ci", "example-token", "{.data.token}"), "cmVwbGFjZS1tZQ==");
  EXPECT_EQ(GetJsonPath("configmaps", "ci", "example-config", "{.data.value}"), "example");
}

TEST(CrdTest, UnknownFieldsAreRejectedOrPruned) {
  ASSERT_TRUE(InstallCrds());
  std::string ns = CreateTestNamespace("crd-unknown");
  std::string yaml =
      "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\n"
      "metadata: {name: j, namespace: " +
      ns +
      "}\n"
      "spec: {task: {image: busybox, shell: bash}, priority: 5}\n";
  // kubectl asks for strict field validation: the apiserver names every unknown field.
  auto r = RunKubectl({"create", "-f", "-"}, yaml);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr(R"(unknown field "spec.priority")"));
  EXPECT_THAT(r.err, HasSubstr(R"(unknown field "spec.task.shell")"));
  // A client that does not ask for it gets the unknown fields pruned, never stored.
  r = RunKubectl({"create", "--validate=false", "-f", "-"}, yaml);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, ns, "j", "{.spec}"),
            R"({"desiredState":"Running","task":{"image":"busybox"}})");
}

TEST(CrdTest, StatusIsWrittenOnlyThroughTheStatusSubresource) {
  ASSERT_TRUE(InstallCrds());
  std::string ns = CreateTestNamespace("crd-status");
  // Status sent with a create is dropped.
  auto r =
      RunKubectl({"create", "-f", "-"}, MinimalJob(ns, "j") + "status: {observedGeneration: 9}\n");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, ns, "j", "{.status}"), "");

  r = PatchStatus(ns, "j", R"({"status":{"observedGeneration":1,"result":{"reason":"Pending"}}})");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, ns, "j", "{.status.observedGeneration}"), "1");

  // A spec update carrying status changes the spec and leaves the status alone.
  const std::string specAndStatus =
      R"({"spec":{"ttlSecondsAfterFinished":30},"status":{"observedGeneration":5,)"
      R"("result":{"reason":"Forged"}}})";
  r = RunKubectl({"patch", kJobs, "j", "-n", ns, "--type=merge", "-p", specAndStatus});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, ns, "j", "{.spec.ttlSecondsAfterFinished}"), "30");
  EXPECT_EQ(GetJsonPath(kJobs, ns, "j", "{.status.observedGeneration}"), "1");
  EXPECT_EQ(GetJsonPath(kJobs, ns, "j", "{.status.result.reason}"), "Pending");

  // A full replace (PUT) of the object with another status: same.
  auto get = RunKubectl({"get", kJobs, "j", "-n", ns, "-o", "json"});
  ASSERT_EQ(get.exitCode, 0) << get.err;
  auto job = nlohmann::json::parse(get.out);
  job["status"]["observedGeneration"] = 7;
  job["spec"]["ttlSecondsAfterFinished"] = 31;
  r = RunKubectl({"replace", "-f", "-"}, job.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, ns, "j", "{.spec.ttlSecondsAfterFinished}"), "31");
  EXPECT_EQ(GetJsonPath(kJobs, ns, "j", "{.status.observedGeneration}"), "1");

  // And a status update cannot touch the spec.
  r = PatchStatus(ns, "j",
                  R"({"spec":{"ttlSecondsAfterFinished":99},"status":{"observedGeneration":2}})");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, ns, "j", "{.spec.ttlSecondsAfterFinished}"), "31");
  EXPECT_EQ(GetJsonPath(kJobs, ns, "j", "{.status.observedGeneration}"), "2");
}

TEST(CrdTest, PrinterColumnsShowClassResultExitCodeAndStart) {
  ASSERT_TRUE(InstallCrds());
  std::string ns = CreateTestNamespace("crd-columns");
  ASSERT_EQ(CreateJob(ns, "j").exitCode, 0);
  auto r = PatchStatus(
      ns, "j",
      R"({"status":{"conditions":[)"
      R"({"type":"Accepted","status":"True","reason":"Valid","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"},)"
      R"({"type":"Scheduled","status":"True","reason":"BackendCreated","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"},)"
      R"({"type":"Succeeded","status":"False","reason":"ProcessFailed","message":"exit 3","lastTransitionTime":"2026-01-01T00:00:00Z"}],)"
      R"("resolvedJobClass":{"name":"gold"},"execution":{"adapter":"docker","references":[{"type":"Container","id":"c1"}]},)"
      R"("startTime":"2026-01-01T00:00:00Z","completionTime":"2026-01-01T00:00:10Z","result":{"exitCode":3,"reason":"ProcessFailed"}}})");
  ASSERT_EQ(r.exitCode, 0) << r.err;

  r = RunKubectl({"get", "ajob", "j", "-n", ns});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_THAT(lines[0],
              ::testing::MatchesRegex("NAME +CLASS +SUCCEEDED +EXIT CODE +STARTED +AGE *"));
  auto row = Words(lines[1]);
  ASSERT_GE(row.size(), 5u) << lines[1];
  EXPECT_EQ(row[0], "j");
  EXPECT_EQ(row[1], "gold");
  EXPECT_EQ(row[2], "ProcessFailed");
  EXPECT_EQ(row[3], "3");

  r = RunKubectl({"get", "ajob", "j", "-n", ns, "-o", "wide"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_THAT(lines[0], ::testing::MatchesRegex(
                            "NAME +CLASS +SUCCEEDED +EXIT CODE +STARTED +AGE +DESIRED +ACCEPTED "
                            "+ADAPTER *"));
  row = Words(lines[1]);
  ASSERT_EQ(row.size(), 9u) << lines[1];
  EXPECT_EQ(row[6], "Running");
  EXPECT_EQ(row[7], "Valid");
  EXPECT_EQ(row[8], "docker");

  // A JobClass shows its controller, parameters and whether it is the default.
  std::string name = UniqueName("crd-columns");
  r = RunKubectl({"create", "-f", "-"},
                 "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: JobClass\n"
                 "metadata: {name: " +
                     name +
                     ", annotations: "
                     "{execution.ayatori.ddupan.top/is-default-class: 'false'}}\n"
                     "spec: {controllerName: execution.ayatori.ddupan.top/docker, parametersRef: "
                     "{kind: DockerExecutionParameters, name: local}}\n");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = RunKubectl({"get", "jobclass", name});
  RunKubectl({"delete", "jobclass", name, "--wait=false"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_THAT(lines[0], ::testing::MatchesRegex(
                            "NAME +CONTROLLER +PARAMETERS +PARAMETERS NAME +SECRET ENV +DEFAULT "
                            "+AGE *"));
  row = Words(lines[1]);
  ASSERT_EQ(row.size(), 7u) << lines[1];
  EXPECT_EQ(row[1], "execution.ayatori.ddupan.top/docker");
  EXPECT_EQ(row[2], "DockerExecutionParameters");
  EXPECT_EQ(row[3], "local");
  EXPECT_EQ(row[4], "Denied");
  EXPECT_EQ(row[5], "false");
}

// The largest Job the CRD admits (every list at its item limit, argv and env at their 256 KiB
// totals: about 530 KB) is accepted, and the immutability rules still run within the apiserver's
// CEL cost budget when it is updated.
TEST(CrdTest, JobAtTheSizeLimitsStaysWithinTheCelBudget) {
  ASSERT_TRUE(InstallCrds());
  std::string ns = CreateTestNamespace("crd-large");
  nlohmann::json env = nlohmann::json::array();
  for (int i = 0; i < 128; ++i) {
    std::string name = "V" + std::to_string(1000 + i).substr(1);  // 4 bytes
    env.push_back({{"name", name}, {"value", std::string(2048 - name.size(), 'v')}});
  }
  nlohmann::json job = {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                        {"kind", "Job"},
                        {"metadata", {{"name", "large"}, {"namespace", ns}}},
                        {"spec",
                         {{"task",
                           {{"image", "busybox"},
                            {"command", std::vector<std::string>(64, std::string(1024, 'c'))},
                            {"args", std::vector<std::string>(256, std::string(768, 'a'))},
                            {"env", env}}}}}};
  auto r = RunKubectl({"create", "-f", "-"}, job.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err.substr(0, 2000);
  r = RunKubectl({"patch", kJobs, "large", "-n", ns, "--type=merge", "-p",
                  R"({"spec":{"ttlSecondsAfterFinished":5,"desiredState":"Cancelled"}})"});
  EXPECT_EQ(r.exitCode, 0) << r.err.substr(0, 2000);
  r = RunKubectl({"patch", kJobs, "large", "-n", ns, "--type=json", "-p",
                  R"([{"op":"replace","path":"/spec/task/env/127/value","value":"changed"}])"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("spec.task is immutable"));
}

// The ValidatingAdmissionPolicy of config/policy: adding or changing the confirm-backend-lost
// annotation needs the RBAC verb confirm-backend-lost on the Job.
class ConfirmBackendLostPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(InstallCrds());
    auto r = RunKubectl({"apply", "-k", SourcePath("config/policy")});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    ns_ = CreateTestNamespace("crd-policy");
    ASSERT_EQ(CreateJob(ns_, "j").exitCode, 0);
    ASSERT_EQ(CreateJob(ns_, "running").exitCode, 0);
    // The controller reports j as ResultUnknown: the only state in which a confirmation counts.
    const std::string resultUnknown =
        R"({"status":{"conditions":[{"type":"Succeeded","status":"Unknown",)"
        R"("reason":"ResultUnknown","message":"backend unreachable",)"
        R"("observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}})";
    r = RunKubectl({"patch", kJobs, "j", "-n", ns_, "--subresource=status", "--type=merge", "-p",
                    resultUnknown});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    // The users of group testenv-users may edit Jobs of this namespace, nothing more.
    r = RunKubectl({"create", "role", "job-editor", "-n", ns_, "--verb=get,create,patch,update",
                    "--resource=jobs.execution.ayatori.ddupan.top"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    r = RunKubectl({"create", "rolebinding", "job-editor", "-n", ns_, "--role=job-editor",
                    "--group=testenv-users"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  void TearDown() override {
    // The policy only concerns this annotation, but a test leaves the cluster as it found it.
    RunKubectl({"delete", "-k", SourcePath("config/policy"), "--ignore-not-found"});
  }

  ProcessResult Annotate(User user, const std::string& value, bool dryRun = false) {
    std::vector<std::string> args{
        "annotate", "--overwrite", kJobs, "j", "-n", ns_, std::string(kAnnotation) + "=" + value};
    if (dryRun) args.emplace_back("--dry-run=server");
    return RunKubectl(args, "", user);
  }

  static constexpr const char* kAnnotation = "execution.ayatori.ddupan.top/confirm-backend-lost";
  static constexpr const char* kDenied =
      "may not set the annotation execution.ayatori.ddupan.top/confirm-backend-lost";
  static constexpr const char* kNotResultUnknown =
      "may only be set on a Job whose Succeeded condition is Unknown with reason ResultUnknown";
  std::string ns_;
};

TEST_F(ConfirmBackendLostPolicyTest, OnlyTheConfirmingGroupMaySetTheAnnotation) {
  // A newly created policy takes effect within seconds; wait for it on server-side dry runs.
  ProcessResult last;
  bool enforced = Eventually(
      [&] {
        last = Annotate(User::kCertUser, "0:testenv-user: host lost", /*dryRun=*/true);
        return last.exitCode != 0 && last.err.find(kDenied) != std::string::npos;
      },
      std::chrono::seconds(30), kKubectlPoll);
  ASSERT_TRUE(enforced) << "the policy never rejected the annotation: " << last.out << last.err;

  // Not in the group: rejected with the policy's message, for both kinds of users (the token's
  // user is testenv-token-user).
  auto r = Annotate(User::kCertUser, "0:testenv-user: host lost");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("ValidatingAdmissionPolicy 'ayatori-confirm-backend-lost'"));
  EXPECT_THAT(r.err, HasSubstr("user testenv-user " + std::string(kDenied)));
  r = Annotate(User::kTokenUser, "0:token-user: host lost");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("user testenv-token-user " + std::string(kDenied)));
  EXPECT_EQ(GetJsonPath(kJobs, ns_, "j", "{.metadata.annotations}"), "");

  // The same users may still change other annotations: the policy looks at this one only.
  r = RunKubectl({"annotate", kJobs, "j", "-n", ns_, "example.com/note=fine"}, "", User::kCertUser);
  EXPECT_EQ(r.exitCode, 0) << r.err;

  // A Job created with the annotation is a confirmation too.
  const std::string preConfirmed =
      "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\nmetadata: {name: pre, "
      "namespace: " +
      ns_ + ", annotations: {" + kAnnotation +
      ": early}}\n"
      "spec: {task: {image: busybox}}\n";
  r = RunKubectl({"create", "-f", "-"}, preConfirmed, User::kCertUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr(kDenied));
  // Cluster administrators hold every verb, but a new Job is not ResultUnknown.
  r = RunKubectl({"create", "-f", "-"}, preConfirmed, User::kAdmin);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr(kNotResultUnknown));

  // Grant the group the verb in this namespace (the shipped ClusterRole, bound locally).
  r = RunKubectl({"create", "rolebinding", "confirmers", "-n", ns_,
                  "--clusterrole=ayatori-backend-lost-confirmer", "--group=testenv-users"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  bool allowed = Eventually(
      [&] {
        last = Annotate(User::kCertUser, "0:testenv-user: host lost", /*dryRun=*/true);
        return last.exitCode == 0;
      },
      std::chrono::seconds(30), kKubectlPoll);
  ASSERT_TRUE(allowed) << "a member of the confirming group stayed rejected: " << last.err;
  // issue 12: a confirmation names the ResultUnknown episode it confirms (j never had one
  // written, so 0); another episode, or none, is refused.
  for (const char* wrong : {"3:testenv-user: host db-7 destroyed", "testenv-user: host db-7"}) {
    r = Annotate(User::kCertUser, wrong);
    EXPECT_NE(r.exitCode, 0) << wrong;
    EXPECT_THAT(r.err, HasSubstr("must name the ResultUnknown episode it confirms")) << wrong;
  }
  r = Annotate(User::kCertUser, "0:testenv-user: host db-7 destroyed");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  // Even a member of the group cannot confirm a Job that is not ResultUnknown.
  r = RunKubectl({"annotate", kJobs, "running", "-n", ns_, std::string(kAnnotation) + "=early"}, "",
                 User::kCertUser);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr(kNotResultUnknown));
  EXPECT_EQ(GetJsonPath(kJobs, ns_, "j",
                        "{.metadata.annotations.execution\\.ayatori\\.ddupan\\.top/"
                        "confirm-backend-lost}"),
            "0:testenv-user: host db-7 destroyed");
  // Changing the value is a new confirmation; the token user is in the group as well.
  r = Annotate(User::kTokenUser, "0:token-user: confirmed by on-call");
  EXPECT_EQ(r.exitCode, 0) << r.err;

  // Without the grant again, removing the annotation is allowed (it undoes nothing), setting it
  // is not.
  r = RunKubectl({"delete", "rolebinding", "confirmers", "-n", ns_});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  bool revoked = Eventually(
      [&] {
        last = Annotate(User::kCertUser, "0:testenv-user: again", /*dryRun=*/true);
        return last.exitCode != 0;
      },
      std::chrono::seconds(30), kKubectlPoll);
  ASSERT_TRUE(revoked) << "the grant was never revoked";
  EXPECT_THAT(last.err, HasSubstr(kDenied));
  r = RunKubectl({"annotate", kJobs, "j", "-n", ns_, std::string(kAnnotation) + "-"}, "",
                 User::kCertUser);
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

// The MutatingAdmissionPolicy of config/finalizer-policy: a new Job is stored with the cleanup
// finalizer, so that the controller need not patch it in. The policy is applied as shipped; its
// binding, cluster-wide as shipped, is narrowed to this test's namespace here, because the other
// tests on this API server count the controller's writes (the finalizer patch among them).
class FinalizerPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(InstallCrds());
    ns_ = CreateTestNamespace("crd-finalizer");
    // kubectl prints one JSON object per document of the file: render them one at a time.
    std::ifstream file(SourcePath("config/finalizer-policy/job-cleanup-finalizer.yaml"));
    std::stringstream text;
    text << file.rdbuf();
    const std::string all = text.str();
    nlohmann::json items = nlohmann::json::array();
    for (size_t start = 0; start < all.size();) {
      size_t end = all.find("\n---\n", start);
      std::string doc =
          all.substr(start, end == std::string::npos ? std::string::npos : end - start);
      start = end == std::string::npos ? all.size() : end + 5;
      auto r = RunKubectl({"create", "--dry-run=client", "-o", "json", "-f", "-"}, doc);
      ASSERT_EQ(r.exitCode, 0) << r.err;
      items.push_back(nlohmann::json::parse(r.out));
    }
    ASSERT_EQ(items.size(), 2u) << items.dump();
    for (auto& item : items) {
      if (item["kind"] != "MutatingAdmissionPolicyBinding") continue;
      EXPECT_FALSE(item["spec"].contains("matchResources")) << "the shipped binding is narrowed";
      binding_ = item["metadata"]["name"].get<std::string>() + "-" + ns_;
      item["metadata"]["name"] = binding_;
      item["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] = {
          {"kubernetes.io/metadata.name", ns_}};
    }
    ASSERT_FALSE(binding_.empty()) << items.dump();
    nlohmann::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
    auto r = RunKubectl({"apply", "-f", "-"}, list.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  void TearDown() override {
    if (!binding_.empty()) {
      RunKubectl({"delete", "mutatingadmissionpolicybinding", binding_, "--ignore-not-found"});
    }
  }

  // The finalizers of the Job `yaml` creates (server-side dry run when `dryRun`), "!" + the
  // error when it is not created.
  std::string FinalizersOnCreate(const std::string& yaml, bool dryRun) {
    std::vector<std::string> args{"create", "-o", "jsonpath={.metadata.finalizers}", "-f", "-"};
    if (dryRun) args.emplace_back("--dry-run=server");
    auto r = RunKubectl(args, yaml);
    return r.exitCode == 0 ? r.out : "!" + r.err;
  }

  std::string ns_;
  std::string binding_;
};

TEST_F(FinalizerPolicyTest, NewJobsAreStoredWithTheCleanupFinalizerOnce) {
  constexpr const char* kFinalizer = R"(["execution.ayatori.ddupan.top/job-cleanup"])";
  // A new policy takes effect within seconds: wait for it on server-side dry runs.
  std::string last;
  bool enforced = Eventually(
      [&] {
        last = FinalizersOnCreate(MinimalJob(ns_, "probe"), /*dryRun=*/true);
        return last == kFinalizer;
      },
      std::chrono::seconds(30), kKubectlPoll);
  ASSERT_TRUE(enforced) << "the policy never added the finalizer: " << last;

  EXPECT_EQ(FinalizersOnCreate(MinimalJob(ns_, "plain"), false), kFinalizer);
  EXPECT_EQ(GetJsonPath(kJobs, ns_, "plain", "{.metadata.finalizers}"), kFinalizer);
  // Already there: not added twice. Another finalizer: kept, ours added after it.
  const std::string withOurs =
      "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\nmetadata: {name: ours, "
      "namespace: " +
      ns_ +
      ", finalizers: [execution.ayatori.ddupan.top/job-cleanup]}\n"
      "spec: {task: {image: busybox}}\n";
  EXPECT_EQ(FinalizersOnCreate(withOurs, false), kFinalizer);
  const std::string withOther =
      "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\nmetadata: {name: other, "
      "namespace: " +
      ns_ +
      ", finalizers: [example.com/keep]}\n"
      "spec: {task: {image: busybox}}\n";
  EXPECT_EQ(FinalizersOnCreate(withOther, false),
            R"(["example.com/keep","execution.ayatori.ddupan.top/job-cleanup"])");
  // Only creations: a finalizer removed later (the controller's cleanup) stays removed.
  auto r = RunKubectl({"patch", kJobs, "plain", "-n", ns_, "--type=merge", "-p",
                       R"({"metadata":{"finalizers":null}})"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(GetJsonPath(kJobs, ns_, "plain", "{.metadata.finalizers}"), "");
  // The Jobs of this test can go: no controller runs here to remove the finalizer.
  for (const char* name : {"ours", "other"}) {
    RunKubectl({"patch", kJobs, name, "-n", ns_, "--type=merge", "-p",
                R"({"metadata":{"finalizers":null}})"});
  }
}

}  // namespace
}  // namespace ayatori::testing
