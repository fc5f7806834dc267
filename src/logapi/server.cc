#include "logapi/server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stop_token>

#include "api/json.h"
#include "controller/backend_snapshot.h"
#include "controller/kinds.h"
#include "kube/api_error.h"
#include "logapi/log_api.h"
#include "obs/http_server.h"
#include "obs/log.h"
#include "obs/metrics.h"

namespace ayatori::logapi {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

const ResourceRef kSubjectAccessReviews = kube::SubjectAccessReviewsResource();
using controller::kConfigMaps;

// A response makes progress (one blocked send) within this, else the connection is dropped.
constexpr time_t kWriteTimeoutSeconds = 10;
// A kept-alive connection idle longer is closed; after this many requests it is closed too.
constexpr time_t kKeepAliveSeconds = 5;
constexpr size_t kKeepAliveRequests = 100;
// Headers of a request (the front proxy sends about a dozen).
constexpr size_t kMaxHeaders = 100;
// Output buffered between the adapter's reading thread and the client's writer before the
// reader waits: a client that reads slowly slows the backend read instead of filling memory.
constexpr size_t kMaxBuffered = size_t{1} << 20;
constexpr const char* kLogContentType = "application/octet-stream";

// Options of the listening socket, instead of httplib's default ones: SO_REUSEADDR but not
// SO_REUSEPORT (a second controller on the port fails to bind rather than share it silently), and
// TCP_DEFER_ACCEPT: a connection that sends nothing waits in the kernel, not in a server thread.
void SetListenerOptions(int fd, int silenceSeconds) {
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &silenceSeconds, sizeof(silenceSeconds));
}

std::string JobNotFound(const std::string& name) {
  return std::string("jobs.") + controller::kJobs.group + " \"" + name + "\" not found";
}

// What each TLS connection may still read before its request is complete: a deadline and a
// number of bytes, both renewed after each response. Kept as ex_data of the connection's SSL and
// checked by a callback on its reading BIO, so that a client sending a byte a second (which
// never trips the library's per-read timeout), or an endless header line (which the library
// would buffer whole), is cut off by the TLS layer below the HTTP parser.
// It also holds the handshake slot of the connection's client address (LogApiLimits), from the
// start of the TLS handshake until the handshake verified the front proxy's certificate or the
// connection ends (the guard is freed with the SSL).
struct ConnectionGuard {
  ConnectionGuard() = default;
  ~ConnectionGuard() { EndHandshake(); }
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;
  ConnectionGuard(ConnectionGuard&&) = delete;
  ConnectionGuard& operator=(ConnectionGuard&&) = delete;

  void EndHandshake() {
    if (handshakes != nullptr) handshakes->Release(client);
    handshakes = nullptr;
  }

  Clock::time_point deadline;
  size_t budget = 0;
  bool refused = false;               // the request was refused unread: close after the response
  CappedSlots* handshakes = nullptr;  // while the handshake slot is held
  std::string client;                 // the peer's address
};

// What every connection of the listener is held to (the SSL_CTX's app data).
struct ConnectionLimits {
  std::chrono::milliseconds timeout{};
  size_t bytes = 0;
  CappedSlots* handshakes = nullptr;
  // Connections refused by the per-client and the total handshake cap; nullptr: not counted.
  obs::Counter* refusedPerClient = nullptr;
  obs::Counter* refusedTotal = nullptr;
};

int GuardIndex() {
  static const int index = SSL_get_ex_new_index(
      0, nullptr, nullptr, nullptr,
      [](void* /*parent*/, void* ptr, CRYPTO_EX_DATA* /*ad*/, int /*idx*/, long /*argl*/,
         void* /*argp*/) { delete static_cast<ConnectionGuard*>(ptr); });
  return index;
}

ConnectionGuard* GuardOf(const SSL* ssl) {
  return ssl == nullptr ? nullptr
                        : static_cast<ConnectionGuard*>(SSL_get_ex_data(ssl, GuardIndex()));
}

void Renew(ConnectionGuard& guard, const ConnectionLimits& limits) {
  guard.deadline = Clock::now() + limits.timeout;
  guard.budget = limits.bytes;
}

