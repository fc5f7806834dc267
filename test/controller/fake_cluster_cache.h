// An in-memory ClusterCache for unit tests of the resolver and the reconciler: what the informers
// would hold, filled by the test. Jobs come from a KubeClient (a FakeKubeClient) when the test
// names one, as if the Job informer were always up to date.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "api/json.h"
#include "ayatori/kube_client.h"
#include "controller/backend_snapshot.h"
#include "controller/cluster_cache.h"
#include "controller/kinds.h"

namespace ayatori::controller::testing {

class FakeClusterCache final : public ClusterCache {
 public:
  void AddJobClass(api::JobClass c) { classes_[c.metadata.name] = std::move(c); }
  void AddParameters(const std::string& kind, const std::string& name, nlohmann::json j) {
    parameters_[{kind, name}] = std::move(j);
  }
  void RemoveParameters(const std::string& kind, const std::string& name) {
    parameters_.erase({kind, name});
  }
  void ServeJobsFrom(KubeClient* client) { jobs_ = client; }
  // Backend snapshots: the labelled ConfigMaps `client` holds in `ns`, as if that informer were
  // always up to date. Without this call the cache has none (the reconciler then reads them live).
  void ServeBackendSnapshotsFrom(KubeClient* client, std::string ns) {
    snapshots_ = client;
    snapshotNamespace_ = std::move(ns);
  }
  void SetNamespaceDefault(const std::string& ns, const std::string& className) {
    namespaceDefaults_[ns] = className;
  }
  // What the metadata informers would hold: the Secret/ConfigMap ns/name exists. Its content is
  // not here (the controller never caches it); a test that needs it gives the resolver a
  // ReferenceReader over a FakeKubeClient holding the object.
  // `resourceVersion`: the object's, as the API server (a FakeKubeClient) has it; "" = made up.
  void AddSecret(const std::string& ns, const std::string& name,
                 const std::string& resourceVersion = "") {
    secrets_[{ns, name}] = MetadataOf(ns, name, resourceVersion);
  }
  void AddConfigMap(const std::string& ns, const std::string& name,
                    const std::string& resourceVersion = "") {
    configMaps_[{ns, name}] = MetadataOf(ns, name, resourceVersion);
  }

  std::shared_ptr<const api::Job> GetJob(const std::string& ns,
                                         const std::string& name) const override {
    if (jobs_ == nullptr) return nullptr;
    auto j = jobs_->Get(kJobs, ns, name);
    if (!j.ok()) return nullptr;
    auto job = api::JobFromJson(*j);
    return job.ok() ? std::make_shared<const api::Job>(std::move(*job)) : nullptr;
  }
  std::shared_ptr<const api::JobClass> GetJobClass(const std::string& name) const override {
    auto it = classes_.find(name);
    return it == classes_.end() ? nullptr : std::make_shared<const api::JobClass>(it->second);
  }
  std::vector<std::shared_ptr<const api::JobClass>> ListJobClasses() const override {
    std::vector<std::shared_ptr<const api::JobClass>> out;
    for (const auto& [name, c] : classes_) out.push_back(std::make_shared<const api::JobClass>(c));
    return out;
  }
  std::shared_ptr<const nlohmann::json> GetParameters(const std::string& kind,
                                                      const std::string& name) const override {
    auto it = parameters_.find({kind, name});
    return it == parameters_.end() ? nullptr : std::make_shared<const nlohmann::json>(it->second);
  }
  std::string NamespaceDefaultJobClass(const std::string& ns) const override {
    auto it = namespaceDefaults_.find(ns);
    return it == namespaceDefaults_.end() ? "" : it->second;
  }
  std::shared_ptr<const kube::ObjectMetadata> GetSecret(const std::string& ns,
                                                        const std::string& name) const override {
    return Find(secrets_, ns, name);
  }
  std::shared_ptr<const kube::ObjectMetadata> GetConfigMap(const std::string& ns,
                                                           const std::string& name) const override {
    return Find(configMaps_, ns, name);
  }
  std::shared_ptr<const BackendSnapshot> GetBackendSnapshot(
      const std::string& name) const override {
    if (snapshots_ == nullptr) return nullptr;
    auto cm = snapshots_->Get(kConfigMaps, snapshotNamespace_, name);
    if (!cm.ok()) return nullptr;
    auto label = nlohmann::json::json_pointer("/metadata/labels") / kBackendSnapshotLabel;
    if (!cm->contains(label) || (*cm)[label] != "true") return nullptr;
    return DecodeBackendSnapshot(*cm);
  }

 private:
  using Key = std::pair<std::string, std::string>;
  static kube::ObjectMetadata MetadataOf(const std::string& ns, const std::string& name,
                                         const std::string& resourceVersion) {
    static int next = 0;
    ++next;
    return {ns, name, "uid-" + std::to_string(next),
            resourceVersion.empty() ? "made-up-" + std::to_string(next) : resourceVersion};
  }
  static std::shared_ptr<const kube::ObjectMetadata> Find(
      const std::map<Key, kube::ObjectMetadata>& m, const std::string& ns,
      const std::string& name) {
    auto it = m.find({ns, name});
    return it == m.end() ? nullptr : std::make_shared<const kube::ObjectMetadata>(it->second);
  }

  KubeClient* jobs_ = nullptr;
  KubeClient* snapshots_ = nullptr;
  std::string snapshotNamespace_;
  std::map<std::string, api::JobClass> classes_;
  std::map<Key, nlohmann::json> parameters_;
  std::map<std::string, std::string> namespaceDefaults_;
  std::map<Key, kube::ObjectMetadata> secrets_;
  std::map<Key, kube::ObjectMetadata> configMaps_;
};

}  // namespace ayatori::controller::testing
