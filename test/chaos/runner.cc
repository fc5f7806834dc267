#include "test/chaos/runner.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "adapters/docker/container.h"
#include "adapters/docker/descriptor.h"
#include "adapters/docker/engine.h"
#include "adapters/kubernetes/descriptor.h"
#include "adapters/kubernetes/kubernetes_adapter.h"
#include "adapters/registry.h"
#include "api/types.h"
#include "base/time.h"
#include "base/url.h"
#include "controller/kinds.h"
#include "kube/config.h"
#include "kube/resource.h"
#include "kube/rest_client.h"
#include "kube/time_format.h"
#include "test/support/controller_process.h"
#include "test/support/process.h"
#include "test/support/wait.h"

namespace ayatori::chaos {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

// Every Job of a round carries this label (value: the round's namespace).
constexpr const char* kRoundLabel = "chaos.ayatori.ddupan.top/round";
constexpr const char* kDockerClass = "chaos-docker";
constexpr const char* kKubernetesClass = "chaos-kubernetes";
constexpr const char* kLeaseNamespace = "ayatori-system";
// dockerd answers /_ping before it has restored all its containers: an exit status it records
// this long after it answered still belongs to the restart (its restore of a lost task).
constexpr auto kEngineRestoreMargin = std::chrono::seconds(30);
// hack/dockerd.sh's `repair` lines.
constexpr std::string_view kRepairPrefix = "dockerd.sh: repair: ";
// Leader election timing of the replicas: a killed leader is replaced within about 5 s.
constexpr const char* kLeaseDuration = "4s";
constexpr const char* kRenewDeadline = "3s";
constexpr const char* kRetryPeriod = "1s";
// A replica that exited is started again after this (a Deployment's pod restarts, minus the
// growing CrashLoopBackOff, which would only make the round slower).
constexpr milliseconds kReplicaRestartDelay = 1s;
constexpr milliseconds kJobPoll = 1s;

using TimePoint = std::chrono::system_clock::time_point;

std::string Format(const std::optional<TimePoint>& t) {
  return t ? kube::FormatMicroTime(*t) : std::string("an unknown time");
}

milliseconds Since(SteadyClock::time_point t0) {
  return std::chrono::duration_cast<milliseconds>(SteadyClock::now() - t0);
}

// ---------------------------------------------------------------------------------------------
// JSON of Jobs and pods.

// An RFC 3339 time of the API's or Docker's JSON; nullopt when absent or malformed.
std::optional<TimePoint> TimeOf(std::string_view text) {
  auto t = base::ParseTime(text);
  return t.ok() ? std::optional<TimePoint>(*t) : std::nullopt;
}

std::string Str(const json& j, const char* pointer) {
  json::json_pointer p(pointer);
  if (!j.is_object() || !j.contains(p)) return "";
  const json& v = j.at(p);
  return v.is_string() ? v.get<std::string>() : "";
}

const json* Condition(const json& job, const std::string& type) {
  json::json_pointer p("/status/conditions");
  if (!job.is_object() || !job.contains(p) || !job.at(p).is_array()) return nullptr;
  for (const auto& c : job.at(p)) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

// "<status>/<reason>" of a condition, "" when absent.
std::string Summary(const json& job, const std::string& type) {
  const json* c = Condition(job, type);
  return c == nullptr ? "" : c->value("status", "") + "/" + c->value("reason", "");
}

bool IsFinished(const json& job) {
  const std::string s = Summary(job, api::kConditionSucceeded);
  return s.rfind("True/", 0) == 0 || s.rfind("False/", 0) == 0;
}

// The state docs/api.md derives from a Job (first match wins).
std::string DerivedState(const json& job) {
  if (!job.is_object()) return "unseen";
  if (!Str(job, "/metadata/deletionTimestamp").empty()) return "Deleting";
  const std::string succeeded = Summary(job, api::kConditionSucceeded);
  if (succeeded.rfind("True/", 0) == 0) return "Succeeded";
  if (succeeded == "False/Cancelled") return "Cancelled";
  if (succeeded.rfind("False/", 0) == 0) return "Failed";
  if (Str(job, "/spec/desiredState") == "Cancelled") return "Cancelling";
  if (succeeded == "Unknown/ResultUnknown") return "ResultUnknown";
  if (!Str(job, "/status/startTime").empty()) return "Running";
  if (Summary(job, api::kConditionScheduled).rfind("True/", 0) == 0) return "Starting";
  if (Summary(job, api::kConditionAccepted).rfind("True/", 0) == 0) return "Scheduling";
  return "Resolving";
}

// "export K=V" lines of an env.sh written by hack/testenv/testenv.sh or hack/dockerd.sh.
StatusOr<std::map<std::string, std::string>> ReadEnvFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kNotFound, path + " does not exist: is the service up?");
  std::map<std::string, std::string> vars;
  for (std::string line; std::getline(in, line);) {
    const std::string prefix = "export ";
    auto eq = line.find('=');
    if (line.rfind(prefix, 0) != 0 || eq == std::string::npos) continue;
    vars[line.substr(prefix.size(), eq - prefix.size())] = line.substr(eq + 1);
  }
  return vars;
}

// ---------------------------------------------------------------------------------------------
// Two leader-elected replicas: restarted whenever they exit, killed on the plan's schedule.

class ReplicaSet {
 public:
  ReplicaSet(std::string binary, std::vector<std::string> args, std::string runDir,
             kube::RestClient& client, std::string leaseName,
             std::function<void(const std::string&)> progress)
      : binary_(std::move(binary)),
        args_(std::move(args)),
        runDir_(std::move(runDir)),
        client_(client),
        leaseName_(std::move(leaseName)),
        progress_(std::move(progress)) {}
  ~ReplicaSet() { Stop(); }
  ReplicaSet(const ReplicaSet&) = delete;
  ReplicaSet& operator=(const ReplicaSet&) = delete;

  // Starts both replicas and the thread that watches over them. The children are forked by that
  // thread: their PR_SET_PDEATHSIG (test/support/controller_process.h) follows the thread.
  void Start() {
    thread_ = std::jthread([this](const std::stop_token& stop) { Loop(stop); });
  }

  // Kills from now on, at t0 + each kill's `at`.
  void ScheduleKills(SteadyClock::time_point t0, std::vector<Disruption> kills) {
    std::lock_guard<std::mutex> lock(mu_);
    t0_ = t0;
    kills_ = std::move(kills);
    nextKill_ = 0;
  }

  bool KillsDone() {
    std::lock_guard<std::mutex> lock(mu_);
    return nextKill_ >= kills_.size();
  }

