#include "adapters/docker/engine.h"

#include <curl/curl.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "adapters/docker/json_get.h"

namespace ayatori::adapters::docker {

namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct BoundedBody {
  std::string* body = nullptr;
  BodyLimit limit;
  bool exceeded = false;
};

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<BoundedBody*>(user);
  const size_t bytes = size * n;
  std::string& body = *sink->body;
  if (!sink->limit.keepTail) {
    if (body.size() + bytes > sink->limit.maxBytes) {
      sink->exceeded = true;
      return 0;  // libcurl ends the transfer (CURLE_WRITE_ERROR)
    }
    body.append(data, bytes);
    return bytes;
  }
  body.append(data, bytes);
  // Trim in batches so that many small pieces stay linear.
  if (body.size() > 2 * sink->limit.maxBytes) body.erase(0, body.size() - sink->limit.maxBytes);
  return bytes;
}

// The engine or our TLS material failed the handshake: said as such, since waiting will not fix
// it (libcurl's detail names the certificate problem, never key material).
const char* TlsProblem(CURLcode code) {
  switch (code) {
    case CURLE_PEER_FAILED_VERIFICATION:
      return "docker engine TLS: the engine's certificate is not trusted by the configured CA";
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return "docker engine TLS: the client certificate, key or CA cannot be used";
    case CURLE_SSL_CONNECT_ERROR:
      return "docker engine TLS: the handshake failed (a client certificate the engine does not "
             "accept, or none)";
    default:
      return nullptr;
  }
}

Status TransportError(CURLcode code, const char* detail) {
  const char* tls = TlsProblem(code);
  std::string message = tls != nullptr
                            ? std::string(tls)
                            : std::string(kTransportErrorPrefix) + curl_easy_strerror(code);
  if (detail != nullptr && *detail != '\0') message += std::string(" (") + detail + ")";
  return Status(
      code == CURLE_OPERATION_TIMEDOUT ? StatusCode::kDeadlineExceeded : StatusCode::kUnavailable,
      std::move(message));
}

// Sets a PEM blob option; libcurl copies the data (CURL_BLOB_COPY).
void SetBlob(CURL* curl, CURLoption option, const std::string& pem) {
  if (pem.empty()) return;
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(curl, option, &blob);
}

}  // namespace

struct EngineClient::Handle {
  CURL* curl = nullptr;
  char error[CURL_ERROR_SIZE] = {0};
  Handle() : curl(curl_easy_init()) {}
  ~Handle() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
};

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

void StreamStop::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (multi_ != nullptr) curl_multi_wakeup(static_cast<CURLM*>(multi_));
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

EngineClient::EngineClient(EngineEndpoint endpoint, TlsMaterial tls, std::string maxApiVersion,
                           EngineTimeouts timeouts)
    : endpoint_(std::move(endpoint)),
      tls_(std::move(tls)),
      maxApiVersion_(std::move(maxApiVersion)),
      timeouts_(timeouts) {
  GlobalInit();
}

EngineClient::~EngineClient() = default;

std::string EngineClient::Escape(std::string_view value) {
  GlobalInit();
  char* escaped = curl_easy_escape(nullptr, value.data(), static_cast<int>(value.size()));
  std::string out = escaped != nullptr ? escaped : "";
  curl_free(escaped);
  return out;
}

std::unique_ptr<EngineClient::Handle> EngineClient::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      auto h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
  }
  return std::make_unique<Handle>();
}

void EngineClient::Release(std::unique_ptr<Handle> handle) {
  std::lock_guard<std::mutex> lock(mu_);
  // A few idle handles keep their connections for reuse; more are not worth holding.
  if (idle_.size() < 8) idle_.push_back(std::move(handle));
}

void EngineClient::Configure(Handle& h, std::chrono::milliseconds timeout) const {
  CURL* c = h.curl;
  curl_easy_reset(c);  // keeps live connections
  h.error[0] = '\0';
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h.error);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeouts_.connect.count()));
  if (timeout.count() > 0)
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  if (!endpoint_.socketPath.empty()) {
    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, endpoint_.socketPath.c_str());
  }
  if (!tls_.empty()) {
    SetBlob(c, CURLOPT_CAINFO_BLOB, tls_.caPem);
    SetBlob(c, CURLOPT_SSLCERT_BLOB, tls_.certPem.reveal());
    SetBlob(c, CURLOPT_SSLKEY_BLOB, tls_.keyPem.reveal());
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
  }
}

