// A KubeClient decorator that counts the write requests made through it, per object: tests
// measure what the controller costs the API server (docs/design.md § Targets: API writes per Job)
// without the controller keeping per-Job books. Hand it to the code under test and keep using
// the wrapped client for the test's own requests, so only the code under test is counted.
//
// A write is any create, update (also of /status), patch or delete sent, whether the server
// accepted it or not (a refused write still cost a request); reads and watches are forwarded
// uncounted; each write is logged with its verb and result. A write is counted before it is sent
// (its result filled in when the answer comes): a test that sees its effect on the API server
// sees it counted. Thread-safe: the controller's workers write concurrently.
//
//   WriteCountingKubeClient counting(restClient);
//   JobController controller(counting, ...);
//   ... counting.Writes(controller::kJobs, "ns", "name")
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ayatori/kube_client.h"
#include "kube/testing/forwarding_kube_client.h"

namespace ayatori::testing {

class WriteCountingKubeClient final : public kube::testing::ForwardingKubeClient {
 public:
  explicit WriteCountingKubeClient(KubeClient& inner)
      : ForwardingKubeClient(inner), inner_(inner) {}

  // Writes sent for the object ns/name of `ref` (ns is ignored for cluster-scoped kinds).
  uint64_t Writes(const ResourceRef& ref, std::string_view ns, std::string_view name) const {
    std::lock_guard lock(mu_);
    auto it = writes_.find(Key(ref, ns, name));
    return it == writes_.end() ? 0 : it->second.size();
  }
  // What those writes were, in order, e.g. "PATCH merge /status: ok" or "DELETE: 409 ...": a test
  // whose bound fails prints them, so the extra write is named.
  std::vector<std::string> WriteLog(const ResourceRef& ref, std::string_view ns,
                                    std::string_view name) const {
    std::lock_guard lock(mu_);
    auto it = writes_.find(Key(ref, ns, name));
    return it == writes_.end() ? std::vector<std::string>{} : it->second;
  }
  // Writes sent for any object.
  uint64_t TotalWrites() const {
    std::lock_guard lock(mu_);
    uint64_t total = 0;
    for (const auto& [key, log] : writes_) total += log.size();
    return total;
  }

  StatusOr<nlohmann::json> Create(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override {
    const std::string name = NameOf(object);
    if (name.empty()) {  // generateName: the name is known only from the server's answer
      auto r = inner_.Create(ref, ns, object, options);
      if (r.ok()) Finish(Begin(ref, ns, NameOf(*r), "CREATE"), r.status());
      return r;
    }
    const Entry entry = Begin(ref, ns, name, "CREATE");
    auto r = inner_.Create(ref, ns, object, options);
    Finish(entry, r.status());
    return r;
  }
  StatusOr<nlohmann::json> Update(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override {
    const Entry entry = Begin(ref, ns, NameOf(object), "UPDATE");
    auto r = inner_.Update(ref, ns, object, options);
    Finish(entry, r.status());
    return r;
  }
  StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref, std::string_view ns,
                                        const nlohmann::json& object,
                                        const WriteOptions& options) override {
    const Entry entry = Begin(ref, ns, NameOf(object), "UPDATE /status");
    auto r = inner_.UpdateStatus(ref, ns, object, options);
    Finish(entry, r.status());
    return r;
  }
  StatusOr<nlohmann::json> Patch(const ResourceRef& ref, std::string_view ns, std::string_view name,
                                 PatchType type, const nlohmann::json& patch,
                                 const PatchOptions& options) override {
    const Entry entry = Begin(ref, ns, name, PatchVerb(type, options.subresource));
    auto r = inner_.Patch(ref, ns, name, type, patch, options);
    Finish(entry, r.status());
    return r;
  }
  Status Delete(const ResourceRef& ref, std::string_view ns, std::string_view name,
                const DeleteOptions& options) override {
    const Entry entry = Begin(ref, ns, name, "DELETE");
    Status r = inner_.Delete(ref, ns, name, options);
    Finish(entry, r);
    return r;
  }

 private:
  static std::string Key(const ResourceRef& ref, std::string_view ns, std::string_view name) {
    std::string key = ref.GroupResource();
    key += '/';
    if (ref.namespaced) key.append(ns);
    key += '/';
    key.append(name);
    return key;
  }
  static std::string NameOf(const nlohmann::json& object) {
    static const nlohmann::json::json_pointer kName("/metadata/name");
    if (!object.is_object() || !object.contains(kName) || !object.at(kName).is_string()) return "";
    return object.at(kName).get<std::string>();
  }
  static std::string PatchVerb(PatchType type, std::string_view subresource) {
    std::string verb = "PATCH ";
    switch (type) {
      case PatchType::kMerge:
        verb += "merge";
        break;
      case PatchType::kJson:
        verb += "json";
        break;
      case PatchType::kStrategicMerge:
        verb += "strategic";
        break;
      case PatchType::kApply:
        verb += "apply";
        break;
    }
    if (!subresource.empty()) (verb += " /") += subresource;
    return verb;
  }
  // A write counted before it is sent: its log line says so until Finish gives its result.
  struct Entry {
    std::string key;
    size_t index = 0;
    std::string verb;
  };
  Entry Begin(const ResourceRef& ref, std::string_view ns, std::string_view name,
              std::string verb) {
    Entry e{Key(ref, ns, name), 0, std::move(verb)};
    std::lock_guard lock(mu_);
    std::vector<std::string>& log = writes_[e.key];
    e.index = log.size();
    log.push_back(e.verb + ": (sent, no answer yet)");
    return e;
  }
  void Finish(const Entry& e, const Status& result) {
    std::lock_guard lock(mu_);
    writes_[e.key][e.index] = e.verb + ": " + (result.ok() ? "ok" : result.ToString());
  }

  KubeClient& inner_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::string>> writes_;
};

}  // namespace ayatori::testing