  // SIGTERM to both (SIGKILL after 10 s) and the end of the watch.
  void Stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
  }

  // Pid of the Lease's holder if it is one of ours; 0 otherwise or when unknown.
  int LeaderPid() {
    auto lease = client_.Get(kube::LeasesResource(), kLeaseNamespace, leaseName_);
    if (!lease.ok()) return 0;
    const std::string holder = Str(*lease, "/spec/holderIdentity");
    auto sep = holder.rfind('_');
    if (sep == std::string::npos) return 0;
    int pid = std::atoi(holder.c_str() + sep + 1);
    std::lock_guard<std::mutex> lock(mu_);
    return pid == pids_[0] || pid == pids_[1] ? pid : 0;
  }

  void Report(RoundLog& log) {
    std::lock_guard<std::mutex> lock(mu_);
    log.kills = killRecords_;
    log.exits = exitRecords_;
    log.replicaStarts = starts_;
  }

 private:
  struct Replica {
    testing::ControllerProcess process;
    bool killedByUs = false;
    bool exitRecorded = true;  // nothing to record before the first start
    SteadyClock::time_point restartAt{};
  };

  void Spawn(int i) {
    Replica& r = replicas_[i];
    std::vector<std::string> argv = {binary_};
    argv.insert(argv.end(), args_.begin(), args_.end());
    Status s = r.process.Spawn(argv, runDir_ + "/replica-" + std::to_string(i) + ".log");
    std::lock_guard<std::mutex> lock(mu_);
    if (!s.ok()) {
      // Tried again after the restart delay; the report shows fewer starts.
      r.restartAt = SteadyClock::now() + kReplicaRestartDelay;
      return;
    }
    r.killedByUs = false;
    r.exitRecorded = false;
    pids_[i] = r.process.pid();
    ++starts_;
  }

  // The role of replica `i` as the Lease says: leader, standby or unknown (API unreachable).
  std::string RoleOf(int i) {
    auto lease = client_.Get(kube::LeasesResource(), kLeaseNamespace, leaseName_);
    if (!lease.ok()) return "unknown";
    const std::string holder = Str(*lease, "/spec/holderIdentity");
    const std::string suffix = "_" + std::to_string(replicas_[i].process.pid());
    return holder.size() > suffix.size() &&
                   holder.compare(holder.size() - suffix.size(), suffix.size(), suffix) == 0
               ? "leader"
               : "standby";
  }

  void Supervise() {
    const auto now = SteadyClock::now();
    for (int i = 0; i < 2; ++i) {
      Replica& r = replicas_[i];
      if (!r.exitRecorded && !r.process.Running()) {
        ExitRecord e;
        int status = r.process.exitStatus();
        e.replica = i;
        e.pid = r.process.pid();
        e.killedByRound = r.killedByUs;
        if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
        if (WIFEXITED(status)) e.exitCode = WEXITSTATUS(status);
        std::lock_guard<std::mutex> lock(mu_);
        e.at = Since(t0_);
        exitRecords_.push_back(e);
        r.exitRecorded = true;
        if (progress_ && !e.killedByRound) {
          progress_("replica " + std::to_string(i) + " (pid " + std::to_string(e.pid) +
                    ") exited " +
                    (e.signal != 0 ? "on signal " + std::to_string(e.signal)
                                   : "with code " + std::to_string(e.exitCode)) +
                    "; starting it again");
        }
        r.restartAt = now + kReplicaRestartDelay;
      }
      if (r.exitRecorded && now >= r.restartAt) Spawn(i);
    }
  }

  void KillDue() {
    Disruption next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (nextKill_ >= kills_.size() || Since(t0_) < kills_[nextKill_].at) return;
      next = kills_[nextKill_++];
    }
    // The leader or the standby as planned; the planned replica when the Lease cannot be read;
    // the other one while the chosen one is down (restarting).
    int i = next.replica;
    const int leaderPid = LeaderPid();
    for (int candidate = 0; candidate < 2 && leaderPid != 0; ++candidate) {
      if ((replicas_[candidate].process.pid() == leaderPid) == next.leader) i = candidate;
    }
    if (!replicas_[i].process.Running()) i = 1 - i;
    if (!replicas_[i].process.Running()) return;  // both down: nothing to kill
    KillRecord k;
    k.replica = i;
    k.pid = replicas_[i].process.pid();
    k.role = RoleOf(i);
    replicas_[i].killedByUs = true;
    replicas_[i].process.Kill();
    if (progress_) {
      progress_("SIGKILL replica " + std::to_string(i) + " (pid " + std::to_string(k.pid) + ", " +
                k.role + ")");
    }
    std::lock_guard<std::mutex> lock(mu_);
    k.at = Since(t0_);
    killRecords_.push_back(k);
  }

  void Loop(const std::stop_token& stop) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      t0_ = SteadyClock::now();
    }
    Spawn(0);
    Spawn(1);
    while (!stop.stop_requested()) {
      Supervise();
      KillDue();
      std::this_thread::sleep_for(100ms);  // the supervision period, not a synchronisation
    }
    for (auto& r : replicas_) r.process.Signal(SIGTERM);
    for (auto& r : replicas_) {
      if (!r.process.Wait(10s)) r.process.Kill();
    }
  }

  const std::string binary_;
  const std::vector<std::string> args_;
  const std::string runDir_;
  kube::RestClient& client_;
  const std::string leaseName_;
  const std::function<void(const std::string&)> progress_;
  Replica replicas_[2];  // touched by the thread only

  std::mutex mu_;
  SteadyClock::time_point t0_{};
  std::vector<Disruption> kills_;
  size_t nextKill_ = 0;
  int pids_[2] = {0, 0};
  int starts_ = 0;
  std::vector<KillRecord> killRecords_;
  std::vector<ExitRecord> exitRecords_;
  std::jthread thread_;
};

// ---------------------------------------------------------------------------------------------
// The restarts of dockerd and kube-apiserver, each at its time, through the hack scripts.

class Disruptor {
 public:
  Disruptor(std::string sourceDir, std::vector<std::string> dockerdEnv,
            std::vector<std::string> testenvEnv)
      : sourceDir_(std::move(sourceDir)),
        dockerdEnv_(std::move(dockerdEnv)),
        testenvEnv_(std::move(testenvEnv)) {}
  ~Disruptor() { Stop(); }
  Disruptor(const Disruptor&) = delete;
  Disruptor& operator=(const Disruptor&) = delete;

  void Start(SteadyClock::time_point t0, std::vector<Disruption> restarts,
             std::function<void(const std::string&)> progress) {
    thread_ = std::jthread([this, t0, restarts = std::move(restarts),
                            progress = std::move(progress)](const std::stop_token& stop) {
      for (const auto& d : restarts) {
        if (!WaitUntil(stop, t0 + d.at)) return;
        RestartRecord r = Restart(stop, d, t0);
        if (progress) {
          progress("restarted " + r.what + (r.ok ? "" : " (FAILED: " + r.error + ")"));
        }
        std::lock_guard<std::mutex> lock(mu_);
        records_.push_back(std::move(r));
      }
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    });
  }

