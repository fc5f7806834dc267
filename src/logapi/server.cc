#include "logapi/server.h"

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <array>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "api/json.h"
#include "controller/backend_snapshot.h"
#include "controller/kinds.h"
#include "logapi/log_api.h"
#include "obs/http_server.h"
#include "obs/log.h"

namespace ayatori::logapi {
namespace {

using nlohmann::json;

const ResourceRef kSubjectAccessReviews{"authorization.k8s.io", "v1", "subjectaccessreviews",
                                        false};
const ResourceRef kConfigMaps{"", "v1", "configmaps", true};

// A follower holds a pool thread (and its adapter call a thread of its own) for as long as the
// execution runs; the pool is sized for a few dozen at once.
constexpr size_t kPoolThreads = 32;
constexpr time_t kReadTimeoutSeconds = 10;
constexpr time_t kWriteTimeoutSeconds = 10;
// Output buffered between the adapter's reading thread and the client's writer before the
// reader waits: a client that reads slowly slows the backend read instead of filling memory.
constexpr size_t kMaxBuffered = size_t{1} << 20;
constexpr const char* kLogContentType = "application/octet-stream";

std::string JobNotFound(const std::string& name) {
  return std::string("jobs.") + controller::kJobs.group + " \"" + name + "\" not found";
}

}  // namespace

// Hands output from the thread that reads the backend to the thread that writes the response.
class LogApiServer::Pipe {
 public:
  // From the reader: false once the writer has gone (the reader then stops).
  bool Push(std::string_view bytes) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || buffered_ < kMaxBuffered; });
    if (closed_) return false;
    chunks_.emplace_back(bytes);
    buffered_ += bytes.size();
    any_ = true;
    cv_.notify_all();
    return true;
  }
  void Finish(Status s) {
    std::lock_guard lock(mu_);
    finished_ = true;
    result_ = std::move(s);
    cv_.notify_all();
  }
  // From the writer: the client left.
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  // Waits until there is output or the reader finished; the reader's result when it finished
  // without output.
  std::optional<Status> WaitFirst() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return any_ || finished_; });
    if (!any_) return result_;
    return std::nullopt;
  }
  // The next piece of output; nullopt at the end (then `result` is the reader's result) or once
  // closed (the server stops).
  std::optional<std::string> Next(Status* result) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !chunks_.empty() || finished_ || closed_; });
    if (closed_) {
      *result = Status(StatusCode::kCancelled, "the log API is stopping");
      return std::nullopt;
    }
    if (chunks_.empty()) {
      *result = result_;
      return std::nullopt;
    }
    std::string out = std::move(chunks_.front());
    chunks_.pop_front();
    buffered_ -= out.size();
    cv_.notify_all();
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> chunks_;
  size_t buffered_ = 0;
  bool any_ = false;
  bool finished_ = false;
  bool closed_ = false;
  Status result_;
};

namespace {

void ReplyStatus(httplib::Response& res, const Status& s, const std::string& name = {}) {
  auto [code, reason] = HttpCodeAndReason(s.code());
  res.status = code;
  res.set_content(StatusDocument(code, reason, s.message(), name).dump(), "application/json");
}

void ReplyJson(httplib::Response& res, const json& doc) {
  res.status = 200;
  res.set_content(doc.dump(), "application/json");
}

// The common name of the client certificate the request-header CA verified on this connection.
std::optional<std::string> VerifiedCommonName(const SSL* ssl) {
  if (ssl == nullptr) return std::nullopt;
  X509* peer = SSL_get1_peer_certificate(ssl);
  if (peer == nullptr) return std::nullopt;
  std::optional<std::string> cn;
  if (SSL_get_verify_result(ssl) == X509_V_OK) {
    std::array<char, 256> buf{};
    X509_NAME* subject = X509_get_subject_name(peer);
    int n = X509_NAME_get_text_by_NID(subject, NID_commonName, buf.data(), buf.size());
    if (n >= 0) cn = std::string(buf.data(), static_cast<size_t>(n));
  }
  X509_free(peer);
  return cn;
}

// Accepts every client certificate during the handshake: verification still runs against the
// store, and VerifiedCommonName reads its result, so that a request without a good certificate
// gets a 401 Status rather than a failed handshake (as kube-apiserver answers one).
int AcceptForLaterCheck(int /*preverified*/, X509_STORE_CTX* /*ctx*/) { return 1; }

Status LoadClientCa(SSL_CTX& ctx, const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509_STORE* store = SSL_CTX_get_cert_store(&ctx);
  STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
  int loaded = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(cert)));
    X509_free(cert);
    ++loaded;
  }
  BIO_free(bio);
  if (loaded == 0) {
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    return Status(StatusCode::kInvalidArgument,
                  "the request-header client CA holds no certificate");
  }
  SSL_CTX_set_client_CA_list(&ctx, names);
  SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, AcceptForLaterCheck);
  return Status::Ok();
}

