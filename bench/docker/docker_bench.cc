// bench_docker: latency of one trivial container through Ayatori versus `docker run --rm` on the
// same dockerd, in the same invocation (target: Ayatori p50 <= 1.5x docker run p50).
//
//   Ayatori     create a Job (image, command /bin/true) through the Kubernetes API and wait until
//               a watch reports Succeeded=True: create -> Succeeded, as a user waiting on
//               `kubectl wait` would see it.
//   docker run  `docker run --rm --network none IMAGE /bin/true` with the docker CLI: wall time
//               of the whole command (create, start, wait, remove), as a user would see it.
//   hardened    the same `docker run --rm` with the flags of the restricted security profile that
//               Ayatori's Jobs get by default (docs/security.md): --user, --cap-drop ALL,
//               --security-opt no-new-privileges, --pids-limit, --read-only, --tmpfs, --ulimit,
//               --init, --log-opt (target: Ayatori p50 <= 1.2x hardened docker run p50; and
//               <= 1.5x the bare one).
//
// One at a time, never concurrently, so latency is measured and not throughput; the kinds rotate
// (A B C, then B C A, then C A B, ...) so that drift of the machine affects all alike. The first
// `--warmup` rounds are not counted.
//
// Then under concurrency (target: Ayatori p50 <= 1.2x docker run p50): `--concurrent` Jobs
// created at once (one thread each, each measured from its own create to its Succeeded) against
// as many `docker run --rm` started at once, in `--concurrent-rounds` rounds per side ordered
// A B B A ... for the same reason. Needs a control plane, the CRDs, a Docker JobClass and a
// running ayatori-controller: hack/bench.sh sets all of that up.
//
// Queued through Kueue (--queue=NAME, hack/bench.sh with QUEUED=1: a real Kueue and the controller
// with --kueue): after the phases above, a ClusterQueue NAME with room for every Job (pods quota
// >= --jobs: Kueue never holds one back for quota) and a LocalQueue NAME in the namespace; then,
// one at a time, --jobs unqueued Jobs and --jobs Jobs labelled with the LocalQueue (after
// --warmup of each), timed from the create to the watch seeing status.startTime. Targets: queued
// create->started p50 <= 1.5x unqueued, and the controller's writes to the Job and its Workload
// (ayatori_job_api_writes_total of every kind, from --controller-metrics) <= 9 per queued Job.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/api_client.h"
#include "bench/common/kueue_queues.h"
#include "bench/common/objects.h"
#include "bench/common/prometheus_text.h"
#include "bench/common/report.h"
#include "controller/kinds.h"
#include "kube/config.h"
#include "kube/http.h"
#include "kube/resource.h"
#include "kube/rest_client.h"

extern char** environ;

namespace {

using namespace ayatori;  // NOLINT(google-build-using-namespace)
using Steady = std::chrono::steady_clock;
using Millis = std::chrono::duration<double, std::milli>;

using controller::kJobs;
using controller::kNamespaces;

struct Options {
  std::string kubeconfig;
  std::string ns = "bench-docker";
  std::string jobClass = "bench-docker";
  std::string image = "ayatori.local/busybox:1";
  std::string docker = "docker";
  int jobs = 50;
  int warmup = 3;
  int concurrent = 50;       // Jobs / docker runs at once in the concurrent phase; 0 skips it
  int concurrentRounds = 2;  // rounds per side
  int timeoutSeconds = 120;
  bool verbose = false;
  std::string queue;              // ClusterQueue and LocalQueue of the queued phase; "" skips it
  std::string controllerMetrics;  // host:port of the controller's /metrics (queued phase)
};

// The terminal Succeeded condition of a Job: "True", "False" or "" while it runs.
std::string SucceededStatus(const nlohmann::json& job) {
  const auto* conditions = job.contains("status") ? &job["status"] : nullptr;
  if (conditions == nullptr || !conditions->contains("conditions")) return "";
  for (const auto& c : (*conditions)["conditions"]) {
    if (c.value("type", "") != "Succeeded") continue;
    std::string s = c.value("status", "");
    return s == "Unknown" ? "" : s + "/" + c.value("reason", "");
  }
  return "";
}

// Watches the namespace's Jobs on its own thread and records when each one first appeared
// finished, and when it first appeared with status.startTime (started).
class FinishWatcher {
 public:
  FinishWatcher(kube::RestClient& client, std::string ns) : client_(client), ns_(std::move(ns)) {}
  ~FinishWatcher() { Stop(); }

