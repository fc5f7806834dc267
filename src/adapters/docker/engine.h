// A minimal Docker Engine HTTP API client over the project's HTTP stack (http/http.h, libcurl; no
// Docker client library): unix socket (unix:///path) by default, tcp://host:port optionally, with
// TLS client certificates when given. It knows the API version prefix, the error body shape and
// how engine failures are worded; what the calls mean lives in the adapter. Request bodies may
// carry Secret values and are never logged.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"
#include "ayatori/status.h"
#include "http/http.h"

namespace ayatori::adapters::docker {

// How the message of a failed connection to the engine starts: "<prefix><libcurl's error>
// (<libcurl's detail, which names the address>)".
inline constexpr const char* kTransportErrorPrefix = "docker engine unreachable: ";

// PEM material for tcp:// endpoints with TLS (the Secret behind DockerExecutionParameters'
// tlsSecretRef, adapters/docker/tls_secret.h). Empty = plain HTTP. The CA verifies the engine's
// certificate; the client certificate and key are what an engine run with --tlsverify demands.
struct TlsMaterial {
  std::string caPem;
  SensitiveString certPem;
  SensitiveString keyPem;
  bool empty() const {
    return caPem.empty() && certPem.reveal().empty() && keyPem.reveal().empty();
  }
  bool operator==(const TlsMaterial&) const = default;
};

// Where the engine listens, parsed from unix:///path, tcp://host:port, http(s)://host:port.
struct EngineEndpoint {
  std::string socketPath;  // non-empty for unix sockets
  std::string baseUrl;     // "http://localhost" for unix sockets, else scheme://host:port
};
StatusOr<EngineEndpoint> ParseEngineEndpoint(std::string_view endpoint, bool tls);
// Whether requests to `endpoint` cross the network unencrypted: http://, or tcp:// without TLS.
bool IsPlainNetworkEndpoint(std::string_view endpoint, bool tls);

struct HttpResponse {
  long status = 0;
  std::string body;
};

// The "message" of a Docker error body ({"message": "..."}), or a short excerpt of the body.
std::string EngineErrorMessage(const HttpResponse& response);

// Lets another thread end a Stream() promptly.
class StreamStop {
 public:
  void Cancel() { source_.request_stop(); }
  bool cancelled() const { return source_.stop_requested(); }

 private:
  friend class EngineClient;
  std::stop_source source_;  // the stream in progress wakes up at once (http::Transport::Stream)
};

// How much of an answer Call() keeps. The engine is trusted less than the controller's memory:
// a JSON answer beyond maxBytes is an error (kInternal), never read whole; keepTail keeps only
// the last maxBytes instead (progress streams such as a pull's, whose verdict comes last).
inline constexpr size_t kMaxEngineAnswerBytes = size_t{8} * 1024 * 1024;
struct BodyLimit {
  size_t maxBytes = kMaxEngineAnswerBytes;
  bool keepTail = false;
};

struct EngineTimeouts {
  std::chrono::milliseconds connect{5000};
  std::chrono::milliseconds request{30000};
};

class EngineClient {
 public:
  // maxApiVersion: the highest API version used ("1.41"); an older engine's own version is used
  // instead, learned from GET /version on first use.
  EngineClient(EngineEndpoint endpoint, const TlsMaterial& tls, std::string maxApiVersion,
               EngineTimeouts timeouts);
  ~EngineClient();
  EngineClient(const EngineClient&) = delete;
  EngineClient& operator=(const EngineClient&) = delete;

  // One request to /v<version><pathAndQuery>. Transport failures are kUnavailable (or
  // kDeadlineExceeded on timeout); any HTTP answer is returned as a response, its body bounded
  // by `limit` (kInternal when a body exceeds it without keepTail).
  StatusOr<HttpResponse> Call(std::string_view method, const std::string& pathAndQuery,
                              const std::string& jsonBody = "",
                              const std::vector<std::string>& extraHeaders = {},
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(0),
                              BodyLimit limit = {});

  // A streaming GET: `onData` receives the body in chunks as they arrive and returns false to
  // end the stream. `onStatus` is called once with the HTTP status before any data. Returns OK
  // when the server ended the stream or onData/stop ended it; an error otherwise.
  Status Stream(const std::string& pathAndQuery, const std::function<void(long)>& onStatus,
                const std::function<bool(std::string_view)>& onData, StreamStop& stop);

  // The API version in use ("1.41"), negotiating it first if needed.
  StatusOr<std::string> ApiVersion();

 private:
  StatusOr<HttpResponse> Perform(http::Request request, BodyLimit limit);

  EngineEndpoint endpoint_;
  std::string maxApiVersion_;
  EngineTimeouts timeouts_;
  std::unique_ptr<http::Transport> transport_;
  std::mutex mu_;
  std::string apiVersion_;  // empty until negotiated
};

// "1.40" < "1.41" < "1.100".
int CompareApiVersions(std::string_view a, std::string_view b);

}  // namespace ayatori::adapters::docker
