// Property test of the shipped controller::JobReconciler: random but reproducible histories
// (fixed seeds) of backend behaviour (progress, failures, unknown answers, lost executions, stale
// and out-of-order observations, slow stops), user actions (cancel, delete, TTL edits, admin
// confirmations, same-name re-creation), clock jumps, informer lag, API failures (refused
// requests, lost answers) and controller crashes/restarts (the reconciler's named crash points, a
// crash after any write or call). After every step the Harness's checks must hold (sim.h):
// CheckInvariants on every write, at most one execution per UID, Ensure only on the current Job
// and never after desiredState=Cancelled, the finalizer never removed while the backend still has
// the execution, TTL deletions only of expired terminal Jobs, terminal results only as the
// backend reported them. At the end, with a healthy backend, every Job must reach a terminal
// state or be gone, and no execution of a gone Job may be left.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "api/conditions.h"
#include "controller/kinds.h"
#include "statemachine/invariants.h"
#include "statemachine/statemachine.h"
#include "test/statemachine/sim.h"

namespace ayatori::statemachine::testing {
namespace {

using std::chrono::seconds;

constexpr int kSeeds = 50;
constexpr int kSteps = 2000;
const char* const kNames[] = {"alpha", "beta", "gamma"};
const char* const kCrashPoints[] = {controller::kCrashAfterEnsure, controller::kCrashAfterCancel,
                                    controller::kCrashAfterDelete,
                                    controller::kCrashBeforeStatusWrite};
// What the reconciler sends for Jobs: fresh reads, finalizer patches, status updates, deletes.
const char* const kJobVerbs[] = {"get", "patch", "update", "delete"};

class World {
 public:
  explicit World(uint64_t seed) : rng_(seed) {
    h_.backend.rng = &rng_;
    h_.backend.staleObserveProbability = 0.1;
    h_.useCache = Chance(0.5);
    h_.cluster.secrets["tok"] = {{"token", "hunter2"}};
  }

  void Step() {
    const std::string name = kNames[Uniform(0, 2)];
    std::optional<api::Job> job = h_.api.Get(name);
    const std::string uid = job ? job->metadata.uid : "";
    if (job) uids_.insert(uid);
    const int op = Uniform(0, 19);
    Trace(name + (job ? "(" + uid + " " + StateName(DeriveState(*job)) + ")" : "(none)") + " op " +
          std::to_string(op));
    switch (op) {
      case 0:
        if (!job) Create(name);
        break;
      case 1:
      case 2:
      case 3:
      case 4:
      case 5: {
        RoundOptions options;
        if (Chance(0.1)) options.crashAfterSteps = Uniform(1, 4);
        if (Chance(0.05)) options.crashPoint = kCrashPoints[Uniform(0, 3)];
        h_.Reconcile(name, options);
        break;
      }
      case 6:
        h_.SyncCache(name);
        break;
      case 7:
        if (job) h_.backend.Start(uid, h_.Now());
        break;
      case 8:
        if (job) Exit(uid);
        break;
      case 9:
        if (!job) break;
        if (Chance(0.5)) {
          h_.backend.CompleteRequestedStop(uid, h_.Now());
        } else if (Chance(0.1)) {
          h_.backend.StopExternally(uid, h_.Now());
        } else if (Chance(0.1) && job->status.execution &&
                   !job->status.execution->references.empty()) {
          // Only once its references are persisted: a backend that loses an execution whose
          // Ensure answer was lost makes the next Ensure's UID lookup find nothing and create
          // again; no controller can tell that from "never created" (spec: lookup by UID).
          h_.backend.Lose(uid);
        }
        break;
      case 10:
        if (Chance(0.3)) h_.backend.unreachable = !h_.backend.unreachable;
        if (Chance(0.3)) h_.backlog = !h_.backlog;
        if (Chance(0.2)) h_.backend.loseNextEnsureResponse = true;
        if (Chance(0.2)) h_.backend.slowStop = !h_.backend.slowStop;
        h_.backend.failOnCreate = Chance(0.05) ? "ImagePullFailed" : "";
        h_.backend.rejectOnEnsure = Chance(0.03) ? "BackendRejected" : "";
        // The API server refuses the next such request about a Job (anyone's: a user's edit may
        // be the one to fail), or applies the next write of the reconciler and the answer is lost.
        if (Chance(0.2)) {
          h_.server.FailNext(kJobVerbs[Uniform(0, 3)], controller::kJobs.GroupResource(),
                             Status(StatusCode::kServerError, "injected: etcd timeout"));
        }
        if (Chance(0.1)) h_.loseNextWriteResponse = true;
        break;
      case 11:
        if (job && Chance(0.3)) h_.api.SetCancelled(name);
        break;
      case 12:
        if (job && Chance(0.3)) (void)h_.api.Delete(name, uid);
        break;
      case 13:
        if (job) h_.api.SetTtl(name, RandomTtl());
        break;
      case 14:
        if (job && Chance(0.2)) {
          // Either the episode the Job shows now or a stale/unbound one.
          h_.api.Annotate(
              name, api::kConfirmBackendLostAnnotation,
              Chance(0.5) ? std::to_string(job->status.resultUnknownEpisode) + ":admin: seed test"
                          : "admin: seed test");
        }
        break;
      case 15:
        if (Chance(0.5)) {
          h_.cluster.classes.insert("gold");
        } else {
          h_.cluster.classes.erase("gold");
        }
        h_.cluster.resourcesOutOfRange = Chance(0.05);
        break;
      case 16:
        h_.DropCache();  // controller restart
        break;
      case 17:
      case 18:
        h_.Advance(seconds(Uniform(1, 30)));
        break;
      case 19:
        h_.Advance(seconds(Chance(0.5) ? Uniform(60, 600) : Uniform(86400, 3 * 86400)));
        break;
    }
    CheckGlobal();
  }

