// Throughput and cost of Ayatori Jobs on the Kubernetes backend against native batch/v1 Jobs, on
// one control plane (the e2e tier of hack/testenv: kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok) in one run. Started by hack/bench-kubernetes.sh, which also starts the
// ayatori-controller whose pid and metrics address it passes here.
//
// After an unmeasured warm-up round of --warmup Jobs per side, each side creates N Jobs at once
// (several threads sharing one client limited to --qps/--burst) in a namespace of its own, each pod
// running TESTENV_RUN_FOR (kwok), and watches them until all finished:
//   native   batch/v1 Jobs (backoffLimit 0, restartPolicy Never, the same container and env);
//   ayatori  execution.ayatori.ddupan.top Jobs of --job-class (controllerName .../kubernetes),
//            which the controller turns into the same batch/v1 Jobs.
// and reports: Jobs/s from the first create to the last Job seen finished; create->start
// latency (server timestamps, 1 s resolution; and watch receive times, ms); API requests per Job
// from kube-apiserver's apiserver_request_total (all clients: creator, controller, KCM, scheduler,
// kwok), split into writes and reads; the controller's own requests and Job writes from its
// /metrics; the controller's RSS and RSS per cached Job; kube-controller-manager's RSS while the
// native side runs. Ratios are printed against the targets of docs/design.md.
//
// "Started" as a watcher sees it (the create->started rows and their targets): from the answer to
// the create request to the first watch event, received by this program, that says the task runs:
//   native   a pod of the batch Job whose container is running (state.running.startedAt, or
//            state.terminated.startedAt when the first event seen is already the end). batch/v1
//            has nothing earlier on the Job itself: status.startTime and status.active are set
//            when the Job controller creates the pod, before it runs; status.ready follows the
//            pod's readiness, later than the pod event.
//   ayatori  the Ayatori Job with status.startTime (written with Succeeded=Unknown/Running, or
//            with the result when the start and the end are seen together): what a user of
//            Ayatori watches. Its pod's running event is recorded too, and the gap between the two
//            is printed ("pod running -> Job startTime").
// So Ayatori is held to the earliest signal native offers; its own status comes one write later.
// The targets: p50 and p99 each <= 1.5x native, with throughput >= 1.0x native, in one run at the
// same client QPS (the controller's and kube-controller-manager's --kube-api-qps/-burst).
//
// The side "queued" (--sides=...,ayatori,queued; hack/bench-kubernetes.sh with QUEUED=1, the
// controller started with --kueue beside a real Kueue): the Ayatori side's Jobs labelled with a
// LocalQueue of ClusterQueue --cluster-queue, which this program creates with room for every Job
// at once (pods quota max(N, warm-up)), so Kueue admits each Workload as soon as it sees it. Its
// targets, against the unqueued Ayatori side of the same run: the controller's writes to the Job
// and to its Workload (ayatori_job_api_writes_total, every kind) <= 9 per Job, and create->started
// (watch) p50 <= 1.5x unqueued.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ayatori/kube_client.h"
#include "base/time.h"
#include "bench/common/api_client.h"
#include "bench/common/kueue_queues.h"
#include "bench/common/parallel.h"
#include "bench/common/process_stats.h"
#include "bench/common/prometheus_text.h"
#include "bench/common/report.h"
#include "controller/kinds.h"
#include "kube/config.h"
#include "kube/http.h"
#include "kube/resource.h"
#include "kube/rest_client.h"

namespace {

using nlohmann::json;
using namespace ayatori;               // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)
using bench::CpuSeconds;
using bench::MachineCpu;
using bench::MetOrMissed;
using bench::ParseMetric;
using bench::Percentile;
using bench::RssKiB;

const ResourceRef& kAyatoriJobs = controller::kJobs;
const ResourceRef kBatchJobs = kube::BatchJobsResource();
const ResourceRef kPods = kube::PodsResource();
using controller::kNamespaces;
constexpr const char* kControllerReporter = "execution.ayatori.ddupan.top/controller";

struct Options {
  std::string kubeconfig;
  int n = 1000;
  int warmup = 100;  // Jobs per side in a first, unmeasured round
  double qps = 100;
  int burst = 200;
  int creators = 16;
  std::string runFor = "1s";
  std::string jobClass = "kubernetes-bench";
  std::string image = "busybox:1.36";
  // A real node (hack/testenv/realnode.sh): the pods of both sides select it and tolerate its
  // taint, and run `command` for real; empty: kwok's node.
  std::string nodeSelector;  // KEY=VALUE
  std::string toleration;    // a taint key, tolerated with Exists / NoSchedule
  std::string command = "true";
  std::string sides = "native,ayatori";
  int controllerPid = 0;
  std::string controllerMetrics;  // host:port
  int kcmPid = 0;
  std::string controllerFlags;  // for the report only
  std::string kcmFlags;         // for the report only
  int timeoutSeconds = 900;
  std::string processes;                      // "name:pid,name:pid", for CPU time per component
  std::string clusterQueue = "bench-queued";  // the side "queued": its ClusterQueue and LocalQueues
};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Seconds since the epoch of an RFC 3339 time, -1 when absent or malformed.
int64_t Seconds(const std::string& t) {
  auto tp = base::ParseTime(t);
  if (!tp.ok()) return -1;
  return std::chrono::duration_cast<std::chrono::seconds>(tp->time_since_epoch()).count();
}

std::string Str(const json& j, const char* pointer) {
  json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return "";
  const json& v = j.at(p);
  return v.is_string() ? v.get_ref<const std::string&>() : "";
}

// "True"/"False"/"Unknown"/"" of the condition `type`.
std::string ConditionStatus(const json& object, const std::string& type) {
  json::json_pointer p("/status/conditions");
  if (!object.contains(p) || !object.at(p).is_array()) return "";
  for (const auto& c : object.at(p)) {
    if (c.is_object() && Str(c, "/type") == type) return Str(c, "/status");
  }
  return "";
}

// apiserver_request_total summed by "VERB resource[/subresource]".
std::map<std::string, double> RequestsByVerbResource(const std::string& text) {
  std::map<std::string, double> out;
  for (const auto& s : ParseMetric(text, "apiserver_request_total")) {
    auto get = [&](const char* k) {
      auto it = s.labels.find(k);
      return it == s.labels.end() ? std::string() : it->second;
    };
    std::string resource = get("resource");
    if (resource.empty()) resource = "<non-resource>";
    if (!get("subresource").empty()) resource += "/" + get("subresource");
    out[get("verb") + " " + resource] += s.value;
  }
  return out;
}

bool IsWriteVerb(const std::string& verb) {
  return verb == "POST" || verb == "PUT" || verb == "PATCH" || verb == "DELETE" ||
         verb == "DELETECOLLECTION" || verb == "APPLY" || verb == "CREATE" || verb == "UPDATE";
}

// ---------------------------------------------------------------------------------------------
// Per-Job timing, filled by the watches.

struct JobTimes {
  int64_t sentMs = -1;           // the create request was issued
  int64_t createdMs = -1;        // its response arrived
  int64_t creationTs = -1;       // metadata.creationTimestamp (s)
  int64_t startTs = -1;          // Ayatori: status.startTime; native: the container's startedAt (s)
  int64_t startSeenMs = -1;      // Ayatori: the Job with startTime arrived; native: = podRunningMs
  int64_t podRunningMs = -1;     // a pod event showing the container running (or done) arrived
  int64_t batchSeenMs = -1;      // Ayatori: its batch Job was first seen (watch)
  int64_t scheduledSeenMs = -1;  // Ayatori: the Job with Scheduled=True arrived (watch)
  int64_t doneSeenMs = -1;       // the Job was seen finished
  bool failed = false;
};

class Tracker {
 public:
  explicit Tracker(int n) : n_(n) {}

