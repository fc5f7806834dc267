// List/watch reflector with a cache of compact typed objects (client-go's SharedInformer, minus
// the sharing): lists (paginated), then watches from the list's resourceVersion with bookmarks,
// resumes from the last seen resourceVersion after a dropped stream, relists on 410 Gone, and
// keeps a cache keyed "namespace/name" of what a user-supplied decode function makes of each
// object (managedFields stripped first). One thread per informer (per namespace, with
// InformerOptions::namespaces); handlers run on it.
//
//   kube::Informer<api::Job> jobs(client, JobsResource(), {}, [](const nlohmann::json& j) {
//     return std::make_shared<const api::Job>(DecodeJob(j));   // nullptr = skip (decode error)
//   });
//   jobs.AddHandlers({.onAdd = [&](const std::string& key, auto&) { queue.Add(key); }, ...});
//   jobs.Start();
//   jobs.WaitForSync(std::chrono::seconds(30));
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::kube {

struct InformerOptions {
  std::string namespace_;  // "" = all namespaces (and cluster-scoped kinds)
  // Several namespaces (namespace_ then unused): one list and watch per namespace, each on its
  // own thread, and one cache of their union. For an install whose RBAC grants the namespaced
  // kinds only in some namespaces (Roles), where a list of all namespaces is forbidden.
  std::vector<std::string> namespaces;
  std::string labelSelector;
  std::string fieldSelector;
  // List and watch PartialObjectMetadata (ListOptions::metadataOnly): the decoder gets
  // {kind, apiVersion, metadata} and never the object's content.
  bool metadataOnly = false;
  int64_t pageSize = 500;  // list page size
  // The server ends each watch after a random time in [watchTimeout, 2*watchTimeout); the
  // informer then resumes from its last resourceVersion.
  std::chrono::seconds watchTimeout{300};
  std::chrono::milliseconds initialBackoff{800};  // after a failed list or watch, doubling
  std::chrono::milliseconds maxBackoff{30000};
  // Annotations removed before decoding: controllers never need them and they can be as large as
  // the object itself.
  std::vector<std::string> dropAnnotations = {"kubectl.kubernetes.io/last-applied-configuration"};
  std::string name;  // for messages; defaults to the resource
  // Receives list/watch/decode errors (one line each); nullptr = stderr.
  std::function<void(const std::string&)> log;
};

struct InformerStats {
  uint64_t lists = 0;             // complete lists (initial and relists)
  uint64_t watches = 0;           // watch streams opened
  uint64_t relistsAfterGone = 0;  // 410 Gone from a watch
  uint64_t watchErrors = 0;       // watches that ended with an error other than Gone
  uint64_t listErrors = 0;
  uint64_t decodeErrors = 0;
  uint64_t events = 0;  // ADDED/MODIFIED/DELETED applied
  uint64_t bookmarks = 0;
  std::string lastResourceVersion;
};

// The untyped machinery behind Informer<T>; objects are whatever the decoder returns.
class InformerCore {
 public:
  using Object = std::shared_ptr<const void>;
  using Decoder = std::function<Object(const nlohmann::json&)>;
  struct Handlers {
    std::function<void(const std::string& key, const Object& obj)> onAdd;
    std::function<void(const std::string& key, const Object& oldObj, const Object& newObj)>
        onUpdate;
    // `obj` is the last state known: the deleted object's final state when the watch delivered
    // it, else (deletion noticed by a relist) the cached one.
    std::function<void(const std::string& key, const Object& obj)> onDelete;
  };
  using IndexFunc = std::function<std::vector<std::string>(const Object&)>;

  InformerCore(KubeClient& client, ResourceRef ref, InformerOptions options, Decoder decode);
  ~InformerCore();
  InformerCore(const InformerCore&) = delete;
  InformerCore& operator=(const InformerCore&) = delete;

  // Handlers added after Start() first receive onAdd for every cached object.
  void AddHandlers(Handlers handlers);
  // Secondary index: `fn` returns the index values of an object. Add before Start().
  void AddIndex(const std::string& name, IndexFunc fn);

  // An informer runs once: Start() after Stop() does nothing (a cache that stopped following
  // the server is never trusted again; a new informer lists afresh).
  void Start();
  void Stop();  // ends the watch at once and joins the thread; idempotent and final

  bool HasSynced() const;
  // Waits until the first list is in the cache and its handlers ran; false on timeout, when
  // `cancel` is requested, or at once when the informer was stopped before it synced.
  bool WaitForSync(std::chrono::milliseconds timeout, std::stop_token cancel = {}) const;

  Object Get(std::string_view key) const;
  std::vector<Object> List() const;
  std::vector<std::string> Keys() const;
  // Calls fn(key, object) for every cached object, under the cache's read lock: fn must not call
  // back into this informer.
  void ForEach(const std::function<void(const std::string&, const Object&)>& fn) const;
  std::vector<Object> ByIndex(const std::string& index, const std::string& value) const;
  // The keys of the objects ByIndex would return.
  std::vector<std::string> IndexKeys(const std::string& index, const std::string& value) const;
  size_t Size() const;
  InformerStats Stats() const;
  const ResourceRef& resource() const { return ref_; }

  // Ends the current watch stream as a dropped connection would; the informer resumes from its
  // last resourceVersion. For tests of the resume path.
  void AbortWatchForTest();

 private:
  struct Entry {
    Object obj;
    std::string resourceVersion;
  };
  struct Index {
    IndexFunc fn;
    // Index value -> keys. A vector, not a set: values name few objects (a Job UID names one
    // pod), and a set costs a bucket array and a node per value, ~150 B more per object.
    std::unordered_map<std::string, std::vector<std::string>> keys;
  };

  void Run(const std::stop_token& stop);
  Status ListAndReplace(const std::stop_token& stop);
  Status WatchOnce(const std::stop_token& stop);
  bool HandleEvent(WatchEvent&& ev);
  Object Decode(nlohmann::json& obj);
  void Log(const std::string& line) const;
  bool SleepFor(const std::stop_token& stop, std::chrono::milliseconds d);
  static void AddToIndex(Index& idx, const std::string& key, const Object& obj);
  void IndexAddLocked(const std::string& key, const Object& obj);
  void IndexRemoveLocked(const std::string& key, const Object& obj);

  KubeClient& client_;
  const ResourceRef ref_;
  const InformerOptions options_;
  const Decoder decode_;
  std::string name_;

  mutable std::shared_mutex cacheMu_;
  std::unordered_map<std::string, Entry> cache_;
  std::unordered_map<std::string, Index> indexes_;

  std::mutex handlersMu_;  // held while dispatching, so handlers see events in order
  std::vector<Handlers> handlers_;

  mutable std::mutex stateMu_;
  mutable std::condition_variable_any syncedCv_;
  bool synced_ = false;
  bool stopped_ = false;
  InformerStats stats_;
  std::stop_source* currentWatch_ = nullptr;

  std::jthread thread_;
};

// One InformerCore per namespace of InformerOptions::namespaces (one for namespace_ otherwise),
// seen as one: keys are "namespace/name", so the caches never overlap. Handlers run on the
// thread of the namespace's core; one key's events always come from the same core, in order.
class InformerGroup {
 public:
  using Object = InformerCore::Object;
  InformerGroup(KubeClient& client, const ResourceRef& ref, const InformerOptions& options,
                const InformerCore::Decoder& decode);

  void AddHandlers(const InformerCore::Handlers& handlers);
  void AddIndex(const std::string& name, const InformerCore::IndexFunc& fn);
  void Start();
  void Stop();
  bool HasSynced() const;
  bool WaitForSync(std::chrono::milliseconds timeout, const std::stop_token& cancel) const;
  Object Get(std::string_view key) const;
  std::vector<Object> List() const;
  std::vector<std::string> Keys() const;
  void ForEach(const std::function<void(const std::string&, const Object&)>& fn) const;
  std::vector<Object> ByIndex(const std::string& index, const std::string& value) const;
  std::vector<std::string> IndexKeys(const std::string& index, const std::string& value) const;
  size_t Size() const;
  // Counters summed over the namespaces; lastResourceVersion only with a single core (the
  // streams' versions are not comparable positions of one stream).
  InformerStats Stats() const;
  const ResourceRef& resource() const { return cores_.front()->resource(); }
  void AbortWatchForTest();

 private:
  std::vector<std::unique_ptr<InformerCore>> cores_;
};

template <typename T>
class Informer {
 public:
  using Ptr = std::shared_ptr<const T>;
  using Decoder = std::function<Ptr(const nlohmann::json&)>;
  struct Handlers {
    std::function<void(const std::string& key, const Ptr& obj)> onAdd;
    std::function<void(const std::string& key, const Ptr& oldObj, const Ptr& newObj)> onUpdate;
    std::function<void(const std::string& key, const Ptr& obj)> onDelete;
  };

  Informer(KubeClient& client, const ResourceRef& ref, const InformerOptions& options,
           Decoder decode)
      : core_(client, ref, options,
              [d = std::move(decode)](const nlohmann::json& j) -> InformerCore::Object {
                return d(j);
              }) {}

  void AddHandlers(Handlers h) {
    InformerCore::Handlers c;
    if (h.onAdd) {
      c.onAdd = [f = std::move(h.onAdd)](const std::string& k, const InformerCore::Object& o) {
        f(k, Cast(o));
      };
    }
    if (h.onUpdate) {
      c.onUpdate = [f = std::move(h.onUpdate)](const std::string& k, const InformerCore::Object& o,
                                               const InformerCore::Object& n) {
        f(k, Cast(o), Cast(n));
      };
    }
    if (h.onDelete) {
      c.onDelete = [f = std::move(h.onDelete)](const std::string& k,
                                               const InformerCore::Object& o) { f(k, Cast(o)); };
    }
    core_.AddHandlers(c);
  }
  void AddIndex(const std::string& name, std::function<std::vector<std::string>(const T&)> fn) {
    core_.AddIndex(name, [f = std::move(fn)](const InformerCore::Object& o) {
      return f(*static_cast<const T*>(o.get()));
    });
  }

  void Start() { core_.Start(); }
  void Stop() { core_.Stop(); }
  bool HasSynced() const { return core_.HasSynced(); }
  bool WaitForSync(std::chrono::milliseconds timeout, const std::stop_token& cancel = {}) const {
    return core_.WaitForSync(timeout, cancel);
  }

  Ptr Get(std::string_view key) const { return Cast(core_.Get(key)); }
  std::vector<Ptr> List() const { return CastAll(core_.List()); }
  std::vector<std::string> Keys() const { return core_.Keys(); }
  // fn(key, object) for every cached object, under the read lock: fn must not call back in.
  void ForEach(const std::function<void(const std::string&, const T&)>& fn) const {
    core_.ForEach([&](const std::string& key, const InformerCore::Object& obj) {
      if (obj) fn(key, *static_cast<const T*>(obj.get()));
    });
  }
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
    return CastAll(core_.ByIndex(index, value));
  }
  std::vector<std::string> IndexKeys(const std::string& index, const std::string& value) const {
    return core_.IndexKeys(index, value);
  }
  size_t Size() const { return core_.Size(); }
  InformerStats Stats() const { return core_.Stats(); }
  void AbortWatchForTest() { core_.AbortWatchForTest(); }

 private:
  static Ptr Cast(const InformerCore::Object& o) { return std::static_pointer_cast<const T>(o); }
  static std::vector<Ptr> CastAll(const std::vector<InformerCore::Object>& v) {
    std::vector<Ptr> out;
    out.reserve(v.size());
    for (const auto& o : v) out.push_back(Cast(o));
    return out;
  }

  InformerGroup core_;
};

}  // namespace ayatori::kube