  // A healthy backend and enough time: everything must settle.
  void Drain() {
    h_.backend.unreachable = false;
    h_.backend.loseNextEnsureResponse = false;
    h_.backend.staleObserveProbability = 0;
    h_.cluster.classes.insert("gold");
    h_.cluster.secrets["missing"] = {{"token", "x"}};
    h_.cluster.resourcesOutOfRange = false;
    h_.loseNextWriteResponse = false;
    h_.server.ClearFailures();
    for (int round = 0; round < 30; ++round) {
      for (const char* name : kNames) {
        std::optional<api::Job> job = h_.api.Get(name);
        if (!job) continue;
        uids_.insert(job->metadata.uid);
        h_.backend.Start(job->metadata.uid, h_.Now());
        h_.backend.Exit(job->metadata.uid, 0, h_.Now());
        if (DeriveState(*job) == State::kResultUnknown) {
          h_.api.Annotate(name, api::kConfirmBackendLostAnnotation,
                          std::to_string(job->status.resultUnknownEpisode) + ":admin: drain");
        }
        h_.SyncCache(name);
        h_.Reconcile(name);
      }
      h_.Advance(seconds(700));
      CheckGlobal();
    }
    for (const char* name : kNames) {
      std::optional<api::Job> job = h_.api.Get(name);
      if (!job) continue;
      const State s = DeriveState(*job);
      if (!IsTerminal(s)) {
        h_.Fail(job->metadata.uid + ": still " + StateName(s) + " after the drain");
      }
    }
    for (const std::string& uid : uids_) {
      bool exists = false;
      for (const char* name : kNames) {
        std::optional<api::Job> job = h_.api.Get(name);
        exists = exists || (job && job->metadata.uid == uid);
      }
      if (!exists && h_.backend.Find(uid) != nullptr) {
        h_.Fail(uid + ": the Job is gone but its backend execution was left behind");
      }
    }
  }

  const Harness& harness() const { return h_; }
  // The last steps, to print with a failure.
  std::string Tail() const {
    std::string out;
    for (const std::string& t : trace_) out += "  " + t + "\n";
    return out;
  }
  int created() const { return static_cast<int>(uids_.size()); }

 private:
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::optional<int32_t> RandomTtl() {
    switch (Uniform(0, 3)) {
      case 0:
        return std::nullopt;
      case 1:
        return 0;
      case 2:
        return 60;
      default:
        return 600;
    }
  }

  void Create(const std::string& name) {
    api::JobSpec spec = BasicSpec();
    const int cls = Uniform(0, 2);
    spec.jobClassName = cls == 0 ? "" : cls == 1 ? "standard" : "gold";
    if (Chance(0.4)) spec.activeDeadlineSeconds = Chance(0.5) ? 30 : 300;
    spec.ttlSecondsAfterFinished = RandomTtl();
    if (Chance(0.2)) {
      api::EnvVar env{"TOKEN", std::nullopt, api::EnvVarSource{}};
      env.valueFrom->secretKeyRef =
          api::KeySelector{Chance(0.5) ? "tok" : "missing", "token", false};
      spec.task.env.push_back(env);
    }
    uids_.insert(h_.Create(name, spec));
  }

  void Exit(const std::string& uid) {
    switch (Uniform(0, 3)) {
      case 0:
      case 1:
        h_.backend.Exit(uid, 0, h_.Now());
        break;
      case 2:
        h_.backend.Exit(uid, 1, h_.Now());
        break;
      default:
        h_.backend.Exit(uid, 137, h_.Now(), "OOMKilled");
        break;
    }
  }

