#include "kube/testing/fake_kube_client.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "kube/object_metadata.h"
#include "kube/resource.h"
#include "kube/time_format.h"

namespace ayatori::kube::testing {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Splits at commas outside parentheses.
std::vector<std::string_view> SplitTop(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')') --depth;
    if (s[i] == ',' && depth == 0) {
      out.push_back(Trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  out.push_back(Trim(s.substr(start)));
  return out;
}

std::map<std::string, std::string> LabelsOf(const nlohmann::json& obj) {
  std::map<std::string, std::string> out;
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return out;
  auto l = md->find("labels");
  if (l == md->end() || !l->is_object()) return out;
  for (auto it = l->begin(); it != l->end(); ++it) {
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

std::string Str(const nlohmann::json& obj, const char* a, const char* b) {
  auto x = obj.find(a);
  if (x == obj.end() || !x->is_object()) return "";
  auto y = x->find(b);
  if (y == x->end() || !y->is_string()) return "";
  return y->get<std::string>();
}

bool MatchesFields(std::string_view selector, const nlohmann::json& obj, std::string* error) {
  if (Trim(selector).empty()) return true;
  for (auto req : SplitTop(selector)) {
    bool negate = false;
    size_t op = req.find("!=");
    size_t valueAt;
    if (op != std::string_view::npos) {
      negate = true;
      valueAt = op + 2;
    } else if ((op = req.find("==")) != std::string_view::npos) {
      valueAt = op + 2;
    } else if ((op = req.find('=')) != std::string_view::npos) {
      valueAt = op + 1;
    } else {
      *error = "invalid field selector requirement " + std::string(req);
      return false;
    }
    std::string_view field = Trim(req.substr(0, op));
    std::string_view value = Trim(req.substr(valueAt));
    std::string actual;
    if (field == "metadata.name") {
      actual = Str(obj, "metadata", "name");
    } else if (field == "metadata.namespace") {
      actual = Str(obj, "metadata", "namespace");
    } else {
      *error = "field label not supported: " + std::string(field);
      return false;
    }
    if ((actual == value) == negate) return false;
  }
  return true;
}

std::string NewUid(uint64_t n) {
  static const uint64_t prefix = std::random_device{}();
  char buf[48];
  std::snprintf(buf, sizeof buf, "%08llx-0000-4000-8000-%012llx",
                static_cast<unsigned long long>(prefix & 0xffffffffULL),
                static_cast<unsigned long long>(n));
  return buf;
}

std::string RandomSuffix() {
  static thread_local std::mt19937 rng{std::random_device{}()};
  static constexpr char kChars[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i) s.push_back(kChars[rng() % (sizeof kChars - 1)]);
  return s;
}

// The object without metadata and status: what the generation counts changes of.
nlohmann::json SpecPart(const nlohmann::json& obj) {
  nlohmann::json j = obj;
  if (j.is_object()) {
    j.erase("metadata");
    j.erase("status");
  }
  return j;
}

bool HasFinalizers(const nlohmann::json& obj) {
  auto md = obj.find("metadata");
  if (md == obj.end()) return false;
  auto f = md->find("finalizers");
  return f != md->end() && f->is_array() && !f->empty();
}

}  // namespace

bool MatchesLabelSelector(std::string_view selector,
                          const std::map<std::string, std::string>& labels, std::string* error) {
  if (Trim(selector).empty()) return true;
  for (auto req : SplitTop(selector)) {
    if (req.empty()) {
      *error = "empty requirement in label selector";
      return false;
    }
    if (req.front() == '!') {
      if (labels.count(std::string(Trim(req.substr(1)))) != 0) return false;
      continue;
    }
    auto paren = req.find('(');
    if (paren != std::string_view::npos) {
      std::string_view head = Trim(req.substr(0, paren));
      bool notin;
      std::string_view key;
      if (head.size() > 6 && head.substr(head.size() - 6) == " notin") {
        notin = true;
        key = Trim(head.substr(0, head.size() - 6));
      } else if (head.size() > 3 && head.substr(head.size() - 3) == " in") {
        notin = false;
        key = Trim(head.substr(0, head.size() - 3));
      } else {
        *error = "invalid set requirement " + std::string(req);
        return false;
      }
      auto close = req.rfind(')');
      if (close == std::string_view::npos || close < paren) {
        *error = "unbalanced parentheses in " + std::string(req);
        return false;
      }
      std::vector<std::string> values;
      std::string_view inner = req.substr(paren + 1, close - paren - 1);
      for (auto v : SplitTop(inner)) values.emplace_back(v);
      auto it = labels.find(std::string(key));
      bool in =
          it != labels.end() && std::find(values.begin(), values.end(), it->second) != values.end();
      if (notin ? in : !in) return false;
      continue;
    }
    size_t op;
    if ((op = req.find("!=")) != std::string_view::npos) {
      auto it = labels.find(std::string(Trim(req.substr(0, op))));
      if (it != labels.end() && it->second == Trim(req.substr(op + 2))) return false;
    } else if ((op = req.find("==")) != std::string_view::npos) {
      auto it = labels.find(std::string(Trim(req.substr(0, op))));
      if (it == labels.end() || it->second != Trim(req.substr(op + 2))) return false;
    } else if ((op = req.find('=')) != std::string_view::npos) {
      auto it = labels.find(std::string(Trim(req.substr(0, op))));
      if (it == labels.end() || it->second != Trim(req.substr(op + 1))) return false;
    } else {
      if (labels.count(std::string(req)) == 0) return false;
    }
  }
  return true;
}

FakeKubeClient::FakeKubeClient() = default;
FakeKubeClient::~FakeKubeClient() = default;

FakeKubeClient::Key FakeKubeClient::MakeKey(const ResourceRef& ref, std::string_view ns,
                                            std::string_view name) {
  std::string k = ref.GroupResource();
  k += '\n';
  if (ref.namespaced) k.append(ns);
  k += '\n';
  k.append(name);
  return k;
}

std::chrono::system_clock::time_point FakeKubeClient::NowLocked() const {
  return clock_ != nullptr ? clock_->Now() : std::chrono::system_clock::now();
}

void FakeKubeClient::SetClock(const Clock* clock) {
  std::lock_guard lock(mu_);
  clock_ = clock;
}

bool FakeKubeClient::HasStatusSubresource(const ResourceRef& ref) const {
  return std::find(noStatusSubresource_.begin(), noStatusSubresource_.end(), ref.GroupResource()) ==
         noStatusSubresource_.end();
}

std::optional<Status> FakeKubeClient::RecordLocked(const ResourceRef& ref, std::string_view verb,
                                                   std::string_view ns, std::string_view name,
                                                   std::string_view subresource,
                                                   const nlohmann::json& body) {
  actions_.push_back(Action{std::string(verb), ref.GroupResource(), std::string(ns),
                            std::string(name), std::string(subresource), body});
  for (auto& f : failures_) {
    if (f.times <= 0) continue;
    if ((f.verb == "*" || f.verb == verb) &&
        (f.resource == "*" || f.resource == ref.GroupResource())) {
      --f.times;
      return f.status;
    }
  }
  return std::nullopt;
}

void FakeKubeClient::EmitLocked(const ResourceRef& ref, WatchEventType type,
                                const nlohmann::json& object) {
  history_.push_back(HistoryEntry{rv_, ref.GroupResource(), type, object});
  if (history_.size() > 200000) history_.pop_front();
  cv_.notify_all();
}

StatusOr<nlohmann::json> FakeKubeClient::Get(const ResourceRef& ref, std::string_view ns,
                                             std::string_view name) {
  std::lock_guard lock(mu_);
  if (auto f = RecordLocked(ref, "get", ns, name, "", nullptr)) return *f;
  auto it = objects_.find(MakeKey(ref, ns, name));
  if (it == objects_.end()) {
    return Status(StatusCode::kNotFound,
                  ref.GroupResource() + " \"" + std::string(name) + "\" not found");
  }
  return it->second.object;
}

StatusOr<ObjectList> FakeKubeClient::List(const ResourceRef& ref, std::string_view ns,
                                          const ListOptions& options) {
  std::lock_guard lock(mu_);
  if (auto f = RecordLocked(ref, "list", ns, "", "", nullptr)) return *f;
  ObjectList list;
  list.resourceVersion = std::to_string(rv_);
  const std::string prefix =
      ref.GroupResource() + "\n" + (ref.namespaced && !ns.empty() ? std::string(ns) + "\n" : "");
  auto it = options.continueToken.empty() ? objects_.lower_bound(prefix)
                                          : objects_.upper_bound(options.continueToken);
  for (; it != objects_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    std::string error;
    if (!MatchesLabelSelector(options.labelSelector, LabelsOf(it->second.object), &error)) {
      if (!error.empty()) return Status(StatusCode::kInvalidArgument, error);
      continue;
    }
    if (!MatchesFields(options.fieldSelector, it->second.object, &error)) {
      if (!error.empty()) return Status(StatusCode::kInvalidArgument, error);
      continue;
    }
    if (options.limit > 0 && static_cast<int64_t>(list.items.size()) == options.limit) {
      list.continueToken = std::prev(it)->first;
      break;
    }
    list.items.push_back(options.metadataOnly ? PartialObjectMetadataOf(it->second.object)
                                              : it->second.object);
  }
  return list;
}

StatusOr<nlohmann::json> FakeKubeClient::Create(const ResourceRef& ref, std::string_view ns,
                                                const nlohmann::json& object,
                                                const WriteOptions& options) {
  std::lock_guard lock(mu_);
  if (auto f = RecordLocked(ref, "create", ns, Str(object, "metadata", "name"), "", object)) {
    return *f;
  }
  if (!object.is_object()) return Status(StatusCode::kInvalidArgument, "object must be JSON");
  nlohmann::json obj = object;
  nlohmann::json& md = obj["metadata"];
  if (!md.is_object()) md = nlohmann::json::object();
  std::string name = md.value("name", "");
  if (name.empty()) {
    std::string gen = md.value("generateName", "");
    if (gen.empty()) {
      return Status(StatusCode::kInvalid,
                    ref.GroupResource() + " is invalid: metadata.name: Required value");
    }
    name = gen + RandomSuffix();
  }
  std::string objNs = std::string(ns);
  if (ref.namespaced) {
    if (objNs.empty()) objNs = md.value("namespace", "");
    if (objNs.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "a namespace is required for " + ref.GroupResource());
    }
    md["namespace"] = objNs;
  } else {
    md.erase("namespace");
  }
  Key key = MakeKey(ref, objNs, name);
  if (objects_.count(key) != 0) {
    return Status(StatusCode::kAlreadyExists,
                  ref.GroupResource() + " \"" + name + "\" already exists");
  }
  if (options.dryRun) return obj;
  md["name"] = name;
  md["uid"] = NewUid(++uidCounter_);
  md["resourceVersion"] = std::to_string(++rv_);
  md["creationTimestamp"] = FormatTime(NowLocked());
  md["generation"] = 1;
  md.erase("deletionTimestamp");
  if (!obj.contains("apiVersion")) obj["apiVersion"] = ref.GroupVersion();
  if (HasStatusSubresource(ref)) obj.erase("status");
  objects_[key] = Stored{obj};
  EmitLocked(ref, WatchEventType::kAdded, obj);
  return obj;
}

StatusOr<nlohmann::json> FakeKubeClient::WriteLocked(const ResourceRef& ref, std::string_view ns,
                                                     nlohmann::json obj, bool statusOnly,
                                                     bool isPatch) {
  std::string name = Str(obj, "metadata", "name");
  Key key = MakeKey(ref, ns, name);
  auto it = objects_.find(key);
  if (it == objects_.end()) {
    return Status(StatusCode::kNotFound, ref.GroupResource() + " \"" + name + "\" not found");
  }
  const nlohmann::json& old = it->second.object;
  std::string wantRv = Str(obj, "metadata", "resourceVersion");
  std::string haveRv = Str(old, "metadata", "resourceVersion");
  if (!wantRv.empty() && wantRv != haveRv) {
    return Status(StatusCode::kConflict,
                  "Operation cannot be fulfilled on " + ref.GroupResource() + " \"" + name +
                      "\": the object has been modified; please apply your changes to the "
                      "latest version and try again");
  }
  (void)isPatch;
  nlohmann::json next;
  if (statusOnly) {
    next = old;
    if (obj.contains("status")) {
      next["status"] = obj["status"];
    } else {
      next.erase("status");
    }
  } else {
    next = obj;
    if (HasStatusSubresource(ref)) {
      if (old.contains("status")) {
        next["status"] = old["status"];
      } else {
        next.erase("status");
      }
    }
    nlohmann::json& md = next["metadata"];
    const nlohmann::json& omd = old["metadata"];
    for (const char* immutable : {"uid", "creationTimestamp", "namespace", "name", "generation"}) {
      if (omd.contains(immutable)) {
        md[immutable] = omd[immutable];
      } else {
        md.erase(immutable);
      }
    }
    if (omd.contains("deletionTimestamp")) {
      md["deletionTimestamp"] = omd["deletionTimestamp"];
    } else {
      md.erase("deletionTimestamp");
    }
    if (SpecPart(next) != SpecPart(old)) md["generation"] = omd.value("generation", 1) + 1;
  }
  next["metadata"]["resourceVersion"] = haveRv;
  if (next == old) return old;  // a no-op write changes nothing, like the API server
  next["metadata"]["resourceVersion"] = std::to_string(++rv_);
  if (next["metadata"].contains("deletionTimestamp") && !HasFinalizers(next)) {
    objects_.erase(it);
    EmitLocked(ref, WatchEventType::kDeleted, next);
    // Like kube-apiserver, the write that removed the last finalizer answers with the object as
    // written but at the resourceVersion it had: the deletion's version is only in the event.
    next["metadata"]["resourceVersion"] = haveRv;
    return next;
  }
  it->second.object = next;
  EmitLocked(ref, WatchEventType::kModified, next);
  return next;
}

StatusOr<nlohmann::json> FakeKubeClient::Update(const ResourceRef& ref, std::string_view ns,
                                                const nlohmann::json& object,
                                                const WriteOptions& options) {
  std::lock_guard lock(mu_);
  if (auto f = RecordLocked(ref, "update", ns, Str(object, "metadata", "name"), "", object)) {
    return *f;
  }
  if (options.dryRun) return object;
  return WriteLocked(ref, ns, object, /*statusOnly=*/false, /*isPatch=*/false);
}

StatusOr<nlohmann::json> FakeKubeClient::UpdateStatus(const ResourceRef& ref, std::string_view ns,
                                                      const nlohmann::json& object,
                                                      const WriteOptions& options) {
  std::lock_guard lock(mu_);
  if (auto f = RecordLocked(ref, "update", ns, Str(object, "metadata", "name"), "status", object)) {
    return *f;
  }
  if (!HasStatusSubresource(ref)) {
    return Status(StatusCode::kNotFound, ref.GroupResource() + " has no status subresource");
  }
  if (options.dryRun) return object;
  return WriteLocked(ref, ns, object, /*statusOnly=*/true, false);
}

StatusOr<nlohmann::json> FakeKubeClient::Patch(const ResourceRef& ref, std::string_view ns,
                                               std::string_view name, PatchType type,
                                               const nlohmann::json& patch,
                                               const PatchOptions& options) {
  std::lock_guard lock(mu_);
  if (auto f = RecordLocked(ref, "patch", ns, name, options.subresource, patch)) return *f;
  if (!options.subresource.empty() &&
      (options.subresource != "status" || !HasStatusSubresource(ref))) {
    return Status(StatusCode::kNotFound,
                  ref.GroupResource() + " has no subresource " + options.subresource);
  }
  auto it = objects_.find(MakeKey(ref, ns, name));
  if (it == objects_.end()) {
    return Status(StatusCode::kNotFound,
                  ref.GroupResource() + " \"" + std::string(name) + "\" not found");
  }
  const nlohmann::json& old = it->second.object;
  nlohmann::json patched;
  switch (type) {
    case PatchType::kMerge:
    case PatchType::kStrategicMerge:
      if (!patch.is_object()) {
        return Status(StatusCode::kInvalidArgument, "a merge patch must be a JSON object");
      }
      patched = old;
      patched.merge_patch(patch);
      break;
    case PatchType::kJson:
      try {
        patched = old.patch(patch);
      } catch (const nlohmann::json::exception& e) {
        return Status(StatusCode::kInvalid,
                      std::string("the server rejected our request due to an error in our "
                                  "request: ") +
                          e.what());
      }
      break;
    case PatchType::kApply:
      return Status(StatusCode::kInvalidArgument,
                    "server-side apply is not supported by FakeKubeClient");
  }
  std::string wantRv = Str(patched, "metadata", "resourceVersion");
  if (!wantRv.empty() && wantRv != Str(old, "metadata", "resourceVersion")) {
    return Status(StatusCode::kConflict, "Operation cannot be fulfilled on " + ref.GroupResource() +
                                             " \"" + std::string(name) +
                                             "\": the object has been modified");
  }
  if (options.dryRun) return patched;
  return WriteLocked(ref, ns, std::move(patched), options.subresource == "status", true);
}

Status FakeKubeClient::Delete(const ResourceRef& ref, std::string_view ns, std::string_view name,
                              const DeleteOptions& options) {
  std::lock_guard lock(mu_);
  if (auto f = RecordLocked(ref, "delete", ns, name, "", nullptr)) return *f;
  auto it = objects_.find(MakeKey(ref, ns, name));
  if (it == objects_.end()) {
    return Status(StatusCode::kNotFound,
                  ref.GroupResource() + " \"" + std::string(name) + "\" not found");
  }
  nlohmann::json& obj = it->second.object;
  if (options.preconditionUid && *options.preconditionUid != Str(obj, "metadata", "uid")) {
    return Status(StatusCode::kConflict, "Operation cannot be fulfilled on " + ref.GroupResource() +
                                             " \"" + std::string(name) +
                                             "\": the UID in the precondition does not match");
  }
  if (options.preconditionResourceVersion &&
      *options.preconditionResourceVersion != Str(obj, "metadata", "resourceVersion")) {
    return Status(StatusCode::kConflict,
                  "Operation cannot be fulfilled on " + ref.GroupResource() + " \"" +
                      std::string(name) +
                      "\": the ResourceVersion in the precondition does not match");
  }
  if (options.dryRun) return Status::Ok();
  if (HasFinalizers(obj)) {
    if (!obj["metadata"].contains("deletionTimestamp")) {
      obj["metadata"]["deletionTimestamp"] = FormatTime(NowLocked());
      // The API server bumps the generation when a graceful deletion starts: the object's
      // controllers must now act differently.
      if (obj["metadata"].value("generation", int64_t{0}) > 0) {
        obj["metadata"]["generation"] = obj["metadata"]["generation"].get<int64_t>() + 1;
      }
      obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
      EmitLocked(ref, WatchEventType::kModified, obj);
    }
    return Status::Ok();
  }
  nlohmann::json last = obj;
  objects_.erase(it);
  last["metadata"]["resourceVersion"] = std::to_string(++rv_);
  EmitLocked(ref, WatchEventType::kDeleted, last);
  return Status::Ok();
}

// What one watch stream sees: the objects of its resource (and namespace) that match its
// selectors, whole or as metadata only.
struct FakeKubeClient::WatchFilter {
  std::string resource;
  std::string ns;  // "" for a cluster-wide watch
  const WatchOptions& options;

  bool Matches(const std::string& res, const nlohmann::json& obj) const {
    if (res != resource) return false;
    if (!ns.empty() && Str(obj, "metadata", "namespace") != ns) return false;
    std::string error;
    return MatchesLabelSelector(options.labelSelector, LabelsOf(obj), &error) &&
           MatchesFields(options.fieldSelector, obj, &error);
  }
  nlohmann::json Project(const nlohmann::json& obj) const {
    return options.metadataOnly ? PartialObjectMetadataOf(obj) : obj;
  }
};

namespace {

// Hands `pending` to the handler in order, until stopped; false when the handler ended the watch.
bool Deliver(std::vector<WatchEvent>& pending, const std::stop_token& stop,
             const WatchHandler& handler) {
  bool more = true;
  for (auto& ev : pending) {
    if (stop.stop_requested()) break;
    if (!handler(std::move(ev))) {
      more = false;
      break;
    }
  }
  pending.clear();
  return more;
}

}  // namespace

Status FakeKubeClient::Watch(const ResourceRef& ref, std::string_view ns,
                             const WatchOptions& options, std::stop_token stop,
                             const WatchHandler& handler) {
  // Registered before taking mu_: when `stop` is already requested the callback runs right here.
  std::stop_callback wake(stop, [this] {
    std::lock_guard l(mu_);
    cv_.notify_all();
  });
  std::unique_lock lock(mu_);
  if (auto f = RecordLocked(ref, "watch", ns, "", "", nullptr)) return *f;
  const WatchFilter filter{ref.GroupResource(), ref.namespaced ? std::string(ns) : "", options};
  std::vector<WatchEvent> pending;
  auto start = WatchStartLocked(filter, &pending);
  if (!start.ok()) return start.status();
  int64_t cursor = *start;
  ++openWatches_;
  cv_.notify_all();
  const uint64_t closeGen = closeGeneration_;
  uint64_t bookmarkGen = bookmarkGeneration_;
  Status result;
  for (;;) {
    if (!pending.empty()) {
      lock.unlock();
      const bool more = Deliver(pending, stop, handler);
      lock.lock();
      if (!more) break;
    }
    auto newer = [&] { return !history_.empty() && history_.back().rv > cursor; };
    cv_.wait(lock, [&] {
      return stop.stop_requested() || closeGeneration_ != closeGen || newer() ||
             bookmarkGeneration_ != bookmarkGen;
    });
    if (stop.stop_requested()) {
      result = Status(StatusCode::kCancelled, "watch stopped");
      break;
    }
    if (closeGeneration_ != closeGen) break;
    CollectEventsLocked(filter, &cursor, &bookmarkGen, &pending);
  }
  --openWatches_;
  cv_.notify_all();
  return result;
}

StatusOr<int64_t> FakeKubeClient::WatchStartLocked(const WatchFilter& filter,
                                                   std::vector<WatchEvent>* pending) const {
  const std::string& from = filter.options.resourceVersion;
  if (!from.empty() && from != "0") {
    const int64_t cursor = std::stoll(from);
    if (cursor < compactedRv_) {
      return Status(StatusCode::kGone, "too old resource version: " + from + " (" +
                                           std::to_string(compactedRv_) + ")");
    }
    return cursor;
  }
  // No version: every matching object first, as ADDED events, then what happens after.
  for (const auto& [k, s] : objects_) {
    if (filter.Matches(k.substr(0, k.find('\n')), s.object)) {
      pending->push_back(WatchEvent{WatchEventType::kAdded, filter.Project(s.object)});
    }
  }
  return rv_;
}

void FakeKubeClient::CollectEventsLocked(const WatchFilter& filter, int64_t* cursor,
                                         uint64_t* bookmarkGen,
                                         std::vector<WatchEvent>* pending) const {
  auto from = std::upper_bound(history_.begin(), history_.end(), *cursor,
                               [](int64_t rv, const HistoryEntry& e) { return rv < e.rv; });
  for (auto h = from; h != history_.end(); ++h) {
    if (filter.Matches(h->resource, h->object)) {
      pending->push_back(WatchEvent{h->type, filter.Project(h->object)});
    }
    *cursor = h->rv;
  }
  if (bookmarkGeneration_ != *bookmarkGen) {
    *bookmarkGen = bookmarkGeneration_;
    *cursor = std::max(*cursor, rv_);
    if (filter.options.allowWatchBookmarks) {
      pending->push_back(WatchEvent{WatchEventType::kBookmark,
                                    {{"metadata", {{"resourceVersion", std::to_string(rv_)}}}}});
    }
  }
}

void FakeKubeClient::FailNext(std::string verb, std::string resource, Status status, int times) {
  std::lock_guard lock(mu_);
  failures_.push_back(Failure{std::move(verb), std::move(resource), std::move(status), times});
}

void FakeKubeClient::ClearFailures() {
  std::lock_guard lock(mu_);
  failures_.clear();
}

void FakeKubeClient::DisableStatusSubresource(const ResourceRef& ref) {
  std::lock_guard lock(mu_);
  noStatusSubresource_.push_back(ref.GroupResource());
}

void FakeKubeClient::Compact() {
  std::lock_guard lock(mu_);
  history_.clear();
  compactedRv_ = rv_;
}

void FakeKubeClient::CloseWatches() {
  std::lock_guard lock(mu_);
  ++closeGeneration_;
  cv_.notify_all();
}

void FakeKubeClient::SendBookmark() {
  std::lock_guard lock(mu_);
  ++rv_;  // bookmarks carry a version newer than any event the watcher saw
  ++bookmarkGeneration_;
  cv_.notify_all();
}

size_t FakeKubeClient::OpenWatches() const {
  std::lock_guard lock(mu_);
  return openWatches_;
}

bool FakeKubeClient::WaitForWatches(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return openWatches_ >= n; });
}