  bool Done() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  void Stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
  }
  std::vector<RestartRecord> Records() {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }

 private:
  // A stop-aware wait for a moment of the schedule (not a synchronisation: the plan says when).
  static bool WaitUntil(const std::stop_token& stop, SteadyClock::time_point when) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(m);
    return !cv.wait_until(lock, stop, when, [] { return false; }) && !stop.stop_requested();
  }

  testing::ProcessResult Run(const std::string& script, const std::vector<std::string>& args,
                             const std::vector<std::string>& env) {
    std::vector<std::string> argv = {sourceDir_ + "/hack/" + script};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunProcess(argv, "", env);
  }

  RestartRecord Restart(const std::stop_token& stop, const Disruption& d,
                        SteadyClock::time_point t0) {
    RestartRecord r;
    r.at = Since(t0);
    const bool dockerd = d.type == Disruption::Type::kRestartDockerd;
    r.what = dockerd ? "dockerd" : "kube-apiserver";
    testing::ProcessResult down =
        dockerd ? Run("dockerd.sh", {"kill"}, dockerdEnv_)
                : Run("testenv/testenv.sh", {"stop-apiserver", "--kill"}, testenvEnv_);
    const auto stopped = SteadyClock::now();
    r.stoppedAt = std::chrono::system_clock::now();
    if (down.exitCode != 0) {
      r.error = "stopping it: " + down.out + down.err;
      return r;
    }
    WaitUntil(stop, stopped + d.downtime);  // the service stays down this long even if stopping
    testing::ProcessResult up = dockerd
                                    ? Run("dockerd.sh", {"up"}, dockerdEnv_)
                                    : Run("testenv/testenv.sh", {"start-apiserver"}, testenvEnv_);
    r.downtime = Since(stopped);
    r.answeredAt = std::chrono::system_clock::now();
    r.ok = up.exitCode == 0;
    if (!r.ok) r.error = "starting it again: " + up.out + up.err;
    std::istringstream lines(up.err);
    for (std::string line; std::getline(lines, line);) {
      // hack/dockerd.sh `repair`: one line per leftover of the crash it found.
      if (line.starts_with(kRepairPrefix)) r.repairs.push_back(line.substr(kRepairPrefix.size()));
    }
    return r;
  }

  const std::string sourceDir_;
  const std::vector<std::string> dockerdEnv_;
  const std::vector<std::string> testenvEnv_;
  std::mutex mu_;
  std::vector<RestartRecord> records_;
  bool done_ = false;
  std::jthread thread_;
};

// ---------------------------------------------------------------------------------------------
// Every container created for a Job UID, from dockerd's /events stream, reconnected (with
// `since`) across the dockerd restart. dockerd keeps recent events in memory, so a stream opened
// again after a short gap replays what happened meanwhile.

class DockerEventLog {
 public:
  explicit DockerEventLog(std::shared_ptr<adapters::docker::EngineClient> client)
      : client_(std::move(client)) {}
  ~DockerEventLog() { Stop(); }
  DockerEventLog(const DockerEventLog&) = delete;
  DockerEventLog& operator=(const DockerEventLog&) = delete;

  void Start() {
    since_ = std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count() -
                            1);
    thread_ = std::jthread([this](const std::stop_token& stop) { Loop(stop); });
  }
  void Stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    streamStop_.Cancel();
    thread_.join();
  }
  // Container ids with a "create" event, by the Job UID label.
  std::map<std::string, std::set<std::string>> Created() {
    std::lock_guard<std::mutex> lock(mu_);
    return created_;
  }
  // When the container of each Job UID was renamed for a cancel.
  std::map<std::string, TimePoint> CancelRequested() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelRequested_;
  }
  int reconnects() {
    std::lock_guard<std::mutex> lock(mu_);
    return reconnects_;
  }
  bool connected() {
    std::lock_guard<std::mutex> lock(mu_);
    return connected_;
  }

 private:
  void Handle(std::string_view line) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_object()) return;
    const std::string action = e.value("Action", "");
    const std::string id = Str(e, "/Actor/ID");
    const std::string uid = Str(e, "/Actor/Attributes/execution.ayatori.ddupan.top~1job-uid");
    const int64_t nanos = e.value("timeNano", int64_t{0});
    std::lock_guard<std::mutex> lock(mu_);
    if (nanos > 0) {
      char buf[40];
      snprintf(buf, sizeof(buf), "%lld.%09lld", static_cast<long long>(nanos / 1000000000),
               static_cast<long long>(nanos % 1000000000));
      since_ = buf;
    }
    if (action == "create" && !uid.empty() && !id.empty()) created_[uid].insert(id);
    // The Docker adapter's Cancel renames the container first (container.h): the stop request.
    if (action == "rename" && !uid.empty() && nanos > 0 && cancelRequested_.count(uid) == 0 &&
        Str(e, "/Actor/Attributes/name") == adapters::docker::CancelledContainerName(uid)) {
      cancelRequested_[uid] = TimePoint(
          std::chrono::duration_cast<TimePoint::duration>(std::chrono::nanoseconds(nanos)));
    }
  }

  void Loop(const std::stop_token& stop) {
    json filters = {{"type", {"container"}}, {"label", {api::kJobUidLabel}}};
    bool everConnected = false;
    while (!stop.stop_requested()) {
      std::string since;
      {
        std::lock_guard<std::mutex> lock(mu_);
        since = since_;
      }
      std::string pending;
      long code = 0;
      Status s = client_->Stream(
          "/events?since=" + since + "&filters=" + base::PercentEncode(filters.dump()),
          [&](long c) {
            code = c;
            std::lock_guard<std::mutex> lock(mu_);
            connected_ = c == 200;
            if (connected_ && everConnected) ++reconnects_;
            everConnected = everConnected || connected_;
          },
          [&](std::string_view data) {
            if (code != 200) return false;
            pending.append(data);
            size_t start = 0;
            for (size_t nl = pending.find('\n'); nl != std::string::npos;
                 nl = pending.find('\n', start)) {
              Handle(std::string_view(pending).substr(start, nl - start));
              start = nl + 1;
            }
            pending.erase(0, start);
            return true;
          },
          streamStop_);
      (void)s;  // it ended (dockerd went away, or Stop): open it again from the last event
      {
        std::lock_guard<std::mutex> lock(mu_);
        connected_ = false;
      }
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock<std::mutex> lock(m);
      cv.wait_for(lock, stop, 200ms, [] { return false; });
    }
  }

  std::shared_ptr<adapters::docker::EngineClient> client_;
  adapters::docker::StreamStop streamStop_;
  std::mutex mu_;
  std::string since_;
  std::map<std::string, std::set<std::string>> created_;
  std::map<std::string, TimePoint> cancelRequested_;
  int reconnects_ = 0;
  bool connected_ = false;
  std::jthread thread_;
};

// ---------------------------------------------------------------------------------------------
// How the pods of each Job UID ended, from a watch that resumes from its last resourceVersion
// across the kube-apiserver restart. When it must list again instead (410 Gone), pods that
// vanished meanwhile before they were seen to end make their UID's record incomplete.

class PodWatch {
 public:
  PodWatch(kube::RestClient& client, std::string ns) : client_(client), ns_(std::move(ns)) {}
  ~PodWatch() { Stop(); }
  PodWatch(const PodWatch&) = delete;
  PodWatch& operator=(const PodWatch&) = delete;

