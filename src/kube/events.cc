#include "kube/events.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
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
  lastExpiry_ = clock_.SteadyNow();
  thread_ = std::jthread([this](const std::stop_token& stop) { Loop(stop); });
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

size_t EventRecorder::TrackedObjects() const {
  std::lock_guard lock(mu_);
  return objects_.size();
}

namespace {

// FNV-1a over each part's length and bytes (the lengths keep ("ab", "c") apart from ("a", "bc")),
// then a final avalanche (splitmix64's) so that close inputs spread over all 64 bits.
class Hasher {
 public:
  void Add(std::string_view part) {
    AddBytes(std::to_string(part.size()));
    AddBytes(part);
  }
  uint64_t Finish() const {
    uint64_t z = h_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  void AddBytes(std::string_view bytes) {
    for (unsigned char c : bytes) {
      h_ ^= c;
      h_ *= 0x100000001b3ULL;
    }
    h_ ^= 0xff;  // terminator
    h_ *= 0x100000001b3ULL;
  }
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

// "<regarding name>" cut for Event names: "<nameBase>.<hex>" must stay a valid name.
std::string NameBase(std::string_view regardingName) {
  if (regardingName.empty()) return "event";
  return std::string(regardingName.substr(0, 200));
}

std::string EventName(const std::string& nameBase, uint64_t unique) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(unique));
  return nameBase + "." + hex;
}

// Unique per process even when the clock does not move (several recorders may share a namespace).
uint64_t NextUnique(std::chrono::system_clock::time_point now) {
  static std::atomic<uint64_t> lastUnique{0};
  const uint64_t nanos = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
  uint64_t prev = lastUnique.load();
  uint64_t unique;
  do {
    unique = nanos > prev ? nanos : prev + 1;
  } while (!lastUnique.compare_exchange_weak(prev, unique));
  return unique;
}

nlohmann::json SeriesJson(int64_t count, std::chrono::system_clock::time_point lastObserved) {
  return {{"count", count}, {"lastObservedTime", FormatMicroTime(lastObserved)}};
}

}  // namespace

std::chrono::milliseconds EventRecorder::ExpiryPeriod() const {
  return std::max<std::chrono::milliseconds>(options_.dedupWindow / 10,
                                             std::chrono::milliseconds(100));
}

EventRecorder::Series* EventRecorder::FindLocked(const SeriesId& id, TrackedObject** object) {
  auto it = objects_.find(id.objectKey);
  if (it == objects_.end()) return nullptr;
  if (object) *object = &it->second;
  for (Series& s : it->second.series) {
    if (s.key == id.seriesKey) return &s;
  }
  return nullptr;
}

void EventRecorder::MarkDirtyLocked(const std::string& objectKey, Series& s) {
  if (s.dirty) return;
  s.dirty = true;
  dirty_.push_back({objectKey, s.key});
}

// client-go's token bucket (see kube/token_bucket.h), inline: a TokenBucket per object would
// cost a heap object with its own mutex; mu_ already guards this state.
bool EventRecorder::TakeTokenLocked(TrackedObject& object,
                                    std::chrono::steady_clock::time_point now) const {
  if (options_.perObjectQps <= 0) return true;
  if (now > object.refilled) {
    const double elapsed = std::chrono::duration<double>(now - object.refilled).count();
    object.tokens = std::min<double>(std::max(options_.perObjectBurst, 1),
                                     object.tokens + elapsed * options_.perObjectQps);
    object.refilled = now;
  }
  if (object.tokens < 1) return false;
  object.tokens -= 1;
  return true;
}

bool EventRecorder::BucketFullLocked(const TrackedObject& object,
                                     std::chrono::steady_clock::time_point now) const {
  if (options_.perObjectQps <= 0) return true;
  double tokens = object.tokens;
  if (now > object.refilled) {
    tokens += std::chrono::duration<double>(now - object.refilled).count() * options_.perObjectQps;
  }
  return tokens + 1e-9 >= std::max(options_.perObjectBurst, 1);  // rounding of elapsed * qps
}

void EventRecorder::MaybeExpireLocked(std::chrono::steady_clock::time_point now) {
  if (now - lastExpiry_ < ExpiryPeriod()) return;
  lastExpiry_ = now;
  for (auto it = objects_.begin(); it != objects_.end();) {
    auto& series = it->second.series;
    std::erase_if(series, [&](const Series& s) {
      return !s.queued && !s.dirty && now - s.lastSeen >= options_.dedupWindow;
    });
    if (series.empty() && BucketFullLocked(it->second, now)) {
      it = objects_.erase(it);
    } else {
      ++it;
    }
  }
}

