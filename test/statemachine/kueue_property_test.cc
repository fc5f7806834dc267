// Property test of the queueing rules (statemachine.h, "Queueing") against FakeKueue, a model of
// Kueue's Workload conditions that admits, evicts (Preempted and other reasons, also before the
// Job's admission is persisted), finishes or loses a Workload at any step. The controller is not
// wired to Workloads yet (issue 30), so the round is played here by QueueController, after the
// protocol of statemachine.h: Decide, write the status with a resourceVersion precondition, make
// the call (Ensure after a fresh GET of the Job), then the Workload action (kRead: a fresh read,
// decide again). Random but reproducible histories (fixed seeds) interleave Kueue, the backend
// (sim.h's FakeBackend), users (cancel, delete, re-create), informer lag for Jobs and Workloads,
// lost write answers, Kueue not answering, controller crashes after any write or call, restarts
// and queueing switched off and on. Checked on every step:
//   - at most one execution per UID (FakeBackend::Creates), never a rerun after an eviction;
//   - an Ensure only on a persisted status that AdmissionAllowsEnsure, and Admitted=True written
//     only after a fresh read that found the Workload admitted and not evicted;
//   - the Workload marked Finished only when the task is not live on the backend (the stop is
//     confirmed), a reservation cleared only while no execution exists;
//   - every status write and the whole history keep CheckInvariants (Admitted=True never
//     reverts). At the end, with Kueue and the backend healthy, every Job is terminal or gone,
//     and every terminal queued Job's Workload is Finished.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "api/conditions.h"
#include "statemachine/invariants.h"
#include "statemachine/statemachine.h"
#include "test/statemachine/sim.h"

namespace ayatori::statemachine::testing {
namespace {

using std::chrono::seconds;

constexpr int kSeeds = 40;
constexpr int kSteps = 1500;
const char* const kNames[] = {"alpha", "beta", "gamma"};
const char* const kEvictionReasons[] = {"Preempted", "ClusterQueueStopped", "PodsReadyTimeout",
                                        "DeactivatedDueToMaximumExecutionTimeExceeded"};

// Kueue's Workload as the conditions Ayatori reads and writes (docs: ../shared reference § 1).
struct FakeWorkload {
  int64_t resourceVersion = 1;
  WorkloadFacts facts;
};

// Kueue and the Workloads it keeps, by Job UID. Kueue moves on its own (Admit, Evict, Finish,
// Lose); the controller's writes (Create, ClearReservation, MarkPodsReady, Finish) fail while
// `down` (its webhook does not answer).
class FakeKueue {
 public:
  bool down = false;
  std::map<std::string, int> admissions;  // by UID, for the statistics

  const FakeWorkload* Find(const std::string& uid) const {
    auto it = workloads_.find(uid);
    return it == workloads_.end() ? nullptr : &it->second;
  }
  bool Create(const std::string& uid) {
    if (down) return false;
    auto [it, created] = workloads_.try_emplace(uid);  // the deterministic name
    if (!created && it->second.facts.finished) it->second = FakeWorkload{};  // replaced
    Touch(uid);
    return true;
  }
  void Admit(const std::string& uid) {
    if (down) return;  // Kueue itself does not run
    FakeWorkload* w = Mutable(uid);
    if (w == nullptr || w->facts.finished || w->facts.quotaReserved) return;
    w->facts.quotaReserved = w->facts.admitted = true;
    w->facts.evicted = false;  // back to False on the next reservation
    w->facts.reason = "Admitted";
    w->facts.message = "The workload is admitted";
    ++admissions[uid];
    Touch(uid);
  }
  // Kueue keeps QuotaReserved and Admitted on an evicted Workload; a deactivated pending one is
  // evicted too.
  void Evict(const std::string& uid, const std::string& reason) {
    if (down) return;  // Kueue itself does not run
    FakeWorkload* w = Mutable(uid);
    if (w == nullptr || w->facts.finished || w->facts.evicted) return;
    w->facts.evicted = true;
    w->facts.evictedReason = reason;
    w->facts.evictedMessage = "evicted by the fake (" + reason + ")";
    Touch(uid);
  }
  // Someone else (an operator) marks the admitted Workload finished: its quota is released.
  void FinishExternally(const std::string& uid) {
    if (down) return;  // Kueue itself does not run
    FakeWorkload* w = Mutable(uid);
    if (w == nullptr || !w->facts.admitted) return;
    w->facts.finished = true;
    Touch(uid);
  }
  void Lose(const std::string& uid) { workloads_.erase(uid); }
  bool ClearReservation(const std::string& uid, int64_t decidedOn) {
    FakeWorkload* w = Mutable(uid);
    if (down || w == nullptr || w->resourceVersion != decidedOn) return false;  // 409
    w->facts.quotaReserved = w->facts.admitted = false;
    w->facts.reason = "Pending";
    w->facts.message = "requeued after an eviction";
    Touch(uid);
    return true;
  }
  bool MarkPodsReady(const std::string& uid) {
    FakeWorkload* w = Mutable(uid);
    if (down || w == nullptr) return false;
    w->facts.podsReady = true;
    Touch(uid);
    return true;
  }
  bool Finish(const std::string& uid) {
    FakeWorkload* w = Mutable(uid);
    if (down || w == nullptr) return false;
    w->facts.finished = true;
    Touch(uid);
    return true;
  }
  const std::map<std::string, FakeWorkload>& workloads() const { return workloads_; }

