#include "adapters/docker/engine.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>

#include "adapters/docker/json_get.h"

namespace ayatori::adapters::docker {

namespace {

// The most of a refused stream's answer kept for its error message (the callers read less).
constexpr size_t kMaxStreamErrorBytes = size_t{64} * 1024;

// The engine or our TLS material failed the handshake: said as such, since waiting will not fix
// it (libcurl's detail names the certificate problem, never key material).
const char* TlsProblem(http::FailureKind kind) {
  switch (kind) {
    case http::FailureKind::kTlsUntrustedPeer:
      return "docker engine TLS: the engine's certificate is not trusted by the configured CA";
    case http::FailureKind::kTlsUnusableConfig:
      return "docker engine TLS: the client certificate, key or CA cannot be used";
    case http::FailureKind::kTlsHandshake:
      return "docker engine TLS: the handshake failed (a client certificate the engine does not "
             "accept, or none)";
    default:
      return nullptr;
  }
}

Status EngineFailure(const http::Failure& failure, const BodyLimit& limit) {
  if (failure.kind == http::FailureKind::kBodyTooLarge) {
    return Status(StatusCode::kInternal, "docker engine: the answer exceeds " +
                                             std::to_string(limit.maxBytes) +
                                             " bytes and was not read");
  }
  const char* tls = TlsProblem(failure.kind);
  std::string message =
      tls != nullptr ? std::string(tls) : std::string(kTransportErrorPrefix) + failure.summary;
  if (!failure.detail.empty()) message += " (" + failure.detail + ")";
  return Status(failure.kind == http::FailureKind::kTimeout ? StatusCode::kDeadlineExceeded
                                                            : StatusCode::kUnavailable,
                std::move(message));
}

http::TlsOptions TlsOptionsOf(const TlsMaterial& tls) {
  http::TlsOptions out;
  out.caPem = tls.caPem;
  out.clientCertPem = tls.certPem.reveal();
  out.clientKeyPem = tls.keyPem.reveal();
  return out;
}

// "Name: value" lines as header pairs.
void AddHeaderLines(const std::vector<std::string>& lines, http::Request& request) {
  for (const auto& line : lines) {
    const size_t colon = line.find(':');
    std::string_view value =
        colon == std::string::npos ? std::string_view() : std::string_view(line).substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    request.headers.emplace_back(line.substr(0, colon), std::string(value));
  }
}

}  // namespace

StatusOr<EngineEndpoint> ParseEngineEndpoint(std::string_view endpoint, bool tls) {
  auto startsWith = [&](std::string_view prefix) {
    return endpoint.substr(0, prefix.size()) == prefix;
  };
  EngineEndpoint out;
  if (startsWith("unix://")) {
    out.socketPath = std::string(endpoint.substr(7));
    out.baseUrl = "http://localhost";
    if (out.socketPath.empty() || out.socketPath[0] != '/') {
      return Status(StatusCode::kInvalidArgument, "docker endpoint \"" + std::string(endpoint) +
                                                      "\": unix socket path must be absolute");
    }
    return out;
  }
  std::string_view rest;
  std::string scheme;
  if (startsWith("tcp://")) {
    rest = endpoint.substr(6);
    scheme = tls ? "https://" : "http://";
  } else if (startsWith("http://")) {
    rest = endpoint.substr(7);
    scheme = "http://";
  } else if (startsWith("https://")) {
    rest = endpoint.substr(8);
    scheme = "https://";
  } else {
    return Status(StatusCode::kInvalidArgument,
                  "docker endpoint \"" + std::string(endpoint) +
                      "\": expected unix:///path, tcp://host:port, http:// or https://");
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty() || rest.find('/') != std::string_view::npos) {
    return Status(StatusCode::kInvalidArgument,
                  "docker endpoint \"" + std::string(endpoint) + "\": expected host:port");
  }
  out.baseUrl = scheme + std::string(rest);
  return out;
}

bool IsPlainNetworkEndpoint(std::string_view endpoint, bool tls) {
  return endpoint.starts_with("http://") || (endpoint.starts_with("tcp://") && !tls);
}

std::string EngineErrorMessage(const HttpResponse& response) {
  auto doc = nlohmann::json::parse(response.body, nullptr, false);
  if (doc.is_object() && doc.contains("message") && doc["message"].is_string()) {
    return doc["message"].get<std::string>();
  }
  std::string excerpt = response.body.substr(0, 200);
  while (!excerpt.empty() && (excerpt.back() == '\n' || excerpt.back() == '\r')) excerpt.pop_back();
  return "HTTP " + std::to_string(response.status) + (excerpt.empty() ? "" : ": " + excerpt);
}

int CompareApiVersions(std::string_view a, std::string_view b) {
  auto next = [](std::string_view& s) {
    long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    (void)ec;
    s.remove_prefix(static_cast<size_t>(p - s.data()));
    if (!s.empty() && s.front() == '.') s.remove_prefix(1);
    return v;
  };
  while (!a.empty() || !b.empty()) {
    long x = next(a), y = next(b);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

EngineClient::EngineClient(EngineEndpoint endpoint, const TlsMaterial& tls,
                           std::string maxApiVersion, EngineTimeouts timeouts)
    : endpoint_(std::move(endpoint)),
      maxApiVersion_(std::move(maxApiVersion)),
      timeouts_(timeouts) {
  http::CurlOptions options;
  options.connectTimeout = timeouts_.connect;
  options.unixSocketPath = endpoint_.socketPath;
  transport_ = http::NewCurlTransport(TlsOptionsOf(tls), options);
}

EngineClient::~EngineClient() = default;

StatusOr<HttpResponse> EngineClient::Perform(http::Request request, BodyLimit limit) {
  if (request.timeout.count() == 0) request.timeout = timeouts_.request;
  request.maxBodyBytes = limit.maxBytes;
  request.overflow = limit.keepTail ? http::BodyOverflow::kKeepTail : http::BodyOverflow::kFail;
  request.identityEncoding = true;  // the engine is not trusted with a decompressor
  std::optional<http::Failure> failure;
  request.onFailure = [&failure](const http::Failure& f) { failure = f; };
  auto r = transport_->Do(request);
  if (!r.ok()) return failure ? EngineFailure(*failure, limit) : r.status();
  return HttpResponse{r->status, std::move(r->body)};
}

StatusOr<std::string> EngineClient::ApiVersion() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!apiVersion_.empty()) return apiVersion_;
  }
  auto r = Perform(http::Request{.method = "GET", .url = endpoint_.baseUrl + "/version"}, {});
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    return Status(StatusCode::kServerError,
                  "docker engine GET /version: " + EngineErrorMessage(*r));
  }
  auto doc = nlohmann::json::parse(r->body, nullptr, false);
  std::string server = GetString(doc, "ApiVersion");
  if (server.empty()) {
    return Status(StatusCode::kInternal, "docker engine GET /version: no ApiVersion in the answer");
  }
  std::string chosen = CompareApiVersions(server, maxApiVersion_) < 0 ? server : maxApiVersion_;
  std::lock_guard<std::mutex> lock(mu_);
  apiVersion_ = chosen;
  return chosen;
}

