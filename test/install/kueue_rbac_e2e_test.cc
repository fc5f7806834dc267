// The install with queueing (config/kueue: config/default, the controller with --kueue, the
// ClusterRole ayatori-controller-kueue) on the e2e control plane beside a real Kueue (fixtures
// kubee2e and kueue_e2e): the controller runs as the install's ServiceAccount and queues a
// Kubernetes-backend Job with a WorkloadPriorityClass through Kueue, and kube-apiserver's audit
// log shows no request of that ServiceAccount denied, with every Kueue rule of the overlay used.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "base/base64.h"
#include "test/e2e/controller_e2e.h"
#include "test/e2e/kueue_objects.h"
#include "test/install/audit_log.h"
#include "test/support/controller_process.h"
#include "test/support/testenv.h"

namespace ayatori::install_e2e {
namespace {

using e2e::Apply;
using e2e::json;
using e2e::Kubectl;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr const char* kSaUser = "system:serviceaccount:ayatori-system:ayatori-controller";
constexpr const char* kClass = "install-kueue-kubernetes";

std::string Source(const std::string& path) {
  return testing::RequiredEnv("AYATORI_SOURCE_DIR") + "/" + path;
}

class KueueInstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // config/kueue rendered by kubectl's kustomize, applied as an administrator would; the log
    // API's APIService goes again (no pod serves it here; install_e2e_test.cc says why).
    auto rendered = Kubectl({"kustomize", Source("config/kueue")});
    ASSERT_EQ(rendered.exitCode, 0) << rendered.err;
    auto applied = Kubectl({"apply", "-f", "-"}, rendered.out);
    ASSERT_EQ(applied.exitCode, 0) << applied.err;
    Kubectl({"delete", "apiservice", "v1alpha1.logs.execution.ayatori.ddupan.top",
             "--ignore-not-found"});
    auto wait = testing::RunProcess(
        {Source("hack/wait-crds.sh"), "-f", Source("config/crd")}, "",
        std::vector<std::string>{"KUBECTL=" + testing::Kubectl(),
                                 "KUBECONFIG=" + testing::TestenvVar("KUBECONFIG")});
    ASSERT_EQ(wait.exitCode, 0) << wait.err;
    ASSERT_NO_FATAL_FAILURE(WriteServiceAccountKubeconfig());
    ASSERT_TRUE(e2e::ApplyKubernetesClass(kClass, json::object()));
    ns_ = testing::CreateTestNamespace("install-kueue");
    ASSERT_NO_FATAL_FAILURE(CreateQueues());
  }

  void TearDown() override {
    Kubectl({"delete", e2e::kJobResource, "--all", "-n", ns_, "--timeout=60s"});
    controller_.Kill();
    Kubectl({"delete", "namespace", ns_, "--wait=false"});
    for (const auto& [kind, name] :
         {std::pair{"clusterqueue", queue_}, std::pair{"resourceflavor", queue_},
          std::pair{"workloadpriorityclass", queue_}}) {
      Kubectl({"delete", kind, name, "--ignore-not-found", "--wait=false"});
    }
  }

  // A kubeconfig with a TokenRequest token of the install's ServiceAccount.
  void WriteServiceAccountKubeconfig() {
    auto token =
        Kubectl({"create", "token", "ayatori-controller", "-n", "ayatori-system", "--duration=1h"});
    ASSERT_EQ(token.exitCode, 0) << token.err;
    std::string t = token.out;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    std::ifstream caFile(testing::TestenvVar("TESTENV_CA"));
    const std::string ca((std::istreambuf_iterator<char>(caFile)),
                         std::istreambuf_iterator<char>());
    kubeconfig_ = e2e::RunPath("install-kueue-sa.kubeconfig");
    std::ofstream out(kubeconfig_, std::ios::trunc);
    out << "apiVersion: v1\nkind: Config\ncurrent-context: sa\nclusters:\n- name: testenv\n"
           "  cluster:\n    server: "
        << testing::TestenvVar("TESTENV_API")
        << "\n    certificate-authority-data: " << base::Base64Encode(ca)
        << "\nusers:\n- name: sa\n  user:\n    token: " << t
        << "\ncontexts:\n- name: sa\n  context: {cluster: testenv, user: sa}\n";
    ASSERT_TRUE(out.good());
  }