 private:
  FakeWorkload* Mutable(const std::string& uid) {
    auto it = workloads_.find(uid);
    return it == workloads_.end() ? nullptr : &it->second;
  }
  void Touch(const std::string& uid) { ++workloads_[uid].resourceVersion; }
  std::map<std::string, FakeWorkload> workloads_;
};

// Ends a round: a refused or lost request, or a crash.
struct RoundEnded {};

class World {
 public:
  explicit World(uint64_t seed) : rng_(seed) {
    backend_.rng = &rng_;
    backend_.staleObserveProbability = 0.05;
  }

  void Step() {
    const std::string name = kNames[Uniform(0, 2)];
    const api::Job* job = Persisted(name);
    const std::string uid = job != nullptr ? job->metadata.uid : "";
    const int op = Uniform(0, 17);
    Trace(name + (job ? "(" + uid + " " + StateName(DeriveState(*job)) + ")" : "(none)") + " op " +
          std::to_string(op));
    switch (op) {
      case 0:
        if (job == nullptr) Create(name);
        break;
      case 1:
      case 2:
      case 3:
      case 4:
        Reconcile(name);
        break;
      case 5:
        SyncCaches(name);
        if (job) kueue_.Admit(uid);
        break;
      case 6:
        if (job) kueue_.Admit(uid);
        if (job && Chance(0.5)) SyncCaches(name);  // the informer hears of it soon
        break;
      case 7:
        if (job && Chance(0.5))
          kueue_.Evict(uid, kEvictionReasons[Chance(0.5) ? 0 : Uniform(1, 3)]);
        break;
      case 8:
        if (job && Chance(0.1)) kueue_.FinishExternally(uid);
        if (job && Chance(0.05)) kueue_.Lose(uid);
        break;
      case 9:
        if (job) backend_.Start(uid, now_);
        break;
      case 10:
        if (job) backend_.Exit(uid, Chance(0.7) ? 0 : 1, now_);
        break;
      case 11:
        if (job) backend_.CompleteRequestedStop(uid, now_);
        break;
      case 12:
        if (job && Chance(0.1))
          Edit(name, [](api::Job& j) { j.spec.desiredState = api::DesiredState::kCancelled; });
        break;
      case 13:
        if (job && Chance(0.1)) Delete(name);
        break;
      case 14:
        if (Chance(kueue_.down ? 0.5 : 0.1)) kueue_.down = !kueue_.down;
        if (Chance(0.2)) backend_.unreachable = !backend_.unreachable;
        if (Chance(0.2)) backend_.slowStop = !backend_.slowStop;
        if (Chance(0.1)) loseNextWrite_ = true;
        if (Chance(queueing_ ? 0.02 : 0.3)) queueing_ = !queueing_;
        break;
      case 15:
        if (Chance(0.7)) break;
        jobCache_.clear();  // a controller restart: its caches start from a fresh list
        workloadCache_.clear();
        ++restarts_;
        break;
      case 16:
        now_ += seconds(Uniform(1, 30));
        break;
      case 17:
        now_ += seconds(Uniform(60, 600));
        break;
    }
    CheckGlobal();
  }