StatusOr<HttpResponse> EngineClient::Call(std::string_view method, const std::string& pathAndQuery,
                                          const std::string& jsonBody,
                                          const std::vector<std::string>& extraHeaders,
                                          std::chrono::milliseconds timeout, BodyLimit limit) {
  auto version = ApiVersion();
  if (!version.ok()) return version.status();
  http::Request request{.method = std::string(method),
                        .url = endpoint_.baseUrl + "/v" + *version + pathAndQuery,
                        .body = jsonBody,
                        .timeout = timeout};
  if (!jsonBody.empty()) request.headers.emplace_back("Content-Type", "application/json");
  AddHeaderLines(extraHeaders, request);
  return Perform(std::move(request), limit);
}

// The stream has no timeout (a followed log lasts as long as the container); a refused one's
// answer is handed to onData after onStatus, as the engine's error.
Status EngineClient::Stream(const std::string& pathAndQuery,
                            const std::function<void(long)>& onStatus,
                            const std::function<bool(std::string_view)>& onData, StreamStop& stop) {
  auto version = ApiVersion();
  if (!version.ok()) return version.status();
  http::Request request{.method = "GET",
                        .url = endpoint_.baseUrl + "/v" + *version + pathAndQuery,
                        .maxBodyBytes = kMaxStreamErrorBytes,
                        .overflow = http::BodyOverflow::kKeepHead,
                        .identityEncoding = true};
  request.onStatus = [&onStatus](int code) { onStatus(code); };
  std::optional<http::Failure> failure;
  request.onFailure = [&failure](const http::Failure& f) { failure = f; };
  auto r = transport_->Stream(request, stop.source_.get_token(), onData);
  if (stop.cancelled()) return Status::Ok();
  if (!r.ok()) return failure ? EngineFailure(*failure, {}) : r.status();
  if (!r->body.empty()) onData(r->body);  // a non-2xx answer's body
  return Status::Ok();
}

}  // namespace ayatori::adapters::docker
