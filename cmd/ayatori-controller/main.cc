// ayatori-controller: reconciles execution.ayatori.ddupan.top Jobs (see docs/operations.md).
#include <malloc.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stop_token>
#include <thread>

#include "adapters/docker/descriptor.h"
#include "adapters/docker/docker_adapter.h"
#include "adapters/kubernetes/descriptor.h"
#include "adapters/kubernetes/kubernetes_adapter.h"
#include "adapters/opensandbox/descriptor.h"
#include "adapters/opensandbox/opensandbox_adapter.h"
#include "adapters/registry.h"
#include "adapters/testing/in_process_adapter.h"
#include "controller/controller.h"
#include "kube/config.h"
#include "kube/events.h"
#include "kube/leader_election.h"
#include "kube/resource.h"
#include "kube/rest_client.h"
#include "logapi/front_proxy.h"
#include "logapi/server.h"
#include "obs/http_server.h"
#include "obs/log.h"
#include "obs/metrics.h"

namespace {

using namespace ayatori;  // NOLINT(google-build-using-namespace)

// Exit codes (docs/operations.md, "Exit codes"). The Deployment restarts the container after
// any of them; the distinct codes say why in `kubectl get pod` and the pod's lastState.
constexpr int kExitStopped = 0;    // SIGTERM or SIGINT: work stopped, Lease released
constexpr int kExitUsage = 2;      // bad flag, kubeconfig or metrics address
constexpr int kExitLostLease = 3;  // another holder, or no renewal within --renew-deadline
constexpr int kExitNotSynced = 4;  // informers not synced within --sync-timeout; Lease released

struct Flags {
  std::string kubeconfig;
  std::string context;
  bool allowInsecureTls = false;
  int workers = 4;
  double qps = 50;
  int burst = 100;
  bool leaderElect = false;
  std::string controllerNamespace = controller::kDefaultControllerNamespace;
  std::string leaseNamespace = controller::kDefaultControllerNamespace;
  std::string watchNamespaces;  // comma-separated; empty = all namespaces
  std::string leaseName = "ayatori-controller";
  std::string leaseDuration = "15s", renewDeadline = "10s", retryPeriod = "2s";
  std::string syncTimeout = "60s";
  std::string metricsAddress = "127.0.0.1:8080";
  std::string logLevel = "info", logFormat = "json";
  std::string dockerEndpoint;
  bool enableTestAdapter = false;
  std::string logsApiBind;
  std::string logsApiCertFile, logsApiKeyFile;
  std::string requestHeaderCaFile;
  std::string requestHeaderAllowedNames;  // comma-separated
  logapi::LogApiLimits logsApiLimits;
};

// The front proxy's settings: from the flags when --requestheader-client-ca-file is given, else
// from the ConfigMap kube-apiserver publishes (as every extension apiserver reads them).
StatusOr<logapi::RequestHeaderConfig> RequestHeaderSettings(const Flags& f, KubeClient& client) {
  if (!f.requestHeaderCaFile.empty()) {
    std::ifstream in(f.requestHeaderCaFile);
    std::stringstream pem;
    pem << in.rdbuf();
    if (!in || pem.str().empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "cannot read --requestheader-client-ca-file " + f.requestHeaderCaFile);
    }
    logapi::RequestHeaderConfig config;
    config.clientCaPem = pem.str();
    std::stringstream names(f.requestHeaderAllowedNames);
    for (std::string name; std::getline(names, name, ',');) {
      if (!name.empty()) config.allowedNames.push_back(name);
    }
    return config;
  }
  auto cm = client.Get({"", "v1", "configmaps", true}, logapi::kAuthenticationConfigMapNamespace,
                       logapi::kAuthenticationConfigMapName);
  if (!cm.ok()) {
    return Status(cm.status().code(),
                  std::string("reading ConfigMap ") + logapi::kAuthenticationConfigMapNamespace +
                      "/" + logapi::kAuthenticationConfigMapName + ": " + cm.status().message());
  }
  return logapi::RequestHeaderConfigFromConfigMap(*cm);
}