  Status Start() {
    auto list = client_.List(kJobs, ns_, {});
    if (!list.ok()) return list.status();
    resourceVersion_ = list->resourceVersion;
    thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
    return Status::Ok();
  }

  void Stop() {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
  }

  // When `name` was first seen with status.startTime; nullopt on timeout.
  std::optional<Steady::time_point> WaitStarted(const std::string& name,
                                                std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    bool seen = cv_.wait_for(lock, timeout, [&] { return started_.count(name) > 0; });
    if (!seen) return std::nullopt;
    return started_[name];
  }

  // When `name` was seen finished, and how ("True/Completed"); nullopt on timeout.
  std::optional<std::pair<Steady::time_point, std::string>> WaitFinished(
      const std::string& name, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    bool done = cv_.wait_for(lock, timeout, [&] { return finished_.count(name) > 0; });
    if (!done) return std::nullopt;
    return finished_[name];
  }

 private:
  void Run(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      WatchOptions options;
      options.resourceVersion = resourceVersion_;
      options.allowWatchBookmarks = true;
      options.timeoutSeconds = 300;
      Status s = client_.Watch(kJobs, ns_, options, stop, [&](WatchEvent&& e) {
        auto at = Steady::now();
        resourceVersion_ =
            e.object.value("/metadata/resourceVersion"_json_pointer, resourceVersion_);
        if (e.type == WatchEventType::kAdded || e.type == WatchEventType::kModified) {
          Record(e.object, at);
        }
        return true;
      });
      if (!s.ok() && s.code() == StatusCode::kGone) {
        std::cerr << "bench_docker: watch expired (" << s.message() << "); relisting\n";
        auto list = client_.List(kJobs, ns_, {});
        if (list.ok()) resourceVersion_ = list->resourceVersion;
      } else if (!s.ok() && !stop.stop_requested()) {
        std::cerr << "bench_docker: watch ended: " << s.ToString() << "\n";
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }

  // The first sighting of `job` started and finished.
  void Record(const nlohmann::json& job, Steady::time_point at) {
    const std::string result = SucceededStatus(job);
    const bool started = job.contains("/status/startTime"_json_pointer);
    if (result.empty() && !started) return;
    const std::string name = job.value("/metadata/name"_json_pointer, "");
    std::lock_guard lock(mu_);
    started_.emplace(name, at);  // a finished Job has its startTime (written with the result)
    if (!result.empty()) finished_.emplace(name, std::make_pair(at, result));
    cv_.notify_all();
  }

  kube::RestClient& client_;
  std::string ns_;
  std::string resourceVersion_;
  std::jthread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Steady::time_point> started_;
  std::map<std::string, std::pair<Steady::time_point, std::string>> finished_;
};

// Runs argv with stdout and stderr discarded; returns the exit code (-1 if it did not exit).
int RunQuietly(const std::vector<std::string>& argv) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  argp.reserve(args.size() + 1);
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argp[0], &actions, nullptr, argp.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::cerr << "bench_docker: cannot start " << argv[0] << ": " << std::strerror(rc) << "\n";
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

using bench::MetOrMissed;
using bench::NearestRankPercentile;

// The wall time of `command` (a docker run), nullopt on failure.
std::optional<double> TimeDockerRun(const Options& o, const std::vector<std::string>& command,
                                    const char* what) {
  auto start = Steady::now();
  int rc = RunQuietly(command);
  double ms = Millis(Steady::now() - start).count();
  if (rc != 0) {
    std::cerr << "bench_docker: " << what << " exited " << rc << " (is DOCKER_HOST set?)\n";
    return std::nullopt;
  }
  if (o.verbose) std::cout << what << " " << ms << " ms\n";
  return ms;
}

std::string RandomSuffix() {
  std::mt19937 rng{std::random_device{}()};
  std::string s;
  for (int i = 0; i < 5; ++i) s.push_back("abcdefghijklmnopqrstuvwxyz0123456789"[rng() % 36]);
  return s;
}

// Creates the namespace and starts the watcher on it; false (said on stderr) on failure.
bool Prepare(kube::RestClient& client, const Options& o, FinishWatcher& watcher) {
  if (Status s = bench::CreateIfAbsent(client, kNamespaces, "", bench::NamespaceObject(o.ns));
      !s.ok()) {
    std::cerr << "bench_docker: creating namespace " << o.ns << ": " << s.ToString() << "\n";
    return false;
  }
  if (Status s = watcher.Start(); !s.ok()) {
    std::cerr << "bench_docker: listing Jobs: " << s.ToString() << "\n";
    return false;
  }
  return true;
}

// One measurement of a kind: its milliseconds, nullopt when it failed (said on stderr).
using Once = std::function<std::optional<double>()>;

// Trivial Jobs through Ayatori, named bench-<run>-<serial> (`queued`: labelled with the LocalQueue
// --queue), each timed from its create to the watch seeing it Succeeded (Once) or started
// (OnceToStart, which still waits for Succeeded, so that the next Job runs alone).
class AyatoriRuns {
 public:
  AyatoriRuns(kube::RestClient& client, FinishWatcher& watcher, const Options& o,
              bool queued = false)
      : client_(client), watcher_(watcher), o_(o), run_(RandomSuffix()), queued_(queued) {}

