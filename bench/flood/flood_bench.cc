// A flood of large waiting Jobs against the controller's memory limit and the start latency of
// other namespaces (issue 26; docs/operations.md § Capacity and cost). Started by
// hack/bench-flood.sh, which starts an API-tier control plane and installs the CRDs.
//
//  1. starts ayatori-controller-test (--controller: the controller with the in-process test
//     backend) and a JobClass
//     for it;
//  2. baseline: creates --ordinary Jobs in one namespace, one every --interval-ms, and measures
//     for each the time from the create request to the first watch event that shows its
//     status.startTime (create -> started);
//  3. creates --jobs Jobs as large as the CRD admits (argv and env at their 256 KiB caps,
//     incompressible) naming a JobClass that does not exist, with --creators threads, in another
//     namespace, and meanwhile --ordinary Jobs spread over the flood (measured, no target: the
//     API server, on the same cores, is busy storing the flood);
//  4. waits until the controller holds the flood as waiting (jobs-by-state gauge) with its
//     workqueue empty, then creates and measures --ordinary Jobs again: the flood waiting;
//  5. reads the controller's peak RSS (VmHWM) and its API requests;
//  6. stops it and starts a fresh one, which lists the flood: its peak RSS too.
// Prints the table and MET/MISSED against the targets (docs/design.md): peak RSS < --limit-mib
// (the manifest's memory limit, config/manager/manager.yaml), ordinary Jobs' p50 and p99 with the
// flood waiting <= 2x the baseline's.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
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
constexpr const char* kJobClass = "flood-bench";
constexpr const char* kAbsentClass = "flood-bench-absent";

struct Options {
  std::string kubeconfig;
  std::string controller;
  int jobs = 2000;
  int ordinary = 100;
  int intervalMs = 100;
  int creators = 4;
  double qps = 1000;
  int burst = 2000;
  double limitMiB = 256;
  int timeoutSeconds = 1800;
  std::string logDir = "/tmp";
};

using bench::MetOrMissed;
using bench::Percentile;
using bench::Since;

SteadyClock::time_point Deadline(const Options& o) {
  return SteadyClock::now() + std::chrono::seconds(o.timeoutSeconds);
}

bool CreateIfAbsent(KubeClient& client, const ResourceRef& ref, const std::string& ns,
                    const json& object) {
  const Status s = bench::CreateIfAbsent(client, ref, ns, object);
  if (s.ok()) return true;
  std::fprintf(stderr, "flood-bench: create %s: %s\n", ref.resource.c_str(), s.ToString().c_str());
  return false;
}

// The largest task the CRD admits (docs/api.md § Limits at a glance): 64 command items of 1 KiB
// and 256 args of 768 bytes (256 KiB of argv), 128 env entries of 4-byte names and 2044-byte
// values (256 KiB of env), cut from `pool` at an offset of its own so that no two Jobs share text.
json MaximalJob(const std::string& ns, int i, const std::string& pool) {
  size_t at = (static_cast<size_t>(i) * 7919) % (pool.size() - 4096);
  auto text = [&](size_t n) {
    if (at + n > pool.size()) at = 0;
    std::string s = pool.substr(at, n);
    at += n;
    return s;
  };
  json command = json::array(), args = json::array(), env = json::array();
  for (int k = 0; k < 64; ++k) command.push_back(text(1024));
  for (int k = 0; k < 256; ++k) args.push_back(text(768));
  for (int k = 0; k < 128; ++k) {
    env.push_back({{"name", "V" + std::to_string(1000 + k).substr(1)}, {"value", text(2044)}});
  }
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "Job"},
          {"metadata", {{"name", "flood-" + std::to_string(i)}, {"namespace", ns}}},
          {"spec",
           {{"jobClassName", kAbsentClass},
            {"task",
             {{"image", "registry.invalid/flood:1"},
              {"command", command},
              {"args", args},
              {"env", env}}}}}};
}