  void Sent(const std::string& name, int64_t sent, int64_t created) {
    std::lock_guard lock(mu_);
    auto& t = jobs_[name];
    t.sentMs = sent;
    t.createdMs = created;
  }

  // An Ayatori Job (ayatori=true) or a batch Job.
  void OnJob(const json& object, bool ayatori) {
    const int64_t now = NowMs();
    const std::string name = Str(object, "/metadata/name");
    std::lock_guard lock(mu_);
    auto& t = jobs_[name];
    if (t.creationTs < 0) t.creationTs = Seconds(Str(object, "/metadata/creationTimestamp"));
    if (ayatori && t.scheduledSeenMs < 0 && ConditionStatus(object, "Scheduled") == "True") {
      t.scheduledSeenMs = now;
    }
    if (ayatori && t.startSeenMs < 0 && !Str(object, "/status/startTime").empty()) {
      t.startSeenMs = now;
      t.startTs = Seconds(Str(object, "/status/startTime"));
    }
    if (t.doneSeenMs >= 0) return;
    std::string ok = ConditionStatus(object, ayatori ? "Succeeded" : "Complete");
    bool failed = ayatori ? ok == "False" : ConditionStatus(object, "Failed") == "True";
    if (ok == "True" || failed) {
      t.doneSeenMs = now;
      t.failed = failed;
      ++finished_;
      if (failed) ++failed_;
      cv_.notify_all();
    }
  }

  // Ayatori: a batch Job the controller created, named by the Ayatori Job's name label.
  void OnBatchJobOfAyatori(const json& object) {
    const int64_t now = NowMs();
    std::string job = Str(object, "/metadata/labels/execution.ayatori.ddupan.top~1job-name");
    if (job.empty()) return;
    std::lock_guard lock(mu_);
    auto& t = jobs_[job];
    if (t.batchSeenMs < 0) t.batchSeenMs = now;
  }

  // Pods name their Job through a label: the Ayatori Job's name, else the batch Job's.
  void OnPod(const json& pod, bool ayatori) {
    const int64_t now = NowMs();
    std::string job = ayatori ? Str(pod, "/metadata/labels/execution.ayatori.ddupan.top~1job-name")
                              : Str(pod, "/metadata/labels/batch.kubernetes.io~1job-name");
    if (job.empty()) return;
    std::string started = Str(pod, "/status/containerStatuses/0/state/running/startedAt");
    if (started.empty())
      started = Str(pod, "/status/containerStatuses/0/state/terminated/startedAt");
    if (started.empty()) return;
    std::lock_guard lock(mu_);
    auto& t = jobs_[job];
    if (t.podRunningMs >= 0) return;
    t.podRunningMs = now;
    if (!ayatori) {
      t.startSeenMs = now;
      t.startTs = Seconds(started);
    }
  }

  // Waits until every Job finished or `deadline` passes; true when all finished.
  bool WaitAll(std::chrono::steady_clock::time_point deadline, int* finished) {
    std::unique_lock lock(mu_);
    bool all = cv_.wait_until(lock, deadline, [&] { return finished_ >= n_; });
    *finished = finished_;
    return all;
  }

  int finished() {
    std::lock_guard lock(mu_);
    return finished_;
  }
  int failed() {
    std::lock_guard lock(mu_);
    return failed_;
  }
  std::unordered_map<std::string, JobTimes> Snapshot() {
    std::lock_guard lock(mu_);
    return jobs_;
  }

