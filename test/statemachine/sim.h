// A small, deterministic world for driving the pure state machine the way the controller does:
// an in-memory API server (FakeApiServer: resourceVersion and UID preconditions, finalizers,
// deletionTimestamp), an in-memory execution backend (FakeBackend: one execution per UID, counts
// creations) and a resolver (FakeResolver). Harness plays the controller: it runs the protocol of
// statemachine.h round by round, can crash at any step, and checks the safety properties on
// every write and call, collecting violations in failures().
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "api/types.h"
#include "ayatori/adapter.h"
#include "ayatori/status.h"
#include "statemachine/statemachine.h"

namespace ayatori::statemachine::testing {

using api::Time;

inline Time At(int64_t s) { return Time{std::chrono::seconds(s)}; }

// ---------------------------------------------------------------------------------------------

struct FakeExecution {
  std::string uid;
  ExecutionPhase phase = ExecutionPhase::kPending;
  std::optional<Time> startedAt;
  std::optional<Time> finishedAt;
  std::optional<int32_t> exitCode;
  std::string reason;
  std::vector<api::ExecutionReference> references;
  bool stopRequested = false;
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

  Observation Ensure(const api::Job& job, Time now);
  Observation Observe(const std::string& uid, Time now);
  Observation Cancel(const std::string& uid, Time now);
  Status Delete(const std::string& uid);

  // The world moving on its own.
  void Start(const std::string& uid, Time at);
  void Exit(const std::string& uid, int32_t code, Time at, std::string reason = "");
  void StopExternally(const std::string& uid, Time at);
  void CompleteRequestedStop(const std::string& uid, Time at);  // only after a Cancel
  void Lose(const std::string& uid);

  const FakeExecution* Find(const std::string& uid) const;
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

// ---------------------------------------------------------------------------------------------

class FakeApiServer {
 public:
  api::Job Create(const std::string& name, api::JobSpec spec, Time now);
  std::optional<api::Job> Get(const std::string& name) const;
  // Writes with preconditions on uid and resourceVersion (kConflict / kNotFound otherwise).
  StatusOr<api::Job> UpdateStatus(const api::Job& job);
  StatusOr<api::Job> UpdateFinalizers(const api::Job& job, std::vector<std::string> finalizers);
  // DELETE with preconditions {uid}: sets deletionTimestamp if finalizers remain.
  Status Delete(const std::string& name, const std::string& uid, Time now);
  // User edits (the API server bumps generation for spec changes, like CRDs do).
  void SetCancelled(const std::string& name);
  void SetTtl(const std::string& name, std::optional<int32_t> ttl);
  void Annotate(const std::string& name, const std::string& key, const std::string& value);
  // The administrator's runbook: force-remove finalizers.
  void ForceRemoveFinalizers(const std::string& name);
  // A spec edit that CEL would reject (e.g. Cancelled back to Running), to test defence in depth.
  void EditSpecUnchecked(const std::string& name, const std::function<void(api::JobSpec&)>& edit);

  int StatusWrites(const std::string& uid) const;
  int MetadataWrites(const std::string& uid) const;
  int Deletes(const std::string& uid) const;
  // Every status ever written, per uid, in order (first: the empty status at creation).
  const std::vector<api::JobStatus>& History(const std::string& uid) const;

 private:
  std::map<std::string, api::Job> jobs_;
  std::map<std::string, std::vector<api::JobStatus>> history_;
  std::map<std::string, int> statusWrites_, metadataWrites_, deletes_;
  int64_t nextRv_ = 1;
  int nextUid_ = 1;
};

// ---------------------------------------------------------------------------------------------

struct FakeResolver {
  std::set<std::string> classes{"standard"};
  std::string defaultClass = "standard";
  std::map<std::string, std::map<std::string, std::string>> secrets;     // name → key → value
  std::map<std::string, std::map<std::string, std::string>> configMaps;  // name → key → value
  std::string rejectReason;  // e.g. "ResourcesOutOfRange": permanent refusal

  Resolution Resolve(const api::Job& job) const;
};

// ---------------------------------------------------------------------------------------------

struct RoundOptions {
  // Stop the round abruptly (a controller crash) right after this adapter call returned, before
  // anything else is written.
  std::optional<AdapterCall> crashAfterCall;
  // Stop the round abruptly after this many steps (a step: one write or one call).
  std::optional<int> crashAfterSteps;
};

inline RoundOptions CrashAfterCall(AdapterCall call) {
  RoundOptions o;
  o.crashAfterCall = call;
  return o;
}

inline RoundOptions CrashAfterSteps(int steps) {
  RoundOptions o;
  o.crashAfterSteps = steps;
  return o;
}

struct RoundReport {
  bool ran = false;      // the Job existed
  bool aborted = false;  // a write failed (conflict, gone)
  bool crashed = false;
  std::vector<AdapterCall> calls;
  int statusWrites = 0;
  int finalizerWrites = 0;
  bool ttlDeleted = false;
  Plan last;
};

class Harness {
 public:
  FakeApiServer api;
  FakeBackend backend;
  FakeResolver resolver;
  Time now = At(1'700'000'000);
  // Reconcile from a cache that may lag behind the API server (the property test syncs it).
  bool useCache = false;

  std::string Create(const std::string& name, api::JobSpec spec);
  RoundReport Reconcile(const std::string& name, RoundOptions options = {});
  // Reconciles until a round writes nothing (or the Job is gone); returns the rounds it took.
  int Settle(const std::string& name, int maxRounds = 20);
  void Advance(std::chrono::seconds d) { now += d; }
  void SyncCache(const std::string& name);
  void DropCache() { cache_.clear(); }  // a controller restart: nothing survives but the API

  api::Job Job(const std::string& name) const;  // from the API server; must exist
  bool Exists(const std::string& name) const { return api.Get(name).has_value(); }
  const std::vector<Event>& events() const { return events_; }
  // What the rounds did, for tests that must show they exercised a path.
  struct Counters {
    int rounds = 0, crashes = 0, conflicts = 0, finalizerRemovals = 0, ttlDeletions = 0;
  };
  const Counters& counters() const { return counters_; }
  const std::vector<std::string>& failures() const { return failures_; }
  void Fail(std::string what) { failures_.push_back(std::move(what)); }

 private:
  void CheckWrite(const api::Job& before, const api::JobStatus& after);
  void CheckResultTruth(const api::Job& job, const api::JobStatus& before,
                        const api::JobStatus& after);

  std::map<std::string, api::Job> cache_;
  std::vector<Event> events_;
  Counters counters_;
  std::vector<std::string> failures_;
};

// A Job spec that the default resolver accepts.
api::JobSpec BasicSpec();

}  // namespace ayatori::statemachine::testing
