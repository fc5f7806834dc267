// Metadata-only reads (the API server's PartialObjectMetadata): a list or watch sent with these
// Accept headers returns each object as {kind: PartialObjectMetadata, apiVersion: meta.k8s.io/v1,
// metadata}, without data, spec or status. The controller watches Secrets and ConfigMaps this way
// (controller/controller.h), so their values never reach it unless it GETs one on purpose.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ayatori/status.h"

namespace ayatori::kube {

// The Accept headers of a metadata-only list and watch (the API server answers 406 Not
// Acceptable to a resource that cannot be served this way, rather than sending the full objects).
inline constexpr const char* kPartialObjectMetadataListAccept =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
inline constexpr const char* kPartialObjectMetadataAccept =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

// What a metadata cache keeps of an object: enough to know it exists (the cache key is
// namespace/name), whether it was replaced (uid) and whether it changed (resourceVersion).
struct ObjectMetadata {
  std::string namespace_;  // "" for cluster-scoped objects
  std::string name;
  std::string uid;
  std::string resourceVersion;
  bool operator==(const ObjectMetadata&) const = default;
};

// Reads metadata.{namespace,name,uid,resourceVersion} of a PartialObjectMetadata (or of any full
// object: only metadata is looked at). kInvalidArgument when metadata or metadata.name is missing
// or not of the right JSON type.
StatusOr<ObjectMetadata> DecodeObjectMetadata(const nlohmann::json& object);

// The PartialObjectMetadata the API server would send for `object`: its metadata only. For fakes
// of the API server (kube/testing/fake_kube_client.h).
nlohmann::json PartialObjectMetadataOf(const nlohmann::json& object);

}  // namespace ayatori::kube