StatusOr<HttpResponse> EngineClient::Perform(Handle& h, std::string_view method,
                                             const std::string& url, const std::string& body,
                                             const std::vector<std::string>& headers,
                                             std::chrono::milliseconds timeout, BodyLimit limit) {
  Configure(h, timeout.count() > 0 ? timeout : timeouts_.request);
  CURL* c = h.curl;
  HttpResponse response;
  BoundedBody sink{&response.body, limit};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_slist* list = curl_slist_append(nullptr, "Expect:");
  if (method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else if (method == "POST") {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    if (!body.empty()) list = curl_slist_append(list, "Content-Type: application/json");
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
  }
  for (const auto& header : headers) list = curl_slist_append(list, header.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(list);
  // The body was handed to libcurl by pointer; drop the reference before the handle is reused.
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, nullptr);
  if (sink.exceeded) {
    return Status(StatusCode::kInternal, "docker engine: the answer exceeds " +
                                             std::to_string(limit.maxBytes) +
                                             " bytes and was not read");
  }
  if (rc != CURLE_OK) return TransportError(rc, h.error);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

StatusOr<std::string> EngineClient::ApiVersion() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!apiVersion_.empty()) return apiVersion_;
  }
  auto h = Acquire();
  auto r = Perform(*h, "GET", endpoint_.baseUrl + "/version", "", {}, timeouts_.request, {});
  Release(std::move(h));
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
  auto h = Acquire();
  auto r = Perform(*h, method, endpoint_.baseUrl + "/v" + *version + pathAndQuery, jsonBody,
                   extraHeaders, timeout, limit);
  Release(std::move(h));
  return r;
}

namespace {

struct StreamState {
  const std::function<void(long)>* onStatus = nullptr;
  const std::function<bool(std::string_view)>* onData = nullptr;
  CURL* curl = nullptr;
  bool statusReported = false;
  bool endedByCaller = false;

  void ReportStatus() {
    if (statusReported) return;
    statusReported = true;
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    (*onStatus)(code);
  }
};

size_t StreamHeader(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<StreamState*>(user);
  std::string_view line(data, size * n);
  if (line == "\r\n" || line == "\n") s->ReportStatus();
  return size * n;
}

size_t StreamBody(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<StreamState*>(user);
  s->ReportStatus();
  if (!(*s->onData)(std::string_view(data, size * n))) {
    s->endedByCaller = true;
    return 0;  // aborts the transfer
  }
  return size * n;
}

}  // namespace

Status EngineClient::Stream(const std::string& pathAndQuery,
                            const std::function<void(long)>& onStatus,
                            const std::function<bool(std::string_view)>& onData, StreamStop& stop) {
  auto version = ApiVersion();
  if (!version.ok()) return version.status();
  Handle h;
  Configure(h, std::chrono::milliseconds(0));
  std::string url = endpoint_.baseUrl + "/v" + *version + pathAndQuery;
  StreamState state{&onStatus, &onData, h.curl};
  curl_easy_setopt(h.curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h.curl, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(h.curl, CURLOPT_HEADERFUNCTION, StreamHeader);
  curl_easy_setopt(h.curl, CURLOPT_HEADERDATA, &state);
  curl_easy_setopt(h.curl, CURLOPT_WRITEFUNCTION, StreamBody);
  curl_easy_setopt(h.curl, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(h.curl, CURLOPT_TCP_KEEPALIVE, 1L);

  CURLM* multi = curl_multi_init();
  curl_multi_add_handle(multi, h.curl);
  {
    std::lock_guard<std::mutex> lock(stop.mu_);
    stop.multi_ = multi;
  }
  CURLcode result = CURLE_OK;
  bool done = false;
  while (!done && !stop.cancelled()) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      break;
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE) {
        result = msg->data.result;
        done = true;
      }
    }
    if (done || running == 0) break;
    curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
  {
    std::lock_guard<std::mutex> lock(stop.mu_);
    stop.multi_ = nullptr;
  }
  curl_multi_remove_handle(multi, h.curl);
  curl_multi_cleanup(multi);
  if (stop.cancelled() || state.endedByCaller) return Status::Ok();
  if (result != CURLE_OK) return TransportError(result, h.error);
  return Status::Ok();
}

}  // namespace ayatori::adapters::docker
