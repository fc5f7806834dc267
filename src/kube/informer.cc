#include "kube/informer.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iterator>
#include <random>

#include "kube/resource.h"

namespace ayatori::kube {
namespace {

struct Meta {
  std::string ns, name, resourceVersion;
};

Meta MetaOf(const nlohmann::json& obj) {
  Meta m;
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return m;
  m.ns = md->value("namespace", "");
  m.name = md->value("name", "");
  m.resourceVersion = md->value("resourceVersion", "");
  return m;
}

}  // namespace

InformerCore::InformerCore(KubeClient& client, ResourceRef ref, InformerOptions options,
                           Decoder decode)
    : client_(client),
      ref_(std::move(ref)),
      options_(std::move(options)),
      decode_(std::move(decode)) {
  name_ = options_.name.empty() ? ref_.GroupResource() : options_.name;
  if (!options_.namespace_.empty()) name_ += " in " + options_.namespace_;
}

InformerCore::~InformerCore() { Stop(); }

void InformerCore::Log(const std::string& line) const {
  std::string msg = "informer " + name_ + ": " + line;
  if (options_.log) {
    options_.log(msg);
  } else {
    std::fprintf(stderr, "%s\n", msg.c_str());
  }
}

void InformerCore::AddHandlers(Handlers handlers) {
  std::lock_guard hl(handlersMu_);
  if (handlers.onAdd) {
    std::vector<std::pair<std::string, Object>> snapshot;
    {
      std::shared_lock lock(cacheMu_);
      snapshot.reserve(cache_.size());
      for (const auto& [k, e] : cache_) snapshot.emplace_back(k, e.obj);
    }
    for (const auto& [k, o] : snapshot) handlers.onAdd(k, o);
  }
  handlers_.push_back(std::move(handlers));
}

void InformerCore::AddIndex(const std::string& name, IndexFunc fn) {
  std::unique_lock lock(cacheMu_);
  Index& idx = indexes_[name];
  idx.fn = std::move(fn);
  idx.keys.clear();
  for (const auto& [k, e] : cache_) AddToIndex(idx, k, e.obj);
}

void InformerCore::AddToIndex(Index& idx, const std::string& key, const Object& obj) {
  for (auto& v : idx.fn(obj)) {
    auto& keys = idx.keys[v];
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
}

void InformerCore::IndexAddLocked(const std::string& key, const Object& obj) {
  for (auto& [_, idx] : indexes_) AddToIndex(idx, key, obj);
}

void InformerCore::IndexRemoveLocked(const std::string& key, const Object& obj) {
  for (auto& [_, idx] : indexes_) {
    for (auto& v : idx.fn(obj)) {
      auto it = idx.keys.find(v);
      if (it == idx.keys.end()) continue;
      std::erase(it->second, key);
      if (it->second.empty()) idx.keys.erase(it);
    }
  }
}

void InformerCore::Start() {
  {
    std::lock_guard lock(stateMu_);
    if (stopped_) return;
  }
  if (thread_.joinable()) return;
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
}

void InformerCore::Stop() {
  {
    std::lock_guard lock(stateMu_);
    stopped_ = true;
  }
  syncedCv_.notify_all();
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

bool InformerCore::HasSynced() const {
  std::lock_guard lock(stateMu_);
  return synced_;
}

bool InformerCore::WaitForSync(std::chrono::milliseconds timeout, std::stop_token cancel) const {
  std::unique_lock lock(stateMu_);
  syncedCv_.wait_for(lock, std::move(cancel), timeout, [this] { return synced_ || stopped_; });
  return synced_;
}

InformerCore::Object InformerCore::Get(std::string_view key) const {
  std::shared_lock lock(cacheMu_);
  auto it = cache_.find(std::string(key));
  return it == cache_.end() ? nullptr : it->second.obj;
}

std::vector<InformerCore::Object> InformerCore::List() const {
  std::shared_lock lock(cacheMu_);
  std::vector<Object> out;
  out.reserve(cache_.size());
  for (const auto& [_, e] : cache_) out.push_back(e.obj);
  return out;
}

void InformerCore::ForEach(const std::function<void(const std::string&, const Object&)>& fn) const {
  std::shared_lock lock(cacheMu_);
  for (const auto& [key, e] : cache_) fn(key, e.obj);
}

std::vector<std::string> InformerCore::Keys() const {
  std::shared_lock lock(cacheMu_);
  std::vector<std::string> out;
  out.reserve(cache_.size());
  for (const auto& [k, _] : cache_) out.push_back(k);
  return out;
}

std::vector<InformerCore::Object> InformerCore::ByIndex(const std::string& index,
                                                        const std::string& value) const {
  std::shared_lock lock(cacheMu_);
  std::vector<Object> out;
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return out;
  auto keys = idx->second.keys.find(value);
  if (keys == idx->second.keys.end()) return out;
  for (const auto& k : keys->second) {
    auto it = cache_.find(k);
    if (it != cache_.end()) out.push_back(it->second.obj);
  }
  return out;
}

std::vector<std::string> InformerCore::IndexKeys(const std::string& index,
                                                 const std::string& value) const {
  std::shared_lock lock(cacheMu_);
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return {};
  auto keys = idx->second.keys.find(value);
  if (keys == idx->second.keys.end()) return {};
  return keys->second;
}

size_t InformerCore::Size() const {
  std::shared_lock lock(cacheMu_);
  return cache_.size();
}

InformerStats InformerCore::Stats() const {
  std::lock_guard lock(stateMu_);
  return stats_;
}

void InformerCore::AbortWatchForTest() {
  std::lock_guard lock(stateMu_);
  if (currentWatch_ != nullptr) currentWatch_->request_stop();
}

InformerCore::Object InformerCore::Decode(nlohmann::json& obj) {
  auto md = obj.find("metadata");
  if (md != obj.end() && md->is_object()) {
    md->erase("managedFields");
    auto ann = md->find("annotations");
    if (ann != md->end() && ann->is_object()) {
      for (const auto& a : options_.dropAnnotations) ann->erase(a);
    }
  }
  try {
    return decode_(obj);
  } catch (const std::exception& e) {
    Log(std::string("decode failed: ") + e.what());
    return nullptr;
  }
}

bool InformerCore::SleepFor(const std::stop_token& stop, std::chrono::milliseconds d) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

Status InformerCore::ListAndReplace(const std::stop_token& stop) {
  std::unordered_map<std::string, Entry> fresh;
  uint64_t decodeErrors = 0;
  ListOptions lo;
  lo.labelSelector = options_.labelSelector;
  lo.fieldSelector = options_.fieldSelector;
  lo.limit = options_.pageSize;
  lo.metadataOnly = options_.metadataOnly;
  auto rv = ListAll(client_, ref_, options_.namespace_, lo, [&](nlohmann::json&& item) {
    Meta m = MetaOf(item);
    Object o = Decode(item);
    if (o == nullptr) {
      ++decodeErrors;
      return;
    }
    fresh[ObjectKey(m.ns, m.name)] = Entry{std::move(o), std::move(m.resourceVersion)};
  });
  if (!rv.ok()) return rv.status();
  if (stop.stop_requested()) return Status(StatusCode::kCancelled, "stopped");

  // Swap the cache, remembering what changed for the handlers.
  std::vector<std::pair<std::string, Object>> added, deleted;
  std::vector<std::tuple<std::string, Object, Object>> updated;
  {
    std::unique_lock lock(cacheMu_);
    for (const auto& [k, e] : fresh) {
      auto old = cache_.find(k);
      if (old == cache_.end()) {
        added.emplace_back(k, e.obj);
      } else if (old->second.resourceVersion != e.resourceVersion) {
        updated.emplace_back(k, old->second.obj, e.obj);
      }
    }
    for (const auto& [k, e] : cache_) {
      if (fresh.find(k) == fresh.end()) deleted.emplace_back(k, e.obj);
    }
    cache_.swap(fresh);
    for (auto& [_, idx] : indexes_) idx.keys.clear();
    for (const auto& [k, e] : cache_) IndexAddLocked(k, e.obj);
  }
  fresh.clear();
  {
    std::lock_guard hl(handlersMu_);
    for (const auto& h : handlers_) {
      if (h.onAdd) {
        for (const auto& [k, o] : added) h.onAdd(k, o);
      }
      if (h.onUpdate) {
        for (const auto& [k, o, n] : updated) h.onUpdate(k, o, n);
      }
      if (h.onDelete) {
        for (const auto& [k, o] : deleted) h.onDelete(k, o);
      }
    }
  }
  {
    std::lock_guard lock(stateMu_);
    ++stats_.lists;
    stats_.decodeErrors += decodeErrors;
    stats_.lastResourceVersion = *rv;
    synced_ = true;
  }
  syncedCv_.notify_all();
  return Status::Ok();
}

bool InformerCore::HandleEvent(WatchEvent&& ev) {
  Meta m = MetaOf(ev.object);
  if (ev.type == WatchEventType::kBookmark) {
    std::lock_guard lock(stateMu_);
    ++stats_.bookmarks;
    if (!m.resourceVersion.empty()) stats_.lastResourceVersion = m.resourceVersion;
    return true;
  }
  const std::string key = ObjectKey(m.ns, m.name);
  Object decoded = Decode(ev.object);
  if (decoded == nullptr && ev.type != WatchEventType::kDeleted) {
    std::lock_guard lock(stateMu_);
    ++stats_.decodeErrors;
    stats_.lastResourceVersion = m.resourceVersion;
    return true;
  }
  Object old;
  {
    std::unique_lock lock(cacheMu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      old = it->second.obj;
      IndexRemoveLocked(key, old);
    }
    if (ev.type == WatchEventType::kDeleted) {
      if (it != cache_.end()) cache_.erase(it);
    } else {
      if (it != cache_.end()) {
        it->second = Entry{decoded, m.resourceVersion};
      } else {
        cache_.emplace(key, Entry{decoded, m.resourceVersion});
      }
      IndexAddLocked(key, decoded);
    }
  }
  {
    std::lock_guard hl(handlersMu_);
    for (const auto& h : handlers_) {
      if (ev.type == WatchEventType::kDeleted) {
        Object last = decoded != nullptr ? decoded : old;
        if (h.onDelete && last != nullptr) h.onDelete(key, last);
      } else if (old == nullptr) {
        if (h.onAdd) h.onAdd(key, decoded);
      } else if (h.onUpdate) {
        h.onUpdate(key, old, decoded);
      }
    }
  }
  std::lock_guard lock(stateMu_);
  ++stats_.events;
  stats_.lastResourceVersion = m.resourceVersion;
  return true;
}

Status InformerCore::WatchOnce(const std::stop_token& stop) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const int64_t base = std::max<int64_t>(1, options_.watchTimeout.count());
  WatchOptions wo;
  wo.labelSelector = options_.labelSelector;
  wo.fieldSelector = options_.fieldSelector;
  wo.allowWatchBookmarks = true;
  wo.metadataOnly = options_.metadataOnly;
  wo.timeoutSeconds = base + static_cast<int64_t>(rng() % static_cast<uint64_t>(base));

  std::stop_source watchStop;
  std::stop_callback forward(stop, [&watchStop] { watchStop.request_stop(); });
  {
    std::lock_guard lock(stateMu_);
    wo.resourceVersion = stats_.lastResourceVersion;
    currentWatch_ = &watchStop;
    ++stats_.watches;
  }
  Status s = client_.Watch(ref_, options_.namespace_, wo, watchStop.get_token(),
                           [this](WatchEvent&& ev) { return HandleEvent(std::move(ev)); });
  {
    std::lock_guard lock(stateMu_);
    currentWatch_ = nullptr;
  }
  return s;
}

void InformerCore::Run(const std::stop_token& stop) {
  std::chrono::milliseconds backoff = options_.initialBackoff;
  auto growBackoff = [&] { backoff = std::min(backoff * 2, options_.maxBackoff); };
  bool needList = true;
  while (!stop.stop_requested()) {
    if (needList) {
      Status s = ListAndReplace(stop);
      if (stop.stop_requested()) break;
      if (!s.ok()) {
        {
          std::lock_guard lock(stateMu_);
          ++stats_.listErrors;
        }
        Log("list failed (retrying in " + std::to_string(backoff.count()) +
            " ms): " + s.ToString());
        SleepFor(stop, backoff);
        growBackoff();
        continue;
      }
      needList = false;
      backoff = options_.initialBackoff;
    }
    auto started = std::chrono::steady_clock::now();
    uint64_t eventsBefore = Stats().events;
    Status s = WatchOnce(stop);
    if (stop.stop_requested()) break;
    if (s.ok() || s.code() == StatusCode::kCancelled) {
      // The server's timeout, or a stream aborted by AbortWatchForTest: resume. Guard against a
      // server that closes every watch at once.
      if (std::chrono::steady_clock::now() - started < std::chrono::seconds(1) &&
          Stats().events == eventsBefore && s.ok()) {
        SleepFor(stop, backoff);
        growBackoff();
      } else {
        backoff = options_.initialBackoff;
      }
      continue;
    }
    if (s.code() == StatusCode::kGone) {
      {
        std::lock_guard lock(stateMu_);
        ++stats_.relistsAfterGone;
        Log("resourceVersion " + stats_.lastResourceVersion + " is too old (" + s.message() +
            "); relisting");
      }
      needList = true;
      continue;
    }
    {
      std::lock_guard lock(stateMu_);
      ++stats_.watchErrors;
    }
    Log("watch failed (retrying in " + std::to_string(backoff.count()) + " ms): " + s.ToString());
    SleepFor(stop, backoff);
    growBackoff();
    // Transport failures (API server restarting) resume from the last resourceVersion; errors
    // from the server (Forbidden, ...) start over with a list, like client-go.
    if (s.code() != StatusCode::kUnavailable) needList = true;
  }
}

InformerGroup::InformerGroup(KubeClient& client, const ResourceRef& ref,
                             const InformerOptions& options, const InformerCore::Decoder& decode) {
  if (options.namespaces.empty()) {
    cores_.push_back(std::make_unique<InformerCore>(client, ref, options, decode));
    return;
  }
  for (const auto& ns : options.namespaces) {
    InformerOptions one = options;
    one.namespaces.clear();
    one.namespace_ = ns;
    cores_.push_back(std::make_unique<InformerCore>(client, ref, std::move(one), decode));
  }
}

void InformerGroup::AddHandlers(const InformerCore::Handlers& handlers) {
  for (auto& c : cores_) c->AddHandlers(handlers);
}

void InformerGroup::AddIndex(const std::string& name, const InformerCore::IndexFunc& fn) {
  for (auto& c : cores_) c->AddIndex(name, fn);
}

void InformerGroup::Start() {
  for (auto& c : cores_) c->Start();
}

void InformerGroup::Stop() {
  for (auto& c : cores_) c->Stop();
}

bool InformerGroup::HasSynced() const {
  return std::all_of(cores_.begin(), cores_.end(), [](const auto& c) { return c->HasSynced(); });
}

bool InformerGroup::WaitForSync(std::chrono::milliseconds timeout,
                                const std::stop_token& cancel) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& c : cores_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!c->WaitForSync(std::max(left, std::chrono::milliseconds(0)), cancel)) return false;
  }
  return true;
}