  // The backend and the controller healthy, Kueue down at first, then up: everything must
  // settle, and what Kueue already admitted (or never gated) settles without it.
  void Drain() {
    kueue_.down = true;
    Settle(10);
    for (const auto& [name, job] : server_) {
      if (!IsTerminal(DeriveState(job)) && DeriveState(job) != State::kQueued) {
        Fail(job.metadata.uid + ": " + StateName(DeriveState(job)) + " waits on Kueue");
      }
    }
    kueue_.down = false;
    Settle(20);
    for (const auto& [name, job] : server_) {
      if (!IsTerminal(DeriveState(job))) {
        Fail(job.metadata.uid + ": still " + StateName(DeriveState(job)) + " after the drain");
      }
      const FakeWorkload* w = kueue_.Find(job.metadata.uid);
      if (queueing_ && IsQueued(job.status) && w != nullptr && !w->facts.finished) {
        Fail(job.metadata.uid + ": terminal but its Workload is not Finished");
      }
    }
  }

  void Settle(int rounds) {
    backend_.unreachable = false;
    backend_.staleObserveProbability = 0;
    loseNextWrite_ = false;
    crashAfter_.reset();
    for (int round = 0; round < rounds; ++round) {
      for (const char* name : kNames) {
        const api::Job* job = Persisted(name);
        if (job == nullptr) continue;
        kueue_.Admit(job->metadata.uid);
        backend_.Start(job->metadata.uid, now_);
        backend_.Exit(job->metadata.uid, 0, now_);
        backend_.CompleteRequestedStop(job->metadata.uid, now_);
        SyncCaches(name);
        Reconcile(name, /*mayCrash=*/false);
      }
      now_ += seconds(60);
      CheckGlobal();
    }
  }

  const std::vector<std::string>& failures() const { return failures_; }
  std::string Tail() const {
    std::string out;
    for (const std::string& t : trace_) out += "  " + t + "\n";
    return out;
  }
  int jobs() const { return static_cast<int>(uids_.size()); }
  int restarts() const { return restarts_; }
  int crashes() const { return crashes_; }
  const std::map<std::string, int>& endings() const { return endings_; }
  const std::map<WorkloadAction, int>& actions() const { return actions_; }
  int admissions() const {
    int n = 0;
    for (const auto& [uid, count] : kueue_.admissions) n += count;
    return n;
  }

 private:
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  void Fail(std::string what) { failures_.push_back(std::move(what)); }
  void Trace(std::string what) {
    trace_.push_back(std::move(what));
    if (trace_.size() > 40) trace_.erase(trace_.begin());
  }

  const api::Job* Persisted(const std::string& name) const {
    auto it = server_.find(name);
    return it == server_.end() ? nullptr : &it->second;
  }

  void Create(const std::string& name) {
    api::Job j;
    j.metadata.name = name;
    j.metadata.namespace_ = kNamespace;
    j.metadata.uid = "uid-" + std::to_string(++nextUid_);
    j.metadata.generation = 1;
    j.metadata.resourceVersion = std::to_string(++rv_);
    if (Chance(0.8)) j.metadata.labels[kQueueNameLabel] = "team-a";
    j.spec = BasicSpec();
    if (Chance(0.3)) j.spec.activeDeadlineSeconds = 120;
    uids_.insert(j.metadata.uid);
    history_[j.metadata.uid].push_back(j.status);
    server_[name] = std::move(j);
  }

  // A user's edit (not checked): the API server bumps resourceVersion (and generation).
  void Edit(const std::string& name, const std::function<void(api::Job&)>& edit) {
    api::Job& j = server_.at(name);
    edit(j);
    ++j.metadata.generation;
    j.metadata.resourceVersion = std::to_string(++rv_);
  }

  // DELETE: gone at once without finalizers, else marked.
  void Delete(const std::string& name) {
    if (server_.at(name).metadata.finalizers.empty()) {
      server_.erase(name);
      return;
    }
    Edit(name, [&](api::Job& j) {
      if (!j.metadata.deletionTimestamp) j.metadata.deletionTimestamp = now_;
    });
  }