  std::optional<double> Once() {
    auto times = Run();
    return times ? std::optional<double>(times->second) : std::nullopt;
  }

  std::optional<double> OnceToStart() {
    auto times = Run();
    return times ? std::optional<double>(times->first) : std::nullopt;
  }

 private:
  // Create -> started and create -> Succeeded in ms; nullopt when it failed (said on stderr).
  std::optional<std::pair<double, double>> Run() {
    std::string name = "bench-" + run_ + "-" + std::to_string(serial_++);
    auto start = Steady::now();
    auto created = client_.Create(kJobs, o_.ns, Job(name), {});
    if (!created.ok()) {
      std::cerr << "bench_docker: creating Job " << name << ": " << created.status().ToString()
                << "\n";
      return std::nullopt;
    }
    auto finished = watcher_.WaitFinished(name, std::chrono::seconds(o_.timeoutSeconds));
    if (!finished) {
      std::cerr << "bench_docker: Job " << o_.ns << "/" << name << " did not finish within "
                << o_.timeoutSeconds << "s (is ayatori-controller running?)\n";
      return std::nullopt;
    }
    if (finished->second != "True/Completed") {
      std::cerr << "bench_docker: Job " << o_.ns << "/" << name << " ended " << finished->second
                << "\n";
      return std::nullopt;
    }
    auto started = watcher_.WaitStarted(name, std::chrono::seconds(0));  // seen by then
    double ms = Millis(finished->first - start).count();
    double startedMs = started ? Millis(*started - start).count() : ms;
    if (o_.verbose) {
      std::cout << (queued_ ? "ayatori-queued " : "ayatori ") << name << " started " << startedMs
                << " ms, finished " << ms << " ms\n";
    }
    return std::make_pair(startedMs, ms);
  }

