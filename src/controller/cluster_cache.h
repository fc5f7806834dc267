// The controller's read-only view of the cluster, served from informer caches. An interface so
// the reconciler is unit-tested with a FakeClusterCache and runs on informers in production.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/types.h"
#include "controller/backend_snapshot.h"

namespace ayatori::controller {

// What the cache keeps of a Secret or ConfigMap: its type and the names of its keys, never the
// values (values are read fresh, only for Jobs whose backend needs them, only when needed).
struct ReferencedObjectInfo {
  std::string type;  // Secret type, e.g. kubernetes.io/dockerconfigjson; "" for ConfigMaps
  std::set<std::string> keys;
};

class ClusterCache {
 public:
  virtual ~ClusterCache() = default;
  virtual std::shared_ptr<const api::Job> GetJob(const std::string& ns,
                                                 const std::string& name) const = 0;
  virtual std::shared_ptr<const api::JobClass> GetJobClass(const std::string& name) const = 0;
  virtual std::vector<std::shared_ptr<const api::JobClass>> ListJobClasses() const = 0;
  // A parameters object by kind (one a registered adapter names, AdapterDescriptor::parameters)
  // and name, as JSON.
  virtual std::shared_ptr<const nlohmann::json> GetParameters(const std::string& kind,
                                                              const std::string& name) const = 0;
  // The namespace's default-job-class annotation; "" when absent or the namespace is unknown.
  virtual std::string NamespaceDefaultJobClass(const std::string& ns) const = 0;
  virtual std::shared_ptr<const ReferencedObjectInfo> GetSecret(const std::string& ns,
                                                                const std::string& name) const = 0;
  virtual std::shared_ptr<const ReferencedObjectInfo> GetConfigMap(
      const std::string& ns, const std::string& name) const = 0;
  // A backend snapshot of the controller's namespace by ConfigMap name (backend_snapshot.h);
  // nullptr if the cache has none of that name (just created, or deleted).
  virtual std::shared_ptr<const BackendSnapshot> GetBackendSnapshot(
      const std::string& name) const = 0;
};

}  // namespace ayatori::controller