// The BIO callback: fails a read that comes after the deadline or beyond the budget. Only reads
// are looked at (never a free, after which the guard is gone).
long GuardRead(BIO* bio, int oper, const char* /*argp*/, size_t /*len*/, int /*argi*/,
               long /*argl*/, int ret, size_t* processed) {
  if (oper != (BIO_CB_READ | BIO_CB_RETURN) || ret <= 0 || processed == nullptr) return ret;
  auto* guard = reinterpret_cast<ConnectionGuard*>(BIO_get_callback_arg(bio));
  if (guard == nullptr) return ret;
  if (Clock::now() > guard->deadline || *processed > guard->budget) {
    *processed = 0;
    return -1;
  }
  guard->budget -= *processed;
  return ret;
}

// Takes a handshake slot for the connection's client address. Without one the connection is
// closed before it is read: its socket is shut down (the client sees the close at once) and its
// guard has no budget (the first read fails even if bytes are waiting), so the thread it was given
// is free again within microseconds instead of a silence timeout.
void AdmitHandshake(ConnectionGuard& guard, int fd, const ConnectionLimits& limits) {
  sockaddr_storage peer{};
  socklen_t length = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) == 0) {
    guard.client = obs::AddressText(reinterpret_cast<const sockaddr*>(&peer));
  }
  const CappedSlots::Take take = limits.handshakes->TryTake(guard.client);
  if (take.outcome == CappedSlots::Outcome::kTaken) {
    guard.handshakes = limits.handshakes;
    return;
  }
  // Counted before the close, which the client may see at once.
  const bool perClient = take.outcome == CappedSlots::Outcome::kHolderFull;
  if (obs::Counter* refused = perClient ? limits.refusedPerClient : limits.refusedTotal) {
    refused->Inc();
  }
  // At debug level: an attacker's connections must not flood the log (the metric counts them).
  obs::Debug("log API connection refused before its handshake",
             {{"client", guard.client},
              {"limit", perClient ? "client" : "total"},
              {"handshakes", perClient ? take.heldByHolder : take.held}});
  guard.budget = 0;
  shutdown(fd, SHUT_RDWR);
}

// The info callback: at the start of a handshake, before its first read, the connection gets
// its guard and takes its handshake slot; once the handshake is done (the front proxy's
// certificate verified: any other fails it) the slot is released.
void GuardConnection(const SSL* ssl, int where, int /*ret*/) {
  if ((where & SSL_CB_HANDSHAKE_DONE) != 0) {
    if (ConnectionGuard* guard = GuardOf(ssl)) guard->EndHandshake();
    return;
  }
  if ((where & SSL_CB_HANDSHAKE_START) == 0 || GuardOf(ssl) != nullptr) return;
  const auto* limits =
      static_cast<const ConnectionLimits*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  BIO* rbio = SSL_get_rbio(ssl);
  if (limits == nullptr || rbio == nullptr) return;
  auto* guard = new ConnectionGuard;
  Renew(*guard, *limits);
  SSL_set_ex_data(const_cast<SSL*>(ssl), GuardIndex(), guard);
  BIO_set_callback_arg(rbio, reinterpret_cast<char*>(guard));
  BIO_set_callback_ex(rbio, GuardRead);
  if (limits->handshakes != nullptr) AdmitHandshake(*guard, SSL_get_fd(ssl), *limits);
}

