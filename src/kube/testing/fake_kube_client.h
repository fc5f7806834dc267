// An in-memory KubeClient for unit tests of code that talks to the API (the controller, the
// informer, leader election, events). It keeps objects per resource and behaves like the API
// server where callers branch on it:
//  - resourceVersion: one global counter; stale resourceVersion on update/patch -> kConflict;
//  - create: generateName, uid, creationTimestamp, generation 1; duplicates -> kAlreadyExists;
//  - status subresource: Update keeps the stored status, UpdateStatus writes only the status;
//    generation increases when anything but metadata and status changes;
//  - delete: preconditions (uid, resourceVersion) -> kConflict; finalizers set deletionTimestamp
//    (and bump generation, as the API server does for a graceful deletion) and the object goes
//    away when an update empties its finalizers;
//  - creationTimestamp and deletionTimestamp come from SetClock()'s clock (default: the system
//    clock);
//  - patches: merge, JSON (a failed "test" op -> kInvalid), strategic treated as merge;
//  - list: label selectors (=, ==, !=, exists, !key, in, notin), metadata.name/namespace field
//    selectors, limit/continue pagination;
//  - list and watch with metadataOnly: objects as PartialObjectMetadata (metadata only);
//  - watch: replays history after a resourceVersion, kGone for one older than Compact(),
//    bookmarks on SendBookmark(), CloseWatches() ends streams like a server timeout.
// Every call is recorded as an Action; FailNext() injects errors.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ayatori/clock.h"
#include "ayatori/kube_client.h"

namespace ayatori::kube::testing {

struct Action {
  std::string verb;      // get list watch create update patch delete
  std::string resource;  // ResourceRef::GroupResource()
  std::string namespace_;
  std::string name;
  std::string subresource;
  nlohmann::json body;  // object or patch, when the call had one
};

class FakeKubeClient final : public KubeClient {
 public:
  FakeKubeClient();
  ~FakeKubeClient() override;

  StatusOr<nlohmann::json> Get(const ResourceRef& ref, std::string_view ns,
                               std::string_view name) override;
  StatusOr<ObjectList> List(const ResourceRef& ref, std::string_view ns,
                            const ListOptions& options) override;
  StatusOr<nlohmann::json> Create(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override;
  StatusOr<nlohmann::json> Update(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override;
  StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref, std::string_view ns,
                                        const nlohmann::json& object,
                                        const WriteOptions& options) override;
  StatusOr<nlohmann::json> Patch(const ResourceRef& ref, std::string_view ns, std::string_view name,
                                 PatchType type, const nlohmann::json& patch,
                                 const PatchOptions& options) override;
  Status Delete(const ResourceRef& ref, std::string_view ns, std::string_view name,
                const DeleteOptions& options) override;
  Status Watch(const ResourceRef& ref, std::string_view ns, const WatchOptions& options,
               std::stop_token stop, const WatchHandler& handler) override;

  // --- test controls ---
  // The clock of creationTimestamp and deletionTimestamp (a FakeClock for tests that reason about
  // time); it must outlive this client. nullptr: the system clock.
  void SetClock(const Clock* clock);
  // The next `times` calls of `verb` ("*" = any) on `resource` (GroupResource, "*" = any) fail
  // with `status` (recorded as actions all the same).
  void FailNext(std::string verb, std::string resource, Status status, int times = 1);
  void ClearFailures();
  // Resource kinds without a status subresource (Update then writes status too).
  void DisableStatusSubresource(const ResourceRef& ref);
  // Forgets watch history: watches from an older resourceVersion get kGone.
  void Compact();
  // Ends every open watch as the server does on timeout (Watch returns OK).
  void CloseWatches();
  // Sends a BOOKMARK with the current resourceVersion to watches that allow bookmarks.
  void SendBookmark();
  size_t OpenWatches() const;
  // Waits until at least `n` watches are open; false on timeout.
  bool WaitForWatches(size_t n, std::chrono::milliseconds timeout) const;

  std::vector<Action> Actions() const;
  void ClearActions();
  // Number of recorded actions with this verb ("*" = any) on this resource ("*" = any).
  size_t CountActions(std::string_view verb, std::string_view resource = "*") const;
  // Writes (create, update, patch, delete) recorded for one object.
  size_t CountWrites(const ResourceRef& ref, std::string_view ns, std::string_view name) const;

  // The stored object, without recording an action.
  std::optional<nlohmann::json> Peek(const ResourceRef& ref, std::string_view ns,
                                     std::string_view name) const;
  // Every stored object of a resource (of one namespace; "" = all), without recording an action.
  std::vector<nlohmann::json> PeekAll(const ResourceRef& ref, std::string_view ns = "") const;
  int64_t CurrentResourceVersion() const;

 private:
  struct Stored {
    nlohmann::json object;
  };
  struct HistoryEntry {
    int64_t rv;
    std::string resource;
    WatchEventType type;
    nlohmann::json object;
  };
  struct Failure {
    std::string verb, resource;
    Status status;
    int times;
  };
  using Key = std::string;  // resource + "\n" + namespace + "\n" + name

  static Key MakeKey(const ResourceRef& ref, std::string_view ns, std::string_view name);
  std::optional<Status> RecordLocked(const ResourceRef& ref, std::string_view verb,
                                     std::string_view ns, std::string_view name,
                                     std::string_view subresource, const nlohmann::json& body);
  void EmitLocked(const ResourceRef& ref, WatchEventType type, const nlohmann::json& object);
  StatusOr<nlohmann::json> WriteLocked(const ResourceRef& ref, std::string_view ns,
                                       nlohmann::json object, bool statusOnly, bool isPatch);
  bool HasStatusSubresource(const ResourceRef& ref) const;
  struct WatchFilter;
  // Where a watch starts (the resourceVersion to follow from), and the ADDED events of a watch
  // without one; kGone for a version older than the last compaction.
  StatusOr<int64_t> WatchStartLocked(const WatchFilter& filter,
                                     std::vector<WatchEvent>* pending) const;
  // The events after *cursor that the filter matches, and a bookmark when one was asked for.
  void CollectEventsLocked(const WatchFilter& filter, int64_t* cursor, uint64_t* bookmarkGen,
                           std::vector<WatchEvent>* pending) const;
  std::chrono::system_clock::time_point NowLocked() const;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<Key, Stored> objects_;
  std::vector<Action> actions_;
  std::deque<HistoryEntry> history_;
  std::vector<Failure> failures_;
  std::vector<std::string> noStatusSubresource_;
  int64_t rv_ = 100;
  int64_t compactedRv_ = 0;
  uint64_t closeGeneration_ = 0;
  uint64_t bookmarkGeneration_ = 0;
  size_t openWatches_ = 0;
  uint64_t uidCounter_ = 0;
  const Clock* clock_ = nullptr;
};

// Label selector matching as the API server does it (equality- and set-based requirements).
// Returns false for a malformed selector and sets *error.
bool MatchesLabelSelector(std::string_view selector,
                          const std::map<std::string, std::string>& labels, std::string* error);

}  // namespace ayatori::kube::testing
