#include "kube/watch_decoder.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "kube/api_error.h"

namespace ayatori::kube {

StatusOr<WatchEvent> DecodeWatchEvent(std::string_view line, std::string_view resource) {
  const std::string watch = "watch " + std::string(resource);
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(StatusCode::kInternal, watch + ": undecodable event from the server");
  }
  auto typeField = j.find("type");
  if (typeField != j.end() && !typeField->is_string()) {
    return Status(StatusCode::kInternal, watch + ": event type is not a string");
  }
  const std::string type = typeField != j.end() ? typeField->get<std::string>() : "";
  auto obj = j.find("object");
  if (obj == j.end()) {
    return Status(StatusCode::kInternal, watch + ": event without object (" + type + ")");
  }
  WatchEvent ev;
  if (type == "ADDED") {
    ev.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    ev.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    ev.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    ev.type = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    return DecodeStatusObject(*obj).ToStatus();
  } else {
    return Status(StatusCode::kInternal, watch + ": unknown event type " + type);
  }
  ev.object = std::move(*obj);
  return ev;
}

bool WatchStreamDecoder::Line(std::string_view line) {
  if (line.empty()) return true;
  StatusOr<WatchEvent> ev = DecodeWatchEvent(line, resource_);
  if (!ev.ok()) {
    error_ = ev.status();
    return false;
  }
  return handler_(std::move(*ev));
}

bool WatchStreamDecoder::Feed(std::string_view chunk) {
  if (ended_) return false;
  pending_.append(chunk);
  size_t start = 0;
  for (;;) {
    size_t nl = pending_.find('\n', start);
    if (nl == std::string::npos) break;
    if (!Line(std::string_view(pending_).substr(start, nl - start))) {
      ended_ = true;
      return false;
    }
    start = nl + 1;
  }
  pending_.erase(0, start);
  return true;
}

Status WatchStreamDecoder::Finish() {
  if (!ended_ && !pending_.empty()) {
    ended_ = true;
    Line(pending_);  // a final event without its newline
  }
  return error_;
}

}  // namespace ayatori::kube
