// A small, deterministic world in which the shipped controller::JobReconciler runs round by
// round, every piece around it a fake:
//  - the API server is kube::testing::FakeKubeClient (resourceVersion and UID preconditions,
//    finalizers, deletionTimestamp, injected failures);
//  - the backend is FakeBackend, a world model with knobs (unreachable, lost Ensure answers,
//    slow stops, failures, stale observations), reached through FakeAdapter, an ayatori::Adapter;
//  - the clock is kube::testing::FakeClock;
//  - the informer cache is SimCache, read from the fake API server, optionally lagging behind it.
// The Harness plays everything around the controller: users and administrators (SimApi), the
// backend moving on its own, informer lag, restarts and crashes (the reconciler's named crash
// points, and a "crash" after any write or call: every later request of that round fails without
// effect). It checks the safety properties on every write the reconciler sends (CheckingKubeClient)
// and every call it makes to the backend (FakeAdapter), collecting violations in failures().
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/registry.h"
#include "api/types.h"
#include "ayatori/kube_client.h"
#include "ayatori/status.h"
#include "controller/reconciler.h"
#include "kube/testing/fake_clock.h"
#include "kube/testing/fake_kube_client.h"
#include "obs/metrics.h"
#include "statemachine/statemachine.h"

namespace ayatori::statemachine::testing {

using api::Time;

inline Time At(int64_t s) { return Time{std::chrono::seconds(s)}; }

// The namespace of every Job of the simulation.
inline constexpr const char* kNamespace = "sim";
// The controllerName of the simulation's JobClasses, served by FakeAdapter.
inline constexpr const char* kFakeControllerName = "execution.ayatori.ddupan.top/fake";

// ---------------------------------------------------------------------------------------------

struct FakeExecution {
  std::string uid;
  ExecutionPhase phase = ExecutionPhase::kPending;
  std::optional<Time> startedAt;
  std::optional<Time> finishedAt;
  std::optional<int32_t> exitCode;
  std::string reason;
  std::string message;
  std::vector<api::ExecutionReference> references;
  bool stopRequested = false;
  std::string acceptance;  // ExecutionRequest::acceptance of the create, if it carried one
};

// What really happened to the execution of a UID, kept after the backend deleted it: the oracle
// that a Job's result is never invented.
struct ExecutionTruth {
  ExecutionPhase phase = ExecutionPhase::kPending;  // the last phase the backend had
  std::optional<int32_t> exitCode;
  std::string reason;
  bool stoppedByRequest = false;   // stopped because Cancel asked
  bool stoppedExternally = false;  // stopped by someone else (operator, eviction)
  bool lost = false;               // vanished from the backend without a trace
};

class FakeBackend {
 public:
  // Knobs.
  bool unreachable = false;             // every call: kUnknown / Delete fails
  bool loseNextEnsureResponse = false;  // Ensure creates, then the response is lost (kUnknown)
  bool slowStop = false;                // Cancel needs a second call before it takes effect
  bool startOnCreate = false;           // Ensure returns kRunning at once (Docker-like)
  std::string failOnCreate;             // e.g. "ImagePullFailed": created, fails before starting
  std::string rejectOnEnsure;           // e.g. "BackendRejected": Ensure fails without creating
  int referencesPerExecution = 1;       // 2: OpenSandbox-like Sandbox + Command
  double staleObserveProbability = 0;   // Observe returns the previous observation
  std::mt19937_64* rng = nullptr;
  int acceptancesReadBack = 0;  // RecordedAcceptance answers that found one
  int createsNotConfirmed = 0;  // Ensures whose create the controller's fresh read refused

  // `acceptance`: ExecutionRequest::acceptance, stored with a created execution.
  Observation Ensure(const api::Job& job, Time now, const std::string& acceptance = "");
  Observation Observe(const std::string& uid, Time now);
  Observation Cancel(const std::string& uid, Time now);
  Status Delete(const std::string& uid);

  // The world moving on its own.
  void Start(const std::string& uid, Time at);
  void Exit(const std::string& uid, int32_t code, Time at, std::string reason = "");
  void StopExternally(const std::string& uid, Time at);
  void CompleteRequestedStop(const std::string& uid, Time at);  // only after a Cancel
  void Lose(const std::string& uid);
  // A pending execution the backend holds up, saying why (reason "" = on its way again).
  void Hold(const std::string& uid, std::string reason, std::string message);

  const FakeExecution* Find(const std::string& uid) const;
  // An Ensure of `uid` now would create its execution (none exists, the backend answers).
  bool WouldCreate(const std::string& uid) const;
  bool Live(const std::string& uid) const;  // exists and not stopped
  int Creates(const std::string& uid) const;
  int Calls(AdapterCall call, const std::string& uid) const;
  const std::map<std::string, ExecutionTruth>& truth() const { return truth_; }
  const std::map<std::string, FakeExecution>& executions() const { return executions_; }

 private:
  Observation Describe(const FakeExecution& e) const;
  Observation Unreachable() const;
  void Record(const FakeExecution& e);

