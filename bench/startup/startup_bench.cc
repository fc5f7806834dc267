// How fast a fresh ayatori-controller takes over a large cluster: --jobs Jobs (half finished, half
// waiting on a Secret key that never appears) and --secrets Secrets in one namespace of the real
// test API server. Started by hack/bench-startup.sh, which starts the control plane and installs
// the CRDs.
//
//  1. creates the objects (--creators threads sharing one client at --qps/--burst), unless they
//     exist from an earlier run;
//  2. runs the controller once until the cluster is settled (the finished Jobs ran on the
//     in-process test backend, the waiting ones carry Accepted=False/KeyNotFound), then stops it;
//  3. starts the controller under test afresh (twice), and the --baseline binary between (e.g.
//     one built from an older commit), and measures from its exec: the time until /readyz answers
//     200 (every informer listed), the time until every Job was reconciled once (its
//     ayatori_reconcile_duration_seconds_count reaches the Job count with the workqueue empty),
//     CPU seconds and RSS at those points, the waiting Jobs it woke (ayatori_waiting_job_wakeups_
//     total) and its API writes (there is nothing to write: the cluster is settled).
//  4. then, with the controller still running, adds a key to --churn Secrets that waiting Jobs
//     refer to (they keep waiting: their key is another), and measures the reconciles this causes,
//     the CPU seconds and the time until the workqueue is drained. The controller under test
//     wakes only the one Job that refers to each Secret; older ones woke every waiting Job.
// Prints one line per run and MET/MISSED against the targets: --target-seconds from start to
// every Job reconciled, no Job woken by the informers' first lists, at most one reconcile per
// changed Secret.

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "ayatori/kube_client.h"
#include "bench/common/api_client.h"
#include "bench/common/controller_process.h"
#include "bench/common/objects.h"
#include "bench/common/parallel.h"
#include "bench/common/process_stats.h"
#include "bench/common/prometheus_text.h"
#include "bench/common/report.h"
#include "controller/kinds.h"
#include "kube/config.h"
#include "kube/rest_client.h"

namespace {

using nlohmann::json;
using namespace ayatori;               // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)
using SteadyClock = std::chrono::steady_clock;

using controller::kJobClasses;
using controller::kJobs;
using controller::kNamespaces;
using controller::kSecrets;
constexpr const char* kJobClass = "startup-bench";

struct Options {
  std::string kubeconfig;
  std::string controller;  // the binary under test
  std::string baseline;    // a binary to compare with, e.g. one built from an older commit
  int jobs = 10000;
  int secrets = 10000;
  double waitingFraction = 0.5;
  std::string ns = "startup-bench";
  int creators = 16;
  double qps = 2000;
  int burst = 4000;
  double targetSeconds = 10;
  int timeoutSeconds = 1800;
  int churn = 1000;  // Secrets that get a new key once the controller reconciled every Job
  std::string logDir = "/tmp";
};

int Waiting(const Options& o) { return static_cast<int>(o.jobs * o.waitingFraction); }

using bench::Since;

// ---------------------------------------------------------------------------------------------
// The objects.

json SecretObject(const Options& o, int i) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", "secret-" + std::to_string(i)}, {"namespace", o.ns}}},
          {"type", "Opaque"},
          {"data", {{"token", "c2VjcmV0LXZhbHVl"}}}};
}

// Waiting Jobs refer to a key their Secret does not have (they stay Accepted=False/KeyNotFound);
// the others run for 0 s on the test backend.
json JobObject(const Options& o, int i) {
  const bool waiting = i < Waiting(o);
  const std::string secret = "secret-" + std::to_string(i % o.secrets);
  json env = json::array();
  env.push_back({{"name", "TOKEN"},
                 {"valueFrom",
                  {{"secretKeyRef", {{"name", secret}, {"key", waiting ? "absent" : "token"}}}}}});
  env.push_back({{"name", "AYATORI_TEST_RUN_SECONDS"}, {"value", "0"}});
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", (waiting ? "waiting-" : "done-") + std::to_string(i)}, {"namespace", o.ns}}},
          {"spec",
           {{"jobClassName", kJobClass},
            {"task", {{"image", "registry.invalid/startup-bench:1"}, {"env", env}}}}}};
}

// Creates count objects with `threads` threads; an existing object counts as created.
bool CreateAll(KubeClient& client, const ResourceRef& ref, const std::string& ns, int count,
               int threads, const std::function<json(int)>& make) {
  std::atomic<int> failed{0};
  bench::ParallelFor(count, threads, [&](int i) {
    Status s = bench::CreateIfAbsent(client, ref, ns, make(i));
    if (!s.ok() && failed++ < 5) {
      std::fprintf(stderr, "startup-bench: create %s %d: %s\n", ref.resource.c_str(), i,
                   s.ToString().c_str());
    }
  });
  return failed.load() == 0;
}

