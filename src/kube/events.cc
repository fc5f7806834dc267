#include "kube/events.h"

#include <atomic>
#include <cstdio>
#include <vector>

#include "kube/resource.h"
#include "kube/time_format.h"

namespace ayatori::kube {
namespace {

constexpr size_t kMaxReasonBytes = 128;  // the API's limit for reason and action

// Cuts `s` to at most `max` bytes without splitting a UTF-8 sequence.
std::string CutUtf8(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return std::string(s.substr(0, end));
}

const char* TypeName(EventType t) { return t == EventType::kWarning ? "Warning" : "Normal"; }

}  // namespace

EventRecorder::EventRecorder(KubeClient& client, const Clock& clock, EventRecorderOptions options)
    : client_(client), clock_(clock), options_(std::move(options)) {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

EventRecorder::~EventRecorder() {
  Flush(std::chrono::seconds(2));
  thread_.request_stop();
  cv_.notify_all();
  thread_.join();
}

void EventRecorder::Log(const std::string& line) const {
  std::string msg = "events: " + line;
  if (options_.log) {
    options_.log(msg);
  } else {
    std::fprintf(stderr, "%s\n", msg.c_str());
  }
}

std::string EventRecorder::PrepareNote(std::string_view note) const {
  if (options_.sanitizeNote) return CutUtf8(options_.sanitizeNote(note), options_.maxNoteBytes);
  return CutUtf8(note, options_.maxNoteBytes);
}

EventRecorderStats EventRecorder::Stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void EventRecorder::ExpireLocked(std::chrono::steady_clock::time_point now) {
  for (auto it = series_.begin(); it != series_.end();) {
    const Series& s = it->second;
    if (!s.queued && dirtySeries_.count(it->first) == 0 &&
        now - s.lastSeen >= options_.dedupWindow) {
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
}

void EventRecorder::Record(const ObjectReference& regarding, EventType type,
                           std::string_view reason, std::string_view action,
                           std::string_view note) {
  std::string cleanNote = PrepareNote(note);
  std::string cleanReason = CutUtf8(reason, kMaxReasonBytes);
  std::string cleanAction = CutUtf8(action.empty() ? reason : action, kMaxReasonBytes);
  const std::string regardingKey =
      !regarding.uid.empty() ? regarding.uid
                             : regarding.kind + "/" + regarding.namespace_ + "/" + regarding.name;
  std::string key = regardingKey;
  for (const std::string* part : {&cleanReason, &cleanAction, &cleanNote}) {
    key += '\x1f';
    key += *part;
  }
  key += TypeName(type);

  const auto steadyNow = clock_.SteadyNow();
  const auto wallNow = clock_.Now();
  std::lock_guard lock(mu_);
  if (series_.size() > 4 * options_.queueCapacity) ExpireLocked(steadyNow);
  auto it = series_.find(key);
  if (it != series_.end() && steadyNow - it->second.lastSeen < options_.dedupWindow) {
    Series& s = it->second;
    ++s.count;
    s.lastObserved = wallNow;
    s.lastSeen = steadyNow;
    ++stats_.deduplicated;
    if (!s.queued) dirtySeries_.insert(key);  // after the create, its count follows
    return;
  }
  auto& bucket = limits_[regardingKey];
  if (!bucket) {
    bucket = std::make_unique<TokenBucket>(options_.perObjectQps, options_.perObjectBurst, clock_);
  }
  if (!bucket->TryAccept()) {
    ++stats_.droppedRateLimited;
    return;
  }
  if (createQueue_.size() >= options_.queueCapacity) {
    ++stats_.droppedQueueFull;
    return;
  }
  Series s;
  s.eventNamespace = regarding.namespace_.empty() ? "default" : regarding.namespace_;
  nlohmann::json ref = {
      {"apiVersion", regarding.apiVersion}, {"kind", regarding.kind}, {"name", regarding.name}};
  if (!regarding.namespace_.empty()) ref["namespace"] = regarding.namespace_;
  if (!regarding.uid.empty()) ref["uid"] = regarding.uid;
  if (!regarding.resourceVersion.empty()) ref["resourceVersion"] = regarding.resourceVersion;
  s.event = {{"apiVersion", "events.k8s.io/v1"},
             {"kind", "Event"},
             {"metadata", {{"namespace", s.eventNamespace}}},
             {"eventTime", FormatMicroTime(wallNow)},
             {"reportingController", options_.reportingController},
             {"reportingInstance", options_.reportingInstance},
             {"action", cleanAction},
             {"reason", cleanReason},
             {"type", TypeName(type)},
             {"regarding", std::move(ref)}};
  if (!cleanNote.empty()) s.event["note"] = cleanNote;
  s.lastObserved = wallNow;
  s.lastSeen = steadyNow;
  s.queued = true;
  series_[key] = std::move(s);
  createQueue_.push_back(key);
  cv_.notify_all();
}

namespace {
// "<regarding>.<hex>", unique per recorder even when the clock does not move.
std::string EventName(const nlohmann::json& event, uint64_t unique) {
  std::string base = event["regarding"].value("name", "event");
  if (base.empty()) base = "event";
  if (base.size() > 200) base.resize(200);
  char hex[24];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(unique));
  return base + "." + hex;
}
}  // namespace

void EventRecorder::Write(const std::string& key) {
  // Called without mu_ held, for one dedup key that has a queued create or a dirty count.
  nlohmann::json event;
  std::string name, ns;
  int64_t count = 0;
  std::chrono::system_clock::time_point lastObserved;
  {
    std::lock_guard lock(mu_);
    auto it = series_.find(key);
    if (it == series_.end()) return;
    event = it->second.event;
    name = it->second.eventName;
    ns = it->second.eventNamespace;
    count = it->second.count;
    lastObserved = it->second.lastObserved;
  }
  const ResourceRef ref = EventsResource();
  static std::atomic<uint64_t> lastUnique{0};
  auto create = [&](bool withSeries) -> StatusOr<nlohmann::json> {
    uint64_t nanos = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.Now().time_since_epoch())
            .count());
    uint64_t prev = lastUnique.load();
    uint64_t unique;
    do {
      unique = nanos > prev ? nanos : prev + 1;
    } while (!lastUnique.compare_exchange_weak(prev, unique));
    event["metadata"]["name"] = EventName(event, unique);
    if (withSeries && count > 1) {
      event["series"] = {{"count", count}, {"lastObservedTime", FormatMicroTime(lastObserved)}};
    }
    return client_.Create(ref, ns, event, {});
  };

  Status result;
  bool created = false;
  if (name.empty()) {
    auto r = create(/*withSeries=*/true);
    result = r.status();
    if (r.ok()) {
      name = (*r)["metadata"].value("name", "");
      created = true;
    }
  } else {
    nlohmann::json patch = {
        {"series", {{"count", count}, {"lastObservedTime", FormatMicroTime(lastObserved)}}}};
    auto r = client_.Patch(ref, ns, name, PatchType::kMerge, patch, {});
    result = r.status();
    if (result.code() == StatusCode::kNotFound) {  // the Event expired (TTL): start it again
      auto c = create(/*withSeries=*/true);
      result = c.status();
      if (c.ok()) {
        name = (*c)["metadata"].value("name", "");
        created = true;
      }
    }
  }

  std::lock_guard lock(mu_);
  auto it = series_.find(key);
  if (!result.ok()) {
    ++stats_.failed;
    if (it != series_.end() && it->second.eventName.empty()) series_.erase(it);
  } else {
    if (created) {
      ++stats_.created;
      if (count > 1) ++stats_.seriesUpdates;
    } else {
      ++stats_.seriesUpdates;
    }
    if (it != series_.end()) {
      it->second.eventName = name;
      it->second.event = event;
      it->second.writtenCount = count;
      it->second.queued = false;
      if (it->second.count > count) dirtySeries_.insert(key);
    }
  }
  if (!result.ok()) Log("writing an Event failed: " + result.ToString());
}

void EventRecorder::Loop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    auto seriesDue = [&] {
      return !dirtySeries_.empty() &&
             (flushRequested_ || clock_.SteadyNow() - lastSeriesWrite_ >= options_.seriesInterval);
    };
    if (createQueue_.empty() && !seriesDue()) {
      if (flushRequested_) {
        flushRequested_ = false;
        idleCv_.notify_all();
      }
      if (dirtySeries_.empty()) {
        cv_.wait(lock, stop, [&] { return !createQueue_.empty() || flushRequested_; });
      } else {
        cv_.wait_for(lock, stop, options_.seriesInterval,
                     [&] { return !createQueue_.empty() || flushRequested_; });
      }
      continue;
    }
    busy_ = true;
    if (!createQueue_.empty()) {
      std::string key = std::move(createQueue_.front());
      createQueue_.pop_front();
      lock.unlock();
      Write(key);
      lock.lock();
    } else {
      std::vector<std::string> keys(dirtySeries_.begin(), dirtySeries_.end());
      dirtySeries_.clear();
      lock.unlock();
      for (const auto& k : keys) Write(k);
      lock.lock();
      lastSeriesWrite_ = clock_.SteadyNow();
    }
    busy_ = false;
  }
  idleCv_.notify_all();
}

bool EventRecorder::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  flushRequested_ = true;
  cv_.notify_all();
  return idleCv_.wait_for(lock, timeout, [&] {
    return createQueue_.empty() && dirtySeries_.empty() && !busy_ && !flushRequested_;
  });
}

}  // namespace ayatori::kube