  std::map<std::string, FakeExecution> executions_;
  std::map<std::string, ExecutionTruth> truth_;
  std::map<std::string, Observation> lastObservation_;
  std::map<std::string, int> creates_;
  std::map<std::pair<AdapterCall, std::string>, int> calls_;
  int nextId_ = 1;
};

// The adapter the reconciler calls: forwards to the FakeBackend at the FakeClock's time, after
// `gate` (the Harness's checks) allowed the call. A call the gate refuses (the controller has
// "crashed") never reaches the backend.
class FakeAdapter final : public Adapter {
 public:
  using Gate = std::function<bool(AdapterCall call, const std::string& uid,
                                  const ExecutionRequest* request)>;
  // Called right before the backend creates an execution, after confirmCreate allowed it.
  using CreateCheck = std::function<void(const ExecutionRequest& request)>;
  FakeAdapter(FakeBackend& backend, const Clock& clock, Gate gate, CreateCheck onCreate = {})
      : backend_(backend), clock_(clock), gate_(std::move(gate)), onCreate_(std::move(onCreate)) {}

  std::string Name() const override { return "fake"; }
  Status Start(std::function<void(const std::string&, const std::string&)> /*notify*/) override {
    return Status::Ok();
  }
  Status Validate(const ExecutionRequest& /*request*/) override { return Status::Ok(); }
  Observation Ensure(const ExecutionRequest& request) override;
  Observation Observe(const ExecutionKey& key) override;
  Observation Cancel(const ExecutionKey& key) override;
  Status Delete(const ExecutionKey& key) override;
  // Registered with AdapterDescriptor::recordsAcceptance: the acceptance the execution of `uid`
  // was created with. A read of the backend's state, not gated (a crashed round makes none).
  StatusOr<std::optional<std::string>> RecordedAcceptance(const std::string& ns,
                                                          const std::string& uid) override;

 private:
  Time Now() const;
  static Observation Refused();

  FakeBackend& backend_;
  const Clock& clock_;
  Gate gate_;
  CreateCheck onCreate_;
};

// ---------------------------------------------------------------------------------------------

// What exists in the cluster besides Jobs, as the tests describe it; the Harness publishes it to
// the fake API server (JobClass, Namespace, Secret and ConfigMap objects) before every round,
// where the reconciler's resolver and its Secret reads find it.
struct ClusterObjects {
  std::set<std::string> classes{"standard"};  // JobClasses served by FakeAdapter
  std::string defaultClass = "standard";      // the namespace's default-job-class annotation
  std::map<std::string, std::map<std::string, std::string>> secrets;     // name → key → value
  std::map<std::string, std::map<std::string, std::string>> configMaps;  // name → key → value
  // Every class bounds limits.memory and sets no default: Jobs that ask for no limit are
  // refused for good (Accepted=False/ResourcesOutOfRange).
  bool resourcesOutOfRange = false;
  std::optional<int64_t> startTimeoutSeconds;  // of every class
  bool operator==(const ClusterObjects&) const = default;
};

// ---------------------------------------------------------------------------------------------

// Users and administrators talking to the API server (kubectl): their requests go straight to
// the FakeKubeClient, never through the reconciler's client, and are not checked. Also the
// oracle's record of what the reconciler wrote, per Job UID.
class SimApi {
 public:
  explicit SimApi(kube::testing::FakeKubeClient& server) : server_(server) {}

  api::Job Create(const std::string& name, api::JobSpec spec);
  std::optional<api::Job> Get(const std::string& name) const;
  // User edits (the API server bumps generation for spec changes, like it does for CRDs).
  void SetCancelled(const std::string& name);
  void SetTtl(const std::string& name, std::optional<int32_t> ttl);
  void Annotate(const std::string& name, const std::string& key, const std::string& value);
  // DELETE with preconditions {uid}: sets deletionTimestamp while finalizers remain.
  Status Delete(const std::string& name, const std::string& uid);
  // The administrator's runbook: force-remove finalizers.
  void ForceRemoveFinalizers(const std::string& name);
  // A spec edit that CEL would reject (e.g. Cancelled back to Running), to test defence in depth.
  void EditSpecUnchecked(const std::string& name, const std::function<void(api::JobSpec&)>& edit);

  // What the reconciler wrote and the server accepted, per Job UID.
  int StatusWrites(const std::string& uid) const;
  int MetadataWrites(const std::string& uid) const;
  int Deletes(const std::string& uid) const;
  // Every status the Job had, in order (first: the empty status at creation).
  const std::vector<api::JobStatus>& History(const std::string& uid) const;

 private:
  friend class CheckingKubeClient;
  void Edit(const std::string& name, const std::function<void(api::Job&)>& edit);

