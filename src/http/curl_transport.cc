#include <curl/curl.h>
#include <strings.h>

#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "http/http.h"

namespace ayatori::http {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool Is2xx(long code) { return code >= 200 && code < 300; }

// Per-transfer state shared with the libcurl callbacks.
struct Transfer {
  CURL* easy = nullptr;
  const Request* request = nullptr;
  Response response;
  const std::function<bool(std::string_view)>* onData = nullptr;  // streaming only
  bool statusReported = false;
  bool stoppedByHandler = false;
  std::stop_token stop;
  bool tooLarge = false;            // BodyOverflow::kFail passed
  bool truncated = false;           // BodyOverflow::kKeepHead reached its limit
  std::string url;                  // the URL sent, when tls-server-name rewrote it
  curl_slist* connectTo = nullptr;  // where that URL's host really is

  void ReportStatus() {
    if (statusReported) return;
    statusReported = true;
    if (!request->onStatus) return;
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    request->onStatus(static_cast<int>(code));
  }
};

// Appends to the collected body within the request's limit; false ends the transfer.
bool Collect(Transfer* t, const char* ptr, size_t n) {
  const size_t max = t->request->maxBodyBytes;
  std::string& body = t->response.body;
  if (max == 0 || body.size() + n <= max) {
    body.append(ptr, n);
    return true;
  }
  switch (t->request->overflow) {
    case BodyOverflow::kFail:
      t->tooLarge = true;
      return false;
    case BodyOverflow::kKeepHead:
      body.append(ptr, max - body.size());
      t->truncated = true;
      return false;
    case BodyOverflow::kKeepTail:
      body.append(ptr, n);
      // Trim in batches so that many small pieces stay linear.
      if (body.size() > 2 * max) body.erase(0, body.size() - max);
      return true;
  }
  return false;
}

size_t OnWrite(char* ptr, size_t size, size_t nmemb, void* userdata) {
  auto* t = static_cast<Transfer*>(userdata);
  const size_t n = size * nmemb;
  if (t->onData == nullptr) return Collect(t, ptr, n) ? n : 0;
  if (t->stop.stop_requested()) return 0;
  t->ReportStatus();
  long code = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
  if (!Is2xx(code)) return Collect(t, ptr, n) ? n : 0;
  if (!(*t->onData)(std::string_view(ptr, n))) {
    t->stoppedByHandler = true;
    return 0;
  }
  return n;
}

size_t OnHeader(char* buffer, size_t size, size_t nitems, void* userdata) {
  auto* t = static_cast<Transfer*>(userdata);
  const size_t n = size * nitems;
  std::string_view line(buffer, n);
  // The blank line ends the headers: a stream's status is known before its body.
  if (t->onData != nullptr && (line == "\r\n" || line == "\n")) {
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200) t->ReportStatus();  // not after a 1xx's headers
  }
  constexpr std::string_view kRetryAfter = "retry-after:";
  if (line.size() > kRetryAfter.size() &&
      strncasecmp(line.data(), kRetryAfter.data(), kRetryAfter.size()) == 0) {
    std::string_view v = line.substr(kRetryAfter.size());
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) {
      v.remove_suffix(1);
    }
    t->response.retryAfter = std::string(v);
  }
  return n;
}

FailureKind KindOf(CURLcode rc) {
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      return FailureKind::kTimeout;
    case CURLE_PEER_FAILED_VERIFICATION:
      return FailureKind::kTlsUntrustedPeer;
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return FailureKind::kTlsUnusableConfig;
    case CURLE_SSL_CONNECT_ERROR:
      return FailureKind::kTlsHandshake;
    default:
      return FailureKind::kNetwork;
  }
}

// Sets a PEM blob option; libcurl copies the data (CURL_BLOB_COPY).
void SetBlob(CURL* e, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(e, option, &blob);
}