  nlohmann::json Job(const std::string& name) const {
    nlohmann::json metadata = {{"name", name}, {"namespace", o_.ns}};
    if (queued_) metadata["labels"] = {{bench::kQueueNameLabel, o_.queue}};
    return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
            {"kind", "Job"},
            {"metadata", metadata},
            {"spec",
             {{"jobClassName", o_.jobClass},
              {"task", {{"image", o_.image}, {"command", {"/bin/true"}}}}}}};
  }

  kube::RestClient& client_;
  FinishWatcher& watcher_;
  const Options& o_;
  const std::string run_;
  const bool queued_;
  std::atomic<int> serial_{0};
};

std::vector<std::string> BareDockerRun(const Options& o) {
  return {o.docker, "run", "--rm", "--network", "none", o.image, "/bin/true"};
}

// The restricted profile's defaults (DockerExecutionParameters securityProfile and init,
// docs/security.md) as docker run flags.
std::vector<std::string> HardenedDockerRun(const Options& o) {
  return {o.docker,
          "run",
          "--rm",
          "--network",
          "none",
          "--user",
          "65534:65534",
          "--cap-drop",
          "ALL",
          "--security-opt",
          "no-new-privileges",
          "--pids-limit",
          "256",
          "--read-only",
          "--tmpfs",
          "/tmp:rw,nosuid,nodev,noexec,uid=65534,gid=65534,size=64m",
          "--ulimit",
          "nofile=1024:1024",
          "--init",
          "--log-driver",
          "json-file",
          "--log-opt",
          "max-size=10485760",
          "--log-opt",
          "max-file=1",
          o.image,
          "/bin/true"};
}

// One at a time, the three kinds rotating; the first --warmup rounds are not kept.
bool MeasureOneAtATime(const Options& o, const Once (&kinds)[3],
                       std::vector<double>* const (&samples)[3]) {
  for (int i = 0; i < o.warmup + o.jobs; ++i) {
    for (int k = 0; k < 3; ++k) {
      const int kind = (i + k) % 3;
      std::optional<double> ms = kinds[kind]();
      if (!ms) return false;
      if (i >= o.warmup) samples[kind]->push_back(*ms);
    }
  }
  return true;
}

// --concurrent of `once` at once, one thread each.
bool Burst(const Options& o, const Once& once, std::vector<double>& into) {
  std::vector<std::optional<double>> results(static_cast<size_t>(o.concurrent));
  {
    std::vector<std::jthread> threads;
    threads.reserve(results.size());
    for (auto& r : results) threads.emplace_back([&r, &once] { r = once(); });
  }
  for (const auto& r : results) {
    if (!r) return false;
    into.push_back(*r);
  }
  return true;
}

// --concurrent-rounds bursts per side, ordered A B B A ...
bool MeasureAtOnce(const Options& o, const Once& ayatori, const Once& docker,
                   std::vector<double>& ayatoriAtOnce, std::vector<double>& dockerAtOnce) {
  for (int round = 0; o.concurrent > 0 && round < o.concurrentRounds; ++round) {
    bool ayatoriFirst = round % 2 == 0;
    bool ok = ayatoriFirst ? Burst(o, ayatori, ayatoriAtOnce) && Burst(o, docker, dockerAtOnce)
                           : Burst(o, docker, dockerAtOnce) && Burst(o, ayatori, ayatoriAtOnce);
    if (!ok) return false;
  }
  return true;
}

void PrintLatencies(const char* label, double p50, double p99) {
  std::printf("  %-38s p50 %8.1f ms   p99 %8.1f ms\n", label, p50, p99);
}

void PrintOneAtATime(const Options& o, const std::vector<double>& ayatori,
                     const std::vector<double>& docker, const std::vector<double>& hardened) {
  double a50 = NearestRankPercentile(ayatori, 50), a99 = NearestRankPercentile(ayatori, 99);
  double d50 = NearestRankPercentile(docker, 50), d99 = NearestRankPercentile(docker, 99);
  std::printf("bench_docker: %d trivial containers per side (%s /bin/true), %d warm-up pairs\n",
              o.jobs, o.image.c_str(), o.warmup);
  PrintLatencies("Ayatori Job create -> Succeeded", a50, a99);
  PrintLatencies("docker run --rm --network none", d50, d99);
  double ratio = a50 / d50;
  std::printf("  ratio Ayatori/docker: p50 %.2f   p99 %.2f   (target p50 <= 1.50)  %s\n", ratio,
              a99 / d99, MetOrMissed(ratio <= 1.5));
  double h50 = NearestRankPercentile(hardened, 50), h99 = NearestRankPercentile(hardened, 99);
  PrintLatencies("docker run --rm, same hardening flags", h50, h99);
  std::printf("  ratio Ayatori/hardened docker: p50 %.2f   p99 %.2f   (target p50 <= 1.20)  %s\n",
              a50 / h50, a99 / h99, MetOrMissed(a50 / h50 <= 1.2));
}

void PrintAtOnce(const Options& o, const std::vector<double>& ayatori,
                 const std::vector<double>& docker) {
  double ca50 = NearestRankPercentile(ayatori, 50), ca99 = NearestRankPercentile(ayatori, 99);
  double cd50 = NearestRankPercentile(docker, 50), cd99 = NearestRankPercentile(docker, 99);
  std::printf("bench_docker: %d at once, %d rounds per side (each measured from its own start)\n",
              o.concurrent, o.concurrentRounds);
  PrintLatencies("Ayatori Jobs create -> Succeeded", ca50, ca99);
  PrintLatencies("docker run --rm --network none", cd50, cd99);
  std::printf("  ratio Ayatori/docker: p50 %.2f   p99 %.2f   (target p50 <= 1.20)  %s\n",
              ca50 / cd50, ca99 / cd99, MetOrMissed(ca50 / cd50 <= 1.2));
}

// The controller's /metrics (--controller-metrics), for the queued phase's write counts.
class ControllerMetrics {
 public:
  explicit ControllerMetrics(const std::string& hostPort)
      : url_("http://" + hostPort + "/metrics") {
    kube::RestConfig plain;
    plain.server = "http://" + hostPort;
    http_ = kube::NewCurlTransport(plain, {});
  }

