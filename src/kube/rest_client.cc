#include "kube/rest_client.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "kube/api_error.h"
#include "kube/list_decoder.h"
#include "kube/object_metadata.h"
#include "kube/resource.h"
#include "kube/watch_decoder.h"

namespace ayatori::kube {
namespace {

const Clock& ClockOr(const Clock* c) { return c != nullptr ? *c : SystemClock::Instance(); }

bool Is2xx(int code) { return code >= 200 && code < 300; }

// Retry-After in seconds (the API server sends an integer); -1 if absent or not a number.
int ParseRetryAfter(const std::string& v) {
  if (v.empty() || v.size() > 9) return -1;
  int n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::string TrimToken(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// The token a request carried ("" if none).
std::string BearerOf(const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& [k, v] : headers) {
    if (k == "Authorization" && v.rfind("Bearer ", 0) == 0) return v.substr(7);
  }
  return "";
}

const char* PatchContentType(PatchType t) {
  switch (t) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

}  // namespace

std::unique_ptr<HttpTransport> NewCurlTransport(const RestConfig& config,
                                                const CurlTransportOptions& options) {
  http::TlsOptions tls;
  tls.caPem = config.caPem;
  tls.clientCertPem = config.clientCertPem;
  tls.clientKeyPem = config.clientKeyPem;
  tls.insecureSkipVerify = config.insecureSkipTlsVerify;
  // An exec plugin that answers with a client certificate: asked once, here, since a TLS
  // identity belongs to the transport's connections (a token is asked per request). A failure
  // shows again, with its message, on the first request.
  if (config.exec && tls.clientCertPem.empty()) {
    if (auto cred = config.exec->Get(); cred.ok() && !cred->clientCertPem.empty()) {
      tls.clientCertPem = cred->clientCertPem;
      tls.clientKeyPem = cred->clientKeyPem;
    }
  }
  CurlTransportOptions o = options;
  if (!config.proxyUrl.empty()) o.proxyUrl = config.proxyUrl;
  if (!config.tlsServerName.empty()) o.tlsServerName = config.tlsServerName;
  return http::NewCurlTransport(tls, o);
}

std::unique_ptr<RestClient> RestClient::New(const RestConfig& config, RestClientOptions options) {
  CurlTransportOptions t;
  t.connectTimeout = options.connectTimeout;
  return std::make_unique<RestClient>(config, std::move(options), NewCurlTransport(config, t));
}

RestClient::RestClient(const RestConfig& config, RestClientOptions options,
                       std::unique_ptr<HttpTransport> transport)
    : config_(config),
      options_(std::move(options)),
      transport_(std::move(transport)),
      limiter_(options_.qps, options_.burst, ClockOr(options_.clock)) {}

namespace {
// ReserveRequests: the tokens the calling thread took ahead for its next requests to `client`.
struct ReservedTokens {
  const RestClient* client = nullptr;
  int left = 0;
};
thread_local ReservedTokens tReserved;
}  // namespace

void RestClient::ReserveRequests(int count) {
  if (tReserved.client == this && tReserved.left > 0) limiter_.GiveBack(tReserved.left);
  tReserved = {};
  if (count <= 0) return;
  limiter_.Wait({}, count);
  tReserved = {this, count};
}

bool RestClient::TakeReservedToken() {
  if (tReserved.client != this || tReserved.left <= 0) return false;
  --tReserved.left;
  return true;
}

StatusOr<std::string> RestClient::BearerToken() {
  if (config_.exec) {
    auto cred = config_.exec->Get();
    if (!cred.ok()) return cred.status();
    if (!cred->token.empty()) return cred->token;
  }
  if (config_.bearerTokenFile.empty()) return config_.bearerToken;
  struct stat st {};
  std::lock_guard lock(tokenMu_);
  if (stat(config_.bearerTokenFile.c_str(), &st) != 0) {
    return fileToken_.empty() ? config_.bearerToken : fileToken_;  // keep the last good token
  }
  FileStamp stamp{static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
                  static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  if (!(stamp == tokenStamp_)) {
    std::ifstream in(config_.bearerTokenFile);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string token = TrimToken(ss.str());
    if (in && !token.empty()) {
      fileToken_ = std::move(token);
      tokenStamp_ = stamp;
    }
  }
  return fileToken_.empty() ? config_.bearerToken : fileToken_;
}

StatusOr<std::vector<std::pair<std::string, std::string>>> RestClient::Headers(
    std::string_view contentType, std::string_view accept) {
  std::vector<std::pair<std::string, std::string>> h;
  h.emplace_back("Accept", accept.empty() ? "application/json" : std::string(accept));
  h.emplace_back("User-Agent", options_.userAgent);
  if (!contentType.empty()) h.emplace_back("Content-Type", std::string(contentType));
  auto token = BearerToken();
  if (!token.ok()) return token.status();
  if (!token->empty()) h.emplace_back("Authorization", "Bearer " + *token);
  return h;
}

void RestClient::Record(const Target& t, int httpCode, std::chrono::nanoseconds latency,
                        int attempt) {
  {
    std::lock_guard lock(countsMu_);
    ++counts_[{std::string(t.verb), httpCode == 0 ? "<error>" : std::to_string(httpCode)}];
  }
  if (observer_) {
    std::string resource = t.ref != nullptr ? t.ref->GroupResource() : "";
    observer_(
        RequestRecord{t.verb, resource, t.ns, t.name, t.subresource, httpCode, latency, attempt});
  }
}

std::map<std::pair<std::string, std::string>, uint64_t> RestClient::RequestCounts() const {
  std::lock_guard lock(countsMu_);
  return counts_;
}

uint64_t RestClient::RequestCount(std::string_view verb, std::string_view code) const {
  std::lock_guard lock(countsMu_);
  auto it = counts_.find({std::string(verb), std::string(code)});
  return it == counts_.end() ? 0 : it->second;
}

StatusOr<HttpResponse> RestClient::Execute(const Target& target, const char* method,
                                           std::string url, std::string body,
                                           std::string_view contentType, std::string_view accept) {
  HttpRequest req;
  req.method = method;
  req.url = std::move(url);
  req.body = std::move(body);
  req.timeout = options_.timeout;
  bool reauthenticated = false;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0 || !TakeReservedToken()) limiter_.Wait();
    auto headers = Headers(contentType, accept);
    if (!headers.ok()) return headers.status();
    req.headers = std::move(*headers);
    auto start = std::chrono::steady_clock::now();
    auto resp = transport_->Do(req);
    auto latency = std::chrono::steady_clock::now() - start;
    if (!resp.ok()) {
      Record(target, 0, latency, attempt);
      return resp.status();
    }
    Record(target, resp->status, latency, attempt);
    if (Is2xx(resp->status)) return resp;
    // An exec credential the server refuses (revoked, or expired early): like client-go, ask
    // the plugin again once and retry.
    if (resp->status == 401 && config_.exec && !reauthenticated) {
      reauthenticated = true;
      config_.exec->Invalidate(BearerOf(req.headers));
      continue;
    }
    int retryAfter = ParseRetryAfter(resp->retryAfter);
    if ((resp->status == 429 || resp->status >= 500) && retryAfter >= 0 &&
        attempt < options_.maxRetries) {
      auto delay = std::min<std::chrono::nanoseconds>(std::chrono::seconds(retryAfter),
                                                      options_.maxRetryAfter);
      if (options_.sleep) {
        options_.sleep(delay);
      } else {
        std::this_thread::sleep_for(delay);
      }
      continue;
    }
    return DecodeApiError(resp->status, resp->body).ToStatus();
  }
}

StatusOr<nlohmann::json> RestClient::ExecuteJson(const Target& target, const char* method,
                                                 std::string url, std::string body,
                                                 std::string_view contentType) {
  auto resp = Execute(target, method, std::move(url), std::move(body), contentType);
  if (!resp.ok()) return resp.status();
  nlohmann::json j = nlohmann::json::parse(resp->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Status(StatusCode::kInternal,
                  std::string(method) + " " +
                      std::string(target.ref ? target.ref->GroupResource() : "") +
                      ": the server's response is not JSON");
  }
  return j;
}

StatusOr<nlohmann::json> RestClient::GetPath(std::string_view path) {
  Target t{"get", nullptr, {}, {}, {}};
  return ExecuteJson(t, "GET", config_.server + std::string(path), "", "");
}

Status RestClient::StreamPath(std::string_view path, const std::stop_token& stop,
                              const std::function<bool(std::string_view)>& onData) {
  Target t{"get", nullptr, {}, {}, {}};
  HttpRequest req;
  req.method = "GET";
  req.url = config_.server + std::string(path);
  req.timeout = std::chrono::milliseconds(0);  // a followed log may stream for hours
  if (!limiter_.Wait(stop)) return Status(StatusCode::kCancelled, "stream stopped");
  auto headers = Headers("");
  if (!headers.ok()) return headers.status();
  req.headers = std::move(*headers);
  auto begin = std::chrono::steady_clock::now();
  auto resp = transport_->Stream(req, stop, onData);
  Record(t, resp.ok() ? resp->status : 0, std::chrono::steady_clock::now() - begin, 0);
  if (!resp.ok()) return resp.status();
  if (!Is2xx(resp->status)) return DecodeApiError(resp->status, resp->body).ToStatus();
  return Status::Ok();
}

StatusOr<nlohmann::json> RestClient::Get(const ResourceRef& ref, std::string_view ns,
                                         std::string_view name) {
  Target t{"get", &ref, ns, name, {}};
  return ExecuteJson(t, "GET", config_.server + ResourcePath(ref, ns, name), "", "");
}

StatusOr<ObjectList> RestClient::List(const ResourceRef& ref, std::string_view ns,
                                      const ListOptions& o) {
  std::vector<nlohmann::json> items;
  auto list =
      ListEach(ref, ns, o, [&](nlohmann::json&& item) { items.push_back(std::move(item)); });
  if (!list.ok()) return list.status();
  list->items = std::move(items);
  return list;
}

StatusOr<ObjectList> RestClient::ListEach(const ResourceRef& ref, std::string_view ns,
                                          const ListOptions& o,
                                          const std::function<void(nlohmann::json&& item)>& visit) {
  Target t{"list", &ref, ns, {}, {}};
  std::string url = config_.server + ResourcePath(ref, ns) +
                    QueryString({{"labelSelector", o.labelSelector},
                                 {"fieldSelector", o.fieldSelector},
                                 {"resourceVersion", o.resourceVersion},
                                 {"resourceVersionMatch", o.resourceVersionMatch},
                                 {"limit", o.limit > 0 ? std::to_string(o.limit) : ""},
                                 {"continue", o.continueToken}});
  auto resp = Execute(t, "GET", std::move(url), "", "",
                      o.metadataOnly ? kPartialObjectMetadataListAccept : "");
  if (!resp.ok()) return resp.status();
  ObjectList list;
  Status s = DecodeListStreaming(resp->body, ref.GroupVersion(), &list, visit);
  if (!s.ok()) return Status(s.code(), "list " + ref.GroupResource() + ": " + s.message());
  return list;
}

namespace {
std::string WriteQuery(const WriteOptions& o) {
  return QueryString({{"fieldManager", o.fieldManager}, {"dryRun", o.dryRun ? "All" : ""}});
}
std::string NameOf(const nlohmann::json& object) {
  auto m = object.find("metadata");
  if (m == object.end() || !m->is_object()) return "";
  return m->value("name", "");
}
}  // namespace

StatusOr<nlohmann::json> RestClient::Create(const ResourceRef& ref, std::string_view ns,
                                            const nlohmann::json& object,
                                            const WriteOptions& options) {
  Target t{"create", &ref, ns, {}, {}};
  std::string name = NameOf(object);
  t.name = name;
  return ExecuteJson(t, "POST", config_.server + ResourcePath(ref, ns) + WriteQuery(options),
                     object.dump(), "application/json");
}

StatusOr<nlohmann::json> RestClient::Update(const ResourceRef& ref, std::string_view ns,
                                            const nlohmann::json& object,
                                            const WriteOptions& options) {
  std::string name = NameOf(object);
  if (name.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "update of " + ref.GroupResource() + ": the object has no metadata.name");
  }
  Target t{"update", &ref, ns, name, {}};
  return ExecuteJson(t, "PUT", config_.server + ResourcePath(ref, ns, name) + WriteQuery(options),
                     object.dump(), "application/json");
}

StatusOr<nlohmann::json> RestClient::UpdateStatus(const ResourceRef& ref, std::string_view ns,
                                                  const nlohmann::json& object,
                                                  const WriteOptions& options) {
  std::string name = NameOf(object);
  if (name.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "status update of " + ref.GroupResource() + ": the object has no metadata.name");
  }
  Target t{"update", &ref, ns, name, "status"};
  return ExecuteJson(t, "PUT",
                     config_.server + ResourcePath(ref, ns, name, "status") + WriteQuery(options),
                     object.dump(), "application/json");
}

