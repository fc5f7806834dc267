// The HTTP seam of the REST client: CurlTransport (libcurl, TLS, keep-alive) in production,
// a fake in unit tests, so retry, error-decoding and rate-limit logic is tested without a server.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ayatori/status.h"
#include "kube/config.h"

namespace ayatori::kube {

struct HttpRequest {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string url;     // absolute: server + path + query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{0};  // whole request; 0 = no limit
  // The most body bytes collected into HttpResponse::body (Do, and Stream's non-2xx answers);
  // a longer body ends the request with kUnavailable "response body exceeds N bytes". 0 = no
  // limit. For servers that are not trusted to keep their answers small.
  size_t maxBodyBytes = 0;
  // Ask for and accept only an unencoded body (Accept-Encoding: identity, no decompression): a
  // compressed body is passed on as it came. For servers not trusted with a decompressor.
  bool identityEncoding = false;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string retryAfter;  // the Retry-After header, "" if absent
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Transport failures (refused, TLS, timeout) are kUnavailable with the reason in the message.
  virtual StatusOr<HttpResponse> Do(const HttpRequest& request) = 0;
  // Like Do, but a 2xx body is handed to `onData` piece by piece as it arrives (the response's
  // body stays empty); a non-2xx body is collected in the response. `onData` returning false ends
  // the transfer without error; `stop` ends it with kCancelled at once.
  virtual StatusOr<HttpResponse> Stream(const HttpRequest& request, std::stop_token stop,
                                        const std::function<bool(std::string_view)>& onData) = 0;
  // New connections opened so far (keep-alive reuse keeps this low); 0 if unknown.
  virtual uint64_t ConnectionsOpened() const { return 0; }
};

struct CurlTransportOptions {
  std::chrono::milliseconds connectTimeout{10000};
  // A connection that delivered fewer than 1 byte/s for this long is dropped (0 = never); watch
  // streams get bookmarks about once a minute, so keep this above that.
  std::chrono::seconds lowSpeedTime{0};
};

// libcurl over HTTP/1.1 with keep-alive: idle easy handles are pooled and share one connection
// cache, TLS session cache and DNS cache, so sequential requests from any thread reuse
// connections. TLS verification uses only config.caPem when it is set (not the system store).
std::unique_ptr<HttpTransport> NewCurlTransport(const RestConfig& config,
                                                const CurlTransportOptions& options);

}  // namespace ayatori::kube
