// KubeClient over HTTPS (libcurl): JSON bodies, metav1.Status errors decoded into typed codes, a
// client-side QPS/burst token bucket (like client-go's rest.Config QPS/Burst), bounded retries
// honouring Retry-After on 429 and 5xx, request counters by verb and code, and watch streams
// decoded line by line as they arrive.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ayatori/clock.h"
#include "ayatori/kube_client.h"
#include "kube/config.h"
#include "kube/http.h"
#include "kube/token_bucket.h"

namespace ayatori::kube {

struct RestClientOptions {
  double qps = 5;  // client-go's defaults; a controller usually raises them
  int burst = 10;
  std::chrono::milliseconds timeout{30000};  // per request; watches are bounded by the server
  std::chrono::milliseconds connectTimeout{10000};
  std::string userAgent = "ayatori";
  // 429 and 5xx responses that carry Retry-After are retried after the advised delay (clamped
  // to maxRetryAfter), at most maxRetries times; then the error is returned.
  int maxRetries = 5;
  std::chrono::seconds maxRetryAfter{10};
  const Clock* clock = nullptr;  // for the rate limiter; nullptr = SystemClock
  // How retries wait; nullptr = std::this_thread::sleep_for. Unit tests record the delays.
  std::function<void(std::chrono::nanoseconds)> sleep;
};

// One completed request, for metrics and per-object write accounting.
struct RequestRecord {
  std::string_view verb;      // get, list, watch, create, update, patch, delete
  std::string_view resource;  // ResourceRef::GroupResource()
  std::string_view namespace_;
  std::string_view name;
  std::string_view subresource;
  int httpCode = 0;                     // 0 when the request failed in transport
  std::chrono::nanoseconds latency{0};  // for watches: until the stream ended
  int attempt = 0;                      // 0 for the first try, >0 for Retry-After retries
};

class RestClient final : public KubeClient {
 public:
  // Builds the libcurl transport from config.
  static std::unique_ptr<RestClient> New(const RestConfig& config, RestClientOptions options = {});
  RestClient(const RestConfig& config, RestClientOptions options,
             std::unique_ptr<HttpTransport> transport);

  StatusOr<nlohmann::json> Get(const ResourceRef& ref, std::string_view ns,
                               std::string_view name) override;
  StatusOr<ObjectList> ListEach(const ResourceRef& ref, std::string_view ns,
                                const ListOptions& options,
                                const std::function<void(nlohmann::json&& item)>& visit) override;
  StatusOr<ObjectList> List(const ResourceRef& ref, std::string_view ns,
                            const ListOptions& options) override;
  StatusOr<nlohmann::json> Create(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override;
  StatusOr<nlohmann::json> Update(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override;
  StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref, std::string_view ns,
                                        const nlohmann::json& object,
                                        const WriteOptions& options) override;
  StatusOr<nlohmann::json> Patch(const ResourceRef& ref, std::string_view ns, std::string_view name,
                                 PatchType type, const nlohmann::json& patch,
                                 const PatchOptions& options) override;
  Status Delete(const ResourceRef& ref, std::string_view ns, std::string_view name,
                const DeleteOptions& options) override;
  // The next `count` requests of this thread skip the limiter: their tokens are taken now.
  void ReserveRequests(int count) override;
  Status Watch(const ResourceRef& ref, std::string_view ns, const WatchOptions& options,
               std::stop_token stop, const WatchHandler& handler) override;

  // GET of an arbitrary API path ("/version", "/apis/batch/v1"), for discovery and probes.
  StatusOr<nlohmann::json> GetPath(std::string_view path);
  // GET of an arbitrary API path whose body is not JSON (e.g. a log subresource), handed to
  // `onData` piece by piece as it arrives; `onData` returning false ends it without error. A
  // non-2xx answer is decoded like any other API error (kNotFound for 404, ...).
  Status StreamPath(std::string_view path, const std::stop_token& stop,
                    const std::function<bool(std::string_view)>& onData);

  // Requests so far by verb and HTTP code ("<error>" for transport failures), e.g.
  // {{"create","201"}, 12}. Retries count as requests.
  std::map<std::pair<std::string, std::string>, uint64_t> RequestCounts() const;
  uint64_t RequestCount(std::string_view verb, std::string_view code) const;

  // Called after every request (on the calling thread). Set it before the client is shared.
  void SetRequestObserver(std::function<void(const RequestRecord&)> observer) {
    observer_ = std::move(observer);
  }

  // Connections the transport opened so far (keep-alive makes this much less than requests).
  uint64_t ConnectionsOpened() const { return transport_->ConnectionsOpened(); }

  const RestConfig& config() const { return config_; }
  TokenBucket& rateLimiter() { return limiter_; }

 private:
  struct Target {
    std::string_view verb;
    const ResourceRef* ref = nullptr;
    std::string_view ns, name, subresource;
  };
  // `accept`: the Accept header, "" = application/json.
  StatusOr<HttpResponse> Execute(const Target& target, const char* method, std::string url,
                                 std::string body, std::string_view contentType,
                                 std::string_view accept = {});
  StatusOr<nlohmann::json> ExecuteJson(const Target& target, const char* method, std::string url,
                                       std::string body, std::string_view contentType);
  // Fails when the exec credential plugin does.
  StatusOr<std::vector<std::pair<std::string, std::string>>> Headers(std::string_view contentType,
                                                                     std::string_view accept = {});
  // The exec plugin's token, else the token file's (re-read when it changes), else the token.
  StatusOr<std::string> BearerToken();
  // Takes one of this thread's tokens reserved by ReserveRequests, if it has one left.
  bool TakeReservedToken();
  void Record(const Target& target, int httpCode, std::chrono::nanoseconds latency, int attempt);

  const RestConfig config_;
  const RestClientOptions options_;
  std::unique_ptr<HttpTransport> transport_;
  TokenBucket limiter_;
  std::function<void(const RequestRecord&)> observer_;

  mutable std::mutex countsMu_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_;

  // Bearer token file cache: re-read when the file's identity or mtime changes.
  std::mutex tokenMu_;
  std::string fileToken_;
  struct FileStamp {
    uint64_t ino = 0, size = 0;
    int64_t mtimeNs = -1;
    bool operator==(const FileStamp&) const = default;
  } tokenStamp_;
};

}  // namespace ayatori::kube