// Whether the peer of a connection waiting on a silent backend has gone (closed or reset).
bool ClientGone(const SSL* ssl) {
  if (ssl == nullptr) return false;
  pollfd p{SSL_get_fd(ssl), POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
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
  bool finished() {
    std::lock_guard lock(mu_);
    return finished_;
  }
  // From the writer: the client left, or the server stops. The backend read is asked to stop
  // (outside the lock: the adapter's stop callback may take locks of its own).
  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      cv_.notify_all();
    }
    stop_.request_stop();
  }
  std::stop_token token() const { return stop_.get_token(); }
  enum class Wait { kOutput, kFinished, kClosed };
  // Until there is output or the reader finished (then `result` is its result), or the pipe
  // was closed or `gone` says the client left (checked every `interval` while nothing comes).
  Wait WaitFirst(const std::function<bool()>& gone, std::chrono::milliseconds interval,
                 Status* result) {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, interval, [&] { return any_ || finished_ || closed_; })) {
      if (gone()) closed_ = true;
    }
    if (closed_) {
      lock.unlock();
      Close();
      return Wait::kClosed;
    }
    if (any_) return Wait::kOutput;
    *result = result_;
    return Wait::kFinished;
  }
  // The next piece of output; nullopt at the end (then `result` is the reader's result) or once
  // closed (the server stops, or `gone` said the client left).
  std::optional<std::string> Next(const std::function<bool()>& gone,
                                  std::chrono::milliseconds interval, Status* result) {
    std::unique_lock lock(mu_);
    while (
        !cv_.wait_for(lock, interval, [&] { return !chunks_.empty() || finished_ || closed_; })) {
      if (gone()) closed_ = true;
    }
    if (closed_) {
      *result = Status(StatusCode::kCancelled, "the client left or the log API is stopping");
      lock.unlock();
      Close();
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
  std::stop_source stop_;
};

// A follow counted against the caps until the response that holds it ends.
class LogApiServer::FollowSlot {
 public:
  FollowSlot(LogApiServer& server, std::string user) : server_(server), user_(std::move(user)) {}
  ~FollowSlot() { server_.ReleaseFollowSlot(user_); }
  FollowSlot(const FollowSlot&) = delete;
  FollowSlot& operator=(const FollowSlot&) = delete;

 private:
  LogApiServer& server_;
  std::string user_;
};

namespace {

void ReplyStatus(httplib::Response& res, const Status& s, const std::string& name = {}) {
  const kube::HttpError http = kube::HttpErrorFor(s.code());
  res.status = http.code;
  res.set_content(StatusDocument(http.code, http.reason, s.message(), name).dump(),
                  "application/json");
}

void ReplyJson(httplib::Response& res, const json& doc) {
  res.status = 200;
  res.set_content(doc.dump(), "application/json");
}

// The common name of the client certificate the request-header CA verified on this connection
// (the handshake already refused any other).
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

// Only the front proxy talks to this server: a client without a certificate the request-header
// CA signed fails the TLS handshake (OpenSSL's verification, no callback that overrides it).
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
  SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
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
                               std::string controllerNamespace,
                               std::vector<std::string> watchNamespaces,
                               std::function<void(const std::string&)> log)
    : client_(client),
      registry_(registry),
      controllerNamespace_(std::move(controllerNamespace)),
      watchNamespaces_(std::move(watchNamespaces)),
      log_(std::move(log)) {}

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
  if (!watchNamespaces_.empty() &&
      std::ranges::find(watchNamespaces_, ns) == watchNamespaces_.end()) {
    // The served namespaces are not named: a tenant need not learn which others exist.
    return Status(StatusCode::kNotFound, JobNotFound(name) +
                                             ": this controller does not serve namespace " + ns +
                                             " (its --watch-namespaces)");
  }
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
  Status forReader = BackendErrorForReader(s, what + " in namespace " + ns, adapter->Name());
  if (forReader.message() != s.message()) {
    // The details stay here, for the operator: they may name the engine's address.
    std::string line = "log api: the log of " + what + " in namespace " + ns + " (" +
                       adapter->Name() + " backend): " + s.ToString();
    if (log_) {
      log_(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
  return forReader;
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
  ConnectionLimits connectionLimits{};  // the SSL_CTX's app data
};

LogApiServer::LogApiServer(JobLogs& logs, Authorizer authorize, LogApiServerOptions options)
    : logs_(logs),
      authorize_(std::move(authorize)),
      options_(std::move(options)),
      follows_(options_.limits.maxFollows, options_.limits.maxFollowsPerUser),
      handshakes_(options_.limits.maxHandshakes, options_.limits.maxHandshakesPerClient) {}

LogApiServer::~LogApiServer() { Stop(); }

int LogApiServer::follows() const { return follows_.held(); }

int LogApiServer::handshakes() const { return handshakes_.held(); }

namespace {

// Refuses what the log API never serves before the library reads it: a method other than GET, a
// request with a body, too many headers. Unhandled for the rest.
httplib::Server::HandlerResponse RefuseUnservable(const httplib::Request& req,
                                                  httplib::Response& res) {
  using Result = httplib::Server::HandlerResponse;
  Status refused;
  if (req.method != "GET") {
    res.set_header("Allow", "GET");
    refused = Status(StatusCode::kInvalidArgument, "only GET is served here");
    ReplyStatus(res, refused);
    res.status = 405;
  } else if (req.has_header("Transfer-Encoding") ||
             (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0")) {
    ReplyStatus(res, Status(StatusCode::kInvalidArgument, "a request takes no body"));
    res.status = 413;
  } else if (req.headers.size() > kMaxHeaders) {
    ReplyStatus(res, Status(StatusCode::kInvalidArgument, "too many request headers"));
    res.status = 431;
  } else {
    return Result::Unhandled;
  }
  if (ConnectionGuard* guard = GuardOf(req.ssl)) guard->refused = true;
  return Result::Handled;
}

}  // namespace

Status LogApiServer::CheckOptions(std::string* host, int* port) const {
  if (!obs::SplitHostPort(options_.address, host, port)) {
    return {StatusCode::kInvalidArgument,
            "log API address \"" + options_.address + "\" is not host:port (e.g. 0.0.0.0:8443)"};
  }
  if (host->empty()) *host = "0.0.0.0";
  if (options_.certFile.empty() != options_.keyFile.empty()) {
    return {StatusCode::kInvalidArgument,
            "the log API's certificate and key files go together: give both or neither"};
  }
  const LogApiLimits& limits = options_.limits;
  if (limits.maxFollows < 1 || limits.maxFollowsPerUser < 1 ||
      limits.maxFollowsPerUser > limits.maxFollows) {
    return {StatusCode::kInvalidArgument,
            "the log API's follow caps must be >= 1, the per-user one at most the total one"};
  }
  if (limits.maxHandshakes < 1 || limits.maxHandshakesPerClient < 1 ||
      limits.maxHandshakesPerClient > limits.maxHandshakes) {
    return {StatusCode::kInvalidArgument,
            "the log API's handshake caps must be >= 1, the per-client one at most the total one"};
  }
  if (limits.silenceTimeout < std::chrono::seconds(1)) {
    return {StatusCode::kInvalidArgument, "the log API's silence timeout must be >= 1 s"};
  }
  return Status::Ok();
}

Status LogApiServer::SetUpTls(SSL_CTX& ctx) const {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  Status setup;
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
  SSL_CTX_set_info_callback(&ctx, GuardConnection);
  return setup;
}

void LogApiServer::SetUpConnections(Listener& listener) {
  const LogApiLimits& limits = options_.limits;
  ConnectionLimits& connections = listener.connectionLimits;
  connections = {limits.requestTimeout, limits.maxRequestHeadBytes, &handshakes_};
  if (options_.metrics != nullptr) {
    connections.refusedPerClient = &options_.metrics->GetCounter(
        obs::metrics::kLogsApiConnectionsRefused, {{"limit", "client"}});
    connections.refusedTotal = &options_.metrics->GetCounter(
        obs::metrics::kLogsApiConnectionsRefused, {{"limit", "total"}});
  }
  SSL_CTX_set_app_data(listener.ssl_context(), &connections);
  const size_t threads = static_cast<size_t>(limits.maxFollows) +
                         static_cast<size_t>(limits.maxHandshakes) + kSpareThreads;
  listener.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // A silent client is dropped after one read timeout; a slow one by its connection's guard.
  // A connection holds a thread from the handshake on, so a silent one is dropped soon (the
  // front proxy sends its handshake and request at once), and one beyond the handshake caps at
  // once (AdmitHandshake).
  const auto timeout = std::chrono::duration_cast<std::chrono::seconds>(
      std::min(limits.requestTimeout, limits.silenceTimeout));
  listener.set_read_timeout(std::max<time_t>(1, timeout.count()), 0);
  const int silenceSeconds = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(limits.silenceTimeout).count());
  listener.set_socket_options([silenceSeconds](int fd) { SetListenerOptions(fd, silenceSeconds); });
  listener.set_write_timeout(kWriteTimeoutSeconds, 0);
  listener.set_keep_alive_timeout(kKeepAliveSeconds);
  listener.set_keep_alive_max_count(kKeepAliveRequests);
  listener.set_payload_max_length(0);
}

void LogApiServer::SetUpHandlers(Listener& listener) {
  // No body is ever read: a request that announces one is refused before the library reads it.
  listener.set_expect_100_continue_handler(
      [](const httplib::Request&, httplib::Response&) { return 417; });
  listener.set_pre_routing_handler(RefuseUnservable);
  listener.Get(".*",
               [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); });
  // After each response: the next request gets a fresh deadline and budget; after a refused
  // one (its body unread) the connection ends.
  listener.set_logger([l = &listener](const httplib::Request& req, const httplib::Response&) {
    ConnectionGuard* guard = GuardOf(req.ssl);
    if (guard == nullptr) return;
    Renew(*guard, l->connectionLimits);
    if (guard->refused) shutdown(SSL_get_fd(req.ssl), SHUT_RDWR);
  });
  listener.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
        ReplyStatus(res, Status(StatusCode::kInternal, "internal error"));
      });
}

