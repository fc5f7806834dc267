// HTTP calls to an OpenSandbox server's lifecycle API and to the execd of its sandboxes, over the
// project's HTTP seam (kube::HttpTransport: libcurl in production, a fake in unit tests). It
// knows paths, headers and the event-stream framing; what the answers mean lives in the adapter.
// The API key travels only to the lifecycle API, never to an execd endpoint.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/adapter.h"
#include "ayatori/status.h"
#include "kube/http.h"

namespace ayatori::adapters::opensandbox {

// Bounds on what the adapter reads from the server and from execd (which runs inside the
// sandbox, next to the task, and is as trusted as the task): every JSON answer, every
// event-stream frame and every read of a command's output. Nothing they send is decompressed
// (Accept-Encoding: identity).
inline constexpr size_t kMaxJsonBodyBytes = size_t{8} << 20;
inline constexpr size_t kMaxEventFrameBytes = size_t{1} << 20;
// One read of a command's output (GET /command/{id}/logs?cursor=): longer output is read on by
// cursor, never held whole.
inline constexpr size_t kLogChunkBytes = size_t{1} << 20;

struct ClientTimeouts {
  std::chrono::milliseconds request{30000};
  // POST /v1/sandboxes is synchronous on the Docker runtime: it pulls the image first.
  std::chrono::milliseconds create{std::chrono::minutes(10)};
};

// Where a sandbox's execd answers, from GET /v1/sandboxes/{id}/endpoints/44772.
struct ExecdTarget {
  std::string baseUrl;  // http://host:port[/path]
  std::vector<std::pair<std::string, std::string>> headers;
};

class ServerClient {
 public:
  // `endpoint` is the lifecycle base URL (http://127.0.0.1:8080/v1); `apiKey` may be empty.
  ServerClient(kube::HttpTransport& transport, std::string endpoint, SensitiveString apiKey,
               ClientTimeouts timeouts);

  // One lifecycle request (path relative to the endpoint, e.g. "/sandboxes"). Transport failures
  // are kUnavailable; any HTTP answer is returned.
  StatusOr<kube::HttpResponse> Call(const std::string& method, const std::string& pathAndQuery,
                                    const std::string& body = "",
                                    std::chrono::milliseconds timeout = {}) const;

  // One execd request.
  StatusOr<kube::HttpResponse> Execd(const ExecdTarget& target, const std::string& method,
                                     const std::string& pathAndQuery, const std::string& body = "",
                                     std::chrono::milliseconds timeout = {}) const;

  // POST /command {"command", "background": true} and reads the event stream up to the
  // execution_complete event (not to the end: execd holds a background stream open for a grace
  // period, and older ones may drop the final chunk). Returns the command id of the init event.
  // A non-200 answer is kFailedPrecondition with the server's message; a stream without init is
  // kInternal; transport failures are kUnavailable (the command may or may not run).
  // `runAs`: the uid and gid execd runs the command as (nullopt: execd's own, root).
  StatusOr<std::string> RunBackground(
      const ExecdTarget& target, const std::string& command,
      std::optional<std::pair<int64_t, int64_t>> runAs = std::nullopt) const;

  // GET /command/{id}/logs?cursor=<cursor>: hands at most `maxBytes` of the output from byte
  // offset `cursor` on to `onData` as it arrives (nothing is buffered here) and returns how many
  // bytes it handed over; the next read starts at cursor + that (execd's cursor is a byte
  // offset). kNotFound when execd does not know the command (400, 404), kServerError for other
  // answers, kUnavailable for transport failures.
  StatusOr<size_t> ReadOutput(const ExecdTarget& target, const std::string& commandId,
                              uint64_t cursor, size_t maxBytes,
                              const std::function<bool(std::string_view)>& onData) const;

  const std::string& endpoint() const { return endpoint_; }
  const SensitiveString& apiKey() const { return apiKey_; }

 private:
  kube::HttpTransport& transport_;
  std::string endpoint_;
  SensitiveString apiKey_;
  ClientTimeouts timeouts_;
};

// The events of an execd event stream: JSON objects separated by blank lines, with or without a
// "data:" prefix (execd sends them bare; both SDKs accept both).
class EventStreamParser {
 public:
  explicit EventStreamParser(size_t maxFrameBytes = kMaxEventFrameBytes)
      : maxFrameBytes_(maxFrameBytes) {}
  // Feeds bytes; returns the complete events found so far (malformed ones are skipped). Once a
  // frame grows past maxFrameBytes without ending, the parser keeps nothing more and
  // overflowed() is true: the caller drops the stream.
  std::vector<nlohmann::json> Feed(std::string_view bytes);
  bool overflowed() const { return overflowed_; }
  // Bytes held for an unfinished frame (at most maxFrameBytes).
  size_t buffered() const { return buffer_.size(); }

 private:
  size_t maxFrameBytes_;
  bool overflowed_ = false;
  std::string buffer_;
  size_t scanned_ = 0;  // bytes of buffer_ already searched for a separator
};

}  // namespace ayatori::adapters::opensandbox
