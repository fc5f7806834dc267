// The API resources the controller reads and writes, one name each: Ayatori's own kinds from the
// API's group and version (src/api/types.h), the built-in ones from src/kube/resource.h. The
// parameters kinds are not here: each adapter names its own (AdapterDescriptor::parameters,
// src/adapters/registry.h).
#pragma once

#include "api/types.h"
#include "ayatori/kube_client.h"
#include "kube/resource.h"
#include "kueue/workload.h"

namespace ayatori::controller {

inline const ResourceRef kJobs{api::kGroup, api::kVersion, "jobs", true};
inline const ResourceRef kJobClasses{api::kGroup, api::kVersion, "jobclasses", false};
inline const ResourceRef kSecrets = kube::SecretsResource();
inline const ResourceRef kConfigMaps = kube::ConfigMapsResource();
inline const ResourceRef kNamespaces = kube::NamespacesResource();
// Kueue's (src/kueue/workload.h), read and written only with queueing on (--kueue).
inline const ResourceRef kWorkloads{kueue::kGroup, kueue::kVersion, "workloads", true};
inline const ResourceRef kResourceFlavors{kueue::kGroup, kueue::kVersion, "resourceflavors", false};
inline const ResourceRef kWorkloadPriorityClasses{kueue::kGroup, kueue::kVersion,
                                                  "workloadpriorityclasses", false};

}  // namespace ayatori::controller