// "15s", "500ms", "2m" -> milliseconds; nullopt when malformed or not positive.
std::optional<std::chrono::milliseconds> ParseDuration(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0) ++i;
  if (i == 0 || i > 9) return std::nullopt;
  long long n = std::stoll(s.substr(0, i));
  std::string unit = s.substr(i);
  long long ms = unit == "ms" ? n : unit == "s" ? n * 1000 : unit == "m" ? n * 60000 : -1;
  if (ms <= 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

int Fail(const std::string& message) {
  std::cerr << "ayatori-controller: " << message << "\n";
  return kExitUsage;
}

// Longest --sync-timeout: a Deployment whose new pod is not ready for 10 minutes (its default
// progressDeadlineSeconds) is reported as not progressing; a replica stuck that long should have
// exited and been restarted, with its reason in the log, well before.
constexpr std::chrono::minutes kMaxSyncTimeout{10};

// What ends the process, for the main thread to wait on: SIGTERM or SIGINT (through a signalfd;
// the signals are blocked in every thread) or a thread of this process asking to stop with an
// exit code (through an eventfd). One poll(2), no thread of its own.
class StopRequests {
 public:
  StopRequests() = default;
  ~StopRequests() {
    if (signalFd_ >= 0) close(signalFd_);
    if (eventFd_ >= 0) close(eventFd_);
  }
  StopRequests(const StopRequests&) = delete;
  StopRequests& operator=(const StopRequests&) = delete;

  // Blocks SIGTERM and SIGINT in this thread and so in every thread started later: call it
  // before any thread starts.
  Status Open() {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signalFd_ = signalfd(-1, &signals, SFD_CLOEXEC);
    eventFd_ = eventfd(0, EFD_CLOEXEC);
    if (signalFd_ < 0 || eventFd_ < 0) {
      return {StatusCode::kInternal, std::string("signalfd/eventfd: ") + std::strerror(errno)};
    }
    return Status::Ok();
  }

  // From any thread; the first request's exit code and reason win.
  void Request(int exitCode, const std::string& reason) {
    {
      std::lock_guard lock(mu_);
      if (!requested_) {
        requested_ = true;
        exitCode_ = exitCode;
        reason_ = reason;
      }
    }
    uint64_t one = 1;
    [[maybe_unused]] auto n = write(eventFd_, &one, sizeof(one));
  }

  // Waits for a stop signal or a Request(); returns the exit code and sets `reason`.
  int Wait(std::string* reason) {
    std::array<pollfd, 2> fds{pollfd{signalFd_, POLLIN, 0}, pollfd{eventFd_, POLLIN, 0}};
    while (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno != EINTR) {
        *reason = std::string("poll: ") + std::strerror(errno);
        return 1;
      }
    }
    if (fds[1].revents != 0) {
      std::lock_guard lock(mu_);
      *reason = reason_;
      return exitCode_;
    }
    signalfd_siginfo info{};
    [[maybe_unused]] auto n = read(signalFd_, &info, sizeof(info));
    *reason = std::string("signal ") + sigabbrev_np(static_cast<int>(info.ssi_signo));
    return kExitStopped;
  }

 private:
  int signalFd_ = -1;
  int eventFd_ = -1;
  std::mutex mu_;
  bool requested_ = false;
  int exitCode_ = kExitStopped;
  std::string reason_;
};

// Blocks until `stop` is requested.
void WaitUntilStopped(const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait(lock, stop, [] { return false; });
}

std::string Identity() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return std::string(host) + "_" + std::to_string(getpid());
}

// glibc malloc settings for a process whose long-lived state is many small cache entries while
// its transient garbage comes in bursts (list pages, watch events, response bodies):
//  - a fixed mmap threshold: with the default, freeing one large mmapped block raises the
//    threshold up to 32 MiB, after which response bodies and buffers of list pages come from the
//    heap, between cache entries, and what they leave behind is never returned to the kernel;
//  - two arenas instead of 8 per core: every watch, worker and writer thread otherwise gets an
//    arena of its own, each keeping its free memory.
// Measured with hack/bench-kubernetes.sh (1000 Jobs, their batch Jobs and pods): a fresh
// controller's RSS after syncing went from 32 MiB to 20 MiB (17.5 MiB with no Job).
void TuneMalloc() {
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  mallopt(M_ARENA_MAX, 2);
}

}  // namespace

