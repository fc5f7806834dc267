// The project's one HTTP client stack: the request and response of one transfer, the Transport
// seam (libcurl in production, Fake* transports in unit tests) and its libcurl implementation,
// used by the Kubernetes client (kube/rest_client.h), the Docker engine client
// (adapters/docker/engine.h) and the OpenSandbox client (adapters/opensandbox/client.h). Bodies
// may carry secrets (tokens, Secret values) and are never logged here.
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

namespace ayatori::http {

// Why a transfer got no complete answer, sorted into the kinds that callers word differently (a
// Docker client tells an untrusted engine certificate from an engine that is down).
enum class FailureKind {
  kNetwork,            // refused, reset, name not resolved, ...
  kTimeout,            // the connect or request timeout passed
  kTlsUntrustedPeer,   // the server's certificate is not trusted by the configured CAs
  kTlsUnusableConfig,  // our client certificate, key or CA cannot be used
  kTlsHandshake,       // the handshake failed (e.g. a client certificate the server refuses)
  kBodyTooLarge,       // the answer passed Request::maxBodyBytes (BodyOverflow::kFail)
};
struct Failure {
  FailureKind kind = FailureKind::kNetwork;
  std::string summary;  // libcurl's name of the error ("Couldn't connect to server")
  std::string detail;   // libcurl's detail, which names the address; may be empty
};

// What happens to an answer longer than Request::maxBodyBytes.
enum class BodyOverflow {
  kFail,      // the transfer ends with a kBodyTooLarge failure; the body is not read further
  kKeepHead,  // the transfer ends without error; the body holds its first maxBodyBytes
  kKeepTail,  // the whole answer is read; the body holds (at least) its last maxBodyBytes and
              // at most twice that (progress streams such as a pull's, whose verdict comes last)
};

struct Request {
  std::string method{};  // GET, POST, PUT, PATCH, DELETE, HEAD
  std::string url{};     // absolute: server + path + query
  std::vector<std::pair<std::string, std::string>> headers{};
  std::string body{};
  std::chrono::milliseconds timeout{0};  // whole request; 0 = no limit
  // The most body bytes collected into Response::body (Do, and Stream's non-2xx answers); see
  // `overflow`. 0 = no limit. For servers that are not trusted to keep their answers small.
  size_t maxBodyBytes = 0;
  BodyOverflow overflow = BodyOverflow::kFail;
  // Ask for and accept only an unencoded body (Accept-Encoding: identity, no decompression): a
  // compressed body is passed on as it came. For servers not trusted with a decompressor.
  bool identityEncoding = false;
  // Optional observers for callers that need more than the Response (Fake transports may ignore
  // them). onStatus: Stream only, once, with the HTTP status before the body's first byte.
  // onFailure: why the transfer failed, before Do or Stream return the failure's Status.
  std::function<void(int)> onStatus{};
  std::function<void(const Failure&)> onFailure{};
};

struct Response {
  int status = 0;
  std::string body;
  std::string retryAfter;  // the Retry-After header, "" if absent
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Transport failures (refused, TLS, timeout, a body past its limit) are kUnavailable
  // "METHOD URL: <what failed>"; the URL holds no secret (credentials travel in headers).
  virtual StatusOr<Response> Do(const Request& request) = 0;
  // Like Do, but a 2xx body is handed to `onData` piece by piece as it arrives (the response's
  // body stays empty); a non-2xx body is collected in the response. `onData` returning false ends
  // the transfer without error; `stop` ends it with kCancelled at once.
  virtual StatusOr<Response> Stream(const Request& request, std::stop_token stop,
                                    const std::function<bool(std::string_view)>& onData) = 0;
  // New connections opened so far (keep-alive reuse keeps this low); 0 if unknown.
  virtual uint64_t ConnectionsOpened() const { return 0; }
};

// Whom the transport trusts and what it presents, PEM text in memory (callers read files
// themselves, so that an unreadable file is reported in their terms).
struct TlsOptions {
  std::string caPem;          // the only CAs trusted when set; empty = the system trust store
  std::string clientCertPem;  // a client certificate (chain), with its key
  std::string clientKeyPem;   // secret
  bool insecureSkipVerify = false;
};

struct CurlOptions {
  std::chrono::milliseconds connectTimeout{10000};
  // A connection that delivered fewer than 1 byte/s for this long is dropped (0 = never); watch
  // streams get bookmarks about once a minute, so keep this above that.
  std::chrono::seconds lowSpeedTime{0};
  // Connect to this unix socket instead of the URL's host (Docker's unix:///path endpoints).
  std::string unixSocketPath;
  // Every request goes through this proxy (CURLOPT_PROXY: http://, https://, socks5://,
  // socks5h://); an https:// proxy is verified with the TlsOptions (as kubectl does).
  std::string proxyUrl;
  // Verify the server certificate against this name instead of the URL's host: the request goes
  // to the URL's host and port, but TLS (SNI and the name check) and the Host header use this
  // name (kubeconfig's tls-server-name).
  std::string tlsServerName;
};

// libcurl over HTTP/1.1 with keep-alive: idle easy handles are pooled and share one connection
// cache, TLS session cache and DNS cache, so sequential requests from any thread reuse
// connections. Only http:// and https:// URLs; redirects are not followed.
std::unique_ptr<Transport> NewCurlTransport(const TlsOptions& tls, const CurlOptions& options);

}  // namespace ayatori::http