  void CreateQueues() {
    queue_ = ns_;
    ASSERT_TRUE(
        Apply(e2e::KueueResourceFlavor(queue_, {{"kubernetes.io/hostname", "testenv-node-0"}})));
    ASSERT_TRUE(
        Apply(e2e::KueueClusterQueue(queue_, json::array({e2e::KueueFlavorQuotas(queue_, 2)}))));
    ASSERT_TRUE(Apply(e2e::KueueLocalQueue(queue_, ns_, queue_)));
    ASSERT_TRUE(Apply({{"apiVersion", e2e::kKueueApiVersion},
                       {"kind", "WorkloadPriorityClass"},
                       {"metadata", {{"name", queue_}}},
                       {"value", 100}}));
  }

  std::string ns_, queue_, kubeconfig_;
  testing::ControllerProcess controller_;
};

TEST_F(KueueInstallTest, TheServiceAccountQueuesJobsWithoutADeniedRequest) {
  const size_t offset = AuditOffset();
  Status s =
      controller_.Start(testing::ControllerBinaryPath(),
                        {"--kubeconfig=" + kubeconfig_, "--namespace=ayatori-system", "--kueue",
                         "--metrics-address=127.0.0.1:0", "--log-format=json", "--log-level=debug"},
                        e2e::RunPath("install-kueue.controller.log"), 60s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  json manifest =
      e2e::JobManifest(ns_, "queued", kClass,
                       {{"image", "busybox:1.36"},
                        {"command", {"/bin/sh", "-c", "true"}},
                        {"env", json::array({{{"name", "TESTENV_RUN_FOR"}, {"value", "1s"}}})}});
  manifest["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", queue_},
                                    {"kueue.x-k8s.io/priority-class", queue_}};
  auto created = e2e::Create(manifest);
  ASSERT_TRUE(created);
  const std::string uid = created->value("/metadata/uid"_json_pointer, "");
  json job = e2e::WaitForFinished(ns_, "queued", 120s);
  EXPECT_EQ(e2e::ConditionSummary(job, "Admitted"), "True/Admitted") << e2e::Describe(job);
  EXPECT_EQ(e2e::ConditionSummary(job, "Succeeded"), "True/Completed") << e2e::Describe(job);
  ASSERT_TRUE(testing::Eventually(
      [&] {
        auto w = e2e::Get("workloads.kueue.x-k8s.io", ns_, "ajob-" + uid);
        return w && e2e::ConditionSummary(*w, "Finished") == "True/Succeeded";
      },
      60s))
      << "the Workload was not Finished";

  const auto requests = RequestsOf(kSaUser, offset);
  EXPECT_TRUE(Denied(requests).empty())
      << "requests of the ServiceAccount denied:" << Summaries(Denied(requests));
  std::set<std::string> used;
  for (const auto& r : requests) {
    if (r.group == "kueue.x-k8s.io" && r.code < 300) used.insert(r.resource + " " + r.verb);
  }
  // Every verb of config/kueue/rbac.yaml that this scenario needs (delete: only for a Workload
  // Finished by someone else before admission; update on status: only for a reservation cleared
  // after an early eviction; get on status: never asked, granted with update).
  for (const char* needed :
       {"workloads create", "workloads list", "workloads watch", "workloads get", "workloads patch",
        "workloads/status patch", "workloadpriorityclasses get", "resourceflavors get"}) {
    EXPECT_TRUE(used.count(needed)) << "no request " << needed << " seen; used:" << [&] {
      std::string all;
      for (const auto& u : used) all += "\n  " + u;
      return all;
    }();
  }
}

}  // namespace
}  // namespace ayatori::install_e2e