int main(int argc, char** argv) {
  // Writes to a closed connection (a probe or scrape that hung up, an apiserver connection that
  // broke) must fail with EPIPE, not kill the process. Before any thread starts, so that no
  // thread runs with the default disposition.
  std::signal(SIGPIPE, SIG_IGN);
  TuneMalloc();
  Flags f;
  CLI::App app{"ayatori-controller: runs execution.ayatori.ddupan.top Jobs exactly once"};
  app.add_option("--kubeconfig", f.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)");
  app.add_option("--context", f.context, "kubeconfig context (default: current-context)");
  app.add_flag("--allow-insecure-tls", f.allowInsecureTls,
               "accept insecure-skip-tls-verify: true in the kubeconfig");
  app.add_option("--workers", f.workers, "concurrent reconciles")->check(CLI::Range(1, 256));
  app.add_option("--qps", f.qps, "client-side API requests per second")
      ->check(CLI::Range(0.1, 100000.0));
  app.add_option("--burst", f.burst, "client-side API burst")->check(CLI::Range(1, 100000));
  app.add_flag("--leader-elect", f.leaderElect, "elect a leader on a coordination.k8s.io Lease");
  app.add_option("--namespace", f.controllerNamespace,
                 "the controller's namespace (must exist): it stores its backend snapshot "
                 "ConfigMaps there, and the Secrets that parameters objects name must be there "
                 "unless they set allowCrossNamespaceSecretRefs");
  app.add_option("--watch-namespaces", f.watchNamespaces,
                 "comma-separated namespaces whose Jobs this controller runs (one watch each; "
                 "the namespaced install, docs/install.md); empty: every namespace");
  app.add_option("--leader-election-namespace", f.leaseNamespace, "namespace of the Lease");
  app.add_option("--leader-election-name", f.leaseName, "name of the Lease");
  app.add_option("--lease-duration", f.leaseDuration, "Lease duration (e.g. 15s)");
  app.add_option("--renew-deadline", f.renewDeadline, "leader renew deadline (e.g. 10s)");
  app.add_option("--retry-period", f.retryPeriod, "leader election retry period (e.g. 2s)");
  app.add_option("--sync-timeout", f.syncTimeout,
                 "how long the informers may take to sync when work starts; a replica that does "
                 "not sync in time releases the Lease and exits 4 (at most 10m)");
  app.add_option("--metrics-address", f.metricsAddress,
                 "host:port for /metrics, /healthz, /readyz (port 0 picks one); /metrics is "
                 "answered to loopback clients only (docs/operations.md, \"Metrics\")");
  app.add_option("--log-level", f.logLevel, "debug|info|warn|error");
  app.add_option("--log-format", f.logFormat, "json|text");
  app.add_option("--docker-endpoint", f.dockerEndpoint,
                 "override the endpoint of every DockerExecutionParameters "
                 "(unix:///path or tcp://host:port)");
  app.add_flag("--enable-test-adapter", f.enableTestAdapter,
               "serve controllerName execution.ayatori.ddupan.top/test with an in-process backend");
  app.add_option("--logs-api-bind", f.logsApiBind,
                 "host:port to serve the Job log API on over HTTPS (the aggregated API "
                 "logs.execution.ayatori.ddupan.top; docs/kubectl-ayatori.md); empty: not served");
  app.add_option("--logs-api-tls-cert-file", f.logsApiCertFile,
                 "PEM serving certificate of the log API (default: a self-signed one)");
  app.add_option("--logs-api-tls-key-file", f.logsApiKeyFile, "PEM key of that certificate");
  app.add_option("--requestheader-client-ca-file", f.requestHeaderCaFile,
                 "CA of kube-apiserver's front proxy certificate (default: from ConfigMap "
                 "kube-system/extension-apiserver-authentication)");
  app.add_option("--requestheader-allowed-names", f.requestHeaderAllowedNames,
                 "common names the front proxy certificate may have (with "
                 "--requestheader-client-ca-file; comma-separated; empty: any the CA signed)");
  app.add_option("--logs-api-max-follows", f.logsApiLimits.maxFollows,
                 "follows (logs -f) the log API serves at once; more get 429 with Retry-After")
      ->check(CLI::Range(1, 4096));
  app.add_option("--logs-api-max-follows-per-user", f.logsApiLimits.maxFollowsPerUser,
                 "follows one user may hold at once (at most --logs-api-max-follows)")
      ->check(CLI::Range(1, 4096));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; a bad flag exits 2 with CLI11's message naming the flag.
    return app.exit(e) == 0 ? 0 : 2;
  }

  obs::LogLevel level{};
  obs::LogFormat format{};
  if (!obs::ParseLogLevel(f.logLevel, &level)) {
    return Fail("--log-level \"" + f.logLevel + "\" must be one of debug, info, warn, error");
  }
  if (!obs::ParseLogFormat(f.logFormat, &format)) {
    return Fail("--log-format \"" + f.logFormat + "\" must be json or text");
  }
  obs::ConfigureLogging(level, format);
  if (f.controllerNamespace.empty()) return Fail("--namespace must name a namespace");
  auto watchNamespaces = kube::ParseNamespaceList(f.watchNamespaces);
  if (!watchNamespaces.ok())
    return Fail("--watch-namespaces: " + watchNamespaces.status().message());
  auto leaseDuration = ParseDuration(f.leaseDuration);
  auto renewDeadline = ParseDuration(f.renewDeadline);
  auto retryPeriod = ParseDuration(f.retryPeriod);
  auto syncTimeout = ParseDuration(f.syncTimeout);
  if (!leaseDuration || !renewDeadline || !retryPeriod || !syncTimeout) {
    return Fail(
        "--lease-duration, --renew-deadline, --retry-period and --sync-timeout take durations "
        "like 15s, 500ms or 2m");
  }
  if (*syncTimeout < std::chrono::seconds(1) || *syncTimeout > kMaxSyncTimeout) {
    return Fail("--sync-timeout \"" + f.syncTimeout + "\" must be between 1s and 10m");
  }

  kube::ConfigLoadOptions loadOptions;
  loadOptions.kubeconfigPath = f.kubeconfig;
  loadOptions.context = f.context;
  loadOptions.allowInsecureSkipTlsVerify = f.allowInsecureTls;
  auto config = kube::LoadConfig(loadOptions);
  if (!config.ok()) return Fail(config.status().message());

  // Before any thread starts: the stop signals are then blocked in every thread.
  StopRequests stopRequests;
  if (Status s = stopRequests.Open(); !s.ok()) return Fail(s.message());

  obs::Registry metrics;
  kube::RestClientOptions clientOptions;
  clientOptions.qps = f.qps;
  clientOptions.burst = f.burst;
  clientOptions.userAgent = "ayatori-controller";
  auto client = kube::RestClient::New(*config, clientOptions);
  client->SetRequestObserver([&metrics](const kube::RequestRecord& r) {
    metrics
        .GetCounter("ayatori_api_requests_total", "Requests to the Kubernetes API.",
                    {{"verb", std::string(r.verb)},
                     {"code", r.httpCode == 0 ? "<error>" : std::to_string(r.httpCode)}})
        .Inc();
  });
  obs::Info("connecting", {{"config", config->Describe()}});

  adapters::AdapterRegistry registry;
  adapters::docker::DockerAdapterOptions dockerOptions;
  if (!f.dockerEndpoint.empty()) dockerOptions.defaultEndpoint = f.dockerEndpoint;
  dockerOptions.tlsSource = adapters::docker::SecretTlsSource(*client);
  dockerOptions.secretNamespace = f.controllerNamespace;
  adapters::kubernetes::KubernetesAdapterOptions k8sOptions;
  k8sOptions.log = [](const std::string& line) { obs::Warn(line, {{"adapter", "kubernetes"}}); };
  k8sOptions.namespaces = *watchNamespaces;
  k8sOptions.streamPath = [&client](std::string_view path, const std::stop_token& stop,
                                    const std::function<bool(std::string_view)>& onData) {
    return client->StreamPath(path, stop, onData);
  };
  // One line per backend: its descriptor and its adapter (src/adapters/registry.h).
  for (const Status& s : {
           registry.Register(adapters::docker::Descriptor(f.dockerEndpoint),
                             std::make_shared<adapters::docker::DockerAdapter>(dockerOptions)),
           registry.Register(
               adapters::kubernetes::Descriptor(),
               std::make_shared<adapters::kubernetes::KubernetesAdapter>(*client, k8sOptions)),
           registry.Register(
               adapters::opensandbox::Descriptor(),
               adapters::opensandbox::NewOpenSandboxAdapter(*client, f.controllerNamespace)),
           f.enableTestAdapter
               ? registry.Register(adapters::TestDescriptor(),
                                   std::make_shared<adapters::InProcessTestAdapter>())
               : Status::Ok(),
       }) {
    if (!s.ok()) return Fail(s.message());
  }

  kube::EventRecorderOptions eventOptions;
  eventOptions.reportingController = "execution.ayatori.ddupan.top/controller";
  eventOptions.reportingInstance = Identity();
  eventOptions.log = [](const std::string& line) { obs::Warn(line, {{"component", "events"}}); };
  // Events go through their own client and rate limit (as kube-controller-manager does), so
  // they never delay the writes that move Jobs forward.
  kube::RestClientOptions eventClientOptions = clientOptions;
  eventClientOptions.userAgent = "ayatori-controller/events";
  auto eventClient = kube::RestClient::New(*config, eventClientOptions);
  kube::EventRecorder events(*eventClient, SystemClock::Instance(), eventOptions);

  controller::ControllerOptions controllerOptions;
  controllerOptions.workers = f.workers;
  controllerOptions.syncTimeout = *syncTimeout;
  controllerOptions.reconciler.controllerNamespace = f.controllerNamespace;
  controllerOptions.watchNamespaces = *watchNamespaces;
  controller::JobController jobController(*client, registry, SystemClock::Instance(), metrics,
                                          &events, controllerOptions);

  // Without leader election this replica works from the start. With it, `leading` is true from
  // the start of a term (informers still syncing) until the term ends.
  std::atomic<bool> leading{!f.leaderElect};
  obs::HttpServer http;
  http.Handle("/healthz", [] { return obs::HttpResponse{200, "text/plain", "ok\n"}; });
  // A standby is ready (it is where it should be); a replica that works is ready once its
  // informers synced.
  http.Handle("/readyz", [&] {
    bool ready = (f.leaderElect && !leading) || jobController.Ready();
    return ready ? obs::HttpResponse{200, "text/plain", "ok\n"}
                 : obs::HttpResponse{503, "text/plain", "informers not synced\n"};
  });
  http.Handle(
      "/metrics",
      [&] {
        metrics.GetGauge("ayatori_leader", "1 while this replica leads.").Set(leading ? 1 : 0);
        return obs::HttpResponse{200, "text/plain; version=0.0.4", metrics.Render()};
      },
      obs::Access::kLoopbackOnly);
  if (Status s = http.Start(f.metricsAddress); !s.ok()) return Fail(s.message());
  obs::Info("serving metrics and health", {{"address", f.metricsAddress}, {"port", http.port()}});

  // The Job log API, on every replica (a standby serves logs too: the Service spreads requests
  // over all of them).
  std::unique_ptr<logapi::AdapterJobLogs> jobLogs;
  std::unique_ptr<logapi::LogApiServer> logsApi;
  if (!f.logsApiBind.empty()) {
    auto requestHeader = RequestHeaderSettings(f, *client);
    if (!requestHeader.ok()) return Fail("log API: " + requestHeader.status().message());
    jobLogs = std::make_unique<logapi::AdapterJobLogs>(
        *client, registry, f.controllerNamespace, *watchNamespaces, [](const std::string& error) {
          obs::Warn("log API: a backend error", {{"error", error}});
        });
    logapi::LogApiServerOptions logsOptions;
    logsOptions.address = f.logsApiBind;
    logsOptions.certFile = f.logsApiCertFile;
    logsOptions.keyFile = f.logsApiKeyFile;
    logsOptions.requestHeader = std::move(*requestHeader);
    logsOptions.limits = f.logsApiLimits;
    logsApi = std::make_unique<logapi::LogApiServer>(
        *jobLogs, logapi::SubjectAccessReviewAuthorizer(*client), std::move(logsOptions));
    if (Status s = logsApi->Start(); !s.ok()) return Fail("log API: " + s.message());
    obs::Info("serving the Job log API", {{"address", f.logsApiBind}, {"port", logsApi->port()}});
  }

  // The work of this replica, on a thread of its own (with leader election, the elector's work
  // thread, so renewals go on while the informers sync): start the controller, keep it until
  // `stop`, stop it. A controller that cannot sync in time asks the process to end.
  auto work = [&](const std::stop_token& stop) {
    Status s = jobController.Start(stop);
    if (s.ok()) {
      WaitUntilStopped(stop);
    } else if (s.code() != StatusCode::kCancelled) {
      obs::Error("controller did not start; exiting",
                 {{"error", s.ToString()}, {"exitCode", kExitNotSynced}});
      stopRequests.Request(kExitNotSynced, "the controller did not start");
    }
    jobController.Stop();
  };

  // Set before the main thread ends a term on purpose (signal, failed sync), so that the end of
  // the term is not taken for a lost lease.
  std::atomic<bool> stopping{false};
  std::jthread elector;
  std::jthread worker;
  if (f.leaderElect) {
    kube::LeaderElectionConfig le;
    le.leaseNamespace = f.leaseNamespace;
    le.leaseName = f.leaseName;
    le.identity = Identity();
    le.leaseDuration = *leaseDuration;
    le.renewDeadline = *renewDeadline;
    le.retryPeriod = *retryPeriod;
    // The callbacks run on the elector's threads until it is joined at the end of main: they
    // capture what lives that long, never `le` itself.
    le.onStartedLeading = [&leading, &work, identity = le.identity](const std::stop_token& term) {
      leading = true;
      obs::Info("became leader", {{"identity", identity}});
      work(term);
    };
    le.onStoppedLeading = [&leading, &stopping, &jobController] {
      leading = false;
      if (stopping) return;  // main stops the work, then the elector releases the Lease
      // Lost: another replica may lead already. No further write may come from this one, and
      // stopping the work in order could wait on a hung reconcile, so hand out no more work and
      // end the process now; the Deployment restarts it as a standby.
      jobController.StopTakingWork();
      obs::Error("lost the lease; exiting", {{"exitCode", kExitLostLease}});
      _exit(kExitLostLease);
    };
    le.log = [](const std::string& line) { obs::Info(line, {{"component", "leader-election"}}); };
    if (Status s = kube::LeaderElector::Validate(le); !s.ok()) return Fail(s.message());
    elector = std::jthread([&client, le = std::move(le)](const std::stop_token& stop) {
      kube::LeaderElector e(*client, SystemClock::Instance(), le);
      e.Run(stop);
    });
  } else {
    worker = std::jthread(work);
  }

  std::string reason;
  int exitCode = stopRequests.Wait(&reason);
  obs::Info("shutting down", {{"reason", reason}});
  stopping = true;
  if (elector.joinable()) {
    // Ends the term: the work stops, then the Lease is released (a standby takes it at its next
    // retry).
    elector.request_stop();
    elector.join();
  }
  if (worker.joinable()) {
    worker.request_stop();
    worker.join();
  }
  jobController.Stop();
  events.Flush(std::chrono::seconds(5));
  if (logsApi) logsApi->Stop();
  http.Stop();
  obs::Info("stopped", {{"exitCode", exitCode}});
  return exitCode;
}
