// What the controller needs from the Kubernetes API, as a small abstract interface: the real
// implementation is kube::RestClient (src/kube/rest_client.h, libcurl); unit tests use
// kube::testing::FakeKubeClient (src/kube/testing/fake_kube_client.h). Objects travel as
// nlohmann::json documents; typed conversion belongs to the caller (src/api/json.h).
//
// Errors come back as ayatori::Status with the Kubernetes error class in the code: kNotFound,
// kAlreadyExists, kConflict, kGone, kInvalid, kForbidden, kUnauthorized, kTooManyRequests,
// kInvalidArgument (400), kServerError (5xx), kUnavailable (transport: refused, TLS, timeout).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "ayatori/status.h"

namespace ayatori {

// A kind of the API, addressed by its resource: group "" is the core group (/api/v1).
struct ResourceRef {
  std::string group;     // "", "batch", "coordination.k8s.io", "execution.ayatori.ddupan.top"
  std::string version;   // "v1", "v1alpha1"
  std::string resource;  // lower-case plural: "configmaps", "jobs", "leases"
  bool namespaced = true;

  // "v1" for the core group, else "group/version": the apiVersion of the objects.
  std::string GroupVersion() const { return group.empty() ? version : group + "/" + version; }
  // "configmaps" or "jobs.execution.ayatori.ddupan.top": for messages and metrics.
  std::string GroupResource() const { return group.empty() ? resource : resource + "." + group; }
  bool operator==(const ResourceRef&) const = default;
};

struct ListOptions {
  std::string labelSelector;
  std::string fieldSelector;
  std::string resourceVersion;       // "" = most recent (a consistent read)
  std::string resourceVersionMatch;  // "", "NotOlderThan" or "Exact"
  int64_t limit = 0;                 // page size; 0 = everything in one response
  std::string continueToken;         // from the previous page
  // Items come as PartialObjectMetadata (kind, apiVersion meta.k8s.io/v1 and metadata only, no
  // data or spec): the API server is asked for them by the Accept header, so the content never
  // travels. For caches that only need to know that an object exists or changed.
  bool metadataOnly = false;
};

struct ObjectList {
  std::vector<nlohmann::json> items;
  std::string resourceVersion;  // of the list: watch from here
  std::string continueToken;    // non-empty while more pages remain
};

struct WriteOptions {
  std::string fieldManager;  // recorded in managedFields; empty = the client's user agent
  bool dryRun = false;
};

enum class PatchType {
  kMerge,           // application/merge-patch+json (RFC 7386)
  kJson,            // application/json-patch+json (RFC 6902), supports "test" operations
  kStrategicMerge,  // application/strategic-merge-patch+json (built-in kinds only)
  kApply,           // application/apply-patch+yaml (server-side apply; body is JSON)
};

struct PatchOptions {
  std::string subresource;  // "" or "status"
  std::string fieldManager;
  bool force = false;  // server-side apply only
  bool dryRun = false;
};

struct DeleteOptions {
  std::optional<std::string> preconditionUid;              // 409 Conflict when it differs
  std::optional<std::string> preconditionResourceVersion;  // 409 Conflict when it differs
  std::string propagationPolicy;                           // "", Foreground, Background, Orphan
  std::optional<int64_t> gracePeriodSeconds;
  bool dryRun = false;
};

struct WatchOptions {
  std::string labelSelector;
  std::string fieldSelector;
  std::string resourceVersion;  // start after this version; "" = current state as ADDED events
  bool allowWatchBookmarks = true;
  int64_t timeoutSeconds = 0;  // server closes the stream after this; 0 = server default
  bool metadataOnly = false;   // event objects as PartialObjectMetadata (see ListOptions)
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark };

const char* WatchEventTypeName(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  // for kBookmark only metadata.resourceVersion is meaningful
};

// Returns false to end the watch.
using WatchHandler = std::function<bool(WatchEvent&& event)>;

class KubeClient {
 public:
  virtual ~KubeClient() = default;

  // `ns` is ignored for cluster-scoped resources; "" lists or watches all namespaces.
  virtual StatusOr<nlohmann::json> Get(const ResourceRef& ref, std::string_view ns,
                                       std::string_view name) = 0;
  // One page; see ListAll for every page.
  virtual StatusOr<ObjectList> List(const ResourceRef& ref, std::string_view ns,
                                    const ListOptions& options) = 0;
  // One page like List(), handing each item to `visit` as soon as it is decoded, so the page is
  // never one document in memory; the returned list carries no items. The default calls List().
  virtual StatusOr<ObjectList> ListEach(const ResourceRef& ref, std::string_view ns,
                                        const ListOptions& options,
                                        const std::function<void(nlohmann::json&& item)>& visit);
  virtual StatusOr<nlohmann::json> Create(const ResourceRef& ref, std::string_view ns,
                                          const nlohmann::json& object,
                                          const WriteOptions& options) = 0;
  // PUT of the whole object; object.metadata.name names it and object.metadata.resourceVersion,
  // when set, is the optimistic-concurrency precondition (409 Conflict when stale).
  virtual StatusOr<nlohmann::json> Update(const ResourceRef& ref, std::string_view ns,
                                          const nlohmann::json& object,
                                          const WriteOptions& options) = 0;
  // PUT to the /status subresource: only the status is written.
  virtual StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref, std::string_view ns,
                                                const nlohmann::json& object,
                                                const WriteOptions& options) = 0;
  virtual StatusOr<nlohmann::json> Patch(const ResourceRef& ref, std::string_view ns,
                                         std::string_view name, PatchType type,
                                         const nlohmann::json& patch,
                                         const PatchOptions& options) = 0;
  // OK also when the object stays (finalizers pending) with a deletionTimestamp.
  virtual Status Delete(const ResourceRef& ref, std::string_view ns, std::string_view name,
                        const DeleteOptions& options) = 0;
  // Blocks and calls `handler` for each event until the server ends the stream (OK), the handler
  // returns false (OK), `stop` is requested (kCancelled), or an error: a watch ERROR event or
  // HTTP error is returned decoded, e.g. kGone when options.resourceVersion is too old.
  virtual Status Watch(const ResourceRef& ref, std::string_view ns, const WatchOptions& options,
                       std::stop_token stop, const WatchHandler& handler) = 0;
  // Waits now for the client-side rate limiter's tokens of the calling thread's next `count`
  // requests, which then go out without waiting: for requests that must follow each other
  // closely (the fresh read of a Job right before its execution's create). 0 gives back what
  // the thread has left unused. The default does nothing (clients without a rate limiter).
  virtual void ReserveRequests(int /*count*/) {}
};

// Lists every page (options.limit is the page size), calling `visit` per item so a large list is
// never held whole. Returns the resourceVersion of the list, from which to watch.
StatusOr<std::string> ListAll(KubeClient& client, const ResourceRef& ref, std::string_view ns,
                              const ListOptions& options,
                              const std::function<void(nlohmann::json&& item)>& visit);

}  // namespace ayatori