  void CheckGlobal() {
    for (const std::string& uid : uids_) {
      if (h_.backend.Creates(uid) > 1) {
        h_.Fail(uid + ": " + std::to_string(h_.backend.Creates(uid)) + " executions created");
      }
      // The whole persisted history, pairwise (the per-write check covers the same ground; this
      // also guards against a write that bypassed it).
      const std::vector<api::JobStatus>& history = h_.api.History(uid);
      for (size_t i = checked_[uid]; i + 1 < history.size(); ++i) {
        for (const std::string& v : CheckInvariants(history[i], history[i + 1])) {
          h_.Fail(uid + ": history: " + v);
        }
      }
      if (!history.empty()) checked_[uid] = history.size() - 1;
    }
  }

  void Trace(std::string what) {
    trace_.push_back(std::move(what));
    if (trace_.size() > 40) trace_.erase(trace_.begin());
  }

  std::mt19937_64 rng_;
  Harness h_;
  std::vector<std::string> trace_;
  std::set<std::string> uids_;
  std::map<std::string, size_t> checked_;
};

// AYATORI_PROPERTY_SEEDS=<n> runs more (or fewer) seeds than kSeeds, e.g. once before a merge.
int Seeds() {
  const char* env = std::getenv("AYATORI_PROPERTY_SEEDS");
  return env != nullptr ? std::max(1, std::atoi(env)) : kSeeds;
}

TEST(StateMachineProperty, RandomHistoriesKeepEveryInvariant) {
  const int seeds = Seeds();
  int jobs = 0;
  std::map<std::string, int> outcomes;
  Harness::Counters total;
  for (int seed = 1; seed <= seeds; ++seed) {
    World world(static_cast<uint64_t>(seed));
    int step = 0;
    for (; step < kSteps && world.harness().failures().empty(); ++step) world.Step();
    if (world.harness().failures().empty()) world.Drain();
    ASSERT_THAT(world.harness().failures(), ::testing::IsEmpty())
        << "seed " << seed << ", step " << step << ", last steps:\n"
        << world.Tail();
    jobs += world.created();
    for (const Event& e : world.harness().events()) ++outcomes[e.reason];
    const Harness::Counters& c = world.harness().counters();
    total.rounds += c.rounds;
    total.crashes += c.crashes;
    total.conflicts += c.conflicts;
    total.staleReads += c.staleReads;
    total.injectedFailures += c.injectedFailures;
    total.finalizerRemovals += c.finalizerRemovals;
    total.ttlDeletions += c.ttlDeletions;
    total.unreportedExecutions += c.unreportedExecutions;
    total.carriedAcceptances += c.carriedAcceptances;
    total.acceptancesReadBack += c.acceptancesReadBack;
    total.createsNotConfirmed += c.createsNotConfirmed;
  }
  RecordProperty("jobs", jobs);
  RecordProperty("rounds", total.rounds);
  std::printf(
      "%d jobs, %d rounds, %d crashes, %d conflicts, %d stale reads, %d injected API failures, "
      "%d finalizer removals, %d TTL deletions, %d rounds leaving an execution unreported, %d "
      "creates carrying the acceptance, %d acceptances read back from an execution, %d creates "
      "refused by the fresh read (the Job changed since the decision)\n",
      jobs, total.rounds, total.crashes, total.conflicts, total.staleReads, total.injectedFailures,
      total.finalizerRemovals, total.ttlDeletions, total.unreportedExecutions,
      total.carriedAcceptances, total.acceptancesReadBack, total.createsNotConfirmed);
  EXPECT_GT(total.crashes, 100);
  EXPECT_GT(total.conflicts, 100);
  EXPECT_GT(total.staleReads, 50);
  EXPECT_GT(total.injectedFailures, 100);
  EXPECT_GT(total.finalizerRemovals, 100);
  EXPECT_GT(total.ttlDeletions, 50);
  EXPECT_GT(total.unreportedExecutions, 0);  // a status write after a create failed
  // The cancel/delete-during-backlog race: a round decided to create on a copy older than a
  // cancel, a deletion or another change, and the fresh read before the create refused it.
  EXPECT_GT(total.createsNotConfirmed, 10);
  EXPECT_GT(total.carriedAcceptances, 50);
  EXPECT_GT(total.acceptancesReadBack, 5);  // a crash between the create and its write
  // The histories must actually exercise the interesting paths, or the test proves little.
  EXPECT_GT(jobs, seeds * 10);
  for (const char* reason : {"Completed", "ProcessFailed", "OOMKilled", "ImagePullFailed",
                             "Cancelled", "DeadlineExceeded", "ResultUnknown", "ResultRecovered",
                             "BackendLost", "BackendRejected", "ExecutionStopped"}) {
    EXPECT_GT(outcomes[reason], 0) << reason << " never happened";
  }
}

}  // namespace
}  // namespace ayatori::statemachine::testing