 private:
  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, JobTimes> jobs_;
  int finished_ = 0;
  int failed_ = 0;
};

// List, then watch from the list's resourceVersion, again and again until stopped: every object
// of `ref` in `ns` passes through `visit` as it is first listed and on every change. `listed`
// counts down once, after the first list.
void WatchLoop(KubeClient& client, const ResourceRef& ref, const std::string& ns,
               const std::stop_token& stop, const std::function<void(const json&)>& visit,
               std::latch& listed) {
  std::string rv;
  bool firstList = true;
  while (!stop.stop_requested()) {
    if (rv.empty()) {
      auto list = client.List(ref, ns, {});
      if (!list.ok()) {
        std::this_thread::sleep_for(200ms);  // retry pacing, not synchronisation
        continue;
      }
      for (const auto& item : list->items) visit(item);
      rv = list->resourceVersion;
      if (firstList) listed.count_down();
      firstList = false;
    }
    WatchOptions wo;
    wo.resourceVersion = rv;
    wo.timeoutSeconds = 1800;
    Status s = client.Watch(ref, ns, wo, stop, [&](WatchEvent&& e) {
      std::string next = Str(e.object, "/metadata/resourceVersion");
      if (!next.empty()) rv = next;
      if (e.type != WatchEventType::kBookmark && e.type != WatchEventType::kDeleted) {
        visit(e.object);
      }
      return true;
    });
    if (s.code() == StatusCode::kGone) rv.clear();
    if (!s.ok() && !stop.stop_requested()) std::this_thread::sleep_for(100ms);
  }
}

// ---------------------------------------------------------------------------------------------
// Manifests.

json Container(const Options& o) {
  return {{"name", "main"},
          {"image", o.image},
          {"command", {"/bin/sh", "-c", o.command}},
          {"env", json::array({json{{"name", "TESTENV_RUN_FOR"}, {"value", o.runFor}}})}};
}

// The native pods' placement on the real node: what the Ayatori side's class sets. No service
// account token either, as the Ayatori side's pods (its default): the test control plane runs no
// root-ca-cert-publisher, so the kubelet could not mount the token's kube-root-ca.crt.
void PlaceOnNode(const Options& o, json* podSpec) {
  if (const size_t eq = o.nodeSelector.find('='); eq != std::string::npos) {
    (*podSpec)["nodeSelector"] = {{o.nodeSelector.substr(0, eq), o.nodeSelector.substr(eq + 1)}};
    (*podSpec)["automountServiceAccountToken"] = false;
  }
  if (!o.toleration.empty()) {
    (*podSpec)["tolerations"] =
        json::array({{{"key", o.toleration}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  }
}

json NativeJob(const Options& o, const std::string& ns, const std::string& name) {
  json podSpec = {{"restartPolicy", "Never"}, {"containers", json::array({Container(o)})}};
  PlaceOnNode(o, &podSpec);
  json spec = {{"backoffLimit", 0}, {"template", {{"spec", podSpec}}}};
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", spec}};
}

// An Ayatori Job; `queued`: labelled with the LocalQueue --cluster-queue of its namespace.
json AyatoriJob(const Options& o, const std::string& ns, const std::string& name, bool queued) {
  json c = Container(o);
  json task = {{"image", c["image"]}, {"command", c["command"]}, {"env", c["env"]}};
  json spec = {{"jobClassName", o.jobClass}, {"task", task}};
  json metadata = {{"name", name}, {"namespace", ns}};
  if (queued) metadata["labels"] = {{bench::kQueueNameLabel, o.clusterQueue}};
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "Job"},
          {"metadata", metadata},
          {"spec", spec}};
}

// ---------------------------------------------------------------------------------------------
// Measurements around a side.

struct Scrapes {
  std::map<std::string, double> apiserver;  // by "VERB resource"
  std::string controller;                   // its /metrics text
};

class Probe {
 public:
  Probe(const kube::RestConfig& config, const Options& o) : options_(o), server_(config.server) {
    apiserver_ = kube::NewCurlTransport(config, {});
    if (!o.controllerMetrics.empty()) {
      kube::RestConfig plain;
      plain.server = "http://" + o.controllerMetrics;
      controller_ = kube::NewCurlTransport(plain, {});
    }
    bearer_ = config.bearerToken;
  }

  std::string Get(kube::HttpTransport& t, const std::string& url, bool auth) {
    kube::HttpRequest r;
    r.method = "GET";
    r.url = url;
    r.timeout = 30s;
    if (auth && !bearer_.empty()) r.headers.emplace_back("Authorization", "Bearer " + bearer_);
    auto resp = t.Do(r);
    if (!resp.ok() || resp->status != 200) {
      std::fprintf(
          stderr, "bench: GET %s failed: %s\n", url.c_str(),
          resp.ok() ? std::to_string(resp->status).c_str() : resp.status().ToString().c_str());
      return "";
    }
    return resp->body;
  }

  std::string ScrapeController() {
    return controller_
               ? Get(*controller_, "http://" + options_.controllerMetrics + "/metrics", false)
               : "";
  }

  Scrapes Scrape() {
    Scrapes s;
    s.apiserver = RequestsByVerbResource(Get(*apiserver_, server_ + "/metrics", true));
    if (controller_)
      s.controller = Get(*controller_, "http://" + options_.controllerMetrics + "/metrics", false);
    return s;
  }

 private:
  const Options& options_;
  std::string server_;
  std::string bearer_;
  std::unique_ptr<kube::HttpTransport> apiserver_;
  std::unique_ptr<kube::HttpTransport> controller_;
};

// Peak RSS of a process while a side runs.
class RssSampler {
 public:
  explicit RssSampler(int pid)
      : pid_(pid), thread_([this](const std::stop_token& stop) {
          while (!stop.stop_requested()) {
            int64_t r = RssKiB(pid_);
            int64_t p = peak_.load();
            while (r > p && !peak_.compare_exchange_weak(p, r)) {
            }
            std::this_thread::sleep_for(200ms);
          }
        }) {}
  int64_t peak() const { return peak_.load(); }

 private:
  int pid_;
  std::atomic<int64_t> peak_{-1};
  std::jthread thread_;
};

struct SideResult {
  std::string name;
  bool ayatori = false;
  bool queued = false;  // Ayatori Jobs through Kueue (the side "queued")
  int n = 0, finished = 0, failed = 0, createErrors = 0;
  double wallSeconds = 0, jobsPerSecond = 0;
  double createSeconds = 0;  // first create sent -> last create answered
  std::vector<double> startServerS, startWatchMs, podToStatusMs;
  std::vector<double> doneWatchMs;      // create answered -> finished seen, both sides
  std::vector<double> podRunningMs;     // create answered -> pod running seen, both sides
  std::vector<double> batchSeenMs;      // Ayatori: create answered -> its batch Job seen
  std::vector<double> scheduledSeenMs;  // Ayatori: create answered -> Scheduled=True seen
  std::map<std::string, double> apiDelta;
  double writes = 0, reads = 0;
  // Ayatori only.
  double controllerRequests = 0, controllerWrites = 0, controllerReads = 0, jobWrites = 0;
  double reportsDeferred = 0;      // ayatori_execution_reports_deferred_total
  double acceptancesDeferred = 0;  // ayatori_acceptances_deferred_total
  std::map<std::string, double> jobWritesByKind, controllerByVerb;
  std::map<std::string, double> eventsByReporter;  // Event objects in the namespace
  int64_t controllerRssBefore = -1, controllerRssAfter = -1, controllerRssPeak = -1;
  int64_t kcmRssBefore = -1, kcmRssPeak = -1, kcmRssAfter = -1;
  std::map<std::string, double> cpuSeconds;  // per --process, during the side
  double machineBusy = 0, machineTotal = 0;  // CPU seconds of all cores during the side
  double reconciles = 0, reconcileSeconds = 0;
};

std::map<std::string, double> Delta(const std::map<std::string, double>& before,
                                    const std::map<std::string, double>& after) {
  std::map<std::string, double> d;
  for (const auto& [k, v] : after) {
    auto it = before.find(k);
    double x = v - (it == before.end() ? 0 : it->second);
    if (x != 0) d[k] = x;
  }
  return d;
}

// Retried a few times: on a loaded machine a pooled connection the server closed fails the first
// request after a long pause (the other side's run).
Status CreateNamespace(KubeClient& client, const std::string& ns) {
  json o = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
  Status last;
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto r = client.Create(kNamespaces, "", o, {});
    if (r.ok() || r.status().code() == StatusCode::kAlreadyExists) return Status::Ok();
    last = r.status();
    std::this_thread::sleep_for(500ms);  // retry pacing, not synchronisation
  }
  return last;
}

// Waits until the controller has nothing left to do for the Jobs: its workqueue is empty and its
// request counter (status writes, Events written in the background) stopped moving for a second.
void WaitControllerIdle(Probe& probe, const Options& o) {
  if (o.controllerMetrics.empty()) return;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  double lastRequests = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string m = probe.ScrapeController();
    auto depth = ParseMetric(m, "ayatori_workqueue_depth");
    double requests = 0;
    for (const auto& sample : ParseMetric(m, "ayatori_api_requests_total")) {
      requests += sample.value;
    }
    if (!depth.empty() && depth[0].value == 0 && requests == lastRequests) return;
    lastRequests = requests;
    std::this_thread::sleep_for(1s);
  }
}

