#include "adapters/docker/events.h"

#include <nlohmann/json.hpp>
#include <set>

#include "adapters/docker/json_get.h"
#include "api/types.h"
#include "base/url.h"

namespace ayatori::adapters::docker {

namespace {

// Container events after which an execution's state may differ.
const std::set<std::string, std::less<>> kStateEvents = {"create", "start", "restart", "die",
                                                         "oom",    "kill",  "stop",    "destroy",
                                                         "rename", "pause", "unpause"};

std::string LabelFilter() {
  nlohmann::json filters = {{"type", {"container"}}, {"label", {api::kJobUidLabel}}};
  return base::PercentEncode(filters.dump());
}

}  // namespace

std::optional<ContainerEvent> ParseContainerEvent(std::string_view line) {
  auto e = nlohmann::json::parse(line, nullptr, false);
  if (GetString(e, "Type") != "container") return std::nullopt;
  ContainerEvent event;
  event.action = GetString(e, "Action");
  if (kStateEvents.count(event.action) == 0) return std::nullopt;
  const nlohmann::json* actor = GetObject(e, "Actor");
  const nlohmann::json* attrs = actor != nullptr ? GetObject(*actor, "Attributes") : nullptr;
  if (attrs == nullptr) return std::nullopt;
  event.uid = GetString(*attrs, api::kJobUidLabel);
  event.namespace_ = GetString(*attrs, api::kJobNamespaceLabel);
  event.name = GetString(*attrs, api::kJobNameLabel);
  if (event.uid.empty()) return std::nullopt;
  return event;
}

void EventStreamDecoder::Feed(std::string_view data) {
  if (skipping_) {
    const size_t nl = data.find('\n');
    if (nl == std::string_view::npos) return;
    skipping_ = false;
    data.remove_prefix(nl + 1);
  }
  pending_.append(data);
  size_t start = 0;
  for (size_t nl = pending_.find('\n'); nl != std::string::npos; nl = pending_.find('\n', start)) {
    if (auto event = ParseContainerEvent(std::string_view(pending_).substr(start, nl - start))) {
      onEvent_(std::move(*event));
    }
    start = nl + 1;
  }
  pending_.erase(0, start);
  if (pending_.size() > kMaxEventLineBytes) {
    pending_.clear();
    skipping_ = true;
  }
}

EventWatcher::EventWatcher(std::shared_ptr<EngineClient> client, NotifyFn notify,
                           std::chrono::milliseconds maxBackoff)
    : client_(std::move(client)), notify_(std::move(notify)), maxBackoff_(maxBackoff) {
  thread_ = std::thread([this] { Run(); });
}

EventWatcher::~EventWatcher() { Stop(); }

void EventWatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  streamStop_.Cancel();
  if (thread_.joinable()) thread_.join();
}

bool EventWatcher::WaitFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [this] { return stopping_; });
  return !stopping_;
}

Status EventWatcher::ListAndNotify() {
  nlohmann::json filters = {{"label", {api::kJobUidLabel}}};
  auto r =
      client_->Call("GET", "/containers/json?all=1&filters=" + base::PercentEncode(filters.dump()));
  if (!r.ok()) return r.status();
  if (r->status != 200) return Status(StatusCode::kServerError, EngineErrorMessage(*r));
  auto list = nlohmann::json::parse(r->body, nullptr, false);
  if (!list.is_array()) return Status(StatusCode::kInternal, "container list is not an array");
  for (const auto& c : list) {
    std::string uid = GetLabel(c, api::kJobUidLabel);
    if (uid.empty()) continue;
    known_[uid] = {GetLabel(c, api::kJobNamespaceLabel), GetLabel(c, api::kJobNameLabel)};
  }
  NotifyKnown();
  return Status::Ok();
}

void EventWatcher::NotifyKnown() {
  for (const auto& [uid, job] : known_) notify_(job.first, job.second);
}

void EventWatcher::HandleEvent(const ContainerEvent& event) {
  if (event.action == "destroy") {
    known_.erase(event.uid);
  } else {
    known_[event.uid] = {event.namespace_, event.name};
  }
  notify_(event.namespace_, event.name);
}

void EventWatcher::Run() {
  const std::chrono::milliseconds initialBackoff(100);
  std::chrono::milliseconds backoff = initialBackoff;
  bool connected = false;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    // Events from one second before the listing on are replayed, so none falls in between.
    auto since = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count() -
                 1;
    Status st = ListAndNotify();
    if (st.ok()) {
      connected = true;
      EventStreamDecoder decoder([this](ContainerEvent&& event) { HandleEvent(event); });
      long httpStatus = 0;
      st = client_->Stream(
          "/events?since=" + std::to_string(since) + "&filters=" + LabelFilter(),
          [&](long code) {
            httpStatus = code;
            if (code == 200) backoff = initialBackoff;
          },
          [&](std::string_view data) {
            if (httpStatus != 200) return false;
            decoder.Feed(data);
            return true;
          },
          streamStop_);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    // The engine went away (or refused the stream): whatever the controller believes may be
    // stale, so it re-observes every Job here once (and sees them Unknown while unreachable).
    if (connected) {
      NotifyKnown();
      connected = false;
    }
    if (!WaitFor(backoff)) return;
    backoff = std::min(backoff * 2, maxBackoff_);
  }
}

}  // namespace ayatori::adapters::docker
