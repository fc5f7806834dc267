// watch-jobs: lists and watches Ayatori Jobs (jobs.execution.ayatori.ddupan.top) in every
// namespace, or one, and prints one line per change:
//
//   ADDED ci/hello-7xk2p rv=1234 succeeded=Running
//   MODIFIED ci/hello-7xk2p rv=1240 succeeded=Completed
//   DELETED ci/hello-7xk2p rv=1251 succeeded=Completed
//
// It shows the kube library end to end: kubeconfig loading, discovery through the REST client,
// and an informer whose cache holds a small projection of each Job, not its JSON.
//
//   watch-jobs [--kubeconfig PATH] [--context NAME] [--namespace NS] [--exit-after N]
#include <signal.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "kube/config.h"
#include "kube/informer.h"
#include "kube/rest_client.h"

namespace {

using ayatori::StatusCode;
namespace kube = ayatori::kube;

// What the cache keeps per Job: just what the output needs.
struct JobLine {
  std::string key;
  std::string resourceVersion;
  std::string succeededReason;
};

std::shared_ptr<const JobLine> Decode(const nlohmann::json& j) {
  auto line = std::make_shared<JobLine>();
  const auto& md = j.at("metadata");
  line->key = md.value("namespace", "") + "/" + md.value("name", "");
  line->resourceVersion = md.value("resourceVersion", "");
  auto status = j.find("status");
  if (status != j.end() && status->contains("conditions")) {
    for (const auto& c : (*status)["conditions"]) {
      if (c.value("type", "") == "Succeeded") line->succeededReason = c.value("reason", "");
    }
  }
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lists and watches Ayatori Jobs and prints one line per change."};
  kube::ConfigLoadOptions load;
  std::string ns;
  std::string group = "execution.ayatori.ddupan.top";
  int exitAfter = 0;
  int timeoutSeconds = 0;
  app.add_option("--kubeconfig", load.kubeconfigPath,
                 "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)");
  app.add_option("--context", load.context, "kubeconfig context (default: current-context)");
  app.add_option("--namespace", ns, "only this namespace (default: all namespaces)");
  app.add_option("--exit-after", exitAfter,
                 "exit after printing this many lines (0: run until "
                 "interrupted)");
  app.add_option("--timeout", timeoutSeconds, "give up after this many seconds (exit code 3)");
  app.add_option("--api-group", group, "API group of the Job kind")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  // Signals are taken by a waiting thread, so block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);  // only sent by main() to wake the signal thread
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto config = kube::LoadConfig(load);
  if (!config.ok()) {
    std::fprintf(stderr, "watch-jobs: %s\n", config.status().message().c_str());
    return 1;
  }
  auto client = kube::RestClient::New(*config);
  const ayatori::ResourceRef jobs{group, "v1alpha1", "jobs", true};

  // Discovery first: a missing CRD deserves a clear message, not an endless retry loop.
  auto discovery = client->GetPath("/apis/" + group + "/v1alpha1");
  bool served = false;
  if (discovery.ok() && discovery->contains("resources")) {
    for (const auto& r : (*discovery)["resources"]) served |= r.value("name", "") == "jobs";
  }
  if (!served && (discovery.ok() || discovery.status().code() == StatusCode::kNotFound)) {
    std::fprintf(stderr,
                 "watch-jobs: %s does not serve jobs.%s/v1alpha1: the CustomResourceDefinition "
                 "jobs.%s is not installed.\nInstall it with: kubectl apply -f config/crd/\n",
                 config->server.c_str(), group.c_str(), group.c_str());
    return 2;
  }
  if (!discovery.ok()) {
    std::fprintf(stderr, "watch-jobs: cannot reach %s: %s\n", config->Describe().c_str(),
                 discovery.status().ToString().c_str());
    return 1;
  }

  std::mutex mu;
  std::condition_variable cv;
  int printed = 0;
  bool done = false;
  auto print = [&](const char* type, const JobLine& job) {
    std::lock_guard lock(mu);
    std::printf("%s %s rv=%s succeeded=%s\n", type, job.key.c_str(), job.resourceVersion.c_str(),
                job.succeededReason.empty() ? "-" : job.succeededReason.c_str());
    std::fflush(stdout);
    if (exitAfter > 0 && ++printed >= exitAfter) {
      done = true;
      cv.notify_all();
    }
  };

  kube::InformerOptions options;
  options.namespace_ = ns;
  options.log = [](const std::string& line) {
    std::fprintf(stderr, "watch-jobs: %s\n", line.c_str());
  };
  kube::Informer<JobLine> informer(*client, jobs, options, Decode);
  kube::Informer<JobLine>::Handlers handlers;
  handlers.onAdd = [&](const std::string&, const auto& job) { print("ADDED", *job); };
  handlers.onUpdate = [&](const std::string&, const auto&, const auto& job) {
    print("MODIFIED", *job);
  };
  handlers.onDelete = [&](const std::string&, const auto& job) { print("DELETED", *job); };
  informer.AddHandlers(handlers);
  informer.Start();

  std::thread signalWaiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  });
  bool timedOut = false;
  {
    std::unique_lock lock(mu);
    if (timeoutSeconds > 0) {
      timedOut = !cv.wait_for(lock, std::chrono::seconds(timeoutSeconds), [&] { return done; });
    } else {
      cv.wait(lock, [&] { return done; });
    }
  }
  informer.Stop();
  // Wake the signal thread if it is still waiting (exit-after or timeout).
  pthread_kill(signalWaiter.native_handle(), SIGUSR1);
  signalWaiter.join();
  if (timedOut) {
    std::fprintf(stderr, "watch-jobs: timed out after %d s\n", timeoutSeconds);
    return 3;
  }
  return 0;
}
