#include "test/e2e/kueue_objects.h"

namespace ayatori::e2e {

using nlohmann::json;

json KueueResourceFlavor(const std::string& name, const json& nodeLabels, const json& tolerations) {
  json spec = json::object();
  if (!nodeLabels.empty()) spec["nodeLabels"] = nodeLabels;
  if (!tolerations.empty()) spec["tolerations"] = tolerations;
  return {{"apiVersion", kKueueApiVersion},
          {"kind", "ResourceFlavor"},
          {"metadata", {{"name", name}}},
          {"spec", spec}};
}

json KueueFlavorQuotas(const std::string& flavor, int pods) {
  return {{"name", flavor},
          {"resources", json::array({{{"name", "cpu"}, {"nominalQuota", "8"}},
                                     {{"name", "memory"}, {"nominalQuota", "16Gi"}},
                                     {{"name", "pods"}, {"nominalQuota", pods}}})}};
}

json KueueClusterQueue(const std::string& name, const json& flavors, const json& preemption) {
  return {
      {"apiVersion", kKueueApiVersion},
      {"kind", "ClusterQueue"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"namespaceSelector", json::object()},
        {"preemption", preemption},
        {"resourceGroups",
         json::array({{{"coveredResources", {"cpu", "memory", "pods"}}, {"flavors", flavors}}})}}}};
}

json KueueLocalQueue(const std::string& name, const std::string& ns,
                     const std::string& clusterQueue) {
  return {{"apiVersion", kKueueApiVersion},
          {"kind", "LocalQueue"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"clusterQueue", clusterQueue}}}};
}

}  // namespace ayatori::e2e
