// Failover and resync of leader-elected ayatori-controller replicas on the real test API server
// (the in-process test backend runs the Jobs). Started by hack/bench-failover.sh, which starts
// the control plane and installs the CRDs.
//
//  1. SIGKILL of the leader: two replicas with --leader-elect; once one leads and has run a Job,
//     it is SIGKILLed and a Job is created at once. Measured: from the kill to the first write to
//     that Job (its resourceVersion changes: the new leader's finalizer patch), as a watcher sees
//     it. Target: the lease duration + 2 s (the Lease must expire before a standby may take it).
//  2. Graceful handover: a third replica starts as a standby (as the Deployment restarts the
//     killed pod); the leader gets SIGTERM and a Job is created at once. Measured the same way.
//     Target: 3 s (the leader releases the Lease; a standby takes it at its next retry).
//  3. Resync: the leader gets SIGTERM, --resync-jobs finished Jobs are written (cloned from one
//     the controller finished, status included) and a fresh replica starts alone. Measured from its
//     exec: the time until every Job was re-observed, i.e. reconciled once (its
//     ayatori_reconcile_duration_seconds_count reaches the Job count with ayatori_workqueue_depth
//     0). Target: 10 s.
// Prints each with measured / target (the target is the baseline here) and MET/MISSED.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "ayatori/kube_client.h"
#include "bench/common/api_client.h"
#include "bench/common/clone.h"
#include "bench/common/controller_process.h"
#include "bench/common/objects.h"
#include "bench/common/parallel.h"
#include "bench/common/process_stats.h"
#include "bench/common/prometheus_text.h"
#include "bench/common/report.h"
#include "controller/kinds.h"
#include "kube/config.h"
#include "kube/resource.h"
#include "kube/rest_client.h"

namespace {

using nlohmann::json;
using namespace ayatori;               // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)
using SteadyClock = std::chrono::steady_clock;

using controller::kJobClasses;
using controller::kJobs;
using controller::kNamespaces;
const ResourceRef kLeases = kube::LeasesResource();
constexpr const char* kJobClass = "failover-bench";

struct Options {
  std::string kubeconfig;
  std::string controller;
  std::string ns = "failover-bench";
  double leaseSeconds = 15, renewSeconds = 10, retrySeconds = 2;
  double gracefulTargetSeconds = 3;
  int resyncJobs = 10000;
  double resyncTargetSeconds = 10;
  int creators = 32;
  double qps = 5000;
  int burst = 10000;
  int timeoutSeconds = 600;
  std::string logDir = "/tmp";
};

using bench::Since;

std::string Seconds(double s) { return std::to_string(static_cast<int>(s * 1000)) + "ms"; }

json JobObject(const Options& o, const std::string& name) {
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", o.ns}}},
          {"spec",
           {{"jobClassName", kJobClass},
            {"task",
             {{"image", "registry.invalid/failover-bench:1"},
              {"env", json::array({{{"name", "AYATORI_TEST_RUN_SECONDS"}, {"value", "0"}}})}}}}}};
}

class Replica : public bench::ControllerProcess {
 public:
  Replica(const Options& o, const std::string& label)
      : bench::ControllerProcess(o.controller, Flags(o),
                                 o.logDir + "/controller-" + label + ".log"),
        label_(label) {}
  const std::string& label() const { return label_; }
  bool Leading() {
    auto [code, text] = Get("/metrics");
    auto samples = bench::ParseMetric(text, "ayatori_leader");
    return code == 200 && !samples.empty() && samples[0].value == 1;
  }

 private:
  static std::vector<std::string> Flags(const Options& o) {
    return bench::ControllerFlags(o.kubeconfig,
                                  {"--leader-elect", "--lease-duration=" + Seconds(o.leaseSeconds),
                                   "--renew-deadline=" + Seconds(o.renewSeconds),
                                   "--retry-period=" + Seconds(o.retrySeconds)});
  }
  std::string label_;
};