bool CreateObjects(KubeClient& client, const Options& o) {
  if (Status s = bench::CreateIfAbsent(client, kNamespaces, "", bench::NamespaceObject(o.ns));
      !s.ok()) {
    std::fprintf(stderr, "startup-bench: namespace: %s\n", s.ToString().c_str());
    return false;
  }
  const json cls = bench::TestJobClass(kJobClass, {{"secretEnvForwarding", "Allowed"}});
  if (Status s = bench::CreateIfAbsent(client, kJobClasses, "", cls); !s.ok()) {
    std::fprintf(stderr, "startup-bench: JobClass: %s\n", s.ToString().c_str());
    return false;
  }
  auto start = SteadyClock::now();
  if (!CreateAll(client, kSecrets, o.ns, o.secrets, o.creators,
                 [&](int i) { return SecretObject(o, i); })) {
    return false;
  }
  std::fprintf(stderr, "startup-bench: %d Secrets in %.1f s\n", o.secrets, Since(start));
  start = SteadyClock::now();
  if (!CreateAll(client, kJobs, o.ns, o.jobs, o.creators, [&](int i) { return JobObject(o, i); })) {
    return false;
  }
  std::fprintf(stderr, "startup-bench: %d Jobs in %.1f s\n", o.jobs, Since(start));
  return true;
}

std::string Condition(const json& job, const std::string& type) {
  auto p = json::json_pointer("/status/conditions");
  if (!job.contains(p) || !job.at(p).is_array()) return "";
  for (const auto& c : job.at(p)) {
    if (c.value("type", "") == type) return c.value("status", "");
  }
  return "";
}

// Finished Jobs with Succeeded=True and waiting Jobs with Accepted=False, from one list.
std::pair<int, int> CountSettled(KubeClient& client, const Options& o) {
  int finished = 0, waiting = 0;
  ListOptions lo;
  lo.limit = 500;
  auto r = ListAll(client, kJobs, o.ns, lo, [&](json&& job) {
    const std::string name = job["metadata"].value("name", "");
    if (name.rfind("done-", 0) == 0 && Condition(job, "Succeeded") == "True") ++finished;
    if (name.rfind("waiting-", 0) == 0 && Condition(job, "Accepted") == "False") ++waiting;
  });
  if (!r.ok()) std::fprintf(stderr, "startup-bench: list: %s\n", r.status().ToString().c_str());
  return {finished, waiting};
}

// ---------------------------------------------------------------------------------------------
// The controller process.

// The controller under test with the flags every run of this benchmark gives it.
class ControllerProcess : public bench::ControllerProcess {
 public:
  ControllerProcess(const Options& o, const std::string& binary, const std::string& logFile,
                    const std::vector<std::string>& extraFlags = {})
      : bench::ControllerProcess(binary, bench::ControllerFlags(o.kubeconfig, extraFlags),
                                 logFile) {}
};

// Runs a controller until the cluster is settled: every finished Job Succeeded, every waiting Job
// Accepted=False.
bool Settle(KubeClient& client, const Options& o) {
  const int waiting = Waiting(o), finished = o.jobs - waiting;
  auto [f0, w0] = CountSettled(client, o);
  if (f0 == finished && w0 == waiting) return true;
  auto start = SteadyClock::now();
  ControllerProcess c(o, o.controller, o.logDir + "/controller-settle.log",
                      {"--qps=1000", "--burst=2000", "--workers=8"});
  auto deadline = start + std::chrono::seconds(o.timeoutSeconds);
  while (SteadyClock::now() < deadline && c.Alive()) {
    auto [f, w] = CountSettled(client, o);
    std::fprintf(stderr, "startup-bench: settling: %d/%d finished, %d/%d waiting (%.0f s)\n", f,
                 finished, w, waiting, Since(start));
    if (f == finished && w == waiting) return true;
    std::this_thread::sleep_for(5s);  // poll interval
  }
  std::fprintf(stderr, "startup-bench: the cluster did not settle; see %s/controller-settle.log\n",
               o.logDir.c_str());
  return false;
}

struct Run {
  std::string label;
  double ready = -1;       // s from exec to /readyz 200
  double reconciled = -1;  // s from exec to every Job reconciled once, queue empty
  double cpuReady = -1, cpuReconciled = -1;
  int64_t rssKiB = -1, peakRssKiB = -1;
  double reconciles = 0;
  double wakeups = -1;  // -1: the binary does not count them
  double writes = 0;
  // After startup: --churn Secrets that waiting Jobs refer to get a new key.
  double churnSeconds = -1;  // from the first update to the queue drained
  double churnReconciles = 0, churnCpu = -1;
};

