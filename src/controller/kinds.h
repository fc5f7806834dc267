// The API resources the controller reads and writes. The parameters kinds are not here: each
// adapter names its own (AdapterDescriptor::parameters, src/adapters/registry.h).
#pragma once

#include "ayatori/kube_client.h"

namespace ayatori::controller {

inline const ResourceRef kJobs{"execution.ayatori.ddupan.top", "v1alpha1", "jobs", true};
inline const ResourceRef kJobClasses{"execution.ayatori.ddupan.top", "v1alpha1", "jobclasses",
                                     false};
inline const ResourceRef kSecrets{"", "v1", "secrets", true};
inline const ResourceRef kConfigMaps{"", "v1", "configmaps", true};
inline const ResourceRef kNamespaces{"", "v1", "namespaces", false};

}  // namespace ayatori::controller
