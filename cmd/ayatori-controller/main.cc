// ayatori-controller: reconciles execution.ayatori.ddupan.top Jobs (see docs/operations.md).
// main parses the flags, builds the parts and hands them to the Manager (src/manager/manager.h),
// which starts them, waits for a stop and stops them in the reverse order.
#include <malloc.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

#include "adapters/registry.h"
#include "adapters/shipped_backends.h"
#include "base/duration.h"
#include "controller/controller.h"
#include "controller/version_configmap.h"
#include "extra_backends.h"
#include "kube/config.h"
#include "kube/events.h"
#include "kube/leader_election.h"
#include "kube/resource.h"
#include "kube/rest_client.h"
#include "logapi/front_proxy.h"
#include "logapi/server.h"
#include "manager/manager.h"
#include "manager/runnables.h"
#include "obs/log.h"
#include "obs/metrics.h"
#include "version_info.h"

namespace {

using namespace ayatori;  // NOLINT(google-build-using-namespace)

// Exit codes (docs/operations.md, "Exit codes"): 0, 2 and 3 are the Manager's
// (manager::kExitStopped, kExitUsage, kExitLostLease).
constexpr int kExitNotSynced = 4;  // informers not synced within --sync-timeout; Lease released

struct Flags {
  std::string kubeconfig;
  std::string context;
  bool allowInsecureTls = false;
  int workers = 4;
  double qps = 50;
  int burst = 100;
  bool leaderElect = false;
  bool kueue = false;
  std::string controllerNamespace = controller::kDefaultControllerNamespace;
  std::string leaseNamespace = controller::kDefaultControllerNamespace;
  std::string watchNamespaces;  // comma-separated; empty = all namespaces
  std::string leaseName = "ayatori-controller";
  std::string leaseDuration = "15s", renewDeadline = "10s", retryPeriod = "2s";
  std::string syncTimeout = "60s";
  std::string metricsAddress = "127.0.0.1:8080";
  std::string logLevel = "info", logFormat = "json";
  std::string dockerEndpoint;
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

int Fail(const std::string& message) {
  std::cerr << "ayatori-controller: " << message << "\n";
  return manager::kExitUsage;
}

// Longest --sync-timeout: a Deployment whose new pod is not ready for 10 minutes (its default
// progressDeadlineSeconds) is reported as not progressing; a replica stuck that long should have
// exited and been restarted, with its reason in the log, well before.
constexpr std::chrono::minutes kMaxSyncTimeout{10};

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

// The flag table: fills `f`; the exit code when parsing ends the process (--help, a bad flag).
std::optional<int> ParseArgs(int argc, char** argv, Flags& f) {
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
  app.add_flag("--kueue", f.kueue,
               "queue the Jobs that name a LocalQueue (label kueue.x-k8s.io/queue-name) through "
               "Kueue's Workloads (docs/queueing.md); off: the label is ignored");
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
  app.add_option("--logs-api-max-handshakes", f.logsApiLimits.maxHandshakes,
                 "connections the log API lets be in their TLS handshake at once; more are closed "
                 "before they are read")
      ->check(CLI::Range(1, 4096));
  app.add_option("--logs-api-max-handshakes-per-client", f.logsApiLimits.maxHandshakesPerClient,
                 "connections one client address may have in their TLS handshake at once (at most "
                 "--logs-api-max-handshakes)")
      ->check(CLI::Range(1, 4096));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; a bad flag exits 2 with CLI11's message naming the flag.
    return app.exit(e) == 0 ? 0 : 2;
  }

