// The objects the benchmark programs set up before they measure: namespaces and JobClasses,
// created unless they exist.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ayatori/kube_client.h"

namespace ayatori::bench {

inline nlohmann::json NamespaceObject(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
}

// A JobClass `name` of the in-process test backend (test/ayatori-controller-test), with `spec`'s
// other fields.
inline nlohmann::json TestJobClass(const std::string& name,
                                   nlohmann::json spec = nlohmann::json::object()) {
  spec["controllerName"] = "execution.ayatori.ddupan.top/test";
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "JobClass"},
          {"metadata", {{"name", name}}},
          {"spec", spec}};
}

// Creates `object`; one that already exists counts as created.
inline Status CreateIfAbsent(KubeClient& client, const ResourceRef& ref, const std::string& ns,
                             const nlohmann::json& object) {
  auto r = client.Create(ref, ns, object, {});
  if (r.ok() || r.status().code() == StatusCode::kAlreadyExists) return Status::Ok();
  return r.status();
}

}  // namespace ayatori::bench