// Adds key `key` to secret-0 .. secret-(count-1). Each is referred to by one waiting Job (whose
// key stays absent: it keeps waiting).
bool ChurnSecrets(KubeClient& client, const Options& o, int count, const std::string& key) {
  std::atomic<int> failed{0};
  bench::ParallelFor(count, o.creators, [&](int i) {
    auto r = client.Patch(kSecrets, o.ns, "secret-" + std::to_string(i), PatchType::kMerge,
                          {{"data", {{key, "cm90YXRlZA=="}}}}, {});
    if (!r.ok() && failed++ < 5) {
      std::fprintf(stderr, "startup-bench: patch secret-%d: %s\n", i,
                   r.status().ToString().c_str());
    }
  });
  return failed.load() == 0;
}

// Waits until the controller reconciled every Job once with its queue empty; its readiness and
// that point's times, CPU, RSS, reconciles, wake-ups and writes go into `run`. False (said on
// stderr) when it did not get there.
bool MeasureStartup(ControllerProcess& c, const Options& o, SteadyClock::time_point deadline,
                    Run& run) {
  // Polled every 10 ms and 50 ms: the resolution of the measurement.
  if (c.WaitServing("/readyz", deadline, 10ms)) {
    run.ready = Since(c.started());
    run.cpuReady = bench::CpuSeconds(c.pid());
  }
  std::optional<std::string> metrics;
  if (run.ready >= 0) {
    metrics = c.WaitMetrics(deadline, 50ms, [&](const std::string& text) {
      return bench::ReconciledAll(text, o.jobs);
    });
  }
  if (!metrics) {
    std::fprintf(stderr, "startup-bench: %s did not %s; see %s/controller-%s.log\n",
                 run.label.c_str(), run.ready < 0 ? "become ready" : "reconcile every Job",
                 o.logDir.c_str(), run.label.c_str());
    return false;
  }
  run.reconciled = Since(c.started());
  run.cpuReconciled = bench::CpuSeconds(c.pid());
  run.rssKiB = bench::RssKiB(c.pid());
  run.peakRssKiB = bench::StatusKiB(c.pid(), "VmHWM");
  run.reconciles = bench::SumMetric(*metrics, "ayatori_reconcile_duration_seconds_count");
  if (bench::HasMetric(*metrics, "ayatori_waiting_job_wakeups_total")) {
    run.wakeups = bench::SumMetric(*metrics, "ayatori_waiting_job_wakeups_total");
  }
  run.writes = bench::ControllerWrites(*metrics);
  return true;
}

// Churn: every waiting Job's Secret that gets a new key may let it resolve; nothing else may.
// Measures until the controller drained: queue empty and no reconcile for 2 s (the last event
// may still be on its way).
void MeasureChurn(ControllerProcess& c, KubeClient& client, const Options& o,
                  SteadyClock::time_point deadline, Run& run) {
  const auto churnStart = SteadyClock::now();
  const double cpuBefore = bench::CpuSeconds(c.pid());
  if (!ChurnSecrets(client, o, o.churn, "rotated-" + run.label)) return;
  double lastCount = -1;
  auto lastChange = SteadyClock::now();
  auto drained = c.WaitMetrics(deadline, 50ms, [&](const std::string& text) {
    double count = bench::SumMetric(text, "ayatori_reconcile_duration_seconds_count");
    if (count != lastCount) {
      lastCount = count;
      lastChange = SteadyClock::now();
    }
    return bench::SumMetric(text, "ayatori_workqueue_depth") == 0 &&
           SteadyClock::now() - lastChange >= 2s;
  });
  if (!drained) return;
  run.churnReconciles = lastCount - run.reconciles;
  run.churnSeconds = std::chrono::duration<double>(lastChange - churnStart).count();
  run.churnCpu = bench::CpuSeconds(c.pid()) - cpuBefore;
}

Run Measure(KubeClient& client, const Options& o, const std::string& binary,
            const std::string& label) {
  Run run;
  run.label = label;
  ControllerProcess c(o, binary, o.logDir + "/controller-" + label + ".log");
  auto deadline = c.started() + std::chrono::seconds(o.timeoutSeconds);
  if (!MeasureStartup(c, o, deadline, run)) return run;
  if (o.churn <= 0 || !c.Alive()) return run;
  MeasureChurn(c, client, o, deadline, run);
  return run;
}