// Events in `ns` by reporting controller (events.k8s.io/v1 reportingController, or the source
// component of core/v1 Events).
std::map<std::string, double> EventsByReporter(KubeClient& client, const std::string& ns) {
  static const ResourceRef kEvents = kube::EventsResource();
  std::map<std::string, double> out;
  ListOptions lo;
  lo.limit = 500;
  auto rv = ListAll(client, kEvents, ns, lo, [&](json&& e) {
    std::string who = Str(e, "/reportingController");
    if (who.empty()) who = Str(e, "/deprecatedSource/component");
    if (who.empty()) who = "<unknown>";
    out[who] += 1;
  });
  if (!rv.ok()) std::fprintf(stderr, "bench: listing events: %s\n", rv.status().ToString().c_str());
  return out;
}

std::vector<std::pair<std::string, int>> Processes(const Options& o) {
  std::vector<std::pair<std::string, int>> out = {{"kubernetes_bench (this)", getpid()}};
  std::stringstream list(o.processes);
  for (std::string p; std::getline(list, p, ',');) {
    size_t colon = p.rfind(':');
    if (colon == std::string::npos) continue;
    out.emplace_back(p.substr(0, colon), std::atoi(p.c_str() + colon + 1));
  }
  return out;
}

// The watches of a side: its Jobs, their pods and (Ayatori) the batch Jobs the controller makes,
// each counting `listed` down after its first list.
std::vector<std::jthread> StartWatches(KubeClient& watcher, bool ayatori, const std::string& ns,
                                       Tracker& tracker, std::latch& listed) {
  std::vector<std::jthread> watches;
  watches.emplace_back([&watcher, &ns, &tracker, &listed, ayatori](const std::stop_token& stop) {
    WatchLoop(
        watcher, ayatori ? kAyatoriJobs : kBatchJobs, ns, stop,
        [&](const json& j) { tracker.OnJob(j, ayatori); }, listed);
  });
  watches.emplace_back([&watcher, &ns, &tracker, &listed, ayatori](const std::stop_token& stop) {
    WatchLoop(
        watcher, kPods, ns, stop, [&](const json& p) { tracker.OnPod(p, ayatori); }, listed);
  });
  if (ayatori) {  // where the time before the start goes: until the batch Job exists
    watches.emplace_back([&watcher, &ns, &tracker, &listed](const std::stop_token& stop) {
      WatchLoop(
          watcher, kBatchJobs, ns, stop, [&](const json& j) { tracker.OnBatchJobOfAyatori(j); },
          listed);
    });
  }
  return watches;
}

// Waits until every watch has its first list, at most 60 s (a list that keeps failing must not
// hang the benchmark); false on timeout.
bool WaitListed(std::latch& listed) {
  const auto listDeadline = std::chrono::steady_clock::now() + 60s;
  while (!listed.try_wait()) {
    if (std::chrono::steady_clock::now() >= listDeadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// CPU seconds used so far by each --processes process and by the machine.
struct CpuUse {
  std::map<std::string, double> processes;
  std::pair<double, double> machine;  // busy, total
};

CpuUse ReadCpuUse(const Options& o) {
  CpuUse u;
  for (const auto& [name, pid] : Processes(o)) u.processes[name] = CpuSeconds(pid);
  u.machine = MachineCpu();
  return u;
}

// The CPU seconds used since `before`, into `r`.
void AddCpuSince(const Options& o, CpuUse before, SideResult& r) {
  for (const auto& [name, pid] : Processes(o)) {
    r.cpuSeconds[name] = CpuSeconds(pid) - before.processes[name];
  }
  auto machineAfter = MachineCpu();
  r.machineBusy = machineAfter.first - before.machine.first;
  r.machineTotal = machineAfter.second - before.machine.second;
}

// Creates Job `name` (5 attempts); on success records its times in `tracker` and moves
// `lastCreated` up to the answer's time; counts failed attempts in `errors`.
void CreateJob(KubeClient& creator, const ResourceRef& ref, const std::string& ns,
               const std::string& name, const json& object, Tracker& tracker,
               std::atomic<int64_t>& lastCreated, std::atomic<int>& errors) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    int64_t sent = NowMs();
    auto created = creator.Create(ref, ns, object, {});
    int64_t done = NowMs();
    if (created.ok() || created.status().code() == StatusCode::kAlreadyExists) {
      tracker.Sent(name, sent, done);
      int64_t prev = lastCreated.load();
      while (done > prev && !lastCreated.compare_exchange_weak(prev, done)) {
      }
      return;
    }
    ++errors;
    std::fprintf(stderr, "bench: create %s: %s\n", name.c_str(),
                 created.status().ToString().c_str());
    std::this_thread::sleep_for(200ms);
  }
}

// Creates the side's N Jobs b-0 .. b-(N-1) with --creators threads; firstSent: when it began.
void CreateJobs(const Options& o, bool ayatori, KubeClient& creator, Tracker& tracker,
                const std::string& ns, int64_t firstSent, SideResult& r) {
  std::atomic<int> errors{0};
  std::atomic<int64_t> lastCreated{0};
  bench::ParallelFor(o.n, o.creators, [&](int i) {
    const std::string name = "b-" + std::to_string(i);
    json object = ayatori ? AyatoriJob(o, ns, name, r.queued) : NativeJob(o, ns, name);
    CreateJob(creator, ayatori ? kAyatoriJobs : kBatchJobs, ns, name, object, tracker, lastCreated,
              errors);
  });
  r.createErrors = errors.load();
  r.createSeconds = static_cast<double>(lastCreated.load() - firstSent) / 1000.0;
  std::fprintf(stderr, "bench: %s: created in %.1f s, waiting for completion\n", r.name.c_str(),
               r.createSeconds);
}

// Waits until every Job finished or --timeout passed, saying the count every 10 s.
void WaitFinished(const Options& o, Tracker& tracker, SideResult& r) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeoutSeconds);
  int finished = 0;
  while (!tracker.WaitAll(std::min(deadline, std::chrono::steady_clock::now() + 10s), &finished)) {
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::fprintf(stderr, "bench: %s: %d/%d finished\n", r.name.c_str(), finished, o.n);
  }
  r.finished = finished;
  r.failed = tracker.failed();
}

// Appends to.ms - from.ms to `out` when both were seen.
void AddGap(std::vector<double>& out, int64_t from, int64_t to) {
  if (from >= 0 && to >= 0) out.push_back(static_cast<double>(to - from));
}