  kube::testing::FakeKubeClient& server_;
  std::map<std::string, std::vector<api::JobStatus>> history_;
  std::map<std::string, int> statusWrites_, metadataWrites_, deletes_;
};

// ---------------------------------------------------------------------------------------------

struct RoundOptions {
  // Crash at this named point of the reconciler (controller::kCrash*).
  std::string crashPoint;
  // Crash after this many steps (a step: a write the server accepted, or an adapter call).
  std::optional<int> crashAfterSteps;
};

// Crash right after this adapter call returned, before anything else is written.
RoundOptions CrashAfterCall(AdapterCall call);

inline RoundOptions CrashAfterSteps(int steps) {
  RoundOptions o;
  o.crashAfterSteps = steps;
  return o;
}

struct RoundReport {
  bool ran = false;      // the cache had the Job
  bool aborted = false;  // the round ended on an error (a refused write, an injected failure)
  bool crashed = false;
  std::vector<AdapterCall> calls;
  int createsNotConfirmed = 0;  // Ensures whose create the fresh read refused (decided again)
  int statusWrites = 0;         // accepted by the server
  int finalizerWrites = 0;      // accepted by the server
  int freshReads = 0;           // GETs of the Job (before Ensure, before a TTL deletion)
  bool ttlDeleted = false;
  // What the reconciler answered.
  std::optional<std::chrono::seconds> requeueAfter;
  bool backoff = false;
  Status error;
};

class CheckingKubeClient;
class SimCache;

class Harness {
 public:
  Harness();
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  kube::testing::FakeClock clock;
  kube::testing::FakeKubeClient server;  // the API server
  FakeBackend backend;
  ClusterObjects cluster;
  SimApi api;
  // Reconcile from a cache that may lag behind the API server (the property test syncs it);
  // otherwise the cache is always current.
  bool useCache = false;
  // The next write the reconciler sends is applied, but its answer is lost (a timeout).
  bool loseNextWriteResponse = false;
  // The reconciler's backlog (ReconcilerOptions::backlog): rounds may leave an execution
  // unreported. A crash restarts the reconciler, so what it kept in memory is gone.
  bool backlog = false;

  std::string Create(const std::string& name, api::JobSpec spec);
  // One round of the shipped reconciler for kNamespace/name.
  RoundReport Reconcile(const std::string& name, RoundOptions options = {});
  // Reconciles until a round writes nothing (or the Job is gone); returns the rounds it took.
  int Settle(const std::string& name, int maxRounds = 20);
  void Advance(std::chrono::seconds d) { clock.Advance(d); }
  Time Now() const;
  void SyncCache(const std::string& name);
  void DropCache();  // a controller restart: nothing survives but the API
  // Makes the cache hold `job` for its name (an informer that still has an old object).
  void SetCached(const api::Job& job);

  api::Job Job(const std::string& name) const;  // from the API server; empty if absent
  bool Exists(const std::string& name) const { return api.Get(name).has_value(); }
  // The UID the API server gave JobClass `name` ("" if absent).
  std::string ClassUid(const std::string& name) const;
  // Events the reconciler recorded (from its "event" log lines: reason and message).
  const std::vector<Event>& events() const { return events_; }
  // What the rounds did, for tests that must show they exercised a path.
  struct Counters {
    int rounds = 0, crashes = 0, conflicts = 0, staleReads = 0, injectedFailures = 0,
        finalizerRemovals = 0, ttlDeletions = 0;
    int unreportedExecutions = 0;  // rounds that ended with the execution's report not written
    int carriedAcceptances = 0;    // creates carrying an acceptance not written yet
    int createsNotConfirmed = 0;   // creates refused: the Job changed since the decision
    int acceptancesReadBack = 0;   // acceptances found with an execution (after a restart)
  };
  const Counters& counters() const { return counters_; }
  const std::vector<std::string>& failures() const { return failures_; }
  void Fail(std::string what) { failures_.push_back(std::move(what)); }

 private:
  friend class CheckingKubeClient;
  friend class SimCache;
  friend struct LogTap;

  void PublishCluster();
  // A new reconciler: a controller process that remembers nothing.
  void StartReconciler();
  bool GateCall(AdapterCall call, const std::string& uid, const ExecutionRequest* request);
  void CheckCreate(const ExecutionRequest& request);
  bool Dead() const { return dead_; }
  void Step();  // a write was accepted or a call made: counts towards crashAfterSteps
  void OnLogLine(const std::string& line);
  void CheckStatusWrite(const api::Job& before, const api::JobStatus& after);
  void CheckResultTruth(const api::Job& job, const api::JobStatus& before,
                        const api::JobStatus& after);

  std::map<std::string, api::Job> cached_;  // the lagging copies, by name (useCache)
  std::optional<ClusterObjects> published_;
  std::shared_ptr<FakeAdapter> adapter_;
  adapters::AdapterRegistry registry_;
  std::unique_ptr<SimCache> cache_;
  std::unique_ptr<CheckingKubeClient> client_;
  obs::Registry metrics_;
  std::unique_ptr<controller::JobReconciler> reconciler_;

  // The current round.
  RoundReport* round_ = nullptr;
  RoundOptions options_;
  std::string roundRv_;  // resourceVersion of the Job the round started from
  int steps_ = 0;
  bool dead_ = false;

  std::vector<Event> events_;
  Counters counters_;
  std::vector<std::string> failures_;
};

// A Job spec that the default cluster accepts.
api::JobSpec BasicSpec();

}  // namespace ayatori::statemachine::testing