void PrintRuns(const Options& o, const std::vector<Run>& runs) {
  const int waiting = Waiting(o);
  std::printf(
      "\nayatori-controller startup: %d Jobs (%d finished, %d waiting on a Secret key) and %d "
      "Secrets in one namespace, cluster settled; %u CPUs\n",
      o.jobs, o.jobs - waiting, waiting, o.secrets, std::thread::hardware_concurrency());
  std::printf("%-12s %9s %14s %17s %10s %13s %10s %10s %7s\n", "run", "ready s", "reconciled s",
              "CPU s ready/all", "RSS MiB", "peak RSS MiB", "reconciles", "wake-ups", "writes");
  auto mib = [](int64_t kib) { return kib < 0 ? -1.0 : bench::MiB(kib); };
  for (const auto& r : runs) {
    std::string wake = r.wakeups < 0 ? "n/a" : std::to_string(static_cast<int64_t>(r.wakeups));
    std::printf("%-12s %9.2f %14.2f %8.2f/%-8.2f %10.1f %13.1f %10.0f %10s %7.0f\n",
                r.label.c_str(), r.ready, r.reconciled, r.cpuReady, r.cpuReconciled, mib(r.rssKiB),
                mib(r.peakRssKiB), r.reconciles, wake.c_str(), r.writes);
  }
  if (o.churn > 0) {
    std::printf(
        "\nthen %d Secrets, each referred to by one waiting Job, get a new key (the Jobs keep "
        "waiting):\n",
        o.churn);
    std::printf("%-12s %9s %12s %8s\n", "run", "drained s", "reconciles", "CPU s");
    for (const auto& r : runs) {
      std::printf("%-12s %9.2f %12.0f %8.2f\n", r.label.c_str(), r.churnSeconds, r.churnReconciles,
                  r.churnCpu);
    }
  }
}

// The MET/MISSED lines of the binary under test's runs; true when every target is met.
bool PrintVerdicts(const Options& o, const std::vector<Run>& runs) {
  double worst = 0;
  bool complete = true;
  int64_t wakeups = 0;
  double churnReconciles = 0;
  for (const auto& r : runs) {
    if (r.label.rfind("this-", 0) != 0) continue;
    if (r.reconciled < 0 || (o.churn > 0 && r.churnSeconds < 0)) complete = false;
    worst = std::max(worst, r.reconciled);
    wakeups += static_cast<int64_t>(std::max(0.0, r.wakeups));
    churnReconciles = std::max(churnReconciles, r.churnReconciles);
  }
  std::printf("  <= %.0f s from start to every Job reconciled: %.2f s  %s\n", o.targetSeconds,
              worst, bench::MetOrMissed(complete && worst <= o.targetSeconds));
  std::printf("  0 waiting Jobs woken by the informers' first lists: %lld  %s\n",
              static_cast<long long>(wakeups), bench::MetOrMissed(wakeups == 0));
  bool churnMet = true;
  if (o.churn > 0) {
    churnMet = complete && churnReconciles <= o.churn;
    std::printf("  <= 1 reconcile per changed Secret (%d): %.0f  %s\n", o.churn, churnReconciles,
                bench::MetOrMissed(churnMet));
  }
  return complete && worst <= o.targetSeconds && wakeups == 0 && churnMet;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Startup of ayatori-controller with many Jobs and Secrets"};
  app.add_option("--kubeconfig", o.kubeconfig, "kubeconfig of the test API server")->required();
  app.add_option("--controller", o.controller, "ayatori-controller binary under test")->required();
  app.add_option("--baseline", o.baseline, "an ayatori-controller binary to compare with");
  app.add_option("--jobs", o.jobs, "Jobs")->check(CLI::Range(1, 1000000));
  app.add_option("--secrets", o.secrets, "Secrets")->check(CLI::Range(1, 1000000));
  app.add_option("--waiting-fraction", o.waitingFraction, "share of Jobs waiting on a Secret key")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--namespace", o.ns, "namespace of the Jobs and Secrets");
  app.add_option("--creators", o.creators, "threads creating objects")->check(CLI::Range(1, 256));
  app.add_option("--qps", o.qps, "client QPS of the creator");
  app.add_option("--burst", o.burst, "client burst of the creator");
  app.add_option("--target-seconds", o.targetSeconds, "target: start to every Job reconciled");
  app.add_option("--churn", o.churn,
                 "Secrets (referred to by waiting Jobs) that then get a new key")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--timeout", o.timeoutSeconds, "seconds to wait for each phase");
  app.add_option("--log-dir", o.logDir, "where the controllers' logs go");
  CLI11_PARSE(app, argc, argv);

  auto config = bench::LoadKubeconfigOrReport("startup-bench", o.kubeconfig);
  if (!config) return 2;
  auto client = bench::NewClient(*config, o.qps, o.burst, "ayatori-startup-bench");

  if (!CreateObjects(*client, o)) return 1;
  if (!Settle(*client, o)) return 1;

  // The binary under test first and last, the baseline between: the API server's caches are
  // as warm for each, and the two runs of the binary under test show the noise.
  std::vector<Run> runs;
  runs.push_back(Measure(*client, o, o.controller, "this-1"));
  if (!o.baseline.empty()) runs.push_back(Measure(*client, o, o.baseline, "baseline"));
  runs.push_back(Measure(*client, o, o.controller, "this-2"));

  PrintRuns(o, runs);
  return PrintVerdicts(o, runs) ? 0 : 1;
}