  void Start() {
    thread_ = std::jthread([this](const std::stop_token& stop) { Loop(stop); });
  }
  void Stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
  }
  bool synced() {
    std::lock_guard<std::mutex> lock(mu_);
    return synced_;
  }
  int gaps() {
    std::lock_guard<std::mutex> lock(mu_);
    return gaps_;
  }

  // `stopRequested`: when the batch Job was deleted (the cancel), if it was.
  ProcessRecord RecordOf(const std::string& uid, std::optional<TimePoint> stopRequested) {
    std::lock_guard<std::mutex> lock(mu_);
    ProcessRecord r;
    r.known = incomplete_.count(uid) == 0;
    for (const auto& [name, pod] : pods_) {
      if (pod.uid != uid) continue;
      std::string line = "pod " + name;
      line += pod.exitCode < 0 ? " never seen ending"
                               : " ended with exit code " + std::to_string(pod.exitCode) + " at " +
                                     Format(pod.finishedAt);
      line += pod.deletionRequested ? ", its deletion requested at " + Format(pod.deletionRequested)
                                    : ", never deleted";
      r.detail += (r.detail.empty() ? "" : "; ") + line;
      if (pod.exitCode < 0) continue;
      if (!r.exited || pod.exitCode == 0) {
        r.exitCode = pod.exitCode;
        // Both times are whole seconds (the stop request of the batch Job is exact): the end is
        // before the stop only if its second ended before the stop was asked for.
        std::optional<TimePoint> stop = stopRequested;
        if (pod.deletionRequested && (!stop || *pod.deletionRequested < *stop)) {
          stop = pod.deletionRequested;
        }
        r.stopRequestedBeforeEnd = stop && (!pod.finishedAt || *pod.finishedAt + 1s > *stop);
      }
      r.exited = true;
    }
    if (stopRequested) r.detail += "; the batch Job deleted at " + Format(stopRequested);
    if (!r.known) r.detail += " (the watch missed part of this Job's pods)";
    return r;
  }

 private:
  struct Pod {
    std::string uid;
    int exitCode = -1;  // once it ended
    bool present = true;
    std::optional<TimePoint> finishedAt;         // of the terminated container
    std::optional<TimePoint> deletionRequested;  // deletionTimestamp minus the grace period
  };

  void Apply(const json& pod, bool deleted) {
    const std::string name = Str(pod, "/metadata/name");
    const std::string uid = Str(pod, "/metadata/labels/execution.ayatori.ddupan.top~1job-uid");
    if (name.empty() || uid.empty()) return;
    Pod& p = pods_[name];
    p.uid = uid;
    p.present = !deleted;
    if (!p.deletionRequested) {
      if (auto t = TimeOf(Str(pod, "/metadata/deletionTimestamp"))) {
        p.deletionRequested =
            *t - std::chrono::seconds(
                     pod.value("/metadata/deletionGracePeriodSeconds"_json_pointer, int64_t{0}));
      }
    }
    if (p.exitCode >= 0) return;  // the first end seen is the end
    const std::string phase = Str(pod, "/status/phase");
    json::json_pointer terminated("/status/containerStatuses/0/state/terminated");
    if (pod.contains(terminated) && pod.at(terminated).is_object() &&
        pod.at(terminated).contains("exitCode") &&
        pod.at(terminated)["exitCode"].is_number_integer()) {
      p.exitCode = pod.at(terminated)["exitCode"].get<int>();
      p.finishedAt = TimeOf(pod.at(terminated).value("finishedAt", ""));
    } else if (phase == "Succeeded") {
      p.exitCode = 0;
    }
  }

  void Loop(const std::stop_token& stop) {
    std::string rv;
    bool listedBefore = false;
    while (!stop.stop_requested()) {
      if (rv.empty()) {
        std::set<std::string> listed;
        std::vector<json> items;
        ListOptions lo;
        lo.labelSelector = api::kJobUidLabel;
        auto listRv = ListAll(client_, adapters::kubernetes::PodsResource(), ns_, lo,
                              [&](json&& item) { items.push_back(std::move(item)); });
        if (!listRv.ok()) {
          Pause(stop);
          continue;
        }
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& item : items) {
          listed.insert(Str(item, "/metadata/name"));
          Apply(item, false);
        }
        for (auto& [name, p] : pods_) {
          if (!p.present || listed.count(name) != 0) continue;
          p.present = false;
          if (p.exitCode < 0) incomplete_.insert(p.uid);  // gone before it was seen to end
        }
        if (listedBefore) ++gaps_;
        listedBefore = true;
        synced_ = true;
        rv = *listRv;
      }
      WatchOptions wo;
      wo.labelSelector = api::kJobUidLabel;
      wo.resourceVersion = rv;
      wo.timeoutSeconds = 60;
      Status s =
          client_.Watch(adapters::kubernetes::PodsResource(), ns_, wo, stop, [&](WatchEvent&& e) {
            std::string v = Str(e.object, "/metadata/resourceVersion");
            if (!v.empty()) rv = v;
            if (e.type == WatchEventType::kBookmark) return true;
            std::lock_guard<std::mutex> lock(mu_);
            Apply(e.object, e.type == WatchEventType::kDeleted);
            return true;
          });
      if (s.code() == StatusCode::kGone) {
        rv.clear();
      } else if (!s.ok()) {
        Pause(stop);
      }
    }
  }

  static void Pause(const std::stop_token& stop) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(m);
    cv.wait_for(lock, stop, 300ms, [] { return false; });
  }

  kube::RestClient& client_;
  const std::string ns_;
  std::mutex mu_;
  std::map<std::string, Pod> pods_;
  std::set<std::string> incomplete_;
  int gaps_ = 0;
  bool synced_ = false;
  std::jthread thread_;
};

// ---------------------------------------------------------------------------------------------
// The API server's own record of batch Job creations: its audit log (hack/testenv/testenv.sh
// records create and delete of batch/v1 Jobs), which outlives the apiserver restart.

struct AuditCounts {
  std::map<std::string, int> created;        // Ayatori Job UID -> batch Jobs created (HTTP 201)
  int conflicts = 0;                         // creations refused with 409 (the name exists)
  std::map<std::string, TimePoint> deleted;  // Ayatori Job UID -> first accepted delete request
};

StatusOr<AuditCounts> ReadAudit(const std::string& path, const std::string& ns) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kNotFound, "no audit log at " + path);
  AuditCounts counts;
  const std::string prefix = "ayj-";  // adapters/kubernetes/batch_job.h: BatchJobName
  for (std::string line; std::getline(in, line);) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_object() || e.value("stage", "") != "ResponseComplete" ||
        Str(e, "/objectRef/resource") != "jobs" || Str(e, "/objectRef/apiGroup") != "batch" ||
        Str(e, "/objectRef/namespace") != ns) {
      continue;
    }
    const std::string name = Str(e, "/objectRef/name");
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string uid = name.substr(prefix.size());
    const std::string verb = e.value("verb", "");
    const int code = e.value("/responseStatus/code"_json_pointer, 0);
    if (verb == "create" && code == 201) counts.created[uid]++;
    if (verb == "create" && code == 409) counts.conflicts++;
    auto at = TimeOf(Str(e, "/requestReceivedTimestamp"));
    if (verb == "delete" && code / 100 == 2 && at && counts.deleted.count(uid) == 0) {
      counts.deleted[uid] = *at;
    }
  }
  return counts;
}

// ---------------------------------------------------------------------------------------------
// The round.

struct Tracked {
  std::string uid;
  bool created = false;
  SteadyClock::time_point createdAt{};
  std::optional<SteadyClock::time_point> firstSeenRunning;
  bool acted = false;
  std::string stateWhenActed;
  json last;            // the Job as last listed
  bool listed = false;  // in the last successful list
  int resultUnknownPolls = 0;
};

bool ActsOn(Kind k) { return k == Kind::kCancel || k == Kind::kCancelRace || k == Kind::kDelete; }

class Round {
 public:
  explicit Round(const RoundOptions& o) : o_(o) {}
  StatusOr<RoundResult> Run();