json OrdinaryJob(const std::string& ns, const std::string& name) {
  json env = json::array({{{"name", "AYATORI_TEST_RUN_SECONDS"}, {"value", "1"}}});
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"jobClassName", kJobClass},
            {"task", {{"image", "registry.invalid/ordinary:1"}, {"env", env}}}}}};
}

// Create -> started of Jobs in one namespace: the create request's time, and the first watch event
// showing status.startTime (second-granular, hence not read; the event's arrival is the time).
class StartWatch {
 public:
  StartWatch(KubeClient& client, std::string ns) : ns_(std::move(ns)) {
    thread_ = std::jthread([this, &client](const std::stop_token& stop) {
      WatchOptions wo;
      wo.resourceVersion = "0";
      while (!stop.stop_requested()) {
        Status s = client.Watch(kJobs, ns_, wo, stop, [this](WatchEvent&& e) {
          if (e.type == WatchEventType::kBookmark) return true;
          const std::string rv = e.object["metadata"].value("resourceVersion", "");
          if (!rv.empty()) resourceVersion_ = rv;
          auto p = json::json_pointer("/status/startTime");
          if (e.object.contains(p)) {
            std::lock_guard lock(mu_);
            started_.try_emplace(e.object["metadata"].value("name", ""), SteadyClock::now());
          }
          return true;
        });
        if (!resourceVersion_.empty()) wo.resourceVersion = resourceVersion_;
        if (!s.ok() && !stop.stop_requested()) wo.resourceVersion = "0";
      }
    });
  }
  void Created(const std::string& name, SteadyClock::time_point at, double requestSeconds) {
    std::lock_guard lock(mu_);
    created_[name] = at;
    request_[name] = requestSeconds;
  }
  // The create requests' own durations (s) of the Jobs named with `prefix`, sorted.
  std::vector<double> Requests(const std::string& prefix) {
    std::lock_guard lock(mu_);
    std::vector<double> out;
    for (const auto& [name, s] : request_) {
      if (name.rfind(prefix, 0) == 0) out.push_back(s);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Latencies (s) of the Jobs named with `prefix` that started; *missing counts the others.
  std::vector<double> Latencies(const std::string& prefix, int* missing) {
    std::lock_guard lock(mu_);
    std::vector<double> out;
    *missing = 0;
    for (const auto& [name, at] : created_) {
      if (name.rfind(prefix, 0) != 0) continue;
      auto it = started_.find(name);
      if (it == started_.end()) {
        ++*missing;
        continue;
      }
      out.push_back(std::chrono::duration<double>(it->second - at).count());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  int Started(const std::string& prefix) {
    std::lock_guard lock(mu_);
    return static_cast<int>(std::count_if(started_.begin(), started_.end(), [&](const auto& e) {
      return e.first.rfind(prefix, 0) == 0;
    }));
  }

 private:
  std::string ns_;
  std::string resourceVersion_;
  std::mutex mu_;
  std::map<std::string, SteadyClock::time_point> created_, started_;
  std::map<std::string, double> request_;
  std::jthread thread_;
};

// Creates `count` ordinary Jobs named <prefix><i>, one every interval.
void CreateOrdinary(KubeClient& client, StartWatch& watch, const Options& o, const std::string& ns,
                    const std::string& prefix, int count) {
  auto next = SteadyClock::now();
  for (int i = 0; i < count; ++i) {
    std::this_thread::sleep_until(next);  // the pace of the ordinary Jobs, not a synchronisation
    next += std::chrono::milliseconds(o.intervalMs);
    const std::string name = prefix + std::to_string(i);
    auto at = SteadyClock::now();
    if (CreateIfAbsent(client, kJobs, ns, OrdinaryJob(ns, name))) {
      watch.Created(name, at, Since(at));
    }
  }
}

// Jobs the controller's cache holds as waiting for resolution (the jobs-by-state gauge).
double Waiting(const std::string& text) {
  return bench::SumMetric(text, "ayatori_jobs", [](const bench::Sample& s) {
    auto it = s.labels.find("state");
    return it != s.labels.end() && it->second == "Resolving";
  });
}

// Whether the controller holds `created` flood Jobs as waiting with its workqueue drained.
bool FloodCached(const std::string& metrics, int created) {
  return Waiting(metrics) >= created && bench::SumMetric(metrics, "ayatori_workqueue_depth") == 0;
}

// The namespaces and the ordinary Jobs' JobClass. ayatori-system: the controller's namespace,
// where it stores backend snapshots.
bool CreateFixtures(KubeClient& client, const std::string& floodNs, const std::string& ordinaryNs) {
  return CreateIfAbsent(client, kNamespaces, "", bench::NamespaceObject("ayatori-system")) &&
         CreateIfAbsent(client, kNamespaces, "", bench::NamespaceObject(floodNs)) &&
         CreateIfAbsent(client, kNamespaces, "", bench::NamespaceObject(ordinaryNs)) &&
         CreateIfAbsent(client, kJobClasses, "", bench::TestJobClass(kJobClass));
}

// The controller, ready; nullptr when it did not become ready.
std::unique_ptr<bench::ControllerProcess> StartController(const Options& o) {
  auto c = std::make_unique<bench::ControllerProcess>(
      o.controller, bench::ControllerFlags(o.kubeconfig), o.logDir + "/controller-flood.log");
  if (!c->WaitServing("/readyz", Deadline(o), 20ms)) {
    std::fprintf(stderr, "flood-bench: the controller did not become ready\n");
    return nullptr;
  }
  return c;
}

// Ordinary Jobs at the pace, then until each has started.
void OrdinaryPhase(KubeClient& client, StartWatch& watch, const Options& o, const std::string& ns,
                   const std::string& prefix) {
  std::fprintf(stderr, "flood-bench: %s: %d ordinary Jobs, one every %d ms\n", prefix.c_str(),
               o.ordinary, o.intervalMs);
  CreateOrdinary(client, watch, o, ns, prefix, o.ordinary);
  for (auto until = Deadline(o);
       watch.Started(prefix) < o.ordinary && SteadyClock::now() < until;) {
    std::this_thread::sleep_for(100ms);  // poll interval
  }
}

// 1 MiB of random letters, digits, '-' and '_': the flood's text, which does not compress.
std::string RandomPool() {
  std::string pool(1 << 20, ' ');
  std::mt19937_64 rng(26);
  static constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
  for (char& ch : pool) ch = kChars[rng() % kChars.size()];
  return pool;
}

// What the run measured, for the report.
struct Measurements {
  size_t jobBytes = 0;  // of one flood Job's JSON
  int created = 0, failed = 0;
  double floodSeconds = -1, settleSeconds = -1, freshSeconds = -1;
  bool settled = false;
  int64_t readyRssKiB = -1, baselineHwmKiB = -1, settledRssKiB = -1, rssKiB = -1, hwmKiB = -1;
  int64_t freshHwmKiB = -1;
  double compactReads = -1;
  std::string requests;  // the controller's API requests by verb
};

// One ordinary Job per jobs/ordinary flood Jobs created: --ordinary of them spread over the
// flood, at most one every interval, until `flooding` ends.
void CreateDuringFlood(KubeClient& client, StartWatch& watch, const Options& o,
                       const std::string& ns, const std::atomic<int>& created,
                       const std::atomic<bool>& flooding) {
  const int every = std::max(1, o.jobs / o.ordinary);
  for (int k = 0; flooding.load();) {
    if (created.load() >= k * every) {
      const std::string name = "during-" + std::to_string(k++);
      auto at = SteadyClock::now();
      if (CreateIfAbsent(client, kJobs, ns, OrdinaryJob(ns, name))) {
        watch.Created(name, at, Since(at));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(o.intervalMs));  // the pace
  }
}

// Creates the flood in `floodNs` with --creators threads, ordinary Jobs in `ordinaryNs` meanwhile.
void CreateFlood(KubeClient& client, StartWatch& watch, const Options& o,
                 const std::string& floodNs, const std::string& ordinaryNs, Measurements& m) {
  const std::string pool = RandomPool();
  m.jobBytes = MaximalJob(floodNs, 0, pool).dump().size();
  std::fprintf(stderr, "flood-bench: flood: %d maximal Jobs (%zu bytes of JSON each)\n", o.jobs,
               m.jobBytes);
  std::atomic<int> created{0}, failed{0};
  std::atomic<bool> flooding{true};
  const auto floodStart = SteadyClock::now();
  {
    std::jthread ordinary(
        [&] { CreateDuringFlood(client, watch, o, ordinaryNs, created, flooding); });
    bench::ParallelFor(o.jobs, o.creators, [&](int i) {
      auto r = client.Create(kJobs, floodNs, MaximalJob(floodNs, i, pool), {});
      if (r.ok() || r.status().code() == StatusCode::kAlreadyExists) {
        if (++created % 200 == 0) {
          std::fprintf(stderr, "flood-bench: %d flood Jobs created (%.0f s)\n", created.load(),
                       Since(floodStart));
        }
      } else if (failed++ < 5) {
        std::fprintf(stderr, "flood-bench: create flood-%d: %s\n", i,
                     r.status().ToString().c_str());
      }
    });
    m.floodSeconds = Since(floodStart);
    flooding = false;
  }
  m.created = created.load();
  m.failed = failed.load();
  std::fprintf(stderr, "flood-bench: %d flood Jobs created in %.1f s (%d failed)\n", m.created,
               m.floodSeconds, m.failed);
}

// "verb n, verb n" of the controller's ayatori_api_requests_total.
std::string RequestsByVerb(const std::string& metrics) {
  std::string requests;
  for (const auto& [verb, n] : bench::SumByLabel(metrics, "ayatori_api_requests_total", "verb")) {
    if (verb.empty()) continue;
    requests +=
        (requests.empty() ? "" : ", ") + verb + " " + std::to_string(static_cast<int64_t>(n));
  }
  return requests;
}

// The controller's memory and requests at the end, with the flood waiting.
void MeasureController(bench::ControllerProcess& c, Measurements& m) {
  m.rssKiB = bench::RssKiB(c.pid());
  m.hwmKiB = bench::StatusKiB(c.pid(), "VmHWM");
  auto [code, metrics] = c.Get("/metrics");
  if (code != 200) return;
  m.compactReads = bench::SumMetric(metrics, "ayatori_compact_job_reads_total");
  m.requests = RequestsByVerb(metrics);
}

// A fresh controller syncs the flood: its informers list every Job, page by page.
void MeasureFresh(const Options& o, Measurements& m) {
  bench::ControllerProcess fresh(o.controller, bench::ControllerFlags(o.kubeconfig),
                                 o.logDir + "/controller-flood-fresh.log");
  if (fresh.WaitMetrics(Deadline(o), 200ms,
                        [&](const std::string& text) { return FloodCached(text, m.created); })) {
    m.freshSeconds = Since(fresh.started());
  }
  m.freshHwmKiB = bench::StatusKiB(fresh.pid(), "VmHWM");
  fresh.Stop();
}

void PrintSummary(const Options& o, const Measurements& m, const std::string& floodNs,
                  const std::string& ordinaryNs) {
  using bench::MiB;
  std::printf(
      "\nflood: %d maximal Jobs (%zu bytes of JSON each: argv and env at their 256 KiB caps) "
      "waiting in %s on an absent JobClass, created in %.1f s by %d threads, cached as waiting "
      "%.1f s later; ordinary Jobs in %s on the in-process test backend, one every %d ms; %u "
      "CPUs\n",
      m.created, m.jobBytes, floodNs.c_str(), m.floodSeconds, o.creators, m.settleSeconds,
      ordinaryNs.c_str(), o.intervalMs, std::thread::hardware_concurrency());
  std::printf(
      "controller RSS: %.1f MiB ready, peak %.1f MiB after the baseline, %.1f MiB with "
      "the flood cached, %.1f MiB at the end, peak %.1f MiB (limit %.0f MiB)\n",
      MiB(m.readyRssKiB), MiB(m.baselineHwmKiB), MiB(m.settledRssKiB), MiB(m.rssKiB), MiB(m.hwmKiB),
      o.limitMiB);
  std::printf("controller API requests: %s; compact Jobs read whole: %.0f\n", m.requests.c_str(),
              m.compactReads);
  std::printf(
      "a fresh controller syncing the flood: %.1f s to every Job cached and queue empty, "
      "peak RSS %.1f MiB\n",
      m.freshSeconds, MiB(m.freshHwmKiB));
}

// The ordinary Jobs' start latencies of each phase (baseline, during the flood, flood waiting).
struct Phases {
  std::vector<double> latency[3];
  int missing[3] = {0, 0, 0};
};

Phases PrintPhases(StartWatch& watch) {
  std::printf("%-28s %6s %8s %9s %9s %9s %14s\n", "ordinary Jobs, create ->", "Jobs", "missing",
              "p50 s", "p99 s", "max s", "create p50 s");
  Phases p;
  const char* prefixes[3] = {"base-", "during-", "waiting-"};
  const char* labels[3] = {"started: baseline", "started: flood being made",
                           "started: flood waiting"};
  for (int k = 0; k < 3; ++k) {
    const auto& lat = p.latency[k] = watch.Latencies(prefixes[k], &p.missing[k]);
    auto req = watch.Requests(prefixes[k]);
    std::printf("%-28s %6zu %8d %9.3f %9.3f %9.3f %14.3f\n", labels[k], lat.size(), p.missing[k],
                Percentile(lat, 0.5), Percentile(lat, 0.99), Percentile(lat, 1.0),
                Percentile(req, 0.5));
  }
  return p;
}

// The targets' MET/MISSED lines; true when every target is met.
bool PrintVerdicts(const Options& o, const Measurements& m, const Phases& p) {
  const double hwmMiB = bench::MiB(m.hwmKiB), freshMiB = bench::MiB(m.freshHwmKiB);
  const auto& lat = p.latency;
  const bool complete = m.settled && m.failed == 0 && p.missing[0] == 0 && p.missing[2] == 0 &&
                        !lat[0].empty() && !lat[2].empty();
  const bool rssMet = complete && hwmMiB < o.limitMiB;
  const double r50 = Percentile(lat[2], 0.5) / Percentile(lat[0], 0.5);
  const double r99 = Percentile(lat[2], 0.99) / Percentile(lat[0], 0.99);
  std::printf("  controller peak RSS < %.0f MiB: %.1f MiB  %s\n", o.limitMiB, hwmMiB,
              MetOrMissed(rssMet));
  const bool freshMet = m.freshSeconds >= 0 && freshMiB < o.limitMiB;
  std::printf("  fresh controller peak RSS syncing the flood < %.0f MiB: %.1f MiB  %s\n",
              o.limitMiB, freshMiB, MetOrMissed(freshMet));
  std::printf("  ordinary create -> started p50 with the flood waiting <= 2x baseline: %.2fx  %s\n",
              r50, MetOrMissed(complete && r50 <= 2));
  std::printf("  ordinary create -> started p99 with the flood waiting <= 2x baseline: %.2fx  %s\n",
              r99, MetOrMissed(complete && r99 <= 2));
  std::printf(
      "  (while the flood is being created: p50 %.2fx, p99 %.2fx the baseline; no target)\n",
      Percentile(lat[1], 0.5) / Percentile(lat[0], 0.5),
      Percentile(lat[1], 0.99) / Percentile(lat[0], 0.99));
  if (!complete) {
    std::printf("  incomplete: settled=%d, failed creates %d, ordinary Jobs not started %d + %d\n",
                m.settled ? 1 : 0, m.failed, p.missing[0], p.missing[2]);
  }
  return complete && rssMet && freshMet && r50 <= 2 && r99 <= 2;
}

// Steps 1-6 of the file's comment; the report's numbers in `m`.
bool Measure(KubeClient& client, StartWatch& watch, const Options& o, const std::string& floodNs,
             const std::string& ordinaryNs, Measurements& m) {
  auto c = StartController(o);
  if (!c) return false;
  m.readyRssKiB = bench::RssKiB(c->pid());
  // 1. Baseline: ordinary Jobs alone.
  OrdinaryPhase(client, watch, o, ordinaryNs, "base-");
  m.baselineHwmKiB = bench::StatusKiB(c->pid(), "VmHWM");
  // 2. The flood is created; ordinary Jobs at the same pace meanwhile.
  CreateFlood(client, watch, o, floodNs, ordinaryNs, m);
  // 3. The controller has cached the flood as waiting and drained its queue.
  const auto settleStart = SteadyClock::now();
  m.settled = c->WaitMetrics(Deadline(o), 200ms, [&](const std::string& text) {
                 return FloodCached(text, m.created);
               }).has_value();
  m.settleSeconds = Since(settleStart);
  m.settledRssKiB = bench::RssKiB(c->pid());
  // 4. Ordinary Jobs again, with the flood waiting: the target's situation.
  OrdinaryPhase(client, watch, o, ordinaryNs, "waiting-");
  // 5. Its memory and requests.
  MeasureController(*c, m);
  c->Stop();
  // 6. A fresh controller syncs the flood.
  MeasureFresh(o, m);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"A flood of maximal waiting Jobs: controller memory and other namespaces' latency"};
  app.add_option("--kubeconfig", o.kubeconfig, "kubeconfig of the test API server")->required();
  app.add_option("--controller", o.controller, "ayatori-controller binary")->required();
  app.add_option("--jobs", o.jobs, "maximal waiting Jobs of the flood")
      ->check(CLI::Range(1, 100000));
  app.add_option("--ordinary", o.ordinary, "ordinary Jobs per phase (at least)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--interval-ms", o.intervalMs, "pace of the ordinary Jobs");
  app.add_option("--creators", o.creators, "threads creating the flood")->check(CLI::Range(1, 64));
  app.add_option("--qps", o.qps, "client QPS of the creators");
  app.add_option("--burst", o.burst, "client burst of the creators");
  app.add_option("--limit-mib", o.limitMiB, "the controller's memory limit");
  app.add_option("--timeout", o.timeoutSeconds, "seconds to wait for each phase");
  app.add_option("--log-dir", o.logDir, "where the controller's log goes");
  CLI11_PARSE(app, argc, argv);

  auto config = bench::LoadKubeconfigOrReport("flood-bench", o.kubeconfig);
  if (!config) return 2;
  auto client = bench::NewClient(*config, o.qps, o.burst, "ayatori-flood-bench");
  auto watchClient = bench::NewClient(*config, o.qps, o.burst, "ayatori-flood-bench");
  const std::string floodNs = "flood-waiting", ordinaryNs = "flood-ordinary";
  if (!CreateFixtures(*client, floodNs, ordinaryNs)) return 1;
  StartWatch watch(*watchClient, ordinaryNs);
  Measurements m;
  if (!Measure(*client, watch, o, floodNs, ordinaryNs, m)) return 1;
  PrintSummary(o, m, floodNs, ordinaryNs);
  const Phases phases = PrintPhases(watch);
  return PrintVerdicts(o, m, phases) ? 0 : 1;
}
