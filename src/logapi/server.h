// The Job log API over HTTPS (log_api.h has its paths): what kube-apiserver's aggregator proxies
// `kubectl get --raw /apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/NS/jobs/NAME/log`
// to, through an APIService (config/logs-api/apiservice.yaml). Only the front proxy connects: the
// TLS handshake requires a client certificate of the request-header CA, and its common name must
// be an allowed one (front_proxy.h; else 401). Each request is authorized by a SubjectAccessReview
// for the user the proxy names (else 403), and answered with the Job's output, read through the
// Job's adapter (Adapter::StreamLogs). With follow=true the output is streamed in chunks until the
// execution ends. Errors are metav1.Status documents, as kube-apiserver's.
#pragma once

#include <openssl/types.h>

#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/registry.h"
#include "ayatori/kube_client.h"
#include "ayatori/status.h"
#include "logapi/capped_slots.h"
#include "logapi/front_proxy.h"
#include "logapi/log_api.h"

namespace ayatori::obs {
class Registry;
}  // namespace ayatori::obs

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace ayatori::logapi {

// The output of one Job: finds its execution and streams it.
class JobLogs {
 public:
  virtual ~JobLogs() = default;
  // kNotFound: no such Job; kFailedPrecondition: it has no execution (yet, or its backend is not
  // served here); kGone: the backend removed the execution; else what the adapter said.
  virtual Status Stream(const std::string& ns, const std::string& name, const LogOptions& options,
                        const LogSink& sink) = 0;
};

// JobLogs of the controller: reads the Job, its class's parameters and backend snapshot fresh
// from the apiserver (the same parameters the reconciler gives the adapter, see
// JobReconciler::ParametersFor in src/controller/reconciler.cc) and asks the adapter that serves
// the Job's resolved class.
class AdapterJobLogs final : public JobLogs {
 public:
  // `client` and `registry` must outlive this object. `watchNamespaces`: the namespaces the
  // controller serves (--watch-namespaces), empty = all; a Job elsewhere is answered NotFound
  // without a request, since the controller neither ran it nor may read it. `log` gets the
  // detailed backend errors that readers are only told the category of (BackendErrorForReader);
  // nullptr = stderr.
  AdapterJobLogs(KubeClient& client, const adapters::AdapterRegistry& registry,
                 std::string controllerNamespace, std::vector<std::string> watchNamespaces = {},
                 std::function<void(const std::string&)> log = nullptr);
  Status Stream(const std::string& ns, const std::string& name, const LogOptions& options,
                const LogSink& sink) override;

 private:
  StatusOr<nlohmann::json> Parameters(const nlohmann::json& job,
                                      const AdapterDescriptor& descriptor);
  KubeClient& client_;
  const adapters::AdapterRegistry& registry_;
  std::string controllerNamespace_;
  std::vector<std::string> watchNamespaces_;
  std::function<void(const std::string&)> log_;
};

// Whether `user` may read the log of Job ns/name: OK, kForbidden with the message to show, or
// another code when the question could not be asked.
using Authorizer =
    std::function<Status(const UserInfo& user, const std::string& ns, const std::string& name)>;

// Asks the apiserver with a SubjectAccessReview (log_api.h, LogSubjectAccessReview).
Authorizer SubjectAccessReviewAuthorizer(KubeClient& client);

// What one tenant may hold of the log API (docs/operations.md, "Log API limits"). Every
// connection must present a client certificate the front proxy's CA signed (else the TLS
// handshake fails); a request is GET without a body; its line and headers arrive within
// `requestTimeout` of the connection (or of the previous response) and in at most
// `maxRequestHeadBytes` TLS bytes, else the connection is dropped. Follows (follow=true) beyond
// the caps are answered 429 with Retry-After. A connection holds a thread from the start of its
// TLS handshake; until the handshake has verified the front proxy's certificate it counts against
// the handshake caps, and a connection beyond them is closed at once, before its first read: one
// client address (anyone on the pod network can connect) cannot hold more than
// `maxHandshakesPerClient` threads with connections that never finish their handshake. The
// server has `maxFollows` + `maxHandshakes` + kSpareThreads threads, so that neither follows nor
// unfinished handshakes ever hold all of them.
struct LogApiLimits {
  int maxFollows = 48;              // --logs-api-max-follows
  int maxFollowsPerUser = 40;       // --logs-api-max-follows-per-user
  int maxHandshakes = 32;           // --logs-api-max-handshakes
  int maxHandshakesPerClient = 16;  // --logs-api-max-handshakes-per-client
  // A connection that sends nothing for this long is dropped; one that sends nothing at all
  // waits as long in the kernel first (TCP_DEFER_ACCEPT), holding no thread.
  std::chrono::milliseconds silenceTimeout{3000};
  std::chrono::milliseconds requestTimeout{10000};
  size_t maxRequestHeadBytes = size_t{64} * 1024;
  int retryAfterSeconds = 10;
  // How often a response waiting on a silent backend checks that its client is still there.
  std::chrono::milliseconds clientCheckInterval{1000};
};

struct LogApiServerOptions {
  std::string address = "0.0.0.0:8443";  // host:port; port 0 picks one
  // PEM files of the serving certificate (with its chain) and key; both empty: a self-signed
  // certificate made at start (only for tests and local runs: the APIService cannot verify it).
  std::string certFile;
  std::string keyFile;
  RequestHeaderConfig requestHeader;
  LogApiLimits limits;
  // Where the connections refused by the handshake caps are counted; nullptr: not counted.
  obs::Registry* metrics = nullptr;
};

// Threads of the server beyond the follow and handshake caps: what requests other than follows are
// served on while every follow and handshake slot is taken.
inline constexpr int kSpareThreads = 16;

class LogApiServer {
 public:
  LogApiServer(JobLogs& logs, Authorizer authorize, LogApiServerOptions options);
  ~LogApiServer();
  LogApiServer(const LogApiServer&) = delete;
  LogApiServer& operator=(const LogApiServer&) = delete;

  // Loads the certificates and binds; kInvalidArgument names a bad address, file, CA or limit.
  Status Start();
  // Stops accepting, ends the responses in progress (followers included), asks the backend
  // reads to stop (LogOptions::stop) and joins their threads.
  void Stop();
  int port() const { return port_; }
  // Follows in progress (for tests and metrics).
  int follows() const;
  // Connections in their TLS handshake (for tests).
  int handshakes() const;

 private:
  class Listener;
  class Pipe;  // output from a backend read to a response
  class FollowSlot;
  struct Reader {
    std::shared_ptr<Pipe> pipe;
    std::jthread thread;
  };
  // Start's steps: the address and limits; the serving certificate and the front proxy's CA
  // (`ctx` of the listener); timeouts, thread pool and per-connection guards; the handlers.
  Status CheckOptions(std::string* host, int* port) const;
  Status SetUpTls(SSL_CTX& ctx) const;
  void SetUpConnections(Listener& listener);
  void SetUpHandlers(Listener& listener);
  // The handler of every request that passed RefuseUnservable: authenticates the front proxy
  // and routes.
  void Serve(const httplib::Request& req, httplib::Response& res);
  void ServeLog(const httplib::Request& req, httplib::Response& res, const UserInfo& user,
                const Route& route);
  // nullptr (and `res` answered 429) when a follow cap is reached.
  std::shared_ptr<FollowSlot> TakeFollowSlot(const std::string& user, httplib::Response& res);
  void ReleaseFollowSlot(const std::string& user);
  // Starts reading the backend on a thread of its own; nullptr when stopping.
  std::shared_ptr<Pipe> StartReader(const Route& route, LogOptions options);
  JobLogs& logs_;
  Authorizer authorize_;
  LogApiServerOptions options_;
  std::unique_ptr<Listener> listener_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  bool stopping_ = false;
  std::list<Reader> readers_;  // of the requests in progress, and finished ones not yet joined
  CappedSlots follows_;        // held by users
  CappedSlots handshakes_;     // held by client addresses
};

}  // namespace ayatori::logapi