 private:
  void Progress(const std::string& line) {
    if (o_.progress) o_.progress(line);
  }
  Status Setup();
  Status Kubectl(const std::vector<std::string>& args, const std::string& input = "");
  json JobObject(const JobPlan& p) const;
  void CreateDue(milliseconds now);
  void Poll();
  void ActDue();
  bool AllSettled() const;
  std::vector<JobFacts> CollectFacts(RoundLog& log);
  void CollectDockerFacts(std::vector<JobFacts>& facts, RoundLog& log);
  void CollectKubernetesFacts(std::vector<JobFacts>& facts, RoundLog& log);
  void Cleanup(RoundLog& log);
  std::vector<std::string> BackendLeftovers();
  bool NodeRunsPods();

  const RoundOptions& o_;
  Plan plan_;
  std::string ns_;
  std::string kubeconfig_, kubectl_, auditLog_, dockerHost_;
  std::vector<std::string> dockerdEnv_, testenvEnv_;
  std::unique_ptr<kube::RestClient> client_;
  std::shared_ptr<adapters::docker::EngineClient> engine_;
  std::unique_ptr<DockerEventLog> events_;
  std::unique_ptr<PodWatch> pods_;
  std::unique_ptr<ReplicaSet> replicas_;
  std::unique_ptr<Disruptor> disruptor_;
  std::vector<Tracked> jobs_;
  SteadyClock::time_point t0_{};
};

Status Round::Kubectl(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {kubectl_, "--kubeconfig=" + kubeconfig_};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = testing::RunProcess(argv, input);
  if (r.exitCode != 0) {
    std::string command;
    for (const auto& a : args) command += " " + a;
    return {StatusCode::kInternal, "kubectl" + command + ": " + r.err};
  }
  return Status::Ok();
}

Status Round::Setup() {
  auto testenv = ReadEnvFile(o_.testenvDir + "/env.sh");
  if (!testenv.ok()) return testenv.status();
  auto dockerd = ReadEnvFile(o_.dockerdDir + "/env.sh");
  if (!dockerd.ok()) return dockerd.status();
  kubeconfig_ = (*testenv)["KUBECONFIG"];
  kubectl_ = (*testenv)["TESTENV_BIN"] + "/kubectl";
  auditLog_ = (*testenv)["TESTENV_AUDIT_LOG"];
  dockerHost_ = (*dockerd)["DOCKER_HOST"];
  if ((*testenv)["TESTENV_TIER"] != "e2e") {
    return {StatusCode::kFailedPrecondition,
            o_.testenvDir + " runs the \"" + (*testenv)["TESTENV_TIER"] +
                "\" tier; the Kubernetes backend needs \"e2e\" (testenv.sh up e2e)"};
  }
  if (auditLog_.empty()) {
    return {StatusCode::kFailedPrecondition,
            "the control plane in " + o_.testenvDir +
                " keeps no audit log (no TESTENV_AUDIT_LOG in its env.sh): start it again with "
                "this version of hack/testenv/testenv.sh"};
  }
  if (dockerHost_.empty()) {
    return {StatusCode::kFailedPrecondition, o_.dockerdDir + "/env.sh names no DOCKER_HOST"};
  }
  dockerdEnv_ = {"AYATORI_DOCKERD_DIR=" + o_.dockerdDir, "AYATORI_DOCKERD_SKIP_IMAGES=1"};
  testenvEnv_ = {"TESTENV_DIR=" + o_.testenvDir, "TESTENV_BIN=" + (*testenv)["TESTENV_BIN"]};

  kube::ConfigLoadOptions lo;
  lo.kubeconfigPath = kubeconfig_;
  auto config = kube::LoadConfig(lo);
  if (!config.ok()) return config.status();
  kube::RestClientOptions co;
  co.qps = 100;
  co.burst = 200;
  co.timeout = 10s;
  co.connectTimeout = 3s;
  co.userAgent = "ayatori-chaos";
  client_ = kube::RestClient::New(*config, co);

  auto endpoint = adapters::docker::ParseEngineEndpoint(dockerHost_, false);
  if (!endpoint.ok()) return endpoint.status();
  engine_ = std::make_shared<adapters::docker::EngineClient>(
      *endpoint, adapters::docker::TlsMaterial{}, "1.41", adapters::docker::EngineTimeouts{});

  const std::string crds = o_.sourceDir + "/config/crd/";
  if (Status s = Kubectl({"apply", "-f", crds}); !s.ok()) return s;
  if (Status s = Kubectl({"wait", "--for=condition=established", "--timeout=60s", "-f", crds});
      !s.ok()) {
    return s;
  }
  ns_ = "chaos-" + std::to_string(plan_.seed) + "-" + std::to_string(getpid());
  for (const std::string& n : {std::string(kLeaseNamespace), ns_}) {
    json object = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", n}}}};
    auto created = client_->Create(controller::kNamespaces, "", object, {});
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
      return created.status();
    }
  }
  auto object = [](const char* kind, const char* name, json spec) {
    return json{{"apiVersion", api::kApiVersion},
                {"kind", kind},
                {"metadata", {{"name", name}}},
                {"spec", std::move(spec)}};
  };
  auto parametersRef = [](const char* kind, const char* name) {
    return json{{"group", api::kGroup}, {"kind", kind}, {"name", name}};
  };
  // Docker: the round's dockerd, no network, SIGKILL one second after SIGTERM (the tasks' shell
  // is PID 1 and ignores SIGTERM).
  json classes = {
      {"apiVersion", "v1"},
      {"kind", "List"},
      {"items",
       {object("DockerExecutionParameters", kDockerClass,
               {{"endpoint", dockerHost_},
                {"networkMode", "none"},
                {"pullPolicy", "IfNotPresent"},
                {"stopGracePeriodSeconds", 1}}),
        object("JobClass", kDockerClass,
               {{"controllerName", adapters::docker::kControllerName},
                {"parametersRef", parametersRef("DockerExecutionParameters", kDockerClass)}}),
        object("KubernetesExecutionParameters", kKubernetesClass, json::object()),
        object("JobClass", kKubernetesClass,
               {{"controllerName", adapters::kubernetes::kControllerName},
                {"parametersRef",
                 parametersRef("KubernetesExecutionParameters", kKubernetesClass)}})}}};
  return Kubectl({"apply", "-f", "-"}, classes.dump());
}

json Round::JobObject(const JobPlan& p) const {
  const bool forever = p.runSeconds == 0;
  json task;
  if (p.backend == Backend::kDocker) {
    std::string script =
        forever ? "sleep 300"
                : "sleep " + std::to_string(p.runSeconds) + "; exit " + std::to_string(p.exitCode);
    task = {{"image", o_.dockerImage}, {"command", {"/bin/sh", "-c", script}}};
  } else {
    // kwok plays the kubelet (hack/testenv/kwok-stages.yaml): the env shapes the pod's life.
    json env = json::array();
    env.push_back({{"name", "TESTENV_RUN_FOR"},
                   {"value", forever ? "24h" : std::to_string(p.runSeconds) + "s"}});
    env.push_back({{"name", "TESTENV_EXIT_CODE"}, {"value", std::to_string(p.exitCode)}});
    task = {{"image", "busybox:1.36"}, {"command", {"/bin/sh", "-c", "true"}}, {"env", env}};
  }
  json spec = {{"jobClassName", p.backend == Backend::kDocker ? kDockerClass : kKubernetesClass},
               {"task", task}};
  if (p.kind == Kind::kDeadline) spec["activeDeadlineSeconds"] = p.activeDeadlineSeconds;
  return {{"apiVersion", api::kApiVersion},
          {"kind", "Job"},
          {"metadata", {{"name", p.name}, {"namespace", ns_}, {"labels", {{kRoundLabel, ns_}}}}},
          {"spec", spec}};
}