// The replica that leads, once one does (nullptr after the timeout).
Replica* WaitLeader(const std::vector<Replica*>& replicas, std::chrono::seconds timeout) {
  auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    for (auto* r : replicas) {
      if (r->Alive() && r->Leading()) return r;
    }
    std::this_thread::sleep_for(100ms);  // poll interval
  }
  return nullptr;
}

// Creates Job `name` and returns the seconds from `from` until the first write to it after its
// creation (-1 on timeout).
double FirstWrite(KubeClient& client, const Options& o, const std::string& name,
                  SteadyClock::time_point from) {
  auto created = client.Create(kJobs, o.ns, JobObject(o, name), {});
  if (!created.ok()) {
    std::fprintf(stderr, "failover-bench: create %s: %s\n", name.c_str(),
                 created.status().ToString().c_str());
    return -1;
  }
  const std::string rv = (*created)["metadata"].value("resourceVersion", "");
  auto deadline = from + std::chrono::seconds(o.timeoutSeconds);
  while (SteadyClock::now() < deadline) {
    auto job = client.Get(kJobs, o.ns, name);
    if (job.ok() && (*job)["metadata"].value("resourceVersion", "") != rv) return Since(from);
    std::this_thread::sleep_for(20ms);  // poll interval: the resolution of the measurement
  }
  return -1;
}

// Waits until Job `name` has Succeeded=True; returns it.
std::optional<json> WaitSucceeded(KubeClient& client, const Options& o, const std::string& name) {
  auto deadline = SteadyClock::now() + std::chrono::seconds(o.timeoutSeconds);
  while (SteadyClock::now() < deadline) {
    auto job = client.Get(kJobs, o.ns, name);
    if (job.ok() && (*job).contains(json::json_pointer("/status/conditions"))) {
      for (const auto& c : (*job)["status"]["conditions"]) {
        if (c.value("type", "") == "Succeeded" && c.value("status", "") == "True") return *job;
      }
    }
    std::this_thread::sleep_for(100ms);  // poll interval
  }
  std::fprintf(stderr, "failover-bench: %s did not succeed\n", name.c_str());
  return std::nullopt;
}

std::string LeaseHolder(KubeClient& client) {
  auto lease = client.Get(kLeases, "ayatori-system", "ayatori-controller");
  if (!lease.ok()) return "?";
  return (*lease)["spec"].value("holderIdentity", "");
}

// Clones finished Job `done` as resync-0 .. resync-(count-1), status included: 2 requests each.
bool CloneFinished(KubeClient& client, const Options& o, const json& done, int count) {
  const std::string name = done["metadata"].value("name", "");
  const std::string uid = done["metadata"].value("uid", "");
  std::atomic<int> failed{0};
  bench::ParallelFor(count, o.creators, [&](int i) {
    if (failed >= 20) return;
    const std::string clone = "resync-" + std::to_string(i);
    auto job =
        client.Create(kJobs, o.ns, bench::Substitute(bench::Creatable(done), {{name, clone}}), {});
    if (!job.ok()) {
      if (job.status().code() == StatusCode::kAlreadyExists) return;
      if (failed++ < 5) {
        std::fprintf(stderr, "failover-bench: %s: %s\n", clone.c_str(),
                     job.status().ToString().c_str());
      }
      return;
    }
    (*job)["status"] = bench::Substitute(
        done["status"], {{name, clone}, {uid, (*job)["metadata"].value("uid", "")}});
    if (auto r = client.UpdateStatus(kJobs, o.ns, *job, {}); !r.ok() && failed++ < 5) {
      std::fprintf(stderr, "failover-bench: %s status: %s\n", clone.c_str(),
                   r.status().ToString().c_str());
    }
  });
  return failed.load() == 0;
}