  return std::nullopt;
}

// What CheckFlags makes of the flags' text: the durations and the watched namespaces.
struct Settings {
  std::chrono::milliseconds leaseDuration{}, renewDeadline{}, retryPeriod{}, syncTimeout{};
  std::vector<std::string> watchNamespaces;  // empty: every namespace
};

// Checks what the flag table cannot, and configures logging; an error names the flag.
StatusOr<Settings> CheckFlags(const Flags& f) {
  obs::LogLevel level{};
  obs::LogFormat format{};
  if (!obs::ParseLogLevel(f.logLevel, &level)) {
    return Status(StatusCode::kInvalidArgument,
                  "--log-level \"" + f.logLevel + "\" must be one of debug, info, warn, error");
  }
  if (!obs::ParseLogFormat(f.logFormat, &format)) {
    return Status(StatusCode::kInvalidArgument,
                  "--log-format \"" + f.logFormat + "\" must be json or text");
  }
  obs::ConfigureLogging(level, format);
  if (f.controllerNamespace.empty()) {
    return Status(StatusCode::kInvalidArgument, "--namespace must name a namespace");
  }
  auto watchNamespaces = kube::ParseNamespaceList(f.watchNamespaces);
  if (!watchNamespaces.ok()) {
    return Status(StatusCode::kInvalidArgument,
                  "--watch-namespaces: " + watchNamespaces.status().message());
  }
  // Durations in the grammar of src/base/duration.h (docs/operations.md "Durations").
  std::optional<std::chrono::milliseconds> leaseDuration, renewDeadline, retryPeriod, syncTimeout;
  for (const auto& [flag, text, out] :
       {std::tuple{"--lease-duration", &f.leaseDuration, &leaseDuration},
        {"--renew-deadline", &f.renewDeadline, &renewDeadline},
        {"--retry-period", &f.retryPeriod, &retryPeriod},
        {"--sync-timeout", &f.syncTimeout, &syncTimeout}}) {
    auto d = base::ParseDuration(*text);
    if (!d.ok()) {
      return Status(StatusCode::kInvalidArgument, std::string(flag) + " " + d.status().message());
    }
    if (d->count() <= 0) {
      return Status(StatusCode::kInvalidArgument,
                    std::string(flag) + " \"" + *text + "\" must be positive");
    }
    *out = *d;
  }
  if (*syncTimeout < std::chrono::seconds(1) || *syncTimeout > kMaxSyncTimeout) {
    return Status(StatusCode::kInvalidArgument,
                  "--sync-timeout \"" + f.syncTimeout + "\" must be between 1s and 10m");
  }
  return Settings{*leaseDuration, *renewDeadline, *retryPeriod, *syncTimeout, *watchNamespaces};
}

// The API client of the controller's work (--qps, --burst), counting its requests in `metrics`.
kube::RestClientOptions ApiClientOptions(const Flags& f) {
  kube::RestClientOptions options;
  options.qps = f.qps;
  options.burst = f.burst;
  options.userAgent = "ayatori-controller";
  return options;
}

std::unique_ptr<kube::RestClient> NewApiClient(const kube::RestConfig& config, const Flags& f,
                                               obs::Registry& metrics) {
  auto client = kube::RestClient::New(config, ApiClientOptions(f));
  client->SetRequestObserver([&metrics](const kube::RequestRecord& r) {
    metrics
        .GetCounter(obs::metrics::kApiRequests,
                    {{"verb", std::string(r.verb)},
                     {"code", r.httpCode == 0 ? "<error>" : std::to_string(r.httpCode)}})
        .Inc();
  });
  return client;
}

// The shipped backends (src/adapters/shipped_backends.h), then this build's extra ones.
Status RegisterAdapters(const Flags& f, const Settings& settings, kube::RestClient& client,
                        adapters::AdapterRegistry& registry) {
  adapters::BackendSettings backends;
  backends.client = &client;
  backends.controllerNamespace = f.controllerNamespace;
  backends.watchNamespaces = settings.watchNamespaces;
  backends.dockerEndpoint = f.dockerEndpoint;
  backends.warn = [](const std::string& adapter, const std::string& line) {
    obs::Warn(line, {{"adapter", adapter}});
  };
  if (Status s = adapters::RegisterShippedBackends(backends, registry); !s.ok()) return s;
  return RegisterExtraBackends(registry);
}

// The Lease of --leader-elect; the Manager sets its callbacks.
kube::LeaderElectionConfig LeaderElection(const Flags& f, const Settings& d) {
  kube::LeaderElectionConfig le;
  le.leaseNamespace = f.leaseNamespace;
  le.leaseName = f.leaseName;
  le.identity = Identity();
  le.leaseDuration = d.leaseDuration;
  le.renewDeadline = d.renewDeadline;
  le.retryPeriod = d.retryPeriod;
  le.log = [](const std::string& line) { obs::Info(line, {{"component", "leader-election"}}); };
  return le;
}

// The parts of the process, in the order they are built (each refers only to those before it);
// destroyed in the reverse order, after the Manager stopped them.
struct Parts {
  obs::Registry metrics;
  std::unique_ptr<kube::RestClient> client;
  adapters::AdapterRegistry registry;
  std::unique_ptr<kube::RestClient> eventClient;
  std::unique_ptr<kube::EventRecorder> events;
  std::unique_ptr<controller::JobController> jobController;
  std::unique_ptr<logapi::AdapterJobLogs> jobLogs;
  std::unique_ptr<logapi::LogApiServer> logsApi;
  // Their Runnables (manager/runnables.h).
  std::unique_ptr<manager::EventFlushRunnable> eventFlush;
  std::unique_ptr<manager::ControllerRunnable> controllerRunnable;
  std::unique_ptr<manager::LogApiRunnable> logsApiRunnable;
};

// Events go through their own client and rate limit (as kube-controller-manager does), so they
// never delay the writes that move Jobs forward.
void BuildEventRecorder(const kube::RestConfig& config, const Flags& f, Parts& parts) {
  kube::EventRecorderOptions eventOptions;
  eventOptions.reportingController = "execution.ayatori.ddupan.top/controller";
  eventOptions.reportingInstance = Identity();
  eventOptions.log = [](const std::string& line) { obs::Warn(line, {{"component", "events"}}); };
  kube::RestClientOptions eventClientOptions = ApiClientOptions(f);
  eventClientOptions.userAgent = "ayatori-controller/events";
  parts.eventClient = kube::RestClient::New(config, eventClientOptions);
  parts.events = std::make_unique<kube::EventRecorder>(*parts.eventClient, SystemClock::Instance(),
                                                       eventOptions);
}

void BuildJobController(const Flags& f, const Settings& d, Parts& parts) {
  controller::ControllerOptions controllerOptions;
  controllerOptions.workers = f.workers;
  controllerOptions.syncTimeout = d.syncTimeout;
  controllerOptions.reconciler.controllerNamespace = f.controllerNamespace;
  controllerOptions.reconciler.kueue = f.kueue;
  controllerOptions.watchNamespaces = d.watchNamespaces;
  parts.jobController = std::make_unique<controller::JobController>(
      *parts.client, parts.registry, SystemClock::Instance(), parts.metrics, parts.events.get(),
      controllerOptions);
}

// The Job log API (when --logs-api-bind is set); its front proxy settings are read now, so that a
// missing CA fails before anything starts.
Status BuildLogApi(const Flags& f, const Settings& d, Parts& parts) {
  if (f.logsApiBind.empty()) return Status::Ok();
  auto requestHeader = RequestHeaderSettings(f, *parts.client);
  if (!requestHeader.ok()) return requestHeader.status();
  parts.jobLogs = std::make_unique<logapi::AdapterJobLogs>(
      *parts.client, parts.registry, f.controllerNamespace, d.watchNamespaces,
      [](const std::string& error) {
        obs::Warn("log API: a backend error", {{"error", error}});
      });
  logapi::LogApiServerOptions logsOptions;
  logsOptions.address = f.logsApiBind;
  logsOptions.certFile = f.logsApiCertFile;
  logsOptions.keyFile = f.logsApiKeyFile;
  logsOptions.requestHeader = std::move(*requestHeader);
  logsOptions.limits = f.logsApiLimits;
  logsOptions.metrics = &parts.metrics;
  parts.logsApi = std::make_unique<logapi::LogApiServer>(
      *parts.jobLogs, logapi::SubjectAccessReviewAuthorizer(*parts.client), std::move(logsOptions));
  return Status::Ok();
}

// Hands the parts to the Manager in their start order (manager/manager.h): the log API and the
// Event recorder on every replica, then the Job controller while this replica leads. The Manager
// stops them in the reverse order: the controller, the Events' flush, the log API.
void AddRunnables(const Flags& f, Parts& parts, manager::Manager& mgr) {
  if (parts.logsApi) {
    parts.logsApiRunnable =
        std::make_unique<manager::LogApiRunnable>(*parts.logsApi, f.logsApiBind);
    mgr.Add(*parts.logsApiRunnable);
  }
  parts.eventFlush = std::make_unique<manager::EventFlushRunnable>(*parts.events);
  mgr.Add(*parts.eventFlush);
  parts.controllerRunnable = std::make_unique<manager::ControllerRunnable>(*parts.jobController);
  mgr.Add(*parts.controllerRunnable,
          {.needsLeadership = true, .exitCodeOnFailure = kExitNotSynced});
}

// Builds the parts and runs them until a stop; the process's exit code.
int Run(const Flags& f, const Settings& d) {
  kube::ConfigLoadOptions loadOptions;
  loadOptions.kubeconfigPath = f.kubeconfig;
  loadOptions.context = f.context;
  loadOptions.allowInsecureSkipTlsVerify = f.allowInsecureTls;
  auto config = kube::LoadConfig(loadOptions);
  if (!config.ok()) return Fail(config.status().message());

  Parts parts;
  manager::ManagerOptions managerOptions;
  managerOptions.healthAddress = f.metricsAddress;
  managerOptions.metrics = &parts.metrics;
  // Before any thread starts: the stop signals are then blocked in every thread.
  auto mgr = manager::Manager::New(managerOptions);
  if (!mgr.ok()) return Fail(mgr.status().message());

  parts.client = NewApiClient(*config, f, parts.metrics);
  obs::Info("connecting", {{"config", config->Describe()}});
  if (Status s = RegisterAdapters(f, d, *parts.client, parts.registry); !s.ok()) {
    return Fail(s.message());
  }
  BuildEventRecorder(*config, f, parts);
  BuildJobController(f, d, parts);
  if (Status s = BuildLogApi(f, d, parts); !s.ok()) return Fail("log API: " + s.message());
  if (f.leaderElect) {
    Status s = (*mgr)->EnableLeaderElection(LeaderElection(f, d), *parts.client);
    if (!s.ok()) return Fail(s.message());
  }
  AddRunnables(f, parts, **mgr);
  // Where `kubectl ayatori version` reads it; a failure is only reported: the controller serves
  // Jobs without it (the plugin then says the controller's version is unknown, and why).
  if (Status s = controller::PublishVersion(*parts.client, f.controllerNamespace, kBuildVersion,
                                            kBuildCommit);
      !s.ok()) {
    obs::Warn("could not publish the controller's version",
              {{"configmap", f.controllerNamespace + "/" + controller::kVersionConfigMapName},
               {"error", s.message()}});
  }
  return (*mgr)->Run();
}

}  // namespace

int main(int argc, char** argv) {
  // Writes to a closed connection (a probe or scrape that hung up, an apiserver connection that
  // broke) must fail with EPIPE, not kill the process. Before any thread starts, so that no
  // thread runs with the default disposition.
  std::signal(SIGPIPE, SIG_IGN);
  TuneMalloc();
  Flags f;
  if (auto exitCode = ParseArgs(argc, argv, f)) return *exitCode;
  auto durations = CheckFlags(f);
  if (!durations.ok()) return Fail(durations.status().message());
  return Run(f, *durations);
}