class CurlTransport final : public Transport {
 public:
  CurlTransport(TlsOptions tls, CurlOptions options)
      : tls_(std::move(tls)), options_(std::move(options)) {
    GlobalInit();
    share_ = curl_share_init();
    curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &CurlTransport::Lock);
    curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &CurlTransport::Unlock);
    curl_share_setopt(share_, CURLSHOPT_USERDATA, this);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  }

  ~CurlTransport() override {
    for (CURL* e : idle_) curl_easy_cleanup(e);
    curl_share_cleanup(share_);
  }
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  StatusOr<Response> Do(const Request& request) override {
    CURL* easy = Acquire();
    Transfer t;
    t.easy = easy;
    t.request = &request;
    curl_slist* headers = Prepare(easy, request, &t, options_.tlsServerName);
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = curl_easy_perform(easy);
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    Finish(easy, headers, t.connectTo);
    // A body cut short leaves its connection mid-response: never reuse it.
    Release(easy, rc == CURLE_OK);
    if (t.tooLarge) return TooLarge(request);
    if (rc != CURLE_OK && !t.truncated) return TransportError(rc, errbuf, request);
    t.response.status = static_cast<int>(code);
    return std::move(t.response);
  }

  StatusOr<Response> Stream(const Request& request, std::stop_token stop,
                            const std::function<bool(std::string_view)>& onData) override {
    if (stop.stop_requested()) return Status(StatusCode::kCancelled, "stopped");
    CURL* easy = Acquire();
    Transfer t;
    t.easy = easy;
    t.request = &request;
    t.onData = &onData;
    t.stop = stop;
    curl_slist* headers = Prepare(easy, request, &t, options_.tlsServerName);
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = RunUntilDoneOrStopped(easy, stop);
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    Finish(easy, headers, t.connectTo);
    const bool cancelled = stop.stop_requested();
    // A stream ended early leaves its connection mid-response: never reuse it.
    Release(easy, rc == CURLE_OK && !cancelled && !t.stoppedByHandler);
    if (cancelled) return Status(StatusCode::kCancelled, "watch stopped");
    t.response.status = static_cast<int>(code);
    if (t.stoppedByHandler || t.truncated) return std::move(t.response);
    if (t.tooLarge) return TooLarge(request);
    if (rc != CURLE_OK) return TransportError(rc, errbuf, request);
    return std::move(t.response);
  }

  uint64_t ConnectionsOpened() const override { return connects_.load(); }

 private:
  // Drives one transfer on a multi handle of its own, so that `stop` can wake it at once.
  static CURLcode RunUntilDoneOrStopped(CURL* easy, const std::stop_token& stop) {
    CURLM* multi = curl_multi_init();
    curl_multi_add_handle(multi, easy);
    CURLcode rc = CURLE_OK;
    {
      std::stop_callback wake(stop, [multi] { curl_multi_wakeup(multi); });
      int running = 1;
      while (running > 0 && !stop.stop_requested()) {
        if (curl_multi_perform(multi, &running) != CURLM_OK) {
          rc = CURLE_RECV_ERROR;
          break;
        }
        if (running == 0) break;
        curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
      }
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
        if (msg->msg == CURLMSG_DONE) rc = msg->data.result;
      }
    }
    curl_multi_remove_handle(multi, easy);
    curl_multi_cleanup(multi);
    return rc;
  }

  // Counts the transfer's connections and drops what the request lent the handle.
  void Finish(CURL* easy, curl_slist* headers, curl_slist* connectTo) {
    long n = 0;
    if (curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &n) == CURLE_OK && n > 0) {
      connects_ += static_cast<uint64_t>(n);
    }
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, nullptr);
    // The body was handed to libcurl by pointer; drop it before the handle is reused.
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, nullptr);
    curl_slist_free_all(headers);
    if (connectTo != nullptr) {
      curl_easy_setopt(easy, CURLOPT_CONNECT_TO, nullptr);
      curl_easy_setopt(easy, CURLOPT_URL, nullptr);  // it pointed into the Transfer
      curl_slist_free_all(connectTo);
    }
  }

  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* userptr) {
    static_cast<CurlTransport*>(userptr)->locks_[LockIndex(data)].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* userptr) {
    static_cast<CurlTransport*>(userptr)->locks_[LockIndex(data)].unlock();
  }
  static size_t LockIndex(curl_lock_data data) {
    auto i = static_cast<size_t>(data);
    return i < kLocks ? i : 0;
  }

  CURL* Acquire() {
    {
      std::lock_guard lock(poolMu_);
      if (!idle_.empty()) {
        CURL* e = idle_.back();
        idle_.pop_back();
        return e;
      }
    }
    return NewEasy();
  }

  void Release(CURL* easy, bool reusable) {
    if (reusable) {
      std::lock_guard lock(poolMu_);
      if (idle_.size() < kMaxIdle) {
        idle_.push_back(easy);
        return;
      }
    }
    curl_easy_cleanup(easy);
  }

  CURL* NewEasy() {
    CURL* e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_SHARE, share_);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    // The shared connection cache also counts the long-lived watch streams; with libcurl's
    // default limit of 5 it is full as soon as 5 watches run, and every finished request's
    // connection is closed: a new TCP + TLS handshake per request (measured by
    // bench/kubernetes: ~1 connect per request, 3-4x the controller's CPU).
    curl_easy_setopt(e, CURLOPT_MAXCONNECTS, 256L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connectTimeout.count()));
    if (options_.lowSpeedTime.count() > 0) {
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.lowSpeedTime.count()));
    }
    if (!options_.unixSocketPath.empty()) {
      curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, options_.unixSocketPath.c_str());
    }
    if (!options_.proxyUrl.empty()) {
      curl_easy_setopt(e, CURLOPT_PROXY, options_.proxyUrl.c_str());
    }
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnWrite);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeader);
    if (!tls_.caPem.empty()) {
      SetBlob(e, CURLOPT_CAINFO_BLOB, tls_.caPem);
      curl_easy_setopt(e, CURLOPT_CAINFO, nullptr);  // only the configured CAs
      curl_easy_setopt(e, CURLOPT_CAPATH, nullptr);
    }
    if (!tls_.clientCertPem.empty()) {
      SetBlob(e, CURLOPT_SSLCERT_BLOB, tls_.clientCertPem);
      curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (!tls_.clientKeyPem.empty()) {
      SetBlob(e, CURLOPT_SSLKEY_BLOB, tls_.clientKeyPem);
      curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (tls_.insecureSkipVerify) {
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (options_.proxyUrl.starts_with("https://")) {
      // An https:// proxy is checked with the server's TLS settings, as kubectl (Go's net/http)
      // checks it: the configured CAs are trusted for it, and insecure-skip-tls-verify skips it.
      if (!tls_.caPem.empty()) SetBlob(e, CURLOPT_PROXY_CAINFO_BLOB, tls_.caPem);
      if (tls_.insecureSkipVerify) {
        curl_easy_setopt(e, CURLOPT_PROXY_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_PROXY_SSL_VERIFYHOST, 0L);
      }
    }
    return e;
  }

  // Sets the per-request options; returns the header list to free after the transfer.
  static curl_slist* Prepare(CURL* e, const Request& r, Transfer* t,
                             const std::string& tlsServerName) {
    curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
    if (!tlsServerName.empty()) ConnectAs(e, r.url, tlsServerName, t);
    // Pooled handles: set for every request. "": gzip when the server offers it; nullptr: no
    // Accept-Encoding, no decoding.
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, r.identityEncoding ? nullptr : "");
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
    if (r.method == "GET") {
      curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, nullptr);
    } else {
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.c_str());
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    curl_slist* headers = nullptr;
    for (const auto& [k, v] : r.headers) {
      std::string line = k + ": " + v;
      headers = curl_slist_append(headers, line.c_str());
    }
    if (r.method != "GET") headers = curl_slist_append(headers, "Expect:");  // no 100-continue
    if (r.identityEncoding) headers = curl_slist_append(headers, "Accept-Encoding: identity");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    return headers;
  }

  // tls-server-name: the URL is rewritten to name `serverName`, so that libcurl sends it as SNI
  // and checks the certificate against it, and CURLOPT_CONNECT_TO sends the connection to the
  // URL's real host and port.
  static void ConnectAs(CURL* e, const std::string& url, const std::string& serverName,
                        Transfer* t) {
    auto scheme = url.find("://");
    if (scheme == std::string::npos) return;
    const size_t hostBegin = scheme + 3;
    size_t hostEnd = url.find_first_of("/?#", hostBegin);
    if (hostEnd == std::string::npos) hostEnd = url.size();
    std::string authority = url.substr(hostBegin, hostEnd - hostBegin);
    std::string host = authority, port = url.compare(0, scheme, "http") == 0 ? "80" : "443";
    if (auto colon = authority.rfind(':');
        colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
    t->url = url.substr(0, hostBegin) + serverName + ":" + port + url.substr(hostEnd);
    curl_easy_setopt(e, CURLOPT_URL, t->url.c_str());
    std::string rule = serverName + ":" + port + ":" + host + ":" + port;
    t->connectTo = curl_slist_append(nullptr, rule.c_str());
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, t->connectTo);
  }

  static Status TooLarge(const Request& r) {
    std::string what =
        "response body exceeds " + std::to_string(r.maxBodyBytes) + " bytes; not read further";
    if (r.onFailure) r.onFailure(Failure{FailureKind::kBodyTooLarge, what, ""});
    return Status(StatusCode::kUnavailable, r.method + " " + r.url + ": " + what);
  }

  static Status TransportError(CURLcode rc, const char* errbuf, const Request& r) {
    const std::string summary = curl_easy_strerror(rc);
    const std::string detail = errbuf != nullptr ? errbuf : "";
    if (r.onFailure) r.onFailure(Failure{KindOf(rc), summary, detail});
    // The URL has no secrets (credentials travel in headers), so it may appear in messages.
    return Status(StatusCode::kUnavailable,
                  r.method + " " + r.url + ": " + (detail.empty() ? summary : detail));
  }

  static constexpr size_t kLocks = CURL_LOCK_DATA_LAST;
  static constexpr size_t kMaxIdle = 16;

  const TlsOptions tls_;
  const CurlOptions options_;
  CURLSH* share_ = nullptr;
  std::array<std::mutex, kLocks> locks_;
  std::mutex poolMu_;
  std::vector<CURL*> idle_;
  std::atomic<uint64_t> connects_{0};
};

}  // namespace

std::unique_ptr<Transport> NewCurlTransport(const TlsOptions& tls, const CurlOptions& options) {
  return std::make_unique<CurlTransport>(tls, options);
}

}  // namespace ayatori::http
