// The namespaced install (config/namespaced, issue 26) on the real API server: the RBAC that
// `hack/install-manifests.sh --namespaces <team-a>` renders is applied as rendered, and the
// ayatori-controller binary runs with --watch-namespaces=<team-a> as the ServiceAccount that file
// creates (a TokenRequest token in a kubeconfig), so it has exactly the generated rights.
//  - That identity cannot list Secrets of the cluster, nor create batch Jobs or delete pods
//    outside team-a (asked as the ServiceAccount itself: kubectl auth can-i).
//  - A Job in team-a runs to completion; a Job in team-b, of the same class, is never touched: no
//    finalizer, no status, no request of the ServiceAccount about team-b at all, and no request
//    of it denied (kube-apiserver's audit log records every request of the ServiceAccounts of
//    ayatori-system: hack/testenv/testenv.sh).
// Only the RBAC objects of the rendered file are applied: its admission policies and log API
// APIService would act on the whole shared control plane of the integration tier.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test/controller/controller_fixture.h"
#include "test/support/controller_process.h"
#include "test/support/process.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::testing {
namespace {

constexpr const char* kSystemNamespace = "ayatori-system";
constexpr const char* kServiceAccount = "ayatori-controller";
constexpr const char* kSaUser = "system:serviceaccount:ayatori-system:ayatori-controller";

// The documents of a multi-document YAML file whose top-level kind is one of `kinds`.
std::string DocumentsOfKinds(const std::string& yaml, const std::vector<std::string>& kinds) {
  std::string out, doc;
  auto flush = [&] {
    for (const auto& kind : kinds) {
      if (doc.find("\nkind: " + kind + "\n") != std::string::npos ||
          doc.rfind("kind: " + kind + "\n", 0) == 0) {
        out += "---\n" + doc;
        break;
      }
    }
    doc.clear();
  };
  std::istringstream in(yaml);
  for (std::string line; std::getline(in, line);) {
    if (line == "---") {
      flush();
      continue;
    }
    doc += line + "\n";
  }
  flush();
  return out;
}

std::string ReadFile(const std::string& path, std::streamoff from = 0) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(from);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class NamespacedInstall : public ::testing::Test {
 protected:
  static ControllerHarness& H() { return ControllerHarness::Instance(); }

  void SetUp() override {
    ASSERT_TRUE(H().ok()) << H().setupError();
    binary_ = TestControllerBinaryPath();
    ASSERT_EQ(access(binary_.c_str(), X_OK), 0) << binary_ << " is not built";
    served_ = H().CreateNamespace("team-a");
    other_ = H().CreateNamespace("team-b");
    ASSERT_FALSE(served_.empty() || other_.empty());

    // The namespaced install for team-a, rendered as a platform team would.
    const std::string rendered = ::testing::TempDir() + "/install-namespaced-" + served_ + ".yaml";
    auto r = RunProcess({RequiredEnv("AYATORI_SOURCE_DIR") + "/hack/install-manifests.sh",
                         "--namespaces", served_, rendered});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const std::string yaml = ReadFile(rendered);
    ASSERT_NE(yaml.find("--watch-namespaces=" + served_), std::string::npos)
        << "the Deployment does not pass the served namespace";
    rbac_ = DocumentsOfKinds(yaml, {"Namespace", "ServiceAccount", "ClusterRole",
                                    "ClusterRoleBinding", "Role", "RoleBinding"});
    r = Kubectl({"apply", "-f", "-"}, rbac_);
    ASSERT_EQ(r.exitCode, 0) << r.err;

    // The ServiceAccount's token through the TokenRequest API, as a kubelet would mount it.
    r = Kubectl({"create", "token", kServiceAccount, "-n", kSystemNamespace, "--duration=1h"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    std::string token = r.out;
    while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
    saKubeconfig_ = ::testing::TempDir() + "/kubeconfig-namespaced-" + served_;
    std::ofstream(saKubeconfig_) << "apiVersion: v1\nkind: Config\ncurrent-context: sa\n"
                                 << "clusters:\n- name: t\n  cluster:\n    server: "
                                 << TestenvVar("TESTENV_API")
                                 << "\n    certificate-authority: " << TestenvVar("TESTENV_CA")
                                 << "\nusers:\n- name: sa\n  user:\n    token: " << token
                                 << "\ncontexts:\n- name: sa\n  context: {cluster: t, user: sa}\n";
    r = RunProcess({testing::Kubectl(), "--kubeconfig=" + saKubeconfig_, "auth", "whoami", "-o",
                    "jsonpath={.status.userInfo.username}"});
    ASSERT_EQ(r.out, kSaUser) << r.err;
  }

  void TearDown() override {
    if (controller_.Running()) controller_.Stop(10s);
    if (HasFailure()) std::cout << "---- controller log ----\n" << controller_.Log() << "----\n";
    for (const auto& ns : {served_, other_}) {
      if (ns.empty()) continue;
      std::string note = H().CleanupNamespace(ns);
      if (!note.empty()) std::cout << "[cleanup of " << ns << "] " << note << "\n";
    }
    H().StopController();
    // The namespaced Roles go with the namespaces; the cluster-wide objects are deleted.
    Kubectl({"delete", "clusterrolebinding", "ayatori-controller", "--ignore-not-found"});
    Kubectl({"delete", "clusterrole", "ayatori-controller", "--ignore-not-found"});
  }

  static ProcessResult Kubectl(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {testing::Kubectl(), "--kubeconfig", H().kubeconfig()});
    return RunProcess(args, input);
  }

  // `kubectl auth can-i` as the ServiceAccount itself (its token): true when allowed.
  bool SaCan(std::vector<std::string> question) {
    question.insert(question.begin(),
                    {testing::Kubectl(), "--kubeconfig=" + saKubeconfig_, "auth", "can-i"});
    auto r = RunProcess(question);
    EXPECT_TRUE(r.out.rfind("yes", 0) == 0 || r.out.rfind("no", 0) == 0) << r.out << r.err;
    return r.exitCode == 0;
  }

  std::string binary_, served_, other_, rbac_, saKubeconfig_;
  ControllerProcess controller_;
};

TEST_F(NamespacedInstall, TheServiceAccountHoldsNoClusterWideGrantOfSecretsJobsOrPods) {
  // What it needs, in the served namespace: the check can say yes.
  EXPECT_TRUE(SaCan({"list", "secrets", "-n", served_}));
  EXPECT_TRUE(SaCan({"create", "jobs.batch", "-n", served_}));
  EXPECT_TRUE(SaCan({"delete", "pods", "-n", served_}));
  EXPECT_TRUE(SaCan({"list", "jobclasses.execution.ayatori.ddupan.top"}));
  // Nothing of it anywhere else.
  EXPECT_FALSE(SaCan({"list", "secrets", "--all-namespaces"}));
  EXPECT_FALSE(SaCan({"watch", "secrets", "--all-namespaces"}));
  EXPECT_FALSE(SaCan({"get", "secrets", "-n", other_}));
  EXPECT_FALSE(SaCan({"list", "secrets", "-n", "kube-system"}));
  EXPECT_FALSE(SaCan({"create", "jobs.batch", "-n", other_}));
  EXPECT_FALSE(SaCan({"delete", "pods", "-n", other_}));
  EXPECT_FALSE(SaCan({"patch", "jobs.execution.ayatori.ddupan.top", "-n", other_}));
  EXPECT_FALSE(SaCan({"list", "jobs.execution.ayatori.ddupan.top", "--all-namespaces"}));
}

TEST_F(NamespacedInstall, RunsTheServedNamespacesJobsAndNeverTouchesAnotherNamespaces) {
  const std::string audit = TestenvVar("TESTENV_AUDIT_LOG");
  const std::streamoff auditFrom = static_cast<std::streamoff>(ReadFile(audit).size());

  Status s =
      controller_.Start(binary_,
                        {"--kubeconfig=" + saKubeconfig_, "--watch-namespaces=" + served_,
                         "--namespace=ayatori-system", "--metrics-address=127.0.0.1:0",
                         "--log-format=json", "--workers=2"},
                        ::testing::TempDir() + "/ayatori-controller-" + served_ + ".log", 60s);
  ASSERT_TRUE(s.ok()) << "the controller did not become ready with the namespaced RBAC: "
                      << s.ToString();

  const auto spec = nlohmann::json{{"task", {{"env", Env({{"AYATORI_TEST_RUN_SECONDS", "1"}})}}}};
  ASSERT_TRUE(H().CreateJob(JobManifest(other_, "ignored", spec)).ok());
  ASSERT_TRUE(H().CreateJob(JobManifest(served_, "served", spec)).ok());
  api::Job last;
  ASSERT_TRUE(H().WaitForJob(served_, "served", SucceededIs(ConditionStatus::kTrue, "Completed"),
                             60s, &last))
      << "the Job of the served namespace did not succeed; last seen: " << Describe(last);

  // team-b's Job was created first and its twin is done: still exactly as its author left it.
  auto ignored = H().GetJobJson(other_, "ignored");
  ASSERT_TRUE(ignored.ok()) << ignored.status().ToString();
  EXPECT_FALSE(ignored->contains("status")) << ignored->dump();
  EXPECT_FALSE((*ignored)["metadata"].contains("finalizers")) << ignored->dump();
  EXPECT_EQ((*ignored)["metadata"].value("generation", 0), 1);

  // The audit log: the ServiceAccount asked nothing about team-b and was denied nothing.
  // Stopping the controller first ends its requests (the log is complete up to here).
  ASSERT_TRUE(controller_.Stop(10s));
  std::istringstream records(ReadFile(audit, auditFrom));
  int requests = 0;
  for (std::string line; std::getline(records, line);) {
    auto record = nlohmann::json::parse(line, nullptr, false);
    if (!record.is_object() || record["user"].value("username", "") != kSaUser) continue;
    ++requests;
    const std::string uri = record.value("requestURI", "");
    const int code = record["responseStatus"].value("code", 0);
    EXPECT_NE(code, 403) << "denied: " << record.value("verb", "") << " " << uri;
    EXPECT_EQ(uri.find("/namespaces/" + other_ + "/"), std::string::npos)
        << "a request about the other namespace: " << record.value("verb", "") << " " << uri;
  }
  EXPECT_GT(requests, 0) << "no request of " << kSaUser << " in " << audit;
}

}  // namespace
}  // namespace ayatori::testing