  void SyncCaches(const std::string& name) {
    const api::Job* job = Persisted(name);
    if (job == nullptr) {
      jobCache_.erase(name);
      return;
    }
    jobCache_[name] = *job;
    if (const FakeWorkload* w = kueue_.Find(job->metadata.uid)) {
      workloadCache_[job->metadata.uid] = *w;
    } else {
      workloadCache_.erase(job->metadata.uid);
    }
  }

  // Counts a write or call; past the crash point the round ends as if the process died.
  void CountStep() {
    if (crashAfter_ && --*crashAfter_ < 0) {
      ++crashes_;
      jobCache_.clear();
      workloadCache_.clear();
      throw RoundEnded{};
    }
  }

  // PUT /status or the finalizer patch, with the resourceVersion of `decidedOn`.
  api::Job Write(const api::Job& decidedOn, const std::function<void(api::Job&)>& change) {
    auto it = server_.find(decidedOn.metadata.name);
    if (it == server_.end() || it->second.metadata.uid != decidedOn.metadata.uid ||
        it->second.metadata.resourceVersion != decidedOn.metadata.resourceVersion) {
      throw RoundEnded{};  // 404 or 409
    }
    const api::JobStatus before = it->second.status;
    change(it->second);
    it->second.metadata.resourceVersion = std::to_string(++rv_);
    CheckStatusWrite(it->second, before);
    CountStep();
    if (loseNextWrite_) {
      loseNextWrite_ = false;
      throw RoundEnded{};  // applied, the answer lost
    }
    return it->second;
  }

  void CheckStatusWrite(const api::Job& job, const api::JobStatus& before) {
    const std::string& uid = job.metadata.uid;
    if (job.status == before) return;
    history_[uid].push_back(job.status);
    for (const std::string& v : CheckInvariants(before, job.status)) Fail(uid + ": write: " + v);
    const bool admittedNow = api::IsConditionTrue(job.status.conditions, kConditionAdmitted);
    if (admittedNow && !api::IsConditionTrue(before.conditions, kConditionAdmitted)) {
      auto read = freshRead_.find(uid);
      if (read == freshRead_.end() || !read->second.admitted || read->second.evicted) {
        Fail(uid + ": Admitted=True written without a fresh read of an admitted Workload");
      }
    }
    if (IsTerminal(job.status) && !IsTerminal(before)) {
      const api::Condition* s = api::FindCondition(job.status.conditions, api::kConditionSucceeded);
      ++endings_[s->reason];
    }
  }

  Observation Call(AdapterCall call, const api::Job& job) {
    const std::string& uid = job.metadata.uid;
    CountStep();
    switch (call) {
      case AdapterCall::kEnsure:
        if (!AdmissionAllowsEnsure(server_.at(job.metadata.name).status)) {
          Fail(uid + ": Ensure before Admitted=True is persisted");
        }
        return backend_.Ensure(job, now_);
      case AdapterCall::kObserve:
        return backend_.Observe(uid, now_);
      case AdapterCall::kCancel:
        return backend_.Cancel(uid, now_);
      case AdapterCall::kDelete:
        return DeleteObservation(backend_.Delete(uid));
      case AdapterCall::kNone:
        break;
    }
    return {};
  }

  // The Workload action; false: Kueue refused (the round ends with backoff).
  bool ApplyWorkloadAction(const Plan& plan, const std::string& uid) {
    ++actions_[plan.workload];
    switch (plan.workload) {
      case WorkloadAction::kCreate:
        return kueue_.Create(uid);
      case WorkloadAction::kClearReservation: {
        if (backend_.Find(uid) != nullptr) Fail(uid + ": reservation cleared with an execution");
        auto cached = workloadCache_.find(uid);
        return cached != workloadCache_.end() &&
               kueue_.ClearReservation(uid, cached->second.resourceVersion);
      }
      case WorkloadAction::kMarkPodsReady:
        return kueue_.MarkPodsReady(uid);
      case WorkloadAction::kFinish:
        if (backend_.Live(uid)) Fail(uid + ": Workload Finished while the task is live");
        return kueue_.Finish(uid);
      case WorkloadAction::kNone:
      case WorkloadAction::kRead:
        break;
    }
    return true;
  }

