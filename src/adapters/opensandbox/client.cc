#include "adapters/opensandbox/client.h"

#include <algorithm>
#include <stop_token>
#include <string>

#include "adapters/opensandbox/spec.h"
#include "base/url.h"

namespace ayatori::adapters::opensandbox {

namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

// What every request to the server or execd carries: no compressed answers, bounded bodies.
void Bound(kube::HttpRequest& r) {
  r.maxBodyBytes = kMaxJsonBodyBytes;
  r.identityEncoding = true;
}

// The transport enforces the bound; this also holds for transports that do not (fakes).
StatusOr<kube::HttpResponse> Checked(StatusOr<kube::HttpResponse> resp,
                                     const kube::HttpRequest& r) {
  if (resp.ok() && resp->body.size() > kMaxJsonBodyBytes) {
    return Status(StatusCode::kUnavailable, r.method + " " + r.url + ": response body exceeds " +
                                                std::to_string(kMaxJsonBodyBytes) +
                                                " bytes; not read further");
  }
  return resp;
}

}  // namespace

ServerClient::ServerClient(kube::HttpTransport& transport, std::string endpoint,
                           SensitiveString apiKey, ClientTimeouts timeouts)
    : transport_(transport),
      endpoint_(std::move(endpoint)),
      apiKey_(std::move(apiKey)),
      timeouts_(timeouts) {}

StatusOr<kube::HttpResponse> ServerClient::Call(const std::string& method,
                                                const std::string& pathAndQuery,
                                                const std::string& body,
                                                std::chrono::milliseconds timeout) const {
  kube::HttpRequest r;
  r.method = method;
  r.url = endpoint_ + pathAndQuery;
  r.body = body;
  r.timeout = timeout.count() > 0 ? timeout : timeouts_.request;
  r.headers.emplace_back("Accept", "application/json");
  if (!body.empty()) r.headers.emplace_back("Content-Type", "application/json");
  if (!apiKey_.reveal().empty()) r.headers.emplace_back("OPEN-SANDBOX-API-KEY", apiKey_.reveal());
  Bound(r);
  return Checked(transport_.Do(r), r);
}

StatusOr<kube::HttpResponse> ServerClient::Execd(const ExecdTarget& target,
                                                 const std::string& method,
                                                 const std::string& pathAndQuery,
                                                 const std::string& body,
                                                 std::chrono::milliseconds timeout) const {
  kube::HttpRequest r;
  r.method = method;
  r.url = target.baseUrl + pathAndQuery;
  r.body = body;
  r.timeout = timeout.count() > 0 ? timeout : timeouts_.request;
  r.headers = target.headers;
  if (!body.empty()) r.headers.emplace_back("Content-Type", "application/json");
  Bound(r);
  return Checked(transport_.Do(r), r);
}

StatusOr<std::string> ServerClient::RunBackground(
    const ExecdTarget& target, const std::string& command,
    std::optional<std::pair<int64_t, int64_t>> runAs) const {
  kube::HttpRequest r;
  r.method = "POST";
  r.url = target.baseUrl + "/command";
  nlohmann::json body = {{"command", command}, {"background", true}};
  if (runAs) {
    body["uid"] = runAs->first;
    body["gid"] = runAs->second;
  }
  r.body = body.dump();
  r.timeout = timeouts_.request;
  r.headers = target.headers;
  r.headers.emplace_back("Content-Type", "application/json");
  r.headers.emplace_back("Accept", "text/event-stream");
  Bound(r);
  EventStreamParser parser;
  std::string id;
  std::string error;
  bool complete = false;
  auto resp = transport_.Stream(r, std::stop_token(), [&](std::string_view data) {
    for (const auto& event : parser.Feed(data)) {
      const std::string type = event.value("type", "");
      if (type == "init" && event.contains("text") && event["text"].is_string()) {
        id = event["text"].get<std::string>();
      } else if (type == "error") {
        error = event.dump();
      } else if (type == "execution_complete") {
        complete = true;
      }
    }
    return !complete && !parser.overflowed();
  });
  if (parser.overflowed() && !complete) {
    return Status(StatusCode::kInternal,
                  "execd's event stream for POST /command sent a frame longer than " +
                      std::to_string(kMaxEventFrameBytes) + " bytes; the stream was dropped" +
                      (id.empty() ? std::string() : " (command " + id + ")"));
  }
  if (!resp.ok()) {
    // The stream may end without its final chunk after the events that matter (upstream issue
    // #1277): with the id in hand the command is running.
    if (!id.empty()) return id;
    return resp.status();
  }
  if (resp->status != 200) {
    return Status(StatusCode::kFailedPrecondition,
                  "execd refused the command: " + ErrorMessage(resp->status, resp->body));
  }
  if (id.empty()) {
    return Status(StatusCode::kInternal,
                  "execd's answer to POST /command had no init event" +
                      (error.empty() ? std::string() : " (error event " + error + ")"));
  }
  return id;
}

