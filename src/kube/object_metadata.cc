#include "kube/object_metadata.h"

namespace ayatori::kube {
namespace {

// metadata.<field> as a string: "" when absent, false when present but not a string.
bool StringField(const nlohmann::json& metadata, const char* field, std::string* out) {
  if (!metadata.contains(field)) return true;
  const nlohmann::json& value = metadata[field];
  if (value.is_null()) return true;
  if (!value.is_string()) return false;
  *out = value.get<std::string>();
  return true;
}

}  // namespace

StatusOr<ObjectMetadata> DecodeObjectMetadata(const nlohmann::json& object) {
  if (!object.is_object()) {
    return Status(StatusCode::kInvalidArgument, "object metadata: the object is not a JSON object");
  }
  if (!object.contains("metadata") || !object["metadata"].is_object()) {
    return Status(StatusCode::kInvalidArgument, "object metadata: metadata is missing");
  }
  const nlohmann::json& md = object["metadata"];
  ObjectMetadata m;
  for (const auto& [field, out] :
       {std::pair{"namespace", &m.namespace_}, std::pair{"name", &m.name}, std::pair{"uid", &m.uid},
        std::pair{"resourceVersion", &m.resourceVersion}}) {
    if (!StringField(md, field, out)) {
      return Status(StatusCode::kInvalidArgument,
                    std::string("object metadata: metadata.") + field + " is not a string");
    }
  }
  if (m.name.empty()) {
    return Status(StatusCode::kInvalidArgument, "object metadata: metadata.name is missing");
  }
  return m;
}

nlohmann::json PartialObjectMetadataOf(const nlohmann::json& object) {
  nlohmann::json partial = {{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}};
  partial["metadata"] = nlohmann::json::object();
  if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
    partial["metadata"] = object["metadata"];
  }
  return partial;
}

}  // namespace ayatori::kube