Status LogApiServer::Start() {
  if (thread_.joinable()) return {StatusCode::kFailedPrecondition, "already serving"};
  std::string host;
  int port = 0;
  if (Status s = CheckOptions(&host, &port); !s.ok()) return s;
  Status setup;
  auto listener = std::make_unique<Listener>([&](SSL_CTX& ctx) {
    setup = SetUpTls(ctx);
    return setup.ok();
  });
  if (!setup.ok()) return setup;
  if (!listener->is_valid()) return {StatusCode::kInternal, "could not set up TLS"};
  SetUpConnections(*listener);
  SetUpHandlers(*listener);
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
  // Joined by Stop: the server has no detached thread.
  thread_ = std::thread([l = listener_.get()] { l->listen_after_bind(); });
  return Status::Ok();
}

void LogApiServer::Serve(const httplib::Request& req, httplib::Response& res) {
  Headers headers(req.headers.begin(), req.headers.end());
  auto user = AuthenticateFrontProxy(options_.requestHeader, VerifiedCommonName(req.ssl), headers);
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
      return ServeLog(req, res, *user, route);
  }
}

std::shared_ptr<LogApiServer::FollowSlot> LogApiServer::TakeFollowSlot(const std::string& user,
                                                                       httplib::Response& res) {
  const CappedSlots::Take take = follows_.TryTake(user);
  std::string refusal;
  switch (take.outcome) {
    case CappedSlots::Outcome::kTaken:
      obs::Debug("follow started", {{"user", user}, {"follows", take.held}});
      return std::make_shared<FollowSlot>(*this, user);
    case CappedSlots::Outcome::kTotalFull:
      refusal = "the log API follows " + std::to_string(take.held) + " logs, its limit";
      break;
    case CappedSlots::Outcome::kHolderFull:
      refusal =
          "user \"" + user + "\" follows " + std::to_string(take.heldByHolder) + " logs, the limit";
      break;
  }
  obs::Info("follow refused", {{"user", user}, {"reason", refusal}});
  ReplyStatus(res,
              Status(StatusCode::kTooManyRequests,
                     refusal + ": try again later, or end a follow (kubectl ayatori logs -f)"));
  res.set_header("Retry-After", std::to_string(options_.limits.retryAfterSeconds));
  return nullptr;
}