StatusOr<nlohmann::json> RestClient::Patch(const ResourceRef& ref, std::string_view ns,
                                           std::string_view name, PatchType type,
                                           const nlohmann::json& patch,
                                           const PatchOptions& options) {
  Target t{"patch", &ref, ns, name, options.subresource};
  std::string fieldManager = options.fieldManager;
  if (type == PatchType::kApply && fieldManager.empty()) fieldManager = options_.userAgent;
  std::string url = config_.server + ResourcePath(ref, ns, name, options.subresource) +
                    QueryString({{"fieldManager", fieldManager},
                                 {"force", options.force ? "true" : ""},
                                 {"dryRun", options.dryRun ? "All" : ""}});
  return ExecuteJson(t, "PATCH", std::move(url), patch.dump(), PatchContentType(type));
}

Status RestClient::Delete(const ResourceRef& ref, std::string_view ns, std::string_view name,
                          const DeleteOptions& options) {
  Target t{"delete", &ref, ns, name, {}};
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.preconditionUid) body["preconditions"]["uid"] = *options.preconditionUid;
  if (options.preconditionResourceVersion) {
    body["preconditions"]["resourceVersion"] = *options.preconditionResourceVersion;
  }
  if (!options.propagationPolicy.empty()) body["propagationPolicy"] = options.propagationPolicy;
  if (options.gracePeriodSeconds) body["gracePeriodSeconds"] = *options.gracePeriodSeconds;
  if (options.dryRun) body["dryRun"] = {"All"};
  auto resp = Execute(t, "DELETE", config_.server + ResourcePath(ref, ns, name), body.dump(),
                      "application/json");
  return resp.status();
}