void EventRecorder::Record(const ObjectReference& regarding, EventType type,
                           std::string_view reason, std::string_view action,
                           std::string_view note) {
  EventContent content;
  content.note = PrepareNote(note);
  content.reason = CutUtf8(reason, kMaxReasonBytes);
  content.action = CutUtf8(action.empty() ? reason : action, kMaxReasonBytes);
  content.type = type;
  Hasher hasher;
  hasher.Add(content.reason);
  hasher.Add(content.action);
  hasher.Add(content.note);
  hasher.Add(TypeName(type));
  // Two different events share a series only if they are about the same object AND their 64-bit
  // hashes collide (odds ~ n^2 / 2^65 for n distinct events of one object): accepted.
  const uint64_t seriesKey = hasher.Finish();
  std::string objectKey = !regarding.uid.empty()
                              ? regarding.uid
                              : regarding.kind + "/" + regarding.namespace_ + "/" + regarding.name;

  const auto steadyNow = clock_.SteadyNow();
  const auto wallNow = clock_.Now();
  std::lock_guard lock(mu_);
  MaybeExpireLocked(steadyNow);
  auto objectIt = objects_.find(objectKey);
  if (objectIt != objects_.end()) {
    auto& series = objectIt->second.series;
    auto s = std::find_if(series.begin(), series.end(),
                          [&](const Series& x) { return x.key == seriesKey; });
    if (s != series.end()) {
      // A series with a write pending folds the repeat even when its window ran out: its
      // Event is being written (or re-written) anyway.
      if (steadyNow - s->lastSeen < options_.dedupWindow || s->queued || s->dirty) {
        if (s->count < std::numeric_limits<int32_t>::max()) ++s->count;
        s->lastObserved = wallNow;
        s->lastSeen = steadyNow;
        ++stats_.deduplicated;
        if (!s->repeated) {  // to create the Event again if it expired before its count is written
          content.regarding = regarding;
          content.eventTime = wallNow;
          s->repeated = std::make_unique<EventContent>(std::move(content));
        }
        if (!s->queued) MarkDirtyLocked(objectKey, *s);  // after the create, its count follows
        return;
      }
      series.erase(s);  // out of the window: a new Event
    }
  } else {
    TrackedObject object;
    object.eventNamespace = regarding.namespace_.empty() ? "default" : regarding.namespace_;
    object.nameBase = NameBase(regarding.name);
    object.tokens = std::max(options_.perObjectBurst, 1);
    object.refilled = steadyNow;
    object.series.reserve(2);  // a Job gets two Events: Started and a terminal one
    objectIt = objects_.emplace(objectKey, std::move(object)).first;
  }
  TrackedObject& object = objectIt->second;
  if (!TakeTokenLocked(object, steadyNow)) {
    ++stats_.droppedRateLimited;
    return;
  }
  if (createQueue_.size() >= options_.queueCapacity) {
    ++stats_.droppedQueueFull;
    return;
  }
  Series& s = object.series.emplace_back();
  s.key = seriesKey;
  s.lastObserved = wallNow;
  s.lastSeen = steadyNow;
  s.queued = true;
  content.regarding = regarding;
  content.eventTime = wallNow;
  createQueue_.push_back({{std::move(objectKey), seriesKey}, std::move(content)});
  cv_.notify_all();
}

nlohmann::json EventRecorder::EventJson(const EventContent& c, const std::string& ns,
                                        const std::string& name) const {
  const ObjectReference& r = c.regarding;
  nlohmann::json ref = {{"apiVersion", r.apiVersion}, {"kind", r.kind}, {"name", r.name}};
  if (!r.namespace_.empty()) ref["namespace"] = r.namespace_;
  if (!r.uid.empty()) ref["uid"] = r.uid;
  if (!r.resourceVersion.empty()) ref["resourceVersion"] = r.resourceVersion;
  nlohmann::json event = {{"apiVersion", "events.k8s.io/v1"},
                          {"kind", "Event"},
                          {"metadata", {{"namespace", ns}, {"name", name}}},
                          {"eventTime", FormatMicroTime(c.eventTime)},
                          {"reportingController", options_.reportingController},
                          {"reportingInstance", options_.reportingInstance},
                          {"action", c.action},
                          {"reason", c.reason},
                          {"type", TypeName(c.type)},
                          {"regarding", std::move(ref)}};
  if (!c.note.empty()) event["note"] = c.note;
  return event;
}

