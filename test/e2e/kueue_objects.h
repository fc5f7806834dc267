// Kueue v0.17.0 queue objects (kueue.x-k8s.io/v1beta2) for the tests that queue Jobs through a
// real Kueue: a flavor per backend host, a ClusterQueue of those flavors, a LocalQueue.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ayatori::e2e {

inline constexpr const char* kKueueApiVersion = "kueue.x-k8s.io/v1beta2";

// A ResourceFlavor with these nodeLabels and tolerations.
nlohmann::json KueueResourceFlavor(const std::string& name,
                                   const nlohmann::json& nodeLabels = nlohmann::json::object(),
                                   const nlohmann::json& tolerations = nlohmann::json::array());
// One flavor's entry of a ClusterQueue's resource group: room for `pods` tasks, and cpu and
// memory enough that only `pods` ever holds a test's Job back.
nlohmann::json KueueFlavorQuotas(const std::string& flavor, int pods);
// A ClusterQueue for every namespace over `flavors` (KueueFlavorQuotas entries) of cpu, memory
// and pods, with `preemption` (ClusterQueue spec.preemption).
nlohmann::json KueueClusterQueue(const std::string& name, const nlohmann::json& flavors,
                                 const nlohmann::json& preemption = nlohmann::json::object());
nlohmann::json KueueLocalQueue(const std::string& name, const std::string& ns,
                               const std::string& clusterQueue);

}  // namespace ayatori::e2e
