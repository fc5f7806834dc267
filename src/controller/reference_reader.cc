#include "controller/reference_reader.h"

#include "base/base64.h"
#include "controller/kinds.h"

namespace ayatori::controller {

const char* ReferenceKindName(ReferenceKind kind) {
  return kind == ReferenceKind::kSecret ? "Secret" : "ConfigMap";
}

StatusOr<std::optional<ReferencedObject>> ReferenceReader::Read(ReferenceKind kind,
                                                                const std::string& ns,
                                                                const std::string& name) {
  const bool secret = kind == ReferenceKind::kSecret;
  const std::string what = std::string(ReferenceKindName(kind)) + " " + ns + "/" + name;
  auto obj = client_.Get(secret ? kSecrets : kConfigMaps, ns, name);
  if (!obj.ok()) {
    if (obj.status().code() == StatusCode::kNotFound) return std::optional<ReferencedObject>();
    return Status(obj.status().code(), "reading " + what + ": " + obj.status().message());
  }
  ReferencedObject out;
  if (secret && obj->contains("type") && (*obj)["type"].is_string()) {
    out.type = (*obj)["type"].get<std::string>();
  }
  static const nlohmann::json::json_pointer kResourceVersion("/metadata/resourceVersion");
  if (obj->contains(kResourceVersion) && (*obj)[kResourceVersion].is_string()) {
    out.resourceVersion = (*obj)[kResourceVersion].get<std::string>();
  }

  const nlohmann::json& object = *obj;
  for (const char* field : {"data", "binaryData"}) {
    if (!object.contains(field) || !object[field].is_object()) continue;
    const bool text = !secret && std::string_view(field) == "data";
    for (const auto& [key, value] : object[field].items()) {
      if (!value.is_string()) continue;
      if (text) {
        out.values[key] = SensitiveString(value.get<std::string>());
        continue;
      }
      // The reason names a byte offset, never the value.
      auto decoded = base::Base64Decode(value.get<std::string>());
      if (!decoded.ok()) {
        return Status(StatusCode::kInvalidArgument,
                      what + " key " + key + " is " + decoded.status().message());
      }
      out.values[key] = SensitiveString(std::move(*decoded));
    }
  }
  return std::optional<ReferencedObject>(std::move(out));
}

StatusOr<std::shared_ptr<const ReferencedKeys>> ReferenceReader::ReadKeys(
    ReferenceKind kind, const std::string& ns, const std::string& name,
    const std::string& knownResourceVersion) {
  const std::string key = std::string(ReferenceKindName(kind)) + "/" + ns + "/" + name;
  {
    std::lock_guard lock(mu_);
    auto it = remembered_.find(key);
    if (it != remembered_.end() && !knownResourceVersion.empty() &&
        it->second.resourceVersion == knownResourceVersion) {
      return it->second.keys;
    }
  }
  ASSIGN_OR_RETURN(const std::optional<ReferencedObject> obj, Read(kind, ns, name));
  std::lock_guard lock(mu_);
  if (!obj.has_value()) {
    remembered_.erase(key);
    return std::shared_ptr<const ReferencedKeys>();
  }
  auto keys = std::make_shared<ReferencedKeys>();
  keys->type = obj->type;
  for (const auto& [k, v] : obj->values) keys->names.insert(k);
  if (remembered_.size() >= kMaxRemembered) remembered_.clear();
  remembered_[key] = Remembered{obj->resourceVersion, keys};
  return std::shared_ptr<const ReferencedKeys>(std::move(keys));
}

StatusOr<const ReferencedObject*> ReferenceReads::Get(ReferenceKind kind, const std::string& ns,
                                                      const std::string& name) {
  auto key = std::make_pair(kind, ns + "/" + name);
  auto it = read_.find(key);
  if (it == read_.end()) {
    ASSIGN_OR_RETURN(std::optional<ReferencedObject> obj, reader_.Read(kind, ns, name));
    it = read_.emplace(std::move(key), std::move(obj)).first;
  }
  return it->second ? &*it->second : nullptr;
}

}  // namespace ayatori::controller
