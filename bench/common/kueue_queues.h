// Kueue's queues for the queued variants of the benchmarks (bench/docker, bench/kubernetes): a
// ResourceFlavor, a ClusterQueue with room for `pods` tasks at once and a LocalQueue per
// namespace, made as test/e2e/docker_kueue_e2e_test.cc makes them. The benchmarks give the
// ClusterQueue room for every Job they create at once, so that Kueue never holds a Job back for
// quota: what they measure is the cost of going through the queue, not of waiting in it.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "ayatori/kube_client.h"
#include "bench/common/objects.h"
#include "kueue/workload.h"

namespace ayatori::bench {

// The label that queues an Ayatori Job in a LocalQueue (controller started with --kueue).
inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";

inline const ResourceRef kResourceFlavors{kueue::kGroup, kueue::kVersion, "resourceflavors", false};
inline const ResourceRef kClusterQueues{kueue::kGroup, kueue::kVersion, "clusterqueues", false};
inline const ResourceRef kLocalQueues{kueue::kGroup, kueue::kVersion, "localqueues", true};

// A ClusterQueue `name` admitting up to `pods` tasks at once from every namespace, on flavor
// `name`. cpu and memory quotas beyond any benchmark's Jobs: only "pods" bounds it.
inline nlohmann::json ClusterQueueObject(const std::string& name, int pods) {
  const nlohmann::json quotas =
      nlohmann::json::array({{{"name", "cpu"}, {"nominalQuota", "10000"}},
                             {{"name", "memory"}, {"nominalQuota", "10000Gi"}},
                             {{"name", "pods"}, {"nominalQuota", pods}}});
  const nlohmann::json group = {
      {"coveredResources", {"cpu", "memory", "pods"}},
      {"flavors", nlohmann::json::array({{{"name", name}, {"resources", quotas}}})}};
  return {{"apiVersion", std::string(kueue::kGroup) + "/" + kueue::kVersion},
          {"kind", "ClusterQueue"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"namespaceSelector", nlohmann::json::object()},
            {"resourceGroups", nlohmann::json::array({group})}}}};
}

// Whether the ClusterQueue's Active condition is True.
inline bool ClusterQueueActive(const nlohmann::json& queue) {
  for (const auto& c : queue.value("/status/conditions"_json_pointer, nlohmann::json::array())) {
    if (c.value("type", "") == "Active") return c.value("status", "") == "True";
  }
  return false;
}

// Creates flavor and ClusterQueue `name` (room for `pods` tasks) unless they exist and waits up
// to 60 s until the ClusterQueue is Active.
inline Status CreateClusterQueue(KubeClient& client, const std::string& name, int pods) {
  const nlohmann::json flavor = {{"apiVersion", std::string(kueue::kGroup) + "/" + kueue::kVersion},
                                 {"kind", "ResourceFlavor"},
                                 {"metadata", {{"name", name}}},
                                 {"spec", nlohmann::json::object()}};
  if (Status s = CreateIfAbsent(client, kResourceFlavors, "", flavor); !s.ok()) return s;
  if (Status s = CreateIfAbsent(client, kClusterQueues, "", ClusterQueueObject(name, pods));
      !s.ok()) {
    return s;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    auto queue = client.Get(kClusterQueues, "", name);
    if (queue.ok() && ClusterQueueActive(*queue)) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Status(StatusCode::kDeadlineExceeded, "ClusterQueue " + name + " not Active within 60 s");
}

// A LocalQueue `name` in `ns` pointing at ClusterQueue `name`, unless it exists.
inline Status CreateLocalQueue(KubeClient& client, const std::string& ns, const std::string& name) {
  const nlohmann::json queue = {{"apiVersion", std::string(kueue::kGroup) + "/" + kueue::kVersion},
                                {"kind", "LocalQueue"},
                                {"metadata", {{"name", name}, {"namespace", ns}}},
                                {"spec", {{"clusterQueue", name}}}};
  return CreateIfAbsent(client, kLocalQueues, ns, queue);
}

}  // namespace ayatori::bench
