// The Job log API over HTTPS (log_api.h has its paths): what kube-apiserver's aggregator proxies
// `kubectl get --raw /apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/NS/jobs/NAME/log`
// to, through an APIService (config/default/logs-api.yaml). Each request is authenticated as
// the front proxy (front_proxy.h; else 401), authorized by a SubjectAccessReview for the user
// the proxy names (else 403), and answered with the Job's output, read through the Job's
// adapter (Adapter::StreamLogs). With follow=true the output is streamed in chunks until the
// execution ends. Errors are metav1.Status documents, as kube-apiserver's.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/registry.h"
#include "ayatori/adapter.h"
#include "ayatori/kube_client.h"
#include "ayatori/status.h"
#include "logapi/front_proxy.h"

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
  // `client` and `registry` must outlive this object.
  AdapterJobLogs(KubeClient& client, const adapters::AdapterRegistry& registry,
                 std::string controllerNamespace);
  Status Stream(const std::string& ns, const std::string& name, const LogOptions& options,
                const LogSink& sink) override;

 private:
  StatusOr<nlohmann::json> Parameters(const nlohmann::json& job,
                                      const AdapterDescriptor& descriptor);
  KubeClient& client_;
  const adapters::AdapterRegistry& registry_;
  std::string controllerNamespace_;
};

// Whether `user` may read the log of Job ns/name: OK, kForbidden with the message to show, or
// another code when the question could not be asked.
using Authorizer =
    std::function<Status(const UserInfo& user, const std::string& ns, const std::string& name)>;

// Asks the apiserver with a SubjectAccessReview (log_api.h, LogSubjectAccessReview).
Authorizer SubjectAccessReviewAuthorizer(KubeClient& client);

struct LogApiServerOptions {
  std::string address = "0.0.0.0:8443";  // host:port; port 0 picks one
  // PEM files of the serving certificate (with its chain) and key; both empty: a self-signed
  // certificate made at start (the APIService then says insecureSkipTLSVerify, as
  // metrics-server's default install does).
  std::string certFile;
  std::string keyFile;
  RequestHeaderConfig requestHeader;
};

class LogApiServer {
 public:
  LogApiServer(JobLogs& logs, Authorizer authorize, LogApiServerOptions options);
  ~LogApiServer();
  LogApiServer(const LogApiServer&) = delete;
  LogApiServer& operator=(const LogApiServer&) = delete;

  // Loads the certificates and binds; kInvalidArgument names a bad address, file or CA.
  Status Start();
  // Stops accepting, ends the responses in progress (followers included) and waits for them.
  // A backend read still blocked (a follow with no output) ends at its next output, on its
  // own detached thread, which uses the JobLogs: keep that alive until the process exits.
  void Stop();
  int port() const { return port_; }

 private:
  class Listener;
  class Pipe;  // output from a backend read to a response
  JobLogs& logs_;
  Authorizer authorize_;
  LogApiServerOptions options_;
  std::unique_ptr<Listener> listener_;
  std::thread thread_;
  int port_ = 0;
  std::mutex pipesMu_;
  bool stopping_ = false;
  std::vector<std::weak_ptr<Pipe>> pipes_;  // of the requests in progress
};

}  // namespace ayatori::logapi
