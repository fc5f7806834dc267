// Backend snapshots: what pins an accepted Job to its backend, stored outside the Job.
//
// At acceptance the controller records the parameters fields that decide which backend holds a
// Job's execution and what it is (Adapter::PinnedParameters, e.g. an engine endpoint, a network
// mode). Those values are backend configuration, which the Job API never shows
// (docs/api.md), so the Job's status only names them (status.resolvedJobClass.backendSnapshot)
// and the values live in one immutable ConfigMap per distinct set, in the controller's
// namespace, named from a hash of its content. The reconciler stores it before the status write
// that records acceptance, so a recorded name always had its object (docs/jobclass.md).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::controller {

// The label every snapshot ConfigMap carries (the controller's informer selects on it).
inline constexpr const char* kBackendSnapshotLabel =
    "execution.ayatori.ddupan.top/backend-snapshot";
// The annotation with the controllerName the pinned values belong to.
inline constexpr const char* kBackendSnapshotControllerAnnotation =
    "execution.ayatori.ddupan.top/controller-name";
// The namespace the controller keeps its snapshots (and, by default, its Lease) in.
inline constexpr const char* kDefaultControllerNamespace = "ayatori-system";

struct BackendSnapshot {
  std::string controllerName;
  std::map<std::string, std::string> pinned;  // spec field -> value, as at acceptance
  bool operator==(const BackendSnapshot&) const = default;
};

// "ayatori-backend-" + the first 16 hex digits of the SHA-256 of the canonical JSON
// {"controllerName": ..., "pinned": {...}} (keys sorted). Equal content, equal name: Jobs
// accepted with the same values share one object, and a recreated object is accepted back only
// if its content is exactly what the name was computed from.
std::string BackendSnapshotName(const BackendSnapshot& snapshot);

// The ConfigMap that stores `snapshot` in namespace `ns` (immutable: true, labelled).
nlohmann::json BackendSnapshotConfigMap(const std::string& ns, const BackendSnapshot& snapshot);

// The snapshot a ConfigMap holds; nullptr if it is not one (no annotation, non-string data).
std::shared_ptr<const BackendSnapshot> DecodeBackendSnapshot(const nlohmann::json& configMap);

// Creates the snapshot's ConfigMap in `ns` unless it exists with the same content. kNotFound:
// the namespace does not exist; kAlreadyExists: an object of that name holds something else;
// other codes: the API server's error. Messages name the ConfigMap, never the values.
Status StoreBackendSnapshot(KubeClient& client, const std::string& ns,
                            const BackendSnapshot& snapshot);

}  // namespace ayatori::controller