StatusOr<size_t> ServerClient::ReadOutput(
    const ExecdTarget& target, const std::string& commandId, uint64_t cursor, size_t maxBytes,
    const std::function<bool(std::string_view)>& onData) const {
  kube::HttpRequest r;
  r.method = "GET";
  r.url = target.baseUrl + "/command/" + base::PercentEncode(commandId) +
          "/logs?cursor=" + std::to_string(cursor);
  r.timeout = timeouts_.request;
  r.headers = target.headers;
  Bound(r);
  size_t read = 0;
  bool readerLeft = false;
  auto resp = transport_.Stream(r, std::stop_token(), [&](std::string_view data) {
    const size_t take = std::min(data.size(), maxBytes - read);
    if (take > 0 && !onData(data.substr(0, take))) {
      readerLeft = true;
      return false;
    }
    read += take;
    return read < maxBytes;
  });
  if (!resp.ok()) {
    // Whatever was handed over is delivered; the next read starts after it.
    if (read > 0 || readerLeft) return read;
    return resp.status();
  }
  if (resp->status == 400 || resp->status == 404) {
    return Status(StatusCode::kNotFound, "execd: " + ErrorMessage(resp->status, resp->body));
  }
  if (resp->status < 200 || resp->status >= 300) {
    return Status(StatusCode::kServerError,
                  "execd logs: " + ErrorMessage(resp->status, resp->body));
  }
  return read;
}

std::vector<nlohmann::json> EventStreamParser::Feed(std::string_view bytes) {
  std::vector<nlohmann::json> events;
  if (overflowed_) return events;
  // Only the new bytes (and the one before them) can complete a frame separator: a frame
  // arriving in many small pieces costs linear time, not quadratic.
  size_t from = scanned_ > 0 ? scanned_ - 1 : 0;
  buffer_.append(bytes);
  size_t end;
  while ((end = buffer_.find("\n\n", from)) != std::string::npos) {
    from = 0;
    std::string frame = buffer_.substr(0, end);
    buffer_.erase(0, end + 2);
    // A frame may be "data: {...}" lines (standard SSE) or the bare object.
    std::string payload;
    size_t pos = 0;
    while (pos <= frame.size()) {
      size_t nl = frame.find('\n', pos);
      std::string line = frame.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      if (line.rfind("data:", 0) == 0) line = line.substr(5);
      if (line.rfind("event:", 0) != 0 && line.rfind("id:", 0) != 0 && line.rfind(':', 0) != 0) {
        payload += line;
      }
      if (nl == std::string::npos) break;
      pos = nl + 1;
    }
    payload = Trim(payload);
    if (payload.empty()) continue;
    auto doc = nlohmann::json::parse(payload, nullptr, false);
    if (doc.is_object()) events.push_back(std::move(doc));
  }
  scanned_ = buffer_.size();
  if (buffer_.size() > maxFrameBytes_) {
    overflowed_ = true;
    buffer_.clear();
    buffer_.shrink_to_fit();
    scanned_ = 0;
  }
  return events;
}

}  // namespace ayatori::adapters::opensandbox