std::vector<Action> FakeKubeClient::Actions() const {
  std::lock_guard lock(mu_);
  return actions_;
}

void FakeKubeClient::ClearActions() {
  std::lock_guard lock(mu_);
  actions_.clear();
}

size_t FakeKubeClient::CountActions(std::string_view verb, std::string_view resource) const {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(std::count_if(actions_.begin(), actions_.end(), [&](const Action& a) {
    return (verb == "*" || a.verb == verb) && (resource == "*" || a.resource == resource);
  }));
}

size_t FakeKubeClient::CountWrites(const ResourceRef& ref, std::string_view ns,
                                   std::string_view name) const {
  std::lock_guard lock(mu_);
  const std::string resource = ref.GroupResource();
  return static_cast<size_t>(std::count_if(actions_.begin(), actions_.end(), [&](const Action& a) {
    return (a.verb == "create" || a.verb == "update" || a.verb == "patch" || a.verb == "delete") &&
           a.resource == resource && (!ref.namespaced || a.namespace_ == ns) && a.name == name;
  }));
}

std::optional<nlohmann::json> FakeKubeClient::Peek(const ResourceRef& ref, std::string_view ns,
                                                   std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(MakeKey(ref, ns, name));
  if (it == objects_.end()) return std::nullopt;
  return it->second.object;
}

std::vector<nlohmann::json> FakeKubeClient::PeekAll(const ResourceRef& ref,
                                                    std::string_view ns) const {
  std::lock_guard lock(mu_);
  const std::string prefix =
      ref.GroupResource() + "\n" + (ref.namespaced && !ns.empty() ? std::string(ns) + "\n" : "");
  std::vector<nlohmann::json> out;
  for (auto it = objects_.lower_bound(prefix);
       it != objects_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    out.push_back(it->second.object);
  }
  return out;
}

int64_t FakeKubeClient::CurrentResourceVersion() const {
  std::lock_guard lock(mu_);
  return rv_;
}

}  // namespace ayatori::kube::testing