void LogApiServer::ReleaseFollowSlot(const std::string& user) {
  obs::Debug("follow ended", {{"user", user}, {"follows", follows_.Release(user)}});
}

std::shared_ptr<LogApiServer::Pipe> LogApiServer::StartReader(const Route& route,
                                                              LogOptions options) {
  auto pipe = std::make_shared<Pipe>();
  std::list<Reader> finished;
  std::lock_guard lock(mu_);
  if (stopping_) return nullptr;
  // Readers that ended are joined here (their last act was Finish: the join is immediate).
  for (auto it = readers_.begin(); it != readers_.end();) {
    auto next = std::next(it);
    if (it->pipe->finished()) finished.splice(finished.end(), readers_, it);
    it = next;
  }
  options.stop = pipe->token();
  readers_.push_back({pipe, std::jthread([this, pipe, route, options = std::move(options)] {
                        Status s =
                            logs_.Stream(route.namespace_, route.name, options,
                                         [&](std::string_view bytes) { return pipe->Push(bytes); });
                        pipe->Finish(std::move(s));
                      })});
  return pipe;
}

// The backend is read on a thread of its own, so that an error found before any output (no such
// Job, execution gone) is still answered with its own code, while output, once it comes, is
// written as it arrives. While the backend is silent the client is checked every
// clientCheckInterval: a follower that left releases its slot, thread and backend read.
void LogApiServer::ServeLog(const httplib::Request& req, httplib::Response& res,
                            const UserInfo& user, const Route& route) {
  std::multimap<std::string, std::string> query(req.params.begin(), req.params.end());
  auto options = ParseLogQuery(query);
  if (!options.ok()) return ReplyStatus(res, options.status(), route.name);
  std::shared_ptr<FollowSlot> slot;
  if (options->follow && !(slot = TakeFollowSlot(user.name, res))) return;
  if (Status allowed = authorize_(user, route.namespace_, route.name); !allowed.ok()) {
    obs::Info("log request refused",
              {{"user", user.name},
               {"namespace", route.namespace_},
               {"job", route.name},
               {"code", allowed.code() == StatusCode::kForbidden ? 403 : 503}});
    return ReplyStatus(res, allowed, route.name);
  }
  auto pipe = StartReader(route, *options);
  if (pipe == nullptr) return ReplyStatus(res, Status(StatusCode::kUnavailable, "stopping"));
  const SSL* ssl = req.ssl;
  auto gone = [ssl] { return ClientGone(ssl); };
  const auto interval = options_.limits.clientCheckInterval;
  Status early;
  switch (pipe->WaitFirst(gone, interval, &early)) {
    case Pipe::Wait::kClosed:
      pipe->Close();
      return ReplyStatus(res, Status(StatusCode::kCancelled, "the client left"), route.name);
    case Pipe::Wait::kFinished:
      if (!early.ok()) return ReplyStatus(res, early, route.name);
      res.status = 200;
      res.set_content("", kLogContentType);
      return;
    case Pipe::Wait::kOutput:
      break;
  }
  res.status = 200;
  // Not text/*: httplib gzips text for a client that accepts it (kube-apiserver's proxy does),
  // and its compressor holds output back until it has a block, which would stall a follower.
  // The body is the raw output bytes. The slot is held until the response ends.
  res.set_chunked_content_provider(
      kLogContentType,
      [pipe, gone, interval, slot](size_t /*offset*/, httplib::DataSink& sink) {
        Status result;
        while (auto chunk = pipe->Next(gone, interval, &result)) {
          if (!sink.write(chunk->data(), chunk->size())) {
            pipe->Close();
            return false;
          }
        }
        if (result.code() == StatusCode::kCancelled) return false;
        // An error after output was sent cannot change the status line: the stream just ends
        // (as kubectl logs -f ends when the kubelet's stream breaks).
        sink.done();
        return true;
      },
      [pipe](bool /*success*/) { pipe->Close(); });
}

void LogApiServer::Stop() {
  if (!thread_.joinable()) return;
  listener_->Close();
  // Followers end now rather than when their executions end, and their backend reads are asked
  // to stop.
  std::list<Reader> readers;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    readers.swap(readers_);
  }
  for (Reader& r : readers) r.pipe->Close();
  thread_.join();
  listener_.reset();
  readers.clear();  // joins: a backend that cannot stop a blocked read ends at its next output
}

}  // namespace ayatori::logapi