  void Reconcile(const std::string& name, bool mayCrash = true) {
    if (mayCrash && Chance(0.1)) crashAfter_ = Uniform(0, 3);
    try {
      Round(name);
    } catch (const RoundEnded&) {
    }
    crashAfter_.reset();
  }

  Facts FirstFacts(const api::Job& job) {
    Facts facts;
    facts.now = now_;
    facts.queue.enabled = queueing_;
    if (queueing_) {
      auto cached = workloadCache_.find(job.metadata.uid);
      if (cached != workloadCache_.end()) facts.queue.workload = cached->second.facts;
    }
    if (NeedsResolution(job)) {
      facts.resolution = Resolution::Resolved(
          api::ResolvedJobClass{"standard", "c1", kFakeControllerName, {}, {}}, {}, "fake");
    }
    return facts;
  }

  // One round of the protocol in statemachine.h, with the Workload action after the call.
  void Round(const std::string& name) {
    auto cached = jobCache_.find(name);
    if (cached == jobCache_.end()) {
      SyncCaches(name);
      cached = jobCache_.find(name);
      if (cached == jobCache_.end()) return;
    }
    api::Job job = cached->second;
    const std::string uid = job.metadata.uid;
    freshRead_.erase(uid);
    Facts facts = FirstFacts(job);
    bool workloadRefused = false;
    bool fresh = false;  // `job` came from a write or a GET of this round
    for (int step = 0; step < 12; ++step) {
      Plan plan = Decide(job, facts);
      facts.result.reset();
      for (const std::string& v : plan.invariantViolations) Fail(uid + ": plan: " + v);
      if (!plan.invariantViolations.empty()) return;
      if (plan.finalizer == FinalizerChange::kAdd) {
        job = Write(job, [](api::Job& j) { j.metadata.finalizers.emplace_back(api::kFinalizer); });
        fresh = true;
      }
      if (plan.status) {
        job = Write(job, [&](api::Job& j) { j.status = *plan.status; });
        fresh = true;
      }
      // Giving quota back is decided on a current Job only (a cached copy may predate its
      // admission): GET it, decide again if it changed.
      if (!fresh && (plan.workload == WorkloadAction::kClearReservation ||
                     plan.workload == WorkloadAction::kFinish)) {
        const api::Job current = server_.at(name);
        if (current.metadata.uid != uid) return;
        fresh = true;
        if (current.metadata.resourceVersion != job.metadata.resourceVersion) {
          job = current;
          facts = FirstFacts(job);
          continue;
        }
      }
      if (plan.call == AdapterCall::kEnsure) {
        const api::Job current = server_.at(name);  // the fresh GET before a create
        if (current.metadata.uid != uid) return;
        fresh = true;
        if (current.metadata.resourceVersion != job.metadata.resourceVersion) {
          job = current;
          facts = FirstFacts(job);
          continue;
        }
      }
      if (plan.call != AdapterCall::kNone)
        facts.result = CallResult{plan.call, Call(plan.call, job)};
      if (plan.workload == WorkloadAction::kRead) {
        ++actions_[plan.workload];
        const FakeWorkload* w = kueue_.Find(uid);
        if (w == nullptr) return;
        workloadCache_[uid] = *w;
        facts.queue.workload = w->facts;
        facts.queue.workload->fresh = true;
        freshRead_[uid] = w->facts;
        continue;
      }
      // A refused Workload write does not stop the round (the Job's own progress never waits
      // on Kueue); the round ends with backoff and the next one asks again.
      if (plan.workload != WorkloadAction::kNone && !workloadRefused) {
        CountStep();
        workloadRefused = !ApplyWorkloadAction(plan, uid);
      }
      if (plan.finalizer == FinalizerChange::kRemove) {
        CountStep();
        if (backend_.Live(uid)) Fail(uid + ": finalizer removed while the task is live");
        server_.erase(name);
        jobCache_.erase(name);
        return;
      }
      if (plan.call == AdapterCall::kNone && plan.finalizer != FinalizerChange::kAdd) return;
    }
  }