// The latencies of every Job and the side's throughput, from the watches' times.
void CollectLatencies(const std::unordered_map<std::string, JobTimes>& jobs, bool ayatori,
                      int64_t firstSent, SideResult& r) {
  int64_t lastDone = firstSent;
  for (const auto& [name, t] : jobs) {
    if (t.doneSeenMs > lastDone) lastDone = t.doneSeenMs;
    AddGap(r.startServerS, t.creationTs, t.startTs);
    AddGap(r.startWatchMs, t.createdMs, t.startSeenMs);
    AddGap(r.doneWatchMs, t.createdMs, t.doneSeenMs);
    if (ayatori) AddGap(r.podToStatusMs, t.podRunningMs, t.startSeenMs);
    AddGap(r.podRunningMs, t.createdMs, t.podRunningMs);
    AddGap(r.batchSeenMs, t.createdMs, t.batchSeenMs);
    AddGap(r.scheduledSeenMs, t.createdMs, t.scheduledSeenMs);
  }
  r.wallSeconds = static_cast<double>(lastDone - firstSent) / 1000.0;
  r.jobsPerSecond = r.wallSeconds > 0 ? r.finished / r.wallSeconds : 0;
}

// The value of the first sample of `metric` (0 without one).
double FirstValue(const std::string& text, const char* metric) {
  auto samples = ParseMetric(text, metric);
  return samples.empty() ? 0.0 : samples[0].value;
}

// The controller's requests, Job writes and reconciles between its two /metrics texts.
void CountControllerRequests(const std::string& before, const std::string& after, SideResult& r) {
  const char* requests = "ayatori_api_requests_total";
  const char* jobWrites = "ayatori_job_api_writes_total";
  r.controllerByVerb = Delta(bench::SumByLabel(before, requests, "verb"),
                             bench::SumByLabel(after, requests, "verb"));
  for (const auto& [verb, v] : r.controllerByVerb) {
    r.controllerRequests += v;
    (bench::IsControllerWriteVerb(verb) ? r.controllerWrites : r.controllerReads) += v;
  }
  r.jobWritesByKind = Delta(bench::SumByLabel(before, jobWrites, "kind"),
                            bench::SumByLabel(after, jobWrites, "kind"));
  for (const auto& [kind, v] : r.jobWritesByKind) r.jobWrites += v;
  auto growth = [&](const char* metric) {
    return FirstValue(after, metric) - FirstValue(before, metric);
  };
  r.reconciles = growth("ayatori_reconcile_duration_seconds_count");
  r.reconcileSeconds = growth("ayatori_reconcile_duration_seconds_sum");
  r.reportsDeferred = growth("ayatori_execution_reports_deferred_total");
  r.acceptancesDeferred = growth("ayatori_acceptances_deferred_total");
}

// The API server's requests (all clients) and the controller's between the two scrapes.
void CountRequests(const Scrapes& before, const Scrapes& after, SideResult& r) {
  r.apiDelta = Delta(before.apiserver, after.apiserver);
  for (const auto& [key, v] : r.apiDelta) {
    std::string verb = key.substr(0, key.find(' '));
    (IsWriteVerb(verb) ? r.writes : r.reads) += v;
  }
  if (!before.controller.empty() && !after.controller.empty()) {
    CountControllerRequests(before.controller, after.controller, r);
  }
}

// Its namespace and, for the side "queued", the namespace's LocalQueue; false (said) on failure.
bool PrepareNamespace(const Options& o, KubeClient& creator, const SideResult& r,
                      const std::string& ns) {
  Status s = CreateNamespace(creator, ns);
  if (s.ok() && r.queued) s = bench::CreateLocalQueue(creator, ns, o.clusterQueue);
  if (!s.ok()) std::fprintf(stderr, "bench: namespace %s: %s\n", ns.c_str(), s.ToString().c_str());
  return s.ok();
}