  // The text once the controller is idle: its workqueue empty and its request counter unchanged
  // for a second (a Job's last writes come after the watch saw it Succeeded); at most 60 s.
  std::string WhenIdle() {
    const auto deadline = Steady::now() + std::chrono::seconds(60);
    std::string text = Scrape();
    while (Steady::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      std::string next = Scrape();
      const double requests = bench::SumMetric(next, "ayatori_api_requests_total");
      if (bench::HasMetric(next, "ayatori_workqueue_depth") &&
          bench::SumMetric(next, "ayatori_workqueue_depth") == 0 &&
          requests == bench::SumMetric(text, "ayatori_api_requests_total")) {
        return next;
      }
      text = std::move(next);
    }
    std::cerr << "bench_docker: the controller did not become idle within 60 s\n";
    return text;
  }

 private:
  std::string Scrape() {
    kube::HttpRequest r;
    r.method = "GET";
    r.url = url_;
    r.timeout = std::chrono::seconds(10);
    auto resp = http_->Do(r);
    if (resp.ok() && resp->status == 200) return resp->body;
    std::cerr << "bench_docker: GET " << url_ << " failed\n";
    return "";
  }

  std::string url_;
  std::unique_ptr<kube::HttpTransport> http_;
};

// ayatori_job_api_writes_total by kind between two /metrics texts.
std::map<std::string, double> JobWritesByKind(const std::string& before, const std::string& after) {
  const char* metric = "ayatori_job_api_writes_total";
  auto writes = bench::SumByLabel(after, metric, "kind");
  for (const auto& [kind, v] : bench::SumByLabel(before, metric, "kind")) writes[kind] -= v;
  return writes;
}

// --warmup then --jobs of `runs`, one at a time, keeping the measured ones' create->started.
bool MeasureToStart(const Options& o, AyatoriRuns& runs, std::vector<double>& into) {
  for (int i = 0; i < o.warmup + o.jobs; ++i) {
    std::optional<double> ms = runs.OnceToStart();
    if (!ms) return false;
    if (i >= o.warmup) into.push_back(*ms);
  }
  return true;
}

// What the queued phase measured: create->started of each side; ayatori_job_api_writes_total by
// kind and the controller's API client's writes (ayatori_api_requests_total) over each side.
struct QueuedPhase {
  std::vector<double> unqueued, queued;
  std::map<std::string, double> unqueuedWrites, queuedWrites;
  double unqueuedRequests = 0, queuedRequests = 0;
};

// Create->started of both sides and its target.
void PrintQueuedLatencies(const QueuedPhase& r) {
  const double u50 = NearestRankPercentile(r.unqueued, 50);
  const double u99 = NearestRankPercentile(r.unqueued, 99);
  const double q50 = NearestRankPercentile(r.queued, 50), q99 = NearestRankPercentile(r.queued, 99);
  PrintLatencies("Ayatori Job create -> started", u50, u99);
  PrintLatencies("queued Job create -> started", q50, q99);
  std::printf("  ratio queued/unqueued: p50 %.2f   p99 %.2f   (target p50 <= 1.50)  %s\n",
              q50 / u50, q99 / u99, MetOrMissed(q50 <= 1.5 * u50));
}

// The writes per queued Job and their target. On the Docker path every write of the controller's
// API client goes to a Job or a Workload (Events have a client of their own; the backend snapshot
// ConfigMap was written by the first warm-up Job), so the target is judged on those requests.
// ayatori_job_api_writes_total is shown by kind beside them: it counts what the reconciler means
// to write, one per Workload action, and a Workload's Finish is two requests (Kueue's finalizer
// removed, then Finished=True; src/controller/workloads.h).
void PrintQueuedWrites(const Options& o, const QueuedPhase& r) {
  const double jobs = o.warmup + o.jobs;  // the write counts include the warm-up Jobs
  double counted = 0;
  std::printf("  ayatori_job_api_writes_total per queued Job by kind: ");
  for (const auto& [kind, v] : r.queuedWrites) {
    std::printf("%s %.2f  ", kind.c_str(), v / jobs);
    counted += v / jobs;
  }
  const double writes = r.queuedRequests / jobs;
  std::printf("(sum %.2f)\n", counted);
  std::printf(
      "  writes per queued Job (Job and Workload, the controller's API requests): %.2f   (target "
      "<= 9)  %s   (unqueued Job: %.2f)\n",
      writes, MetOrMissed(writes <= 9), r.unqueuedRequests / jobs);
}

void PrintQueued(const Options& o, const QueuedPhase& r) {
  std::printf(
      "bench_docker: queued through Kueue (ClusterQueue %s, pods quota %d: never held back), %d "
      "Jobs per side one at a time, unqueued first, %d warm-up each\n",
      o.queue.c_str(), o.jobs + o.warmup, o.jobs, o.warmup);
  PrintQueuedLatencies(r);
  PrintQueuedWrites(o, r);
}

// The queued phase (--queue): its queues, then unqueued and queued Jobs one at a time.
bool RunQueuedPhase(kube::RestClient& client, FinishWatcher& watcher, const Options& o) {
  Status s = bench::CreateClusterQueue(client, o.queue, o.jobs + o.warmup);
  if (s.ok()) s = bench::CreateLocalQueue(client, o.ns, o.queue);
  if (!s.ok()) {
    std::cerr << "bench_docker: queues " << o.queue << ": " << s.ToString() << "\n";
    return false;
  }
  ControllerMetrics metrics(o.controllerMetrics);
  AyatoriRuns unqueuedRuns(client, watcher, o), queuedRuns(client, watcher, o, true);
  QueuedPhase r;
  const std::string start = metrics.WhenIdle();
  if (!MeasureToStart(o, unqueuedRuns, r.unqueued)) return false;
  const std::string between = metrics.WhenIdle();
  if (!MeasureToStart(o, queuedRuns, r.queued)) return false;
  const std::string end = metrics.WhenIdle();
  r.unqueuedWrites = JobWritesByKind(start, between);
  r.queuedWrites = JobWritesByKind(between, end);
  r.unqueuedRequests = bench::ControllerWrites(between) - bench::ControllerWrites(start);
  r.queuedRequests = bench::ControllerWrites(end) - bench::ControllerWrites(between);
  PrintQueued(o, r);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"bench_docker: create->Succeeded of a trivial Job through Ayatori vs docker run"};
  app.add_option("--kubeconfig", o.kubeconfig, "kubeconfig (default: $KUBECONFIG)");
  app.add_option("--namespace", o.ns, "namespace of the Jobs (created if missing)");
  app.add_option("--job-class", o.jobClass, "Docker JobClass the Jobs use");
  app.add_option("--image", o.image, "image of both sides");
  app.add_option("--docker", o.docker, "docker CLI (talks to $DOCKER_HOST)");
  app.add_option("--jobs", o.jobs, "measured runs per side")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", o.warmup, "uncounted runs per side first")->check(CLI::Range(0, 1000));
  app.add_option("--concurrent", o.concurrent, "Jobs / docker runs at once (0: skip)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--concurrent-rounds", o.concurrentRounds, "rounds per side at once")
      ->check(CLI::Range(1, 100));
  app.add_option("--timeout", o.timeoutSeconds, "seconds one Job may take");
  app.add_flag("--verbose", o.verbose, "print every measurement (Job names for log correlation)");
  app.add_option("--queue", o.queue,
                 "then Jobs queued through Kueue: ClusterQueue and LocalQueue NAME (created)");
  app.add_option("--controller-metrics", o.controllerMetrics,
                 "host:port of the controller's /metrics (needed with --queue)");
  CLI11_PARSE(app, argc, argv);
  if (!o.queue.empty() && o.controllerMetrics.empty()) {
    std::cerr << "bench_docker: --queue needs --controller-metrics\n";
    return 2;
  }

