// The controller's version, published where `kubectl ayatori version` reads it through the API
// server: the ConfigMap ayatori-controller-version in the controller's namespace, written by
// every controller as it starts (so after a rolling upgrade it names the version that started
// last). Every authenticated user may read that one ConfigMap (config/rbac/controller-namespace);
// it holds the version and the commit, nothing else.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::controller {

inline constexpr const char* kVersionConfigMapName = "ayatori-controller-version";
inline constexpr const char* kVersionKey = "version";
inline constexpr const char* kCommitKey = "commit";

nlohmann::json VersionConfigMap(const std::string& ns, const std::string& version,
                                const std::string& commit);

// Reads the ConfigMap in `ns`; creates it when absent, updates it when it names another version or
// commit, and writes nothing when it already says the same.
Status PublishVersion(KubeClient& client, const std::string& ns, const std::string& version,
                      const std::string& commit);

}  // namespace ayatori::controller