// A P-256 key and a certificate for it, signed by itself, valid for a year.
Status UseSelfSignedCertificate(SSL_CTX& ctx) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  bool ok = key != nullptr && cert != nullptr;
  if (ok) {
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), static_cast<long>(time(nullptr)));
    X509_gmtime_adj(X509_getm_notBefore(cert), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert), 365L * 24 * 3600);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("ayatori-logs-api"), -1, -1,
                               0);
    X509_set_issuer_name(cert, name);
    X509_set_pubkey(cert, key);
    ok = X509_sign(cert, key, EVP_sha256()) > 0 && SSL_CTX_use_certificate(&ctx, cert) == 1 &&
         SSL_CTX_use_PrivateKey(&ctx, key) == 1;
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  return ok ? Status::Ok()
            : Status(StatusCode::kInternal, "could not make a self-signed serving certificate");
}

}  // namespace

AdapterJobLogs::AdapterJobLogs(KubeClient& client, const adapters::AdapterRegistry& registry,
                               std::string controllerNamespace)
    : client_(client), registry_(registry), controllerNamespace_(std::move(controllerNamespace)) {}

StatusOr<json> AdapterJobLogs::Parameters(const json& job, const AdapterDescriptor& descriptor) {
  json parameters = json::object();
  const json resolved = job.value("/status/resolvedJobClass"_json_pointer, json::object());
  const json ref = resolved.value("parametersRef", json());
  if (descriptor.parameters && ref.is_object()) {
    // A list of the one name, not a GET: the controller's ClusterRole grants list and watch on
    // the parameters kinds (its informers), not get (config/rbac/role.yaml). Every replica serves
    // this API, and a standby one has no informers to read from.
    ListOptions byName;
    byName.fieldSelector = "metadata.name=" + ref.value("name", std::string());
    auto current = client_.List(adapters::ParametersResource(*descriptor.parameters), "", byName);
    if (!current.ok()) return current.status();
    // Only the object the Job was accepted with counts (JobReconciler::ParametersFor).
    for (json& item : current->items) {
      if (item.value("/metadata/uid"_json_pointer, std::string()) ==
          ref.value("uid", std::string())) {
        parameters = adapters::WithSpecOverrides(descriptor, std::move(item));
      }
    }
  }
  const std::string snapshotName = resolved.value("backendSnapshot", std::string());
  if (snapshotName.empty()) return parameters;
  auto cm = client_.Get(kConfigMaps, controllerNamespace_, snapshotName);
  if (!cm.ok()) {
    return Status(cm.status().code() == StatusCode::kNotFound ? StatusCode::kFailedPrecondition
                                                              : cm.status().code(),
                  "the backend snapshot of this Job cannot be read: " + cm.status().message());
  }
  auto snapshot = controller::DecodeBackendSnapshot(*cm);
  if (snapshot == nullptr || controller::BackendSnapshotName(*snapshot) != snapshotName) {
    return Status(StatusCode::kFailedPrecondition,
                  "the backend snapshot of this Job does not hold what its name stands for");
  }
  return WithPinnedParameters(std::move(parameters), snapshot->pinned);
}