  auto config = bench::LoadKubeconfigOrReport("bench_docker", o.kubeconfig);
  if (!config) return 2;
  auto client = bench::NewClient(*config, 1000, 1000, "bench_docker");
  FinishWatcher watcher(*client, o.ns);
  if (!Prepare(*client, o, watcher)) return 1;

  AyatoriRuns runs(*client, watcher, o);
  const std::vector<std::string> bare = BareDockerRun(o), hardened = HardenedDockerRun(o);
  const Once ayatoriOnce = [&] { return runs.Once(); };
  const Once dockerOnce = [&] { return TimeDockerRun(o, bare, "docker-run"); };
  const Once hardenedOnce = [&] { return TimeDockerRun(o, hardened, "docker-run-hardened"); };
  std::vector<double> ayatori, docker, hardenedDocker, ayatoriAtOnce, dockerAtOnce;
  if (!MeasureOneAtATime(o, {ayatoriOnce, dockerOnce, hardenedOnce},
                         {&ayatori, &docker, &hardenedDocker}) ||
      !MeasureAtOnce(o, ayatoriOnce, dockerOnce, ayatoriAtOnce, dockerAtOnce)) {
    return 1;
  }
  PrintOneAtATime(o, ayatori, docker, hardenedDocker);
  if (o.concurrent > 0) PrintAtOnce(o, ayatoriAtOnce, dockerAtOnce);
  std::fflush(stdout);  // the queued phase takes a while: its results follow these
  if (!o.queue.empty() && !RunQueuedPhase(*client, watcher, o)) return 1;
  watcher.Stop();
  return 0;
}
