#include "controller/backend_snapshot.h"

#include <openssl/evp.h>

#include <array>

#include "controller/kinds.h"

namespace ayatori::controller {

std::string BackendSnapshotName(const BackendSnapshot& snapshot) {
  // nlohmann::json objects keep their keys sorted: dump() is canonical.
  const std::string canonical = nlohmann::json{
      {"controllerName", snapshot.controllerName},
      {"pinned", snapshot.pinned}}.dump();
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(canonical.data(), canonical.size(), digest.data(), &size, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "ayatori-backend-";
  for (unsigned int i = 0; i < 8 && i < size; ++i) {
    name.push_back(kHex[digest[i] >> 4]);
    name.push_back(kHex[digest[i] & 0xF]);
  }
  return name;
}

nlohmann::json BackendSnapshotConfigMap(const std::string& ns, const BackendSnapshot& snapshot) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", BackendSnapshotName(snapshot)},
            {"namespace", ns},
            {"labels", {{kBackendSnapshotLabel, "true"}}},
            {"annotations", {{kBackendSnapshotControllerAnnotation, snapshot.controllerName}}}}},
          {"immutable", true},
          {"data", snapshot.pinned}};
}

std::shared_ptr<const BackendSnapshot> DecodeBackendSnapshot(const nlohmann::json& configMap) {
  static const auto kController =
      nlohmann::json::json_pointer("/metadata/annotations") / kBackendSnapshotControllerAnnotation;
  if (!configMap.contains(kController) || !configMap[kController].is_string()) return nullptr;
  BackendSnapshot snapshot;
  snapshot.controllerName = configMap[kController].get<std::string>();
  if (configMap.contains("data")) {
    const auto& data = configMap["data"];
    if (!data.is_object()) return nullptr;
    for (const auto& [key, value] : data.items()) {
      if (!value.is_string()) return nullptr;
      snapshot.pinned[key] = value.get<std::string>();
    }
  }
  return std::make_shared<const BackendSnapshot>(std::move(snapshot));
}

Status StoreBackendSnapshot(KubeClient& client, const std::string& ns,
                            const BackendSnapshot& snapshot) {
  const std::string name = BackendSnapshotName(snapshot);
  const std::string where = "ConfigMap " + ns + "/" + name;
  auto created = client.Create(kConfigMaps, ns, BackendSnapshotConfigMap(ns, snapshot), {});
  if (created.ok()) return Status::Ok();
  const Status& error = created.status();
  if (error.code() == StatusCode::kNotFound) {
    return {StatusCode::kNotFound, "the controller's namespace " + ns +
                                       " does not exist (it holds the backend snapshot " + where +
                                       "); create it"};
  }
  if (error.code() != StatusCode::kAlreadyExists) {
    return {error.code(), "creating the backend snapshot " + where + ": " + error.message()};
  }
  // Someone stored it first (another Job with the same values, a previous round): it must hold
  // exactly these values, which its name promises but a stranger's object need not keep.
  auto existing = client.Get(kConfigMaps, ns, name);
  if (!existing.ok()) {
    return {existing.status().code(),
            "reading the backend snapshot " + where + ": " + existing.status().message()};
  }
  auto stored = DecodeBackendSnapshot(*existing);
  if (stored == nullptr || !(*stored == snapshot)) {
    return {StatusCode::kAlreadyExists,
            where +
                " exists but does not hold the backend snapshot its name stands for; "
                "delete it so that the controller can store it again"};
  }
  return Status::Ok();
}

}  // namespace ayatori::controller