InformerGroup::Object InformerGroup::Get(std::string_view key) const {
  for (const auto& c : cores_) {
    if (auto o = c->Get(key)) return o;
  }
  return nullptr;
}

std::vector<InformerGroup::Object> InformerGroup::List() const {
  if (cores_.size() == 1) return cores_.front()->List();
  std::vector<Object> out;
  for (const auto& c : cores_) std::ranges::move(c->List(), std::back_inserter(out));
  return out;
}

std::vector<std::string> InformerGroup::Keys() const {
  if (cores_.size() == 1) return cores_.front()->Keys();
  std::vector<std::string> out;
  for (const auto& c : cores_) std::ranges::move(c->Keys(), std::back_inserter(out));
  return out;
}

void InformerGroup::ForEach(
    const std::function<void(const std::string&, const Object&)>& fn) const {
  for (const auto& c : cores_) c->ForEach(fn);
}

std::vector<InformerGroup::Object> InformerGroup::ByIndex(const std::string& index,
                                                          const std::string& value) const {
  if (cores_.size() == 1) return cores_.front()->ByIndex(index, value);
  std::vector<Object> out;
  for (const auto& c : cores_) std::ranges::move(c->ByIndex(index, value), std::back_inserter(out));
  return out;
}

std::vector<std::string> InformerGroup::IndexKeys(const std::string& index,
                                                  const std::string& value) const {
  if (cores_.size() == 1) return cores_.front()->IndexKeys(index, value);
  std::vector<std::string> out;
  for (const auto& c : cores_) {
    std::ranges::move(c->IndexKeys(index, value), std::back_inserter(out));
  }
  return out;
}

size_t InformerGroup::Size() const {
  size_t n = 0;
  for (const auto& c : cores_) n += c->Size();
  return n;
}

InformerStats InformerGroup::Stats() const {
  if (cores_.size() == 1) return cores_.front()->Stats();
  InformerStats sum;
  for (const auto& c : cores_) {
    InformerStats s = c->Stats();
    sum.lists += s.lists;
    sum.watches += s.watches;
    sum.relistsAfterGone += s.relistsAfterGone;
    sum.watchErrors += s.watchErrors;
    sum.listErrors += s.listErrors;
    sum.decodeErrors += s.decodeErrors;
    sum.events += s.events;
    sum.bookmarks += s.bookmarks;
  }
  return sum;
}

void InformerGroup::AbortWatchForTest() {
  for (auto& c : cores_) c->AbortWatchForTest();
}

}  // namespace ayatori::kube