void Round::CreateDue(milliseconds now) {
  for (size_t i = 0; i < jobs_.size(); ++i) {
    Tracked& t = jobs_[i];
    const JobPlan& p = plan_.jobs[i];
    if (t.created || now < p.createAt) continue;
    auto created = client_->Create(controller::kJobs, ns_, JobObject(p), {});
    if (!created.ok() && created.status().code() == StatusCode::kAlreadyExists) {
      // An earlier attempt went through although its answer was lost (apiserver restart).
      created = client_->Get(controller::kJobs, ns_, p.name);
    }
    if (!created.ok()) continue;  // tried again on the next pass
    t.created = true;
    t.createdAt = SteadyClock::now();
    t.uid = Str(*created, "/metadata/uid");
    t.last = *created;
    t.listed = true;
  }
}

void Round::Poll() {
  ListOptions lo;
  lo.labelSelector = std::string(kRoundLabel) + "=" + ns_;
  auto list = client_->List(controller::kJobs, ns_, lo);
  if (!list.ok()) return;  // the apiserver is down: keep what was seen last
  std::map<std::string, const json*> byName;
  for (const auto& item : list->items) byName[Str(item, "/metadata/name")] = &item;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    Tracked& t = jobs_[i];
    if (!t.created) continue;
    auto it = byName.find(plan_.jobs[i].name);
    t.listed = it != byName.end();
    if (!t.listed) continue;
    t.last = *it->second;
    if (!t.firstSeenRunning && !Str(t.last, "/status/startTime").empty()) {
      t.firstSeenRunning = SteadyClock::now();
    }
    if (Summary(t.last, api::kConditionSucceeded) == "Unknown/ResultUnknown") {
      ++t.resultUnknownPolls;
    }
  }
}

void Round::ActDue() {
  const auto now = SteadyClock::now();
  for (size_t i = 0; i < jobs_.size(); ++i) {
    Tracked& t = jobs_[i];
    const JobPlan& p = plan_.jobs[i];
    if (!ActsOn(p.kind) || !t.created || t.acted) continue;
    SteadyClock::time_point due = p.actEarly           ? t.createdAt + p.actAfter
                                  : t.firstSeenRunning ? *t.firstSeenRunning + p.actAfter
                                                       : t.createdAt + kActWithoutStartAfter;
    if (now < due) continue;
    Status s;
    if (p.kind == Kind::kDelete) {
      DeleteOptions d;
      d.preconditionUid = t.uid;
      s = client_->Delete(controller::kJobs, ns_, p.name, d);
    } else {
      auto patched = client_->Patch(controller::kJobs, ns_, p.name, PatchType::kMerge,
                                    {{"spec", {{"desiredState", "Cancelled"}}}}, {});
      s = patched.status();
    }
    if (!s.ok() && s.code() != StatusCode::kNotFound) continue;  // tried again on the next pass
    t.acted = true;
    t.stateWhenActed = DerivedState(t.last);
    Progress(std::string(p.kind == Kind::kDelete ? "deleted " : "cancelled ") + p.name +
             " (last seen " + t.stateWhenActed + ")");
  }
}

bool Round::AllSettled() const {
  for (size_t i = 0; i < jobs_.size(); ++i) {
    const Tracked& t = jobs_[i];
    if (!t.created || (ActsOn(plan_.jobs[i].kind) && !t.acted)) return false;
    if (plan_.jobs[i].kind == Kind::kDelete ? t.listed : !IsFinished(t.last)) return false;
  }
  return true;
}

std::vector<JobFacts> Round::CollectFacts(RoundLog& log) {
  std::vector<JobFacts> facts(jobs_.size());
  std::map<std::string, size_t> byUid;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    JobFacts& f = facts[i];
    const Tracked& t = jobs_[i];
    f.uid = t.uid;
    f.acted = t.acted;
    f.stateWhenActed = t.stateWhenActed;
    f.resultUnknownPolls = t.resultUnknownPolls;
    if (!t.uid.empty()) byUid[t.uid] = i;
  }

  ListOptions lo;
  lo.labelSelector = std::string(kRoundLabel) + "=" + ns_;
  StatusOr<ObjectList> list = Status(StatusCode::kUnavailable, "not listed");
  testing::Eventually([&] { return (list = client_->List(controller::kJobs, ns_, lo)).ok(); }, 60s,
                      500ms);
  if (!list.ok()) {
    log.setupProblems.push_back("listing the Jobs at the end: " + list.status().ToString());
    return facts;
  }
  for (const auto& job : list->items) {
    auto it = byUid.find(Str(job, "/metadata/uid"));
    if (it == byUid.end()) continue;
    JobFacts& f = facts[it->second];
    f.exists = true;
    f.deleting = !Str(job, "/metadata/deletionTimestamp").empty();
    for (const auto& fin : job.value("/metadata/finalizers"_json_pointer, json::array())) {
      if (fin.is_string()) f.finalizers.push_back(fin.get<std::string>());
    }
    f.succeeded = Summary(job, api::kConditionSucceeded);
    f.completionTime = Str(job, "/status/completionTime");
    if (const json* c = Condition(job, api::kConditionSucceeded)) {
      f.message = c->value("message", "");
    }
    json::json_pointer exit("/status/result/exitCode");
    if (job.contains(exit) && job.at(exit).is_number_integer()) {
      f.exitCode = job.at(exit).get<int>();
    }
    for (const auto& r : job.value("/status/execution/references"_json_pointer, json::array())) {
      if (r.is_object()) f.references.push_back(r.value("id", ""));
    }
    f.scheduled = Summary(job, api::kConditionScheduled).rfind("True/", 0) == 0;
  }
  CollectDockerFacts(facts, log);
  CollectKubernetesFacts(facts, log);
  return facts;
}

// The containers of the round's UIDs, inspected, by UID.
StatusOr<std::map<std::string, std::vector<json>>> ContainersByUid(
    adapters::docker::EngineClient& engine) {
  json filters = {{"label", {api::kJobUidLabel}}};
  auto listed =
      engine.Call("GET", "/containers/json?all=1&filters=" + base::PercentEncode(filters.dump()));
  if (!listed.ok()) return listed.status();
  if (listed->status != 200) {
    return Status(StatusCode::kInternal, "GET /containers/json: HTTP " +
                                             std::to_string(listed->status) + " " + listed->body);
  }
  std::map<std::string, std::vector<json>> byUid;
  json list = json::parse(listed->body, nullptr, false);
  if (!list.is_array()) return Status(StatusCode::kInternal, "GET /containers/json: not a list");
  for (const auto& c : list) {
    auto inspect = engine.Call("GET", "/containers/" + c.value("Id", "") + "/json");
    if (!inspect.ok() || inspect->status != 200) continue;  // removed meanwhile
    json j = json::parse(inspect->body, nullptr, false);
    byUid[Str(j, "/Config/Labels/execution.ayatori.ddupan.top~1job-uid")].push_back(j);
  }
  return byUid;
}