Status RestClient::Watch(const ResourceRef& ref, std::string_view ns, const WatchOptions& o,
                         std::stop_token stop, const WatchHandler& handler) {
  Target t{"watch", &ref, ns, {}, {}};
  HttpRequest req;
  req.method = "GET";
  req.url = config_.server + ResourcePath(ref, ns) +
            QueryString(
                {{"watch", "true"},
                 {"resourceVersion", o.resourceVersion},
                 {"allowWatchBookmarks", o.allowWatchBookmarks ? "true" : ""},
                 {"labelSelector", o.labelSelector},
                 {"fieldSelector", o.fieldSelector},
                 {"timeoutSeconds", o.timeoutSeconds > 0 ? std::to_string(o.timeoutSeconds) : ""}});
  // The server ends the stream after timeoutSeconds; the client limit only catches a server that
  // went silent without closing the connection.
  req.timeout = o.timeoutSeconds > 0 ? std::chrono::milliseconds((o.timeoutSeconds + 30) * 1000)
                                     : std::chrono::milliseconds(0);
  if (!limiter_.Wait(stop)) return Status(StatusCode::kCancelled, "watch stopped");
  auto headers = Headers("", o.metadataOnly ? kPartialObjectMetadataAccept : "");
  if (!headers.ok()) return headers.status();
  req.headers = std::move(*headers);

  WatchStreamDecoder decoder(ref.GroupResource(), handler);
  auto onData = [&](std::string_view chunk) -> bool { return decoder.Feed(chunk); };
  auto begin = std::chrono::steady_clock::now();
  auto resp = transport_->Stream(req, stop, onData);
  auto latency = std::chrono::steady_clock::now() - begin;
  Record(t, resp.ok() ? resp->status : 0, latency, 0);
  if (!resp.ok()) return resp.status();
  // A refused exec credential: the caller's next watch asks the plugin again.
  if (resp->status == 401 && config_.exec) config_.exec->Invalidate(BearerOf(req.headers));
  if (!Is2xx(resp->status)) return DecodeApiError(resp->status, resp->body).ToStatus();
  return decoder.Finish();
}

}  // namespace ayatori::kube
