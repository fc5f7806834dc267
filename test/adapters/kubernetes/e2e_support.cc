#include "test/adapters/kubernetes/e2e_support.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "kube/config.h"
#include "test/support/testenv.h"

namespace ayatori::testing {

std::unique_ptr<kube::RestClient> NewTestenvClient() {
  const std::string kubeconfig = TestenvVar("KUBECONFIG");
  if (kubeconfig.empty()) return nullptr;  // TestenvVar recorded the failure
  auto config = kube::LoadKubeconfigFile(kubeconfig, {});
  if (!config.ok()) {
    ADD_FAILURE() << config.status().ToString();
    return nullptr;
  }
  kube::RestClientOptions co;
  co.qps = 200;
  co.burst = 400;
  return kube::RestClient::New(*config, co);
}

std::string NewKubernetesUid() {
  static std::mt19937_64 rng{std::random_device{}()};
  static std::mutex mu;
  std::lock_guard lock(mu);
  char buf[40];
  const uint64_t a = rng(), b = rng();
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-8%03x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(b >> 52),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

std::string OwnerJobUid(KubeClient& client, const std::string& ns, const std::string& name) {
  const ResourceRef jobs{"execution.ayatori.ddupan.top", "v1alpha1", "jobs", true};
  const nlohmann::json job = {
      {"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
      {"kind", "Job"},
      {"metadata", {{"name", name}}},
      {"spec", {{"task", {{"image", "busybox:1.36"}, {"command", {"true"}}}}}}};
  auto created = client.Create(jobs, ns, job, {});
  if (created.ok()) return created->value("/metadata/uid"_json_pointer, std::string());
  // The CRD is not served: no garbage collector knows the kind, a made-up uid stays.
  if (created.status().code() == StatusCode::kNotFound) return NewKubernetesUid();
  ADD_FAILURE() << "creating the owner Job " << ns << "/" << name << ": "
                << created.status().ToString();
  return NewKubernetesUid();
}

}  // namespace ayatori::testing