Status AdapterJobLogs::Stream(const std::string& ns, const std::string& name,
                              const LogOptions& options, const LogSink& sink) {
  auto job = client_.Get(controller::kJobs, ns, name);
  if (!job.ok()) {
    if (job.status().code() == StatusCode::kNotFound) {
      return Status(StatusCode::kNotFound, JobNotFound(name));
    }
    return job.status();
  }
  auto typed = api::JobFromJson(*job);
  if (!typed.ok()) return typed.status();
  const std::string what = "job \"" + name + "\"";
  if (!typed->status.execution || !typed->status.resolvedJobClass) {
    return Status(StatusCode::kFailedPrecondition,
                  what +
                      " has no execution yet: nothing was started for it (kubectl ayatori "
                      "describe " +
                      name + " says why)");
  }
  const std::string& controllerName = typed->status.resolvedJobClass->controllerName;
  auto adapter = registry_.Find(controllerName);
  const AdapterDescriptor* descriptor = registry_.FindDescriptor(controllerName);
  if (adapter == nullptr || descriptor == nullptr) {
    return Status(StatusCode::kFailedPrecondition,
                  what + " runs on " + controllerName + ", which this controller does not serve");
  }
  auto parameters = Parameters(*job, *descriptor);
  if (!parameters.ok())
    return Status(parameters.status().code(), what + ": " + parameters.status().message());
  ExecutionKey key;
  key.uid = typed->metadata.uid;
  key.namespace_ = ns;
  key.name = name;
  key.references = typed->status.execution->references;
  key.parameters = std::move(*parameters);
  Status s = adapter->StreamLogs(key, options, sink);
  if (s.code() == StatusCode::kNotFound) {
    return Status(StatusCode::kGone,
                  "the execution of " + what + " is gone: the " + adapter->Name() +
                      " backend no longer has it (removed after the Job finished, or by hand), "
                      "so its output cannot be read any more");
  }
  return s;
}

Authorizer SubjectAccessReviewAuthorizer(KubeClient& client) {
  return [&client](const UserInfo& user, const std::string& ns, const std::string& name) {
    auto review =
        client.Create(kSubjectAccessReviews, "", LogSubjectAccessReview(user, ns, name), {});
    if (!review.ok()) {
      return Status(StatusCode::kUnavailable,
                    "could not ask the apiserver whether the user may read this log: " +
                        review.status().message());
    }
    return ReviewVerdict(*review, user, ns, name);
  };
}

class LogApiServer::Listener final : public httplib::SSLServer {
 public:
  using httplib::SSLServer::SSLServer;
  // As obs::HttpServer's: closing the socket ends the accept loop in any state.
  void Close() {
    socket_t fd = svr_sock_.exchange(INVALID_SOCKET);
    if (fd != INVALID_SOCKET) {
      shutdown(fd, SHUT_RDWR);
      close(fd);
    }
  }
};

LogApiServer::LogApiServer(JobLogs& logs, Authorizer authorize, LogApiServerOptions options)
    : logs_(logs), authorize_(std::move(authorize)), options_(std::move(options)) {}

LogApiServer::~LogApiServer() { Stop(); }

