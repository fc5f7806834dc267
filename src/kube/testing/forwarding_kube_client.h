// A KubeClient that forwards every call to another: the base of test decorators, which override
// only the calls they watch or change (test/support/counting_kube_client.h counts writes).
#pragma once

#include <functional>
#include <stop_token>
#include <string_view>
#include <utility>

#include "ayatori/kube_client.h"

namespace ayatori::kube::testing {

class ForwardingKubeClient : public KubeClient {
 public:
  explicit ForwardingKubeClient(KubeClient& inner) : inner_(inner) {}

  StatusOr<nlohmann::json> Get(const ResourceRef& ref, std::string_view ns,
                               std::string_view name) override {
    return inner_.Get(ref, ns, name);
  }
  StatusOr<ObjectList> List(const ResourceRef& ref, std::string_view ns,
                            const ListOptions& options) override {
    return inner_.List(ref, ns, options);
  }
  StatusOr<ObjectList> ListEach(const ResourceRef& ref, std::string_view ns,
                                const ListOptions& options,
                                const std::function<void(nlohmann::json&& item)>& visit) override {
    return inner_.ListEach(ref, ns, options, visit);
  }
  StatusOr<nlohmann::json> Create(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override {
    return inner_.Create(ref, ns, object, options);
  }
  StatusOr<nlohmann::json> Update(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override {
    return inner_.Update(ref, ns, object, options);
  }
  StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref, std::string_view ns,
                                        const nlohmann::json& object,
                                        const WriteOptions& options) override {
    return inner_.UpdateStatus(ref, ns, object, options);
  }
  StatusOr<nlohmann::json> Patch(const ResourceRef& ref, std::string_view ns, std::string_view name,
                                 PatchType type, const nlohmann::json& patch,
                                 const PatchOptions& options) override {
    return inner_.Patch(ref, ns, name, type, patch, options);
  }
  Status Delete(const ResourceRef& ref, std::string_view ns, std::string_view name,
                const DeleteOptions& options) override {
    return inner_.Delete(ref, ns, name, options);
  }
  void ReserveRequests(int count) override { inner_.ReserveRequests(count); }
  Status Watch(const ResourceRef& ref, std::string_view ns, const WatchOptions& options,
               std::stop_token stop, const WatchHandler& handler) override {
    return inner_.Watch(ref, ns, options, std::move(stop), handler);
  }

 private:
  KubeClient& inner_;
};

}  // namespace ayatori::kube::testing
