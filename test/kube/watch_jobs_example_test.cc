// The examples/watch-jobs program as a user runs it, against the real API server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/resource.h"
#include "test/kube/integration_util.h"
#include "test/support/process.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::kube {
namespace {

using ayatori::testing::RequiredEnv;
using ayatori::testing::RunProcess;
using ayatori::testing::TestenvVar;
using ::testing::HasSubstr;

TEST(WatchJobsExampleTest, ReportsAMissingCrdClearly) {
  // A group nothing installs, so the check does not depend on what other tests applied.
  auto r = RunProcess({RequiredEnv("WATCH_JOBS"), "--kubeconfig", TestenvVar("KUBECONFIG"),
                       "--api-group", "absent.ayatori.ddupan.top"});
  EXPECT_EQ(r.exitCode, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("CustomResourceDefinition jobs.absent.ayatori.ddupan.top is not "
                               "installed"));
  EXPECT_THAT(r.err, HasSubstr("kubectl apply -f config/crd/"));
  EXPECT_EQ(r.out, "");
}

TEST(WatchJobsExampleTest, BadKubeconfigIsNamed) {
  auto r = RunProcess({RequiredEnv("WATCH_JOBS"), "--kubeconfig", "/nonexistent/kubeconfig"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err, HasSubstr("kubeconfig /nonexistent/kubeconfig: file does not exist"));
}

TEST(WatchJobsExampleTest, PrintsOneLinePerJobWithItsSucceededReason) {
  auto kubectl = RunProcess(
      {ayatori::testing::Kubectl(), "--kubeconfig", TestenvVar("KUBECONFIG"), "apply", "-f",
       RequiredEnv("AYATORI_SOURCE_DIR") + "/config/crd/execution.ayatori.ddupan.top_jobs.yaml"});
  ASSERT_EQ(kubectl.exitCode, 0) << kubectl.err;
  auto client = testing::Client(testing::AdminConfig());
  const ResourceRef jobs{"execution.ayatori.ddupan.top", "v1alpha1", "jobs", true};
  std::string ns = testing::NewNamespace(*client, "kube-watch-jobs");
  nlohmann::json job = {
      {"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
      {"kind", "Job"},
      {"metadata", {{"name", "hello"}}},
      {"spec",
       {{"task", {{"image", "docker.io/library/alpine:3.22"}, {"command", {"/bin/true"}}}}}}};
  StatusOr<nlohmann::json> created = Status(StatusCode::kNotFound, "");
  ASSERT_TRUE(ayatori::testing::Eventually(
      [&] {
        created = client->Create(jobs, ns, job, {});
        return created.ok();
      },
      std::chrono::seconds(10)))
      << created.status().ToString();
  PatchOptions status;
  status.subresource = "status";
  nlohmann::json patch = {{"status",
                           {{"conditions",
                             {{{"type", "Succeeded"},
                               {"status", "Unknown"},
                               {"reason", "Running"},
                               {"message", "the main process is running"},
                               {"observedGeneration", 1},
                               {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}}}};
  auto patched = client->Patch(jobs, ns, "hello", PatchType::kMerge, patch, status);
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  std::string rv = (*patched)["metadata"]["resourceVersion"];

  auto r = RunProcess({RequiredEnv("WATCH_JOBS"), "--kubeconfig", TestenvVar("KUBECONFIG"),
                       "--namespace", ns, "--exit-after", "1", "--timeout", "30"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "ADDED " + ns + "/hello rv=" + rv + " succeeded=Running\n") << r.err;
  (void)client->Delete(NamespacesResource(), "", ns, {});
}

}  // namespace
}  // namespace ayatori::kube