void Round::CollectDockerFacts(std::vector<JobFacts>& facts, RoundLog& log) {
  StatusOr<std::map<std::string, std::vector<json>>> containers =
      Status(StatusCode::kUnavailable, "not listed");
  testing::Eventually([&] { return (containers = ContainersByUid(*engine_)).ok(); }, 60s, 500ms);
  if (!containers.ok()) {
    log.setupProblems.push_back("listing the containers at the end: " +
                                containers.status().ToString());
    return;
  }
  auto created = events_->Created();
  auto cancels = events_->CancelRequested();
  const std::vector<RestartRecord> restarts = disruptor_->Records();
  for (size_t i = 0; i < facts.size(); ++i) {
    JobFacts& f = facts[i];
    if (plan_.jobs[i].backend != Backend::kDocker || f.uid.empty()) continue;
    std::set<std::string> ids = created[f.uid];
    const std::vector<json>& now = (*containers)[f.uid];
    // A container that exists was created, whether or not its event was seen.
    for (const auto& c : now) ids.insert(c.value("Id", ""));
    f.createdIds.assign(ids.begin(), ids.end());
    f.executionsCreated = static_cast<int>(ids.size());
    f.executionsLeft = static_cast<int>(now.size());
    for (const auto& c : now) {
      if (c.value("/State/Running"_json_pointer, false)) ++f.activeLeft;
    }
    if (now.size() == 1) {
      const std::string state = Str(now[0], "/State/Status");
      f.process.known = true;
      f.process.exited = state == "exited" || state == "dead";
      f.process.exitCode = now[0].value("/State/ExitCode"_json_pointer, -1);
      auto finished = TimeOf(Str(now[0], "/State/FinishedAt"));
      auto renamed = cancels.find(f.uid);
      if (renamed != cancels.end()) {
        f.process.stopRequestedBeforeEnd = !finished || renamed->second <= *finished;
      }
      f.process.detail =
          "container " + Str(now[0], "/Name") + " " + state + " exit code " +
          std::to_string(f.process.exitCode) + " at " + Str(now[0], "/State/FinishedAt") +
          (renamed == cancels.end() ? ", never renamed for a cancel"
                                    : ", renamed for the cancel at " + Format(renamed->second));
      for (const RestartRecord& restart : restarts) {
        if (restart.what == "dockerd" && f.process.exited && f.process.exitCode == 255 &&
            finished && *finished >= restart.stoppedAt &&
            *finished <= restart.answeredAt + kEngineRestoreMargin) {
          f.process.exitStatusLost = true;
          f.process.detail += "; recorded at the engine's restart: its exit status was lost";
        }
      }
    } else if (ids.empty()) {
      f.process.known = true;  // never created: never ran
    }
  }
}

void Round::CollectKubernetesFacts(std::vector<JobFacts>& facts, RoundLog& log) {
  auto audit = ReadAudit(auditLog_, ns_);
  if (!audit.ok()) log.setupProblems.push_back(audit.status().ToString());
  if (audit.ok()) log.batchCreateConflicts = audit->conflicts;
  ListOptions lo;
  lo.labelSelector = api::kJobUidLabel;
  std::map<std::string, int> batchJobs, activePods;
  Status listed = Status(StatusCode::kUnavailable, "not listed");
  testing::Eventually(
      [&] {
        batchJobs.clear();
        activePods.clear();
        auto b =
            ListAll(*client_, adapters::kubernetes::BatchJobsResource(), ns_, lo, [&](json&& j) {
              batchJobs[Str(j, "/metadata/labels/execution.ayatori.ddupan.top~1job-uid")]++;
            });
        auto p = ListAll(*client_, adapters::kubernetes::PodsResource(), ns_, lo, [&](json&& pod) {
          const std::string phase = Str(pod, "/status/phase");
          if (Str(pod, "/metadata/deletionTimestamp").empty() && phase != "Succeeded" &&
              phase != "Failed") {
            activePods[Str(pod, "/metadata/labels/execution.ayatori.ddupan.top~1job-uid")]++;
          }
        });
        listed = !b.ok() ? b.status() : p.status();
        return listed.ok();
      },
      60s, 500ms);
  if (!listed.ok()) {
    log.setupProblems.push_back("listing batch Jobs and pods: " + listed.ToString());
  }
  for (size_t i = 0; i < facts.size(); ++i) {
    JobFacts& f = facts[i];
    if (plan_.jobs[i].backend != Backend::kKubernetes || f.uid.empty()) continue;
    if (audit.ok()) {
      auto it = audit->created.find(f.uid);
      f.executionsCreated = it == audit->created.end() ? 0 : it->second;
    }
    f.executionsLeft = batchJobs[f.uid];
    f.activeLeft = activePods[f.uid];
    std::optional<TimePoint> stop;
    if (audit.ok() && audit->deleted.count(f.uid) != 0) stop = audit->deleted.at(f.uid);
    f.process = pods_->RecordOf(f.uid, stop);
  }
}

// A bare pod (no Ayatori Job behind it) that kwok should run for a second and complete: whether
// the simulated node survived the round.
bool Round::NodeRunsPods() {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "chaos-node-canary"}, {"namespace", ns_}}},
              {"spec",
               {{"restartPolicy", "Never"},
                {"containers",
                 {{{"name", "canary"},
                   {"image", "busybox:1.36"},
                   {"env", {{{"name", "TESTENV_RUN_FOR"}, {"value", "1s"}}}}}}}}}};
  const ResourceRef pods = adapters::kubernetes::PodsResource();
  if (!client_->Create(pods, ns_, pod, {}).ok()) return false;
  bool ran = testing::Eventually(
      [&] {
        auto p = client_->Get(pods, ns_, "chaos-node-canary");
        return p.ok() && Str(*p, "/status/phase") == "Succeeded";
      },
      60s, 500ms);
  (void)client_->Delete(pods, ns_, "chaos-node-canary", {});
  return ran;
}

std::vector<std::string> Round::BackendLeftovers() {
  std::set<std::string> uids;
  for (const auto& t : jobs_) {
    if (!t.uid.empty()) uids.insert(t.uid);
  }
  std::vector<std::string> left;
  auto containers = ContainersByUid(*engine_);
  if (!containers.ok()) return {"containers unknown: " + containers.status().ToString()};
  for (const auto& [uid, list] : *containers) {
    if (uids.count(uid) == 0) continue;
    for (const auto& c : list) {
      left.push_back("container " + Str(c, "/Name") + " of Job uid " + uid);
    }
  }
  ListOptions lo;
  lo.labelSelector = api::kJobUidLabel;
  auto batch = ListAll(*client_, adapters::kubernetes::BatchJobsResource(), ns_, lo, [&](json&& j) {
    if (Str(j, "/metadata/deletionTimestamp").empty()) {
      left.push_back("batch Job " + Str(j, "/metadata/name"));
    }
  });
  if (!batch.ok()) left.push_back("batch Jobs unknown: " + batch.status().ToString());
  return left;
}

