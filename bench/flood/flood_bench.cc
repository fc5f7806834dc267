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
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ayatori/kube_client.h"
#include "bench/common/api_client.h"
#include "bench/common/controller_process.h"
#include "bench/common/process_stats.h"
#include "bench/common/prometheus_text.h"
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

double Since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

bool CreateIfAbsent(KubeClient& client, const ResourceRef& ref, const std::string& ns,
                    const json& object) {
  auto r = client.Create(ref, ns, object, {});
  if (r.ok() || r.status().code() == StatusCode::kAlreadyExists) return true;
  std::fprintf(stderr, "flood-bench: create %s: %s\n", ref.resource.c_str(),
               r.status().ToString().c_str());
  return false;
}

json Namespace(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
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

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return -1;
  const auto i = static_cast<size_t>(std::lround(p * static_cast<double>(sorted.size() - 1)));
  return sorted[std::min(i, sorted.size() - 1)];
}

double Sum(const std::string& text, const std::string& metric) {
  double sum = 0;
  for (const auto& s : bench::ParseMetric(text, metric)) sum += s.value;
  return sum;
}

// Jobs the controller's cache holds as waiting for resolution (the jobs-by-state gauge).
double Waiting(const std::string& text) {
  double sum = 0;
  for (const auto& s : bench::ParseMetric(text, "ayatori_jobs")) {
    auto it = s.labels.find("state");
    if (it != s.labels.end() && it->second == "Resolving") sum += s.value;
  }
  return sum;
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
  json cls = {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
              {"kind", "JobClass"},
              {"metadata", {{"name", kJobClass}}},
              {"spec", {{"controllerName", "execution.ayatori.ddupan.top/test"}}}};
  // ayatori-system: the controller's namespace, where it stores backend snapshots.
  if (!CreateIfAbsent(*client, kNamespaces, "", Namespace("ayatori-system")) ||
      !CreateIfAbsent(*client, kNamespaces, "", Namespace(floodNs)) ||
      !CreateIfAbsent(*client, kNamespaces, "", Namespace(ordinaryNs)) ||
      !CreateIfAbsent(*client, kJobClasses, "", cls)) {
    return 1;
  }

  bench::ControllerProcess c(o.controller, {"--kubeconfig=" + o.kubeconfig, "--log-format=json"},
                             o.logDir + "/controller-flood.log");
  const auto deadline = [&] { return SteadyClock::now() + std::chrono::seconds(o.timeoutSeconds); };
  for (auto until = deadline(); c.Get("/readyz").first != 200;) {
    if (SteadyClock::now() > until || !c.Alive()) {
      std::fprintf(stderr, "flood-bench: the controller did not become ready\n");
      return 1;
    }
    std::this_thread::sleep_for(20ms);  // poll interval
  }
  StartWatch watch(*watchClient, ordinaryNs);
  const int64_t readyRssKiB = bench::RssKiB(c.pid());

  // Ordinary Jobs at the pace, then until each has started.
  auto ordinaryPhase = [&](const std::string& prefix) {
    std::fprintf(stderr, "flood-bench: %s: %d ordinary Jobs, one every %d ms\n", prefix.c_str(),
                 o.ordinary, o.intervalMs);
    CreateOrdinary(*client, watch, o, ordinaryNs, prefix, o.ordinary);
    for (auto until = deadline();
         watch.Started(prefix) < o.ordinary && SteadyClock::now() < until;) {
      std::this_thread::sleep_for(100ms);  // poll interval
    }
  };

  // 1. Baseline: ordinary Jobs alone.
  ordinaryPhase("base-");
  const int64_t baselineHwmKiB = bench::StatusKiB(c.pid(), "VmHWM");

  // 2. The flood is created; ordinary Jobs at the same pace meanwhile.
  std::string pool(1 << 20, ' ');
  {
    std::mt19937_64 rng(26);
    static constexpr std::string_view kChars =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
    for (char& ch : pool) ch = kChars[rng() % kChars.size()];
  }
  const size_t jobBytes = MaximalJob(floodNs, 0, pool).dump().size();
  std::fprintf(stderr, "flood-bench: flood: %d maximal Jobs (%zu bytes of JSON each)\n", o.jobs,
               jobBytes);
  std::atomic<int> next{0}, created{0}, failed{0};
  std::atomic<bool> flooding{true};
  const auto floodStart = SteadyClock::now();
  double floodSeconds = -1;
  {
    std::vector<std::jthread> creators;
    creators.reserve(static_cast<size_t>(o.creators));
    for (int w = 0; w < o.creators; ++w) {
      creators.emplace_back([&] {
        for (int i = next++; i < o.jobs; i = next++) {
          auto r = client->Create(kJobs, floodNs, MaximalJob(floodNs, i, pool), {});
          if (r.ok() || r.status().code() == StatusCode::kAlreadyExists) {
            if (++created % 200 == 0) {
              std::fprintf(stderr, "flood-bench: %d flood Jobs created (%.0f s)\n", created.load(),
                           Since(floodStart));
            }
          } else if (failed++ < 5) {
            std::fprintf(stderr, "flood-bench: create flood-%d: %s\n", i,
                         r.status().ToString().c_str());
          }
        }
      });
    }
    // One ordinary Job per jobs/ordinary flood Jobs created: --ordinary of them spread over the
    // flood, at most one every interval.
    std::jthread ordinary([&] {
      const int every = std::max(1, o.jobs / o.ordinary);
      for (int k = 0; flooding.load();) {
        if (created.load() >= k * every) {
          const std::string name = "during-" + std::to_string(k++);
          auto at = SteadyClock::now();
          if (CreateIfAbsent(*client, kJobs, ordinaryNs, OrdinaryJob(ordinaryNs, name))) {
            watch.Created(name, at, Since(at));
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(o.intervalMs));  // the pace
      }
    });
    for (auto& t : creators) t.join();
    floodSeconds = Since(floodStart);
    flooding = false;
  }
  std::fprintf(stderr, "flood-bench: %d flood Jobs created in %.1f s (%d failed)\n", created.load(),
               floodSeconds, failed.load());

  // 3. The controller has cached the flood as waiting and drained its queue.
  bool settled = false;
  const auto settleStart = SteadyClock::now();
  for (auto until = deadline(); SteadyClock::now() < until && c.Alive();) {
    auto [code, text] = c.Get("/metrics");
    if (code == 200 && Waiting(text) >= created.load() &&
        Sum(text, "ayatori_workqueue_depth") == 0) {
      settled = true;
      break;
    }
    std::this_thread::sleep_for(200ms);  // poll interval
  }
  const double settleSeconds = Since(settleStart);
  const int64_t settledRssKiB = bench::RssKiB(c.pid());

  // 4. Ordinary Jobs again, with the flood waiting: the target's situation.
  ordinaryPhase("waiting-");
  const int64_t rssKiB = bench::RssKiB(c.pid());
  const int64_t hwmKiB = bench::StatusKiB(c.pid(), "VmHWM");
  auto [mcode, metrics] = c.Get("/metrics");
  const double compactReads = mcode == 200 ? Sum(metrics, "ayatori_compact_job_reads_total") : -1;
  std::string requests;
  if (mcode == 200) {
    std::map<std::string, double> byVerb;
    for (const auto& m : bench::ParseMetric(metrics, "ayatori_api_requests_total")) {
      auto v = m.labels.find("verb");
      if (v != m.labels.end()) byVerb[v->second] += m.value;
    }
    for (const auto& [verb, n] : byVerb) {
      requests +=
          (requests.empty() ? "" : ", ") + verb + " " + std::to_string(static_cast<int64_t>(n));
    }
  }

  // 6. A fresh controller syncs the flood: its informers list every Job, page by page.
  c.Stop();
  bench::ControllerProcess fresh(o.controller,
                                 {"--kubeconfig=" + o.kubeconfig, "--log-format=json"},
                                 o.logDir + "/controller-flood-fresh.log");
  double freshSeconds = -1;
  for (auto until = deadline(); SteadyClock::now() < until && fresh.Alive();) {
    auto [code, text] = fresh.Get("/metrics");
    if (code == 200 && Waiting(text) >= created.load() &&
        Sum(text, "ayatori_workqueue_depth") == 0) {
      freshSeconds = Since(fresh.started());
      break;
    }
    std::this_thread::sleep_for(200ms);  // poll interval
  }
  const int64_t freshHwmKiB = bench::StatusKiB(fresh.pid(), "VmHWM");
  fresh.Stop();

  auto mib = [](int64_t kib) { return static_cast<double>(kib) / 1024.0; };
  std::printf(
      "\nflood: %d maximal Jobs (%zu bytes of JSON each: argv and env at their 256 KiB caps) "
      "waiting in %s on an absent JobClass, created in %.1f s by %d threads, cached as waiting "
      "%.1f s later; ordinary Jobs in %s on the in-process test backend, one every %d ms; %u "
      "CPUs\n",
      created.load(), jobBytes, floodNs.c_str(), floodSeconds, o.creators, settleSeconds,
      ordinaryNs.c_str(), o.intervalMs, std::thread::hardware_concurrency());
  std::printf(
      "controller RSS: %.1f MiB ready, peak %.1f MiB after the baseline, %.1f MiB with "
      "the flood cached, %.1f MiB at the end, peak %.1f MiB (limit %.0f MiB)\n",
      mib(readyRssKiB), mib(baselineHwmKiB), mib(settledRssKiB), mib(rssKiB), mib(hwmKiB),
      o.limitMiB);
  std::printf("controller API requests: %s; compact Jobs read whole: %.0f\n", requests.c_str(),
              compactReads);
  std::printf(
      "a fresh controller syncing the flood: %.1f s to every Job cached and queue empty, "
      "peak RSS %.1f MiB\n",
      freshSeconds, mib(freshHwmKiB));
  std::printf("%-28s %6s %8s %9s %9s %9s %14s\n", "ordinary Jobs, create ->", "Jobs", "missing",
              "p50 s", "p99 s", "max s", "create p50 s");
  int missing[3] = {0, 0, 0};
  std::vector<double> lat[3];
  const char* prefixes[3] = {"base-", "during-", "waiting-"};
  const char* labels[3] = {"started: baseline", "started: flood being made",
                           "started: flood waiting"};
  for (int k = 0; k < 3; ++k) {
    lat[k] = watch.Latencies(prefixes[k], &missing[k]);
    auto req = watch.Requests(prefixes[k]);
    std::printf("%-28s %6zu %8d %9.3f %9.3f %9.3f %14.3f\n", labels[k], lat[k].size(), missing[k],
                Percentile(lat[k], 0.5), Percentile(lat[k], 0.99), Percentile(lat[k], 1.0),
                Percentile(req, 0.5));
  }
  const bool complete = settled && failed.load() == 0 && missing[0] == 0 && missing[2] == 0 &&
                        !lat[0].empty() && !lat[2].empty();
  const bool rssMet = complete && mib(hwmKiB) < o.limitMiB;
  const double r50 = Percentile(lat[2], 0.5) / Percentile(lat[0], 0.5);
  const double r99 = Percentile(lat[2], 0.99) / Percentile(lat[0], 0.99);
  std::printf("  controller peak RSS < %.0f MiB: %.1f MiB  %s\n", o.limitMiB, mib(hwmKiB),
              rssMet ? "MET" : "MISSED");
  const bool freshMet = freshSeconds >= 0 && mib(freshHwmKiB) < o.limitMiB;
  std::printf("  fresh controller peak RSS syncing the flood < %.0f MiB: %.1f MiB  %s\n",
              o.limitMiB, mib(freshHwmKiB), freshMet ? "MET" : "MISSED");
  std::printf("  ordinary create -> started p50 with the flood waiting <= 2x baseline: %.2fx  %s\n",
              r50, complete && r50 <= 2 ? "MET" : "MISSED");
  std::printf("  ordinary create -> started p99 with the flood waiting <= 2x baseline: %.2fx  %s\n",
              r99, complete && r99 <= 2 ? "MET" : "MISSED");
  std::printf(
      "  (while the flood is being created: p50 %.2fx, p99 %.2fx the baseline; no target)\n",
      Percentile(lat[1], 0.5) / Percentile(lat[0], 0.5),
      Percentile(lat[1], 0.99) / Percentile(lat[0], 0.99));
  if (!complete) {
    std::printf("  incomplete: settled=%d, failed creates %d, ordinary Jobs not started %d + %d\n",
                settled ? 1 : 0, failed.load(), missing[0], missing[2]);
  }
  return complete && rssMet && freshMet && r50 <= 2 && r99 <= 2 ? 0 : 1;
}