double Resync(Replica& r, int jobs, const Options& o, double* cpu, int64_t* rssKiB) {
  auto deadline = r.started() + std::chrono::seconds(o.timeoutSeconds);
  // Polled every 50 ms: the resolution of the measurement.
  if (!r.WaitMetrics(deadline, 50ms,
                     [&](const std::string& text) { return bench::ReconciledAll(text, jobs); })) {
    return -1;
  }
  double t = Since(r.started());
  *cpu = bench::CpuSeconds(r.pid());
  *rssKiB = bench::RssKiB(r.pid());
  return t;
}

void Verdict(const char* what, double measured, double target) {
  const bool met = measured >= 0 && measured <= target;
  std::printf("  %-58s %7.2f s  target %5.1f s  %.2fx  %s\n", what, measured, target,
              measured / target, bench::MetOrMissed(met));
}

// The namespace and the JobClass of the Jobs; false (said on stderr) on failure.
bool CreateFixtures(KubeClient& client, const Options& o) {
  for (const auto& [ref, obj] :
       {std::pair<ResourceRef, json>{kNamespaces, bench::NamespaceObject(o.ns)},
        {kJobClasses, bench::TestJobClass(kJobClass)}}) {
    if (Status s = bench::CreateIfAbsent(client, ref, "", obj); !s.ok()) {
      std::fprintf(stderr, "failover-bench: %s\n", s.ToString().c_str());
      return false;
    }
  }
  return true;
}

// What the run measured, for the report.
struct Results {
  double killed = -1, handed = -1, resync = -1;  // seconds
  bool killedByStandby = false, handedToC = false;
  int total = 0;  // Jobs the restarted replica re-observes
  double cpu = -1;
  int64_t rss = -1;
};

// 1. SIGKILL of the leader of replicas a and b; returns the standby that took over (nullptr when
// no replica led or the warm-up Job failed).
Replica* MeasureKill(KubeClient& client, const Options& o, Replica& a, Replica& b, Results& r) {
  Replica* leader = WaitLeader({&a, &b}, std::chrono::seconds(o.timeoutSeconds));
  if (!leader) return nullptr;
  if (FirstWrite(client, o, "warm-up", SteadyClock::now()) < 0) return nullptr;
  if (!WaitSucceeded(client, o, "warm-up")) return nullptr;
  Replica* standby = leader == &a ? &b : &a;
  std::fprintf(stderr, "failover-bench: %s leads (%s); SIGKILL\n", leader->label().c_str(),
               LeaseHolder(client).c_str());
  auto t0 = SteadyClock::now();
  leader->Signal(SIGKILL);
  r.killed = FirstWrite(client, o, "after-kill", t0);
  r.killedByStandby = standby->Leading();
  std::fprintf(stderr, "failover-bench: first write after %.2f s; %s leads now (%s)\n", r.killed,
               standby->label().c_str(), LeaseHolder(client).c_str());
  leader->Stop();
  return standby;
}

// 2. Graceful handover from `leader` to a fresh standby c.
void MeasureHandover(KubeClient& client, const Options& o, Replica& leader, Replica& c,
                     Results& r) {
  // Until the standby serves, then a retry period for it to try the lease.
  c.WaitServing("/healthz", SteadyClock::now() + 10s, 100ms);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(o.retrySeconds * 1000)));
  std::fprintf(stderr, "failover-bench: %s leads; standby c up; SIGTERM\n", leader.label().c_str());
  auto t0 = SteadyClock::now();
  leader.Signal(SIGTERM);
  r.handed = FirstWrite(client, o, "after-term", t0);
  r.handedToC = c.Leading();
  std::fprintf(stderr, "failover-bench: first write after %.2f s; c leads: %s (%s)\n", r.handed,
               r.handedToC ? "yes" : "no", LeaseHolder(client).c_str());
  leader.Stop();
}