void EventRecorder::Write(const SeriesId& id, std::unique_ptr<EventContent> content) {
  // Called without mu_ held, for one series with a create (content set) or a count to write.
  std::string ns, nameBase;
  uint64_t unique = 0;
  int32_t count = 0;
  std::chrono::system_clock::time_point lastObserved;
  {
    std::lock_guard lock(mu_);
    TrackedObject* object = nullptr;
    Series* s = FindLocked(id, &object);
    if (s == nullptr) return;
    ns = object->eventNamespace;
    nameBase = object->nameBase;
    unique = s->unique;
    count = s->count;
    lastObserved = s->lastObserved;
  }
  const ResourceRef ref = EventsResource();
  uint64_t createdUnique = 0;
  auto create = [&](const EventContent& c) -> Status {
    const uint64_t u = NextUnique(clock_.Now());
    nlohmann::json event = EventJson(c, ns, EventName(nameBase, u));
    if (count > 1) event["series"] = SeriesJson(count, lastObserved);
    auto r = client_.Create(ref, ns, event, {});
    if (r.ok()) createdUnique = u;
    return r.status();
  };

  Status result;
  if (content) {
    result = create(*content);
  } else if (unique != 0) {
    nlohmann::json patch = {{"series", SeriesJson(count, lastObserved)}};
    result =
        client_.Patch(ref, ns, EventName(nameBase, unique), PatchType::kMerge, patch, {}).status();
    if (result.code() == StatusCode::kNotFound) {  // the Event expired (TTL): start it again
      {
        std::lock_guard lock(mu_);
        Series* s = FindLocked(id);
        if (s != nullptr && s->repeated) content = std::make_unique<EventContent>(*s->repeated);
      }
      if (content) result = create(*content);
    }
  } else {
    return;  // not created (a failed create): nothing to count on
  }

  std::lock_guard lock(mu_);
  TrackedObject* object = nullptr;
  Series* s = FindLocked(id, &object);
  if (!result.ok()) {
    ++stats_.failed;
    if (s != nullptr && s->unique == 0) {  // the create failed: the next occurrence tries again
      std::erase_if(object->series, [&](const Series& x) { return x.key == id.seriesKey; });
      s = nullptr;
    }
  } else {
    if (createdUnique != 0) {
      ++stats_.created;  // a create that carries a series (count > 1) is still one write
    } else {
      ++stats_.seriesUpdates;
    }
    if (s != nullptr) {
      if (createdUnique != 0) s->unique = createdUnique;
      s->writtenCount = count;
      s->queued = false;
      if (s->count > count) MarkDirtyLocked(id.objectKey, *s);
    }
  }
  if (s != nullptr && !s->dirty) s->repeated.reset();  // no write needs the content any more
  if (!result.ok()) Log("writing an Event failed: " + result.ToString());
}

void EventRecorder::Loop(const std::stop_token& stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    auto seriesDue = [&] {
      return !dirty_.empty() &&
             (flushRequested_ || clock_.SteadyNow() - lastSeriesWrite_ >= options_.seriesInterval);
    };
    if (createQueue_.empty() && !seriesDue()) {
      if (flushRequested_) {
        flushRequested_ = false;
        idleCv_.notify_all();
      }
      MaybeExpireLocked(clock_.SteadyNow());  // also when Record() is not called for a while
      auto timeout = ExpiryPeriod();
      if (!dirty_.empty()) {
        timeout = std::min(timeout, std::chrono::duration_cast<std::chrono::milliseconds>(
                                        options_.seriesInterval));
      }
      cv_.wait_for(lock, stop, timeout, [&] { return !createQueue_.empty() || flushRequested_; });
      continue;
    }
    busy_ = true;
    if (!createQueue_.empty()) {
      CreateRequest request = std::move(createQueue_.front());
      createQueue_.pop_front();
      lock.unlock();
      Write(request.id, std::make_unique<EventContent>(std::move(request.content)));
      lock.lock();
    } else {
      std::vector<SeriesId> ids;
      ids.swap(dirty_);
      for (const SeriesId& id : ids) {
        if (Series* s = FindLocked(id)) s->dirty = false;
      }
      lock.unlock();
      for (const SeriesId& id : ids) Write(id, nullptr);
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
    return createQueue_.empty() && dirty_.empty() && !busy_ && !flushRequested_;
  });
}

}  // namespace ayatori::kube
