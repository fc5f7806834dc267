#include <curl/curl.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kube/http.h"

namespace ayatori::kube {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Per-transfer state shared with the libcurl callbacks.
struct Transfer {
  CURL* easy = nullptr;
  HttpResponse response;
  const std::function<bool(std::string_view)>* onData = nullptr;  // streaming only
  bool stoppedByHandler = false;
  std::stop_token stop;
  size_t maxBody = 0;  // HttpRequest::maxBodyBytes
  bool tooLarge = false;
};

// Appends to the collected body unless that would pass the request's limit.
bool Collect(Transfer* t, const char* ptr, size_t n) {
  if (t->maxBody > 0 && t->response.body.size() + n > t->maxBody) {
    t->tooLarge = true;
    return false;
  }
  t->response.body.append(ptr, n);
  return true;
}

size_t OnWrite(char* ptr, size_t size, size_t nmemb, void* userdata) {
  auto* t = static_cast<Transfer*>(userdata);
  const size_t n = size * nmemb;
  if (t->onData == nullptr) return Collect(t, ptr, n) ? n : 0;
  if (t->stop.stop_requested()) return 0;
  long code = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
  if (code < 200 || code >= 300) return Collect(t, ptr, n) ? n : 0;
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

class CurlTransport final : public HttpTransport {
 public:
  CurlTransport(const RestConfig& config, const CurlTransportOptions& options)
      : config_(config), options_(options) {
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

  StatusOr<HttpResponse> Do(const HttpRequest& request) override {
    CURL* easy = Acquire();
    Transfer t;
    t.easy = easy;
    curl_slist* headers = Prepare(easy, request, &t);
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = curl_easy_perform(easy);
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    CountConnects(easy);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(headers);
    Release(easy, rc == CURLE_OK);
    if (t.tooLarge) return TooLarge(request);
    if (rc != CURLE_OK) return TransportError(rc, errbuf, request);
    t.response.status = static_cast<int>(code);
    return std::move(t.response);
  }

  StatusOr<HttpResponse> Stream(const HttpRequest& request, std::stop_token stop,
                                const std::function<bool(std::string_view)>& onData) override {
    if (stop.stop_requested()) return Status(StatusCode::kCancelled, "stopped");
    CURL* easy = Acquire();
    Transfer t;
    t.easy = easy;
    t.onData = &onData;
    t.stop = stop;
    curl_slist* headers = Prepare(easy, request, &t);
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
    CURLM* multi = curl_multi_init();
    curl_multi_add_handle(multi, easy);
    CURLcode rc = CURLE_OK;
    {
      // Wakes the poll below at once when the caller asks to stop.
      std::stop_callback wake(stop, [multi] { curl_multi_wakeup(multi); });
      int running = 1;
      while (running > 0 && !stop.stop_requested()) {
        CURLMcode mc = curl_multi_perform(multi, &running);
        if (mc != CURLM_OK) {
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
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    CountConnects(easy);
    curl_multi_remove_handle(multi, easy);
    curl_multi_cleanup(multi);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(headers);
    const bool cancelled = stop.stop_requested();
    // A stream ended early leaves its connection mid-response: never reuse it.
    Release(easy, rc == CURLE_OK && !cancelled && !t.stoppedByHandler);
    if (cancelled) return Status(StatusCode::kCancelled, "watch stopped");
    t.response.status = static_cast<int>(code);
    if (t.stoppedByHandler) return std::move(t.response);
    if (t.tooLarge) return TooLarge(request);
    if (rc != CURLE_OK) return TransportError(rc, errbuf, request);
    return std::move(t.response);
  }

  uint64_t ConnectionsOpened() const override { return connects_.load(); }

 private:
  void CountConnects(CURL* easy) {
    long n = 0;
    if (curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &n) == CURLE_OK && n > 0) {
      connects_ += static_cast<uint64_t>(n);
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
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");  // gzip when the server offers it
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connectTimeout.count()));
    if (options_.lowSpeedTime.count() > 0) {
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
      curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.lowSpeedTime.count()));
    }
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnWrite);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeader);
    if (!config_.caPem.empty()) {
      curl_blob blob{const_cast<char*>(config_.caPem.data()), config_.caPem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
      curl_easy_setopt(e, CURLOPT_CAINFO, nullptr);  // only the configured CAs
      curl_easy_setopt(e, CURLOPT_CAPATH, nullptr);
    }
    if (!config_.clientCertPem.empty()) {
      curl_blob cert{const_cast<char*>(config_.clientCertPem.data()), config_.clientCertPem.size(),
                     CURL_BLOB_COPY};
      curl_blob key{const_cast<char*>(config_.clientKeyPem.data()), config_.clientKeyPem.size(),
                    CURL_BLOB_COPY};
      curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
      curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (config_.insecureSkipTlsVerify) {
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return e;
  }

  // Sets the per-request options; returns the header list to free after the transfer.
  curl_slist* Prepare(CURL* e, const HttpRequest& r, Transfer* t) {
    t->maxBody = r.maxBodyBytes;
    curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
    // Pooled handles: set for every request. nullptr: no Accept-Encoding, no decoding.
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

  static Status TooLarge(const HttpRequest& r) {
    return Status(StatusCode::kUnavailable, r.method + " " + r.url + ": response body exceeds " +
                                                std::to_string(r.maxBodyBytes) +
                                                " bytes; not read further");
  }

  static Status TransportError(CURLcode rc, const char* errbuf, const HttpRequest& r) {
    std::string what = (errbuf != nullptr && *errbuf != '\0') ? errbuf : curl_easy_strerror(rc);
    // The URL has no secrets (credentials travel in headers), so it may appear in messages.
    return Status(StatusCode::kUnavailable, r.method + " " + r.url + ": " + what);
  }

  static constexpr size_t kLocks = CURL_LOCK_DATA_LAST;
  static constexpr size_t kMaxIdle = 16;

  const RestConfig config_;
  const CurlTransportOptions options_;
  CURLSH* share_ = nullptr;
  std::array<std::mutex, kLocks> locks_;
  std::mutex poolMu_;
  std::vector<CURL*> idle_;
  std::atomic<uint64_t> connects_{0};
};

}  // namespace

std::unique_ptr<HttpTransport> NewCurlTransport(const RestConfig& config,
                                                const CurlTransportOptions& options) {
  return std::make_unique<CurlTransport>(config, options);
}

}  // namespace ayatori::kube