// `side`: native, ayatori or queued.
SideResult RunSide(const Options& o, const std::string& side, KubeClient& creator,
                   KubeClient& watcher, Probe& probe, const std::string& ns) {
  const bool ayatori = side != "native";
  SideResult r;
  r.name = side == "queued" ? "Ayatori queued (Kueue)"
                            : (ayatori ? "Ayatori (kubernetes)" : "native batch/v1");
  r.ayatori = ayatori;
  r.queued = side == "queued";
  r.n = o.n;
  std::fprintf(stderr, "bench: %s: %d Jobs in namespace %s\n", r.name.c_str(), o.n, ns.c_str());
  if (!PrepareNamespace(o, creator, r, ns)) return r;
  Tracker tracker(o.n);
  std::latch listed(ayatori ? 3 : 2);  // before the threads that count it down: it outlives them
  std::vector<std::jthread> watches = StartWatches(watcher, ayatori, ns, tracker, listed);
  // Every watch has its first list before the first create.
  if (!WaitListed(listed)) {
    std::fprintf(stderr, "bench: %s: the watches could not list %s within 60 s\n", r.name.c_str(),
                 ns.c_str());
    return r;
  }
  WaitControllerIdle(probe, o);
  r.controllerRssBefore = RssKiB(o.controllerPid);
  r.kcmRssBefore = RssKiB(o.kcmPid);
  Scrapes before = probe.Scrape();
  const CpuUse cpuBefore = ReadCpuUse(o);
  RssSampler controllerRss(o.controllerPid), kcmRss(o.kcmPid);
  const int64_t firstSent = NowMs();
  CreateJobs(o, ayatori, creator, tracker, ns, firstSent, r);
  WaitFinished(o, tracker, r);
  AddCpuSince(o, cpuBefore, r);
  for (auto& w : watches) w.request_stop();
  watches.clear();

  // Let the controller settle (last status writes, events) before counting its requests.
  WaitControllerIdle(probe, o);
  Scrapes after = probe.Scrape();
  r.controllerRssAfter = RssKiB(o.controllerPid);
  r.controllerRssPeak = std::max(controllerRss.peak(), r.controllerRssAfter);
  r.kcmRssAfter = RssKiB(o.kcmPid);
  r.kcmRssPeak = std::max(kcmRss.peak(), r.kcmRssAfter);
  CollectLatencies(tracker.Snapshot(), ayatori, firstSent, r);
  r.eventsByReporter = EventsByReporter(watcher, ns);
  CountRequests(before, after, r);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Report.

std::string Fixed(double v, int digits = 1) {
  if (v < 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Kib(int64_t kib) { return kib < 0 ? "-" : std::to_string(kib / 1024) + " MiB"; }

// "p50 / p99" of `v`, whole numbers.
std::string P50P99(const std::vector<double>& v) {
  return Fixed(Percentile(v, 0.5), 0) + " / " + Fixed(Percentile(v, 0.99), 0);
}

void PrintBreakdown(const SideResult& r, int n) {
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [k, v] : r.apiDelta) rows.emplace_back(v, k);
  std::sort(rows.rbegin(), rows.rend());
  std::printf("  %s: apiserver requests per Job by verb and resource (top 14)\n", r.name.c_str());
  for (size_t i = 0; i < rows.size() && i < 14; ++i) {
    std::printf("    %-48s %7.2f\n", rows[i].second.c_str(), rows[i].first / n);
  }
}

// The report's table: a row per measurement with the native side's value, the Ayatori side's
// and, for rows that compare, their ratio.
class Table {
 public:
  explicit Table(const std::vector<SideResult>& sides) {
    for (const auto& s : sides) {
      if (!s.queued) (s.ayatori ? ayatori_ : native_) = &s;  // "queued": its own section
    }
  }
  const SideResult* native() const { return native_; }
  const SideResult* ayatori() const { return ayatori_; }

  // `value` of each side, no ratio.
  template <typename Value>
  void Row(const std::string& label, Value value) const {
    Print(label, value, "");
  }
  // `value` of each side and the ratio of `number` of the Ayatori side to the native side's.
  template <typename Value, typename Number>
  void Compare(const std::string& label, Value value, Number number) const {
    std::string ratio;
    if (native_ && ayatori_ && number(*native_) > 0) {
      ratio = Fixed(number(*ayatori_) / number(*native_), 2) + "x";
    }
    Print(label, value, ratio);
  }

 private:
  template <typename Value>
  void Print(const std::string& label, Value value, const std::string& ratio) const {
    std::string ns = native_ ? value(*native_) : "-";
    std::string as = ayatori_ ? value(*ayatori_) : "-";
    std::printf("%-44s %18s %22s %8s\n", label.c_str(), ns.c_str(), as.c_str(), ratio.c_str());
  }

  const SideResult* native_ = nullptr;
  const SideResult* ayatori_ = nullptr;
};

void PrintHeader(const Options& o) {
  std::printf(
      "\nkubernetes bench: N=%d (after an unmeasured warm-up round of %d per side), "
      "TESTENV_RUN_FOR=%s, creator client qps %.0f burst %d (%d threads)\n",
      o.n, o.warmup, o.runFor.c_str(), o.qps, o.burst, o.creators);
  if (!o.controllerFlags.empty())
    std::printf("  ayatori-controller %s\n", o.controllerFlags.c_str());
  if (!o.kcmFlags.empty()) std::printf("  kube-controller-manager %s\n", o.kcmFlags.c_str());
  std::printf("\n%-44s %18s %22s %8s\n", "", "native batch/v1", "Ayatori (kubernetes)", "ratio");
}

void PrintThroughputRows(const Table& t) {
  t.Row("Jobs finished / failed / create errors", [](const SideResult& s) {
    return std::to_string(s.finished) + "/" + std::to_string(s.failed) + "/" +
           std::to_string(s.createErrors);
  });
  t.Row("all created after (s)", [](const SideResult& s) { return Fixed(s.createSeconds); });
  t.Compare(
      "first create -> last finished (s)", [](const SideResult& s) { return Fixed(s.wallSeconds); },
      [](const SideResult& s) { return s.wallSeconds; });
  t.Compare(
      "Jobs/s to completion", [](const SideResult& s) { return Fixed(s.jobsPerSecond, 2); },
      [](const SideResult& s) { return s.jobsPerSecond; });
}

void PrintLatencyRows(const Table& t) {
  auto ayatoriOnly = [](std::vector<double> SideResult::*f) {
    return [f](const SideResult& s) { return s.ayatori ? P50P99(s.*f) : std::string("-"); };
  };
  t.Row("create->start p50 / p99 (s, server times)",
        [](const SideResult& s) { return P50P99(s.startServerS); });
  t.Compare(
      "create->start p50 / p99 (ms, watch)",
      [](const SideResult& s) { return P50P99(s.startWatchMs); },
      [](const SideResult& s) { return Percentile(s.startWatchMs, 0.5); });
  t.Compare(
      "  p99 ratio", [](const SideResult&) { return std::string(); },
      [](const SideResult& s) { return Percentile(s.startWatchMs, 0.99); });
  // The status says the execution exists in the round of its create (spec; issue 24): this row
  // stays close to the one below it.
  t.Row("  create->Scheduled=True written p50 / p99 (ms)",
        ayatoriOnly(&SideResult::scheduledSeenMs));
  t.Row("  create->batch Job seen p50 / p99 (ms)", ayatoriOnly(&SideResult::batchSeenMs));
  t.Compare(
      "  create->pod running seen p50 / p99 (ms)",
      [](const SideResult& s) { return P50P99(s.podRunningMs); },
      [](const SideResult& s) { return Percentile(s.podRunningMs, 0.5); });
  t.Row("  pod running -> Job startTime p50/p99 (ms)", ayatoriOnly(&SideResult::podToStatusMs));
}

void PrintRequestRows(const Table& t, int n) {
  auto ayatoriPerJob = [n](double SideResult::*f) {
    return
        [f, n](const SideResult& s) { return s.ayatori ? Fixed(s.*f / n, 2) : std::string("-"); };
  };
  t.Row("apiserver requests per Job (all clients)",
        [n](const SideResult& s) { return Fixed((s.writes + s.reads) / n, 2); });
  t.Compare(
      "  writes per Job", [n](const SideResult& s) { return Fixed(s.writes / n, 2); },
      [](const SideResult& s) { return s.writes; });
  t.Row("  reads per Job", [n](const SideResult& s) { return Fixed(s.reads / n, 2); });
  t.Row("controller requests per Job", ayatoriPerJob(&SideResult::controllerRequests));
  t.Row("  controller writes per Job", ayatoriPerJob(&SideResult::controllerWrites));
  t.Row("  controller reads per Job", ayatoriPerJob(&SideResult::controllerReads));
  t.Row("  ayatori_job_api_writes_total per Job", ayatoriPerJob(&SideResult::jobWrites));
  t.Row("  executions reported with a later write", ayatoriPerJob(&SideResult::reportsDeferred));
  t.Row("  acceptances carried by the create", ayatoriPerJob(&SideResult::acceptancesDeferred));
}

void PrintMemoryRows(const Table& t, int n) {
  t.Row("controller RSS before / after", [](const SideResult& s) {
    return Kib(s.controllerRssBefore) + " / " + Kib(s.controllerRssAfter);
  });
  t.Row("controller RSS peak", [](const SideResult& s) { return Kib(s.controllerRssPeak); });
  t.Row("kube-controller-manager RSS before / peak",
        [](const SideResult& s) { return Kib(s.kcmRssBefore) + " / " + Kib(s.kcmRssPeak); });
  t.Row("controller reconciles per Job, mean (ms)", [n](const SideResult& s) {
    if (!s.ayatori || s.reconciles <= 0) return std::string("-");
    return Fixed(s.reconciles / n, 2) + ", " + Fixed(1000 * s.reconcileSeconds / s.reconciles, 1);
  });
}

void PrintCpuRows(const Table& t, const Options& o) {
  t.Row("machine CPU busy (all cores)", [](const SideResult& s) {
    return s.machineTotal > 0 ? Fixed(100 * s.machineBusy / s.machineTotal, 0) + " %"
                              : std::string("-");
  });
  t.Row("  CPU s of other processes (not listed)", [](const SideResult& s) {
    double listed = 0;
    for (const auto& [name, v] : s.cpuSeconds) listed += v;
    return s.machineTotal > 0 ? Fixed(s.machineBusy - listed, 1) : std::string("-");
  });
  for (const auto& process : Processes(o)) {
    const std::string& name = process.first;  // not a structured binding: the lambda captures it
    t.Row("  CPU s of " + name, [&](const SideResult& s) {
      auto it = s.cpuSeconds.find(name);
      return it == s.cpuSeconds.end() ? std::string("-") : Fixed(it->second, 1);
    });
  }
  // On a machine whose cores are shared, the API server's CPU per Job is what a side costs the
  // control plane: when the API server is CPU-bound, it sets the pace of everything after it.
  auto apiserverMsPerJob = [&](const SideResult& s) {
    auto it = s.cpuSeconds.find("kube-apiserver");
    return it == s.cpuSeconds.end() ? -1.0 : 1000 * it->second / o.n;
  };
  t.Compare(
      "kube-apiserver CPU ms per Job",
      [&](const SideResult& s) { return Fixed(apiserverMsPerJob(s), 1); }, apiserverMsPerJob);
}

// The controller's requests and Job writes by kind, the Events, the API server's top requests.
void PrintBreakdowns(const Options& o, const std::vector<SideResult>& sides,
                     const SideResult* ayatori) {
  if (ayatori) {
    std::printf("\n  controller requests by verb: ");
    for (const auto& [verb, v] : ayatori->controllerByVerb) {
      std::printf("%s %.2f  ", verb.c_str(), v / o.n);
    }
    std::printf("(per Job)\n  ayatori_job_api_writes_total by kind: ");
    for (const auto& [kind, v] : ayatori->jobWritesByKind) {
      std::printf("%s %.2f  ", kind.c_str(), v / o.n);
    }
    std::printf("(per Job)\n");
  }
  for (const auto& s : sides) {
    std::printf("  %s: Events per Job by reporter: ", s.name.c_str());
    for (const auto& [who, v] : s.eventsByReporter) std::printf("%s %.2f  ", who.c_str(), v / o.n);
    std::printf("\n");
  }
  for (const auto& s : sides) PrintBreakdown(s, o.n);
}

// "create-><what> p50 and p99 <= <limit>x native (<how>)", from each side's latencies (ms).
void PrintPercentileTargets(const char* what, double limit, const char* how,
                            const std::vector<double>& native, const std::vector<double>& ayatori) {
  for (double p : {0.5, 0.99}) {
    const double nv = Percentile(native, p);
    const double av = Percentile(ayatori, p);
    if (nv <= 0 || av < 0) continue;
    const double ratio = av / nv;
    std::printf("  create->%s p%.0f <= %.1fx native (%s): %.2fx  %s  (%.1f s vs %.1f s)\n", what,
                p * 100, limit, how, ratio, MetOrMissed(ratio <= limit), av / 1000, nv / 1000);
  }
}

// The targets of the controller's writes and memory (the Ayatori side only).
void PrintControllerTargets(const Options& o, const SideResult& ayatori, const SideResult* native) {
  // The target (docs/design.md) counts what the controller writes through its API client:
  // Job status and finalizer, the batch Job, deletions. Its Events go through the recorder's
  // own client and rate limit; they are counted from the Events the API server holds and shown
  // beside it.
  const double w = ayatori.controllerWrites / o.n;
  auto ev = ayatori.eventsByReporter.find(kControllerReporter);
  const double events = ev == ayatori.eventsByReporter.end() ? 0 : ev->second / o.n;
  std::printf("  <= 6 writes per Job (controller's API client): %.2f  %s  (+ %.2f Events)\n", w,
              MetOrMissed(w <= 6), events);
  if (native) {
    std::printf("     apiserver-wide writes per Job: %.2f vs native %.2f (+%.2f)\n",
                ayatori.writes / o.n, native->writes / o.n,
                (ayatori.writes - native->writes) / o.n);
  }
  if (ayatori.controllerRssBefore > 0 && ayatori.controllerRssAfter > 0) {
    double perJob =
        static_cast<double>(ayatori.controllerRssAfter - ayatori.controllerRssBefore) / o.n;
    std::printf(
        "  <= 3 KiB controller RSS per cached Job: %.2f KiB  %s  (cache holds the Job, "
        "its batch Job and its pod)\n",
        perJob, MetOrMissed(perJob <= 3));
  }
}

void PrintTargets(const Options& o, const SideResult* native, const SideResult* ayatori) {
  std::printf("\ntargets (docs/design.md):\n");
  if (native && ayatori && native->jobsPerSecond > 0) {
    double ratio = ayatori->jobsPerSecond / native->jobsPerSecond;
    std::printf("  throughput >= 1.0x native:        %.2fx  %s\n", ratio,
                MetOrMissed(ratio >= 1.0));
  }
  if (native && ayatori) {
    PrintPercentileTargets("started", 1.5, "watch", native->startWatchMs, ayatori->startWatchMs);
  }
  // On a real node the pods really run: the whole life of a Job, create -> finished (Succeeded).
  if (native && ayatori && !o.nodeSelector.empty()) {
    PrintPercentileTargets("finished", 1.2, "real node, watch", native->doneWatchMs,
                           ayatori->doneWatchMs);
  }
  if (ayatori) PrintControllerTargets(o, *ayatori, native);
}

// The writes per queued Job and their target. The controller's API client writes the Job, its
// Workload and its batch Job: the Job and Workload writes are its writes less the batch Jobs it
// created (the API server's POST jobs of the side, less the side's N Ayatori Jobs). The target is
// judged on those requests; ayatori_job_api_writes_total is shown by kind beside them: it counts
// one per Workload action, and a Workload's Finish is two requests (Kueue's finalizer removed,
// then Finished=True; src/controller/workloads.h).
void PrintQueuedWrites(const Options& o, const SideResult& queued) {
  std::printf("  ayatori_job_api_writes_total by kind: ");
  for (const auto& [kind, v] : queued.jobWritesByKind) {
    std::printf("%s %.2f  ", kind.c_str(), v / o.n);
  }
  auto posts = queued.apiDelta.find("POST jobs");
  const double batchCreates =
      std::max(0.0, (posts == queued.apiDelta.end() ? 0.0 : posts->second) - o.n);
  const double writes = (queued.controllerWrites - batchCreates) / o.n;
  std::printf("(per Job; sum %.2f)\n", queued.jobWrites / o.n);
  std::printf(
      "  <= 9 writes per queued Job (Job and Workload, the controller's API requests): %.2f  %s  "
      "(all its writes %.2f, batch Job creates %.2f)\n",
      writes, MetOrMissed(writes <= 9), queued.controllerWrites / o.n, batchCreates / o.n);
}

// The side "queued" against the unqueued Ayatori side of the same run: its targets (writes to the
// Job and its Workload per Job <= 9; create->started p50 <= 1.5x unqueued) and the numbers.
void PrintQueuedTargets(const Options& o, const SideResult& queued, const SideResult* ayatori) {
  std::printf(
      "\nqueued through Kueue (ClusterQueue %s, pods quota >= N: never held back for quota):\n",
      o.clusterQueue.c_str());
  std::printf(
      "  Jobs finished / failed / create errors: %d/%d/%d; first create -> last finished %.1f s\n",
      queued.finished, queued.failed, queued.createErrors, queued.wallSeconds);
  PrintQueuedWrites(o, queued);
  const double q50 = Percentile(queued.startWatchMs, 0.5);
  const double q99 = Percentile(queued.startWatchMs, 0.99);
  if (ayatori == nullptr || ayatori->startWatchMs.empty() || q50 < 0) {
    std::printf("  create->started (watch) p50 %.0f ms p99 %.0f ms; no unqueued side to compare\n",
                q50, q99);
    return;
  }
  const double u50 = Percentile(ayatori->startWatchMs, 0.5);
  const double u99 = Percentile(ayatori->startWatchMs, 0.99);
  std::printf(
      "  create->started (watch) queued p50 %.0f ms p99 %.0f ms; unqueued p50 %.0f ms p99 %.0f "
      "ms\n",
      q50, q99, u50, u99);
  std::printf("  create->started p50 <= 1.5x unqueued: %.2fx  %s  (p99 %.2fx)\n", q50 / u50,
              MetOrMissed(q50 <= 1.5 * u50), q99 / u99);
}

void Report(const Options& o, const std::vector<SideResult>& sides) {
  const Table t(sides);
  PrintHeader(o);
  PrintThroughputRows(t);
  PrintLatencyRows(t);
  PrintRequestRows(t, o.n);
  PrintMemoryRows(t, o.n);
  PrintCpuRows(t, o);
  PrintBreakdowns(o, sides, t.ayatori());
  PrintTargets(o, t.native(), t.ayatori());
  for (const auto& s : sides) {
    if (s.queued) PrintQueuedTargets(o, s, t.ayatori());
  }
}

// The sides --sides names, in order; nullopt (said on stderr) when it names an unknown one.
std::optional<std::vector<std::string>> ParseSides(const std::string& list) {
  std::vector<std::string> sideNames;
  std::stringstream sides(list);
  for (std::string side; std::getline(sides, side, ',');) {
    if (side != "native" && side != "ayatori" && side != "queued") {
      std::fprintf(stderr, "bench: unknown side %s\n", side.c_str());
      return std::nullopt;
    }
    sideNames.push_back(side);
  }
  return sideNames;
}

// Warm-up, as any benchmark does: one-time costs (TLS connections filling the clients' pools,
// malloc arenas, informer and workqueue tables growing to their working size, the control
// plane's own caches) are paid here, not charged to the measured Jobs. Its Jobs stay in the
// cluster, so the measured round's cache sizes start from them.
void WarmUp(const Options& o, const std::vector<std::string>& sideNames, KubeClient& creator,
            KubeClient& watcher, Probe& probe, const std::string& suffix) {
  if (o.warmup <= 0) return;
  Options w = o;
  w.n = o.warmup;
  for (const auto& side : sideNames) {
    SideResult r = RunSide(w, side, creator, watcher, probe, "bench-" + side + "-warmup-" + suffix);
    std::fprintf(stderr, "bench: warm-up %s: %d/%d finished in %.1f s (not measured)\n",
                 r.name.c_str(), r.finished, w.n, r.wallSeconds);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Ayatori Jobs (Kubernetes backend) vs native batch/v1 Jobs on one control plane"};
  app.add_option("--kubeconfig", o.kubeconfig, "kubeconfig of the control plane")->required();
  app.add_option("--n", o.n, "Jobs per side")->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", o.warmup, "Jobs per side in a first round that is not measured")
      ->check(CLI::Range(0, 100000));
  app.add_option("--qps", o.qps, "client QPS of the creator (both sides)");
  app.add_option("--burst", o.burst, "client burst of the creator (both sides)");
  app.add_option("--creators", o.creators, "threads creating Jobs")->check(CLI::Range(1, 256));
  app.add_option("--run-for", o.runFor, "TESTENV_RUN_FOR of every pod (kwok)");
  app.add_option("--job-class", o.jobClass, "JobClass of the Ayatori Jobs (Kubernetes backend)");
  app.add_option("--image", o.image, "image of the task");
  app.add_option("--command", o.command, "the task's sh -c script (both sides)");
  app.add_option("--node-selector", o.nodeSelector,
                 "KEY=VALUE: the native pods' nodeSelector (a real node; the Ayatori side's "
                 "class must select the same)");
  app.add_option("--toleration", o.toleration, "a taint key the native pods tolerate");
  app.add_option("--sides", o.sides, "which sides, in order: native,ayatori");
  app.add_option("--controller-pid", o.controllerPid, "pid of ayatori-controller (for RSS)");
  app.add_option("--controller-metrics", o.controllerMetrics, "host:port of its /metrics");
  app.add_option("--kcm-pid", o.kcmPid, "pid of kube-controller-manager (for RSS)");
  app.add_option("--controller-flags", o.controllerFlags, "shown in the report");
  app.add_option("--kcm-flags", o.kcmFlags, "shown in the report");
  app.add_option("--timeout", o.timeoutSeconds, "seconds to wait for each side");
  app.add_option("--processes", o.processes, "NAME:PID,... whose CPU time to report");
  app.add_option("--cluster-queue", o.clusterQueue,
                 "the side queued: its ClusterQueue (created, room for every Job at once) and the "
                 "LocalQueue of its namespaces");
  CLI11_PARSE(app, argc, argv);

  auto config = bench::LoadKubeconfigOrReport("bench", o.kubeconfig);
  if (!config) return 2;
  auto creator = bench::NewClient(*config, o.qps, o.burst, "ayatori-bench-creator");
  auto watcher = bench::NewClient(*config, 1000, 1000, "ayatori-bench-watch");
  Probe probe(*config, o);

  const auto sideNames = ParseSides(o.sides);
  if (!sideNames) return 2;
  if (std::find(sideNames->begin(), sideNames->end(), "queued") != sideNames->end()) {
    Status s = bench::CreateClusterQueue(*creator, o.clusterQueue, std::max(o.n, o.warmup));
    if (!s.ok()) {
      std::fprintf(stderr, "bench: ClusterQueue %s: %s\n", o.clusterQueue.c_str(),
                   s.ToString().c_str());
      return 1;
    }
  }
  const std::string suffix = std::to_string(getpid());
  WarmUp(o, *sideNames, *creator, *watcher, probe, suffix);
  std::vector<SideResult> results;
  results.reserve(sideNames->size());
  for (const auto& side : *sideNames) {
    results.push_back(RunSide(o, side, *creator, *watcher, probe, "bench-" + side + "-" + suffix));
  }
  Report(o, results);
  for (const auto& r : results) {
    if (r.finished < o.n) return 1;
  }
  return 0;
}
