// The controller's read-only view of the cluster, served from informer caches. An interface so
// the reconciler is unit-tested with a FakeClusterCache and runs on informers in production.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/types.h"
#include "controller/backend_snapshot.h"
#include "kube/object_metadata.h"
#include "statemachine/statemachine.h"

namespace ayatori::controller {

class ClusterCache {
 public:
  virtual ~ClusterCache() = default;
  virtual std::shared_ptr<const api::Job> GetJob(const std::string& ns,
                                                 const std::string& name) const = 0;
  // A cached Job and whether its spec.task is whole: the cache keeps a compact projection of
  // accepted Jobs and of large waiting ones (controller.h, CompactJobForCache), and the reconciler
  // reads the Job from the API server before a call that needs the whole task (Ensure, and a
  // resolution that may accept it, since adapter Validate reads all of it).
  struct JobCopy {
    std::shared_ptr<const api::Job> job;
    bool taskComplete = false;
  };
  // By default (caches that hold Jobs as the API server has them): the task is taken as whole
  // while the Job needs resolution, as the production cache's small waiting Jobs are.
  virtual JobCopy GetJobCopy(const std::string& ns, const std::string& name) const {
    auto job = GetJob(ns, name);
    const bool complete = job && statemachine::NeedsResolution(*job);
    return {std::move(job), complete};
  }
  virtual std::shared_ptr<const api::JobClass> GetJobClass(const std::string& name) const = 0;
  virtual std::vector<std::shared_ptr<const api::JobClass>> ListJobClasses() const = 0;
  // A parameters object by kind (one a registered adapter names, AdapterDescriptor::parameters)
  // and name, as JSON.
  virtual std::shared_ptr<const nlohmann::json> GetParameters(const std::string& kind,
                                                              const std::string& name) const = 0;
  // The namespace's default-job-class annotation; "" when absent or the namespace is unknown.
  virtual std::string NamespaceDefaultJobClass(const std::string& ns) const = 0;
  // The metadata of a Secret or ConfigMap (it exists), or nullptr. Only metadata: the cache
  // never holds their type, keys or values (controller/reference_reader.h reads those, for the
  // Jobs that need them).
  virtual std::shared_ptr<const kube::ObjectMetadata> GetSecret(const std::string& ns,
                                                                const std::string& name) const = 0;
  virtual std::shared_ptr<const kube::ObjectMetadata> GetConfigMap(
      const std::string& ns, const std::string& name) const = 0;
  // A backend snapshot of the controller's namespace by ConfigMap name (backend_snapshot.h);
  // nullptr if the cache has none of that name (just created, or deleted).
  virtual std::shared_ptr<const BackendSnapshot> GetBackendSnapshot(
      const std::string& name) const = 0;
  // A Kueue Workload by namespace and name, as JSON; nullptr when the cache has none, or holds
  // no Workloads at all (queueing off, and the caches of unit tests that do not queue).
  virtual std::shared_ptr<const nlohmann::json> GetWorkload(const std::string& /*ns*/,
                                                            const std::string& /*name*/) const {
    return nullptr;
  }
};

}  // namespace ayatori::controller