  void CheckGlobal() {
    for (const std::string& uid : uids_) {
      if (backend_.Creates(uid) > 1) {
        Fail(uid + ": " + std::to_string(backend_.Creates(uid)) + " executions created");
      }
      const std::vector<api::JobStatus>& history = history_[uid];
      for (size_t i = checked_[uid]; i + 1 < history.size(); ++i) {
        for (const std::string& v : CheckInvariants(history[i], history[i + 1])) {
          Fail(uid + ": history: " + v);
        }
      }
      if (!history.empty()) checked_[uid] = history.size() - 1;
    }
  }

  std::mt19937_64 rng_;
  Time now_ = At(1'700'000'000);
  FakeBackend backend_;
  FakeKueue kueue_;
  bool queueing_ = true;
  bool loseNextWrite_ = false;
  std::optional<int> crashAfter_;
  int64_t rv_ = 0;
  int nextUid_ = 0;
  int restarts_ = 0;
  int crashes_ = 0;
  std::map<std::string, api::Job> server_;             // the API server's Jobs, by name
  std::map<std::string, api::Job> jobCache_;           // the controller's informer, by name
  std::map<std::string, FakeWorkload> workloadCache_;  // by Job UID
  std::map<std::string, WorkloadFacts> freshRead_;     // this round's fresh read, by Job UID
  std::map<std::string, std::vector<api::JobStatus>> history_;
  std::map<std::string, size_t> checked_;
  std::set<std::string> uids_;
  std::map<std::string, int> endings_;
  std::map<WorkloadAction, int> actions_;
  std::vector<std::string> failures_;
  std::vector<std::string> trace_;
};

// AYATORI_PROPERTY_SEEDS=<n> runs more (or fewer) seeds than kSeeds, e.g. once before a merge.
int Iterations() {
  const char* env = std::getenv("AYATORI_PROPERTY_SEEDS");
  return env != nullptr ? std::max(1, std::atoi(env)) : kSeeds;
}

TEST(KueueProperty, OneExecutionPerUidThroughAdmissionsEvictionsAndCrashes) {
  int jobs = 0, restarts = 0, crashes = 0, admissions = 0;
  std::map<std::string, int> endings;
  std::map<WorkloadAction, int> actions;
  const int seeds = Iterations();
  for (int seed = 1; seed <= seeds; ++seed) {
    World world(static_cast<uint64_t>(seed));
    int step = 0;
    for (; step < kSteps && world.failures().empty(); ++step) world.Step();
    if (world.failures().empty()) world.Drain();
    ASSERT_THAT(world.failures(), ::testing::IsEmpty())
        << "seed " << seed << ", step " << step << ", last steps:\n"
        << world.Tail();
    jobs += world.jobs();
    restarts += world.restarts();
    crashes += world.crashes();
    admissions += world.admissions();
    for (const auto& [reason, n] : world.endings()) endings[reason] += n;
    for (const auto& [action, n] : world.actions()) actions[action] += n;
  }
  std::printf("%d jobs, %d admissions, %d restarts, %d crashes; endings:", jobs, admissions,
              restarts, crashes);
  for (const auto& [reason, n] : endings) std::printf(" %s=%d", reason.c_str(), n);
  std::printf("; Workload actions:");
  for (const auto& [action, n] : actions) std::printf(" %s=%d", WorkloadActionName(action), n);
  std::printf("\n");
  // The histories must exercise the interesting paths, or the test proves little.
  EXPECT_GT(jobs, seeds * 5);
  EXPECT_GT(crashes, seeds * 3);
  for (const char* reason : {"Completed", "Preempted", "Evicted", "Cancelled"}) {
    EXPECT_GT(endings[reason], 0) << reason << " never happened";
  }
  for (WorkloadAction a :
       {WorkloadAction::kCreate, WorkloadAction::kRead, WorkloadAction::kClearReservation,
        WorkloadAction::kMarkPodsReady, WorkloadAction::kFinish}) {
    EXPECT_GT(actions[a], 0) << WorkloadActionName(a) << " never happened";
  }
}

}  // namespace
}  // namespace ayatori::statemachine::testing