void Round::Cleanup(RoundLog& log) {
  Progress("cleanup: deleting every Job through the controller");
  ListOptions lo;
  lo.labelSelector = std::string(kRoundLabel) + "=" + ns_;
  std::vector<std::string> remaining;
  auto refresh = [&] {
    auto list = client_->List(controller::kJobs, ns_, lo);
    if (!list.ok()) return false;
    remaining.clear();
    for (const auto& j : list->items) remaining.push_back(Str(j, "/metadata/name"));
    return true;
  };
  testing::Eventually(refresh, 60s, 500ms);
  for (const auto& name : remaining) {
    Status s = client_->Delete(controller::kJobs, ns_, name, {});
    if (!s.ok() && s.code() != StatusCode::kNotFound) {
      log.setupProblems.push_back("deleting " + name + ": " + s.ToString());
    }
  }
  if (!testing::Eventually([&] { return refresh() && remaining.empty(); }, 90s, 500ms)) {
    for (const auto& name : remaining) {
      log.cleanupStuck.push_back(name);
      // As the runbook does (docs/operations.md), so that the namespace can go.
      (void)client_->Patch(controller::kJobs, ns_, name, PatchType::kMerge,
                           {{"metadata", {{"finalizers", nullptr}}}}, {});
    }
  }
  std::vector<std::string> left;
  testing::Eventually([&] { return (left = BackendLeftovers()).empty(); }, 30s, 500ms);
  log.cleanupLeftovers = left;
}

StatusOr<RoundResult> Round::Run() {
  RoundResult result;
  RoundLog& log = result.log;
  plan_ = MakePlan(o_.jobs, o_.seed != 0 ? o_.seed : RandomSeed());
  Progress("seed " + std::to_string(plan_.seed) + ", " + std::to_string(plan_.jobs.size()) +
           " Jobs (replay: make chaos CHAOS_SEED=" + std::to_string(plan_.seed) +
           " CHAOS_JOBS=" + std::to_string(plan_.jobs.size()) + ")");
  if (Status s = Setup(); !s.ok()) return s;
  log.ns = ns_;
  mkdir(o_.runDir.c_str(), 0755);

  events_ = std::make_unique<DockerEventLog>(engine_);
  events_->Start();
  pods_ = std::make_unique<PodWatch>(*client_, ns_);
  pods_->Start();
  if (!testing::Eventually([&] { return events_->connected() && pods_->synced(); }, 30s, 100ms)) {
    return Status(StatusCode::kUnavailable, "dockerd's /events or the pod watch did not start");
  }

  std::vector<std::string> args = {"--kubeconfig=" + kubeconfig_,
                                   "--leader-elect",
                                   std::string("--leader-election-namespace=") + kLeaseNamespace,
                                   "--leader-election-name=" + ns_,
                                   std::string("--lease-duration=") + kLeaseDuration,
                                   std::string("--renew-deadline=") + kRenewDeadline,
                                   std::string("--retry-period=") + kRetryPeriod,
                                   "--metrics-address=127.0.0.1:0",
                                   "--log-format=json",
                                   "--log-level=debug"};  // every adapter call, for post-mortems
  replicas_ = std::make_unique<ReplicaSet>(o_.controllerBinary, args, o_.runDir, *client_, ns_,
                                           o_.progress);
  replicas_->Start();
  Progress("replicas started, logs in " + o_.runDir + "/replica-{0,1}.log; waiting for a leader");
  if (!testing::Eventually([&] { return replicas_->LeaderPid() != 0; }, 90s, 200ms)) {
    replicas_->Stop();
    return Status(StatusCode::kDeadlineExceeded,
                  "no replica took the Lease within 90 s; see " + o_.runDir + "/replica-*.log");
  }

  t0_ = SteadyClock::now();
  std::vector<Disruption> kills, restarts;
  for (const auto& d : plan_.disruptions) {
    (d.type == Disruption::Type::kKillReplica ? kills : restarts).push_back(d);
  }
  replicas_->ScheduleKills(t0_, kills);
  disruptor_ = std::make_unique<Disruptor>(o_.sourceDir, dockerdEnv_, testenvEnv_);
  disruptor_->Start(t0_, restarts, o_.progress);
  jobs_.assign(plan_.jobs.size(), Tracked{});

  std::optional<milliseconds> settleStart;
  auto lastPoll = SteadyClock::time_point{};
  size_t createdReported = 0;
  while (true) {
    const milliseconds now = Since(t0_);
    CreateDue(now);
    size_t created = 0;
    for (const auto& t : jobs_) created += t.created ? 1 : 0;
    if (created != createdReported && (created == jobs_.size() || created % 10 == 0)) {
      Progress("created " + std::to_string(created) + " of " + std::to_string(jobs_.size()) +
               " Jobs");
      createdReported = created;
    }
    if (SteadyClock::now() - lastPoll >= kJobPoll) {
      Poll();
      lastPoll = SteadyClock::now();
    }
    ActDue();
    const bool chaosOver = now >= plan_.chaosWindow && disruptor_->Done() && replicas_->KillsDone();
    if (chaosOver && !settleStart) {
      settleStart = now;
      Progress("chaos over; waiting up to " + std::to_string(o_.settleTimeout.count()) +
               " s for every Job to finish");
    }
    if (chaosOver && AllSettled()) {
      log.settled = true;
      break;
    }
    if (settleStart && now - *settleStart > o_.settleTimeout) break;
    std::this_thread::sleep_for(200ms);  // the round's pace, not a synchronisation
  }
  Progress(log.settled ? "every Job finished; collecting the facts"
                       : "settle deadline passed; collecting the facts");
  result.facts = CollectFacts(log);
  log.duration = Since(t0_);
  if (!NodeRunsPods()) {
    log.setupProblems.push_back(
        "the kwok node no longer runs pods (a canary pod did not complete within 60 s; see "
        "kwok.log in " +
        o_.testenvDir +
        "/logs): the Kubernetes Jobs' fate says nothing about "
        "the controller");
  }
  Cleanup(log);

  replicas_->Stop();
  replicas_->Report(log);
  disruptor_->Stop();
  log.restarts = disruptor_->Records();
  events_->Stop();
  pods_->Stop();
  log.podWatchGaps = pods_->gaps();
  log.dockerEventReconnects = events_->reconnects();

  // Leave the cluster as it was: the namespace, the Lease, the classes of the round.
  (void)client_->Delete(controller::kNamespaces, "", ns_, {});
  (void)client_->Delete(kube::LeasesResource(), kLeaseNamespace, ns_, {});
  for (const char* name : {kDockerClass, kKubernetesClass}) {
    (void)client_->Delete(controller::kJobClasses, "", name, {});
  }
  (void)client_->Delete(adapters::ParametersResource(*adapters::docker::Descriptor().parameters),
                        "", kDockerClass, {});
  (void)client_->Delete(
      adapters::ParametersResource(*adapters::kubernetes::Descriptor().parameters), "",
      kKubernetesClass, {});

  // The round restarts kube-apiserver under the rest of the control plane; a component that did
  // not survive that makes the Kubernetes Jobs' fate meaningless.
  for (const char* component : {"kube-controller-manager", "kube-scheduler", "kwok", "etcd"}) {
    std::ifstream pidFile(o_.testenvDir + "/pids/" + component);
    int pid = 0;
    if (!(pidFile >> pid) || kill(pid, 0) != 0) {
      log.setupProblems.push_back(std::string(component) +
                                  " of the control plane is no longer running (see its log in " +
                                  o_.testenvDir + "/logs)");
    }
  }

  result.plan = plan_;
  result.verdict = Judge(plan_, result.facts, log);
  result.report = FormatReport(plan_, result.facts, log, result.verdict);
  return result;
}

}  // namespace

StatusOr<RoundResult> RunRound(const RoundOptions& options) { return Round(options).Run(); }

}  // namespace ayatori::chaos
