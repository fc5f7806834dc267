#include "version_configmap.h"

#include "controller/kinds.h"

namespace ayatori::controller {

namespace {
constexpr const char* kFieldManager = "ayatori-controller";
}  // namespace

nlohmann::json VersionConfigMap(const std::string& ns, const std::string& version,
                                const std::string& commit) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", kVersionConfigMapName},
            {"namespace", ns},
            {"labels", {{"app.kubernetes.io/name", "ayatori"}}}}},
          {"data", {{kVersionKey, version}, {kCommitKey, commit}}}};
}

Status PublishVersion(KubeClient& client, const std::string& ns, const std::string& version,
                      const std::string& commit) {
  WriteOptions options;
  options.fieldManager = kFieldManager;
  nlohmann::json wanted = VersionConfigMap(ns, version, commit);
  // Read first: a restart of the same build writes nothing (bench/scale counts a synced
  // controller's writes, and a restart needs none).
  auto current = client.Get(kConfigMaps, ns, kVersionConfigMapName);
  if (!current.ok() && current.status().code() != StatusCode::kNotFound) return current.status();
  if (!current.ok()) {
    auto created = client.Create(kConfigMaps, ns, wanted, options);
    // Of two controllers starting at once, one creates it; the other's version is as true.
    if (!created.ok() && created.status().code() == StatusCode::kAlreadyExists) return Status::Ok();
    return created.status();
  }
  if (current->value("data", nlohmann::json::object()) == wanted["data"]) return Status::Ok();
  // The resourceVersion read: of two controllers starting at once, one writes and one gets a
  // conflict (and its version is then the other's, which is as true).
  wanted["metadata"]["resourceVersion"] =
      current->value("/metadata/resourceVersion"_json_pointer, "");
  auto updated = client.Update(kConfigMaps, ns, wanted, options);
  if (!updated.ok() && updated.status().code() == StatusCode::kConflict) return Status::Ok();
  return updated.status();
}

}  // namespace ayatori::controller