Status LogApiServer::Start() {
  if (thread_.joinable()) return {StatusCode::kFailedPrecondition, "already serving"};
  std::string host;
  int port = 0;
  if (!obs::SplitHostPort(options_.address, &host, &port)) {
    return {StatusCode::kInvalidArgument,
            "log API address \"" + options_.address + "\" is not host:port (e.g. 0.0.0.0:8443)"};
  }
  if (host.empty()) host = "0.0.0.0";
  if (options_.certFile.empty() != options_.keyFile.empty()) {
    return {StatusCode::kInvalidArgument,
            "the log API's certificate and key files go together: give both or neither"};
  }
  Status setup;
  auto listener = std::make_unique<Listener>([&](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    if (options_.certFile.empty()) {
      setup = UseSelfSignedCertificate(ctx);
    } else if (SSL_CTX_use_certificate_chain_file(&ctx, options_.certFile.c_str()) != 1 ||
               SSL_CTX_use_PrivateKey_file(&ctx, options_.keyFile.c_str(), SSL_FILETYPE_PEM) != 1 ||
               SSL_CTX_check_private_key(&ctx) != 1) {
      setup = Status(StatusCode::kInvalidArgument,
                     "cannot load the log API's certificate " + options_.certFile + " and key " +
                         options_.keyFile + " (PEM files of one key pair)");
    }
    if (setup.ok()) setup = LoadClientCa(ctx, options_.requestHeader.clientCaPem);
    return setup.ok();
  });
  if (!setup.ok()) return setup;
  if (!listener->is_valid()) return {StatusCode::kInternal, "could not set up TLS"};
  listener->new_task_queue = [] { return new httplib::ThreadPool(kPoolThreads); };
  listener->set_read_timeout(kReadTimeoutSeconds, 0);
  listener->set_write_timeout(kWriteTimeoutSeconds, 0);
  listener->set_payload_max_length(size_t{16} * 1024);
  listener->Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
    Headers headers(req.headers.begin(), req.headers.end());
    auto user =
        AuthenticateFrontProxy(options_.requestHeader, VerifiedCommonName(req.ssl), headers);
    if (!user.ok()) return ReplyStatus(res, user.status());
    const Route route = ParseRoute(req.path);
    switch (route.kind) {
      case Route::Kind::kApiGroupList:
        return ReplyJson(res, ApiGroupList());
      case Route::Kind::kApiGroup:
        return ReplyJson(res, ApiGroup());
      case Route::Kind::kApiResourceList:
        return ReplyJson(res, ApiResourceList());
      case Route::Kind::kUnknown:
        return ReplyStatus(
            res, Status(StatusCode::kNotFound, "the server could not find the requested resource"));
      case Route::Kind::kJobLog:
        break;
    }
    std::multimap<std::string, std::string> query(req.params.begin(), req.params.end());
    auto options = ParseLogQuery(query);
    if (!options.ok()) return ReplyStatus(res, options.status(), route.name);
    if (Status allowed = authorize_(*user, route.namespace_, route.name); !allowed.ok()) {
      obs::Info("log request refused",
                {{"user", user->name},
                 {"namespace", route.namespace_},
                 {"job", route.name},
                 {"code", allowed.code() == StatusCode::kForbidden ? 403 : 503}});
      return ReplyStatus(res, allowed, route.name);
    }
    // The backend is read on a thread of its own, so that an error found before any output
    // (no such Job, execution gone) is still answered with its own code, while output, once it
    // comes, is written as it arrives.
    auto pipe = std::make_shared<Pipe>();
    {
      std::lock_guard lock(pipesMu_);
      if (stopping_) return ReplyStatus(res, Status(StatusCode::kUnavailable, "stopping"));
      std::erase_if(pipes_, [](const std::weak_ptr<Pipe>& p) { return p.expired(); });
      pipes_.push_back(pipe);
    }
    std::thread([this, pipe, route, options = *options] {
      Status s = logs_.Stream(route.namespace_, route.name, options,
                              [&](std::string_view bytes) { return pipe->Push(bytes); });
      pipe->Finish(std::move(s));
    }).detach();
    if (auto early = pipe->WaitFirst(); early) {
      if (!early->ok()) return ReplyStatus(res, *early, route.name);
      res.status = 200;
      res.set_content("", kLogContentType);
      return;
    }
    res.status = 200;
    // Not text/*: httplib gzips text for a client that accepts it (kube-apiserver's proxy
    // does), and its compressor holds output back until it has a block, which would stall a
    // follower. The body is the raw output bytes.
    res.set_chunked_content_provider(
        kLogContentType,
        [pipe](size_t /*offset*/, httplib::DataSink& sink) {
          Status result;
          while (auto chunk = pipe->Next(&result)) {
            if (!sink.write(chunk->data(), chunk->size())) {
              pipe->Close();
              return false;
            }
          }
          // An error after output was sent cannot change the status line: the stream just ends
          // (as kubectl logs -f ends when the kubelet's stream breaks).
          sink.done();
          return true;
        },
        [pipe](bool /*success*/) { pipe->Close(); });
  });
  listener->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
        ReplyStatus(res, Status(StatusCode::kInternal, "internal error"));
      });
  errno = 0;
  const int flags = AI_PASSIVE | AI_NUMERICHOST;
  int bound = port == 0 ? listener->bind_to_any_port(host, flags)
                        : (listener->bind_to_port(host, port, flags) ? port : -1);
  if (bound <= 0) {
    return {StatusCode::kUnavailable, "cannot listen on " + options_.address + ": " +
                                          (errno != 0 ? std::strerror(errno) : "bind failed")};
  }
  port_ = bound;
  listener_ = std::move(listener);
  thread_ = std::thread([l = listener_.get()] { l->listen_after_bind(); });
  return Status::Ok();
}

void LogApiServer::Stop() {
  if (!thread_.joinable()) return;
  listener_->Close();
  // Followers end now rather than when their executions end; their backend reads stop at their
  // next piece of output.
  {
    std::lock_guard lock(pipesMu_);
    stopping_ = true;
    for (const auto& weak : pipes_) {
      if (auto pipe = weak.lock()) pipe->Close();
    }
  }
  thread_.join();
  listener_.reset();
}

}  // namespace ayatori::logapi