// 3. Resync of a restarted replica with --resync-jobs finished Jobs; false when they could not
// be made.
bool MeasureResync(KubeClient& client, const Options& o, Replica& c, Results& r) {
  auto done = WaitSucceeded(client, o, "after-term");
  if (!done) return false;
  // No replica runs while the clones are written: each is created without its status first.
  c.Stop();
  auto cs = SteadyClock::now();
  if (!CloneFinished(client, o, *done, o.resyncJobs)) return false;
  std::fprintf(stderr, "failover-bench: %d finished Jobs cloned in %.1f s; start d\n", o.resyncJobs,
               Since(cs));
  r.total = o.resyncJobs + 3;  // and warm-up, after-kill, after-term
  Replica d(o, "d");
  r.resync = Resync(d, r.total, o, &r.cpu, &r.rss);
  return true;
}

// The report and its verdicts; true when every target is met.
bool Report(const Options& o, const Results& r) {
  const double killTarget = o.leaseSeconds + 2;
  std::printf(
      "\nfailover: leader-elected replicas (--lease-duration=%.0fs --renew-deadline=%.0fs "
      "--retry-period=%.0fs), test backend; %u CPUs, load %s\n",
      o.leaseSeconds, o.renewSeconds, o.retrySeconds, std::thread::hardware_concurrency(),
      bench::LoadAverage().c_str());
  Verdict("SIGKILL of the leader -> first write of the new leader", r.killed, killTarget);
  if (!r.killedByStandby) std::printf("    (the standby did not report leading afterwards)\n");
  Verdict("SIGTERM of the leader -> first write of the standby", r.handed, o.gracefulTargetSeconds);
  if (!r.handedToC) std::printf("    (the standby did not report leading afterwards)\n");
  std::printf("  restarted replica, %d Jobs: CPU %.2f s, RSS %.1f MiB until re-observed\n", r.total,
              r.cpu, static_cast<double>(r.rss) / 1024);
  Verdict("restarted replica -> every Job re-observed", r.resync, o.resyncTargetSeconds);
  return r.killed >= 0 && r.killed <= killTarget && r.handed >= 0 &&
         r.handed <= o.gracefulTargetSeconds && r.resync >= 0 && r.resync <= o.resyncTargetSeconds;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Failover and resync of leader-elected ayatori-controller replicas"};
  app.add_option("--kubeconfig", o.kubeconfig, "kubeconfig of the test API server")->required();
  app.add_option("--controller", o.controller, "ayatori-controller binary")->required();
  app.add_option("--namespace", o.ns, "namespace of the Jobs");
  app.add_option("--lease-seconds", o.leaseSeconds, "--lease-duration of the replicas");
  app.add_option("--renew-seconds", o.renewSeconds, "--renew-deadline of the replicas");
  app.add_option("--retry-seconds", o.retrySeconds, "--retry-period of the replicas");
  app.add_option("--resync-jobs", o.resyncJobs, "finished Jobs for the resync")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--creators", o.creators, "threads creating Jobs")->check(CLI::Range(1, 512));
  app.add_option("--qps", o.qps, "client QPS of the creator");
  app.add_option("--burst", o.burst, "client burst of the creator");
  app.add_option("--timeout", o.timeoutSeconds, "seconds to wait for each phase");
  app.add_option("--log-dir", o.logDir, "where the controllers' logs go");
  CLI11_PARSE(app, argc, argv);

  auto config = bench::LoadKubeconfigOrReport("failover-bench", o.kubeconfig);
  if (!config) return 2;
  auto client = bench::NewClient(*config, o.qps, o.burst, "ayatori-failover-bench");
  if (!CreateFixtures(*client, o)) return 1;
  Results r;
  Replica a(o, "a"), b(o, "b");
  Replica* standby = MeasureKill(*client, o, a, b, r);
  if (!standby) return 1;
  Replica c(o, "c");
  MeasureHandover(*client, o, *standby, c, r);
  if (!MeasureResync(*client, o, c, r)) return 1;
  return Report(o, r) ? 0 : 1;
}
