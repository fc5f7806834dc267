// The state machine test matrix (docs/design.md § The test matrix) as a table: one case per row,
// named after it, each driving the shipped JobReconciler through the Harness (sim.h:
// FakeKubeClient, FakeAdapter over FakeBackend, FakeClock). The Harness itself checks on every
// write and call: CheckInvariants, one creation per UID, a create only for the API server's current
// Job and never after desiredState=Cancelled or deletion, finalizer removal only without a backend
// execution, terminal results only as the backend reported them; every case ends by asserting no
// such failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "api/conditions.h"
#include "statemachine/statemachine.h"
#include "test/statemachine/sim.h"

namespace ayatori::statemachine::testing {
namespace {

using std::chrono::seconds;
using ::testing::IsEmpty;

const api::Condition* Cond(const api::Job& job, const char* type) {
  return api::FindCondition(job.status.conditions, type);
}

std::string Reason(const api::Job& job, const char* type) {
  const api::Condition* c = Cond(job, type);
  return c == nullptr ? "<absent>" : api::ToString(c->status) + "/" + c->reason;
}

State StateOf(const Harness& h, const std::string& name) { return DeriveState(h.Job(name)); }

int CountEvents(const Harness& h, const std::string& reason) {
  int n = 0;
  for (const Event& e : h.events()) n += e.reason == reason ? 1 : 0;
  return n;
}

// Drives a new Job to Running (started 5 s after creation).
std::string StartRunning(Harness& h, const std::string& name, api::JobSpec spec = BasicSpec()) {
  std::string uid = h.Create(name, std::move(spec));
  h.Settle(name);
  h.Advance(seconds(5));
  h.backend.Start(uid, h.Now());
  h.Settle(name);
  EXPECT_EQ(StateOf(h, name), State::kRunning);
  return uid;
}

// ---------------------------------------------------------------------------------------------

void Normal_CreateStartExit0() {
  Harness h;
  api::JobSpec spec = BasicSpec();
  spec.ttlSecondsAfterFinished = 3600;
  const Time created = h.Now();
  const std::string uid = h.Create("hello", spec);
  h.Settle("hello");
  api::Job j = h.Job("hello");
  EXPECT_EQ(StateOf(h, "hello"), State::kStarting);
  EXPECT_TRUE(HasFinalizer(j));
  EXPECT_EQ(Reason(j, api::kConditionAccepted), "True/Valid");
  EXPECT_EQ(Reason(j, api::kConditionScheduled), "True/BackendCreated");
  EXPECT_EQ(Reason(j, api::kConditionSucceeded), "Unknown/Scheduling");
  ASSERT_TRUE(j.status.resolvedJobClass);
  EXPECT_EQ(j.status.resolvedJobClass->name, "standard");
  EXPECT_EQ(j.status.resolvedJobClass->uid, h.ClassUid("standard"));
  ASSERT_TRUE(j.status.execution);
  EXPECT_EQ(j.status.execution->adapter, "fake");
  EXPECT_EQ(j.status.execution->references, h.backend.Find(uid)->references);
  EXPECT_FALSE(j.status.startTime);

  h.Advance(seconds(5));
  h.backend.Start(uid, h.Now());
  h.Settle("hello");
  EXPECT_EQ(StateOf(h, "hello"), State::kRunning);
  EXPECT_EQ(h.Job("hello").status.startTime, created + seconds(5));
  EXPECT_EQ(Reason(h.Job("hello"), api::kConditionSucceeded), "Unknown/Running");

  h.Advance(seconds(10));
  h.backend.Exit(uid, 0, h.Now());
  h.Settle("hello");
  j = h.Job("hello");
  EXPECT_EQ(StateOf(h, "hello"), State::kSucceeded);
  EXPECT_EQ(Reason(j, api::kConditionSucceeded), "True/Completed");
  ASSERT_TRUE(j.status.result);
  EXPECT_EQ(j.status.result->exitCode, 0);
  EXPECT_EQ(j.status.result->reason, "Completed");
  EXPECT_EQ(j.status.startTime, created + seconds(5));
  EXPECT_EQ(j.status.completionTime, created + seconds(15));
  EXPECT_EQ(j.status.observedGeneration, 1);
  for (const api::Condition& c : j.status.conditions) EXPECT_EQ(c.observedGeneration, 1);

  EXPECT_EQ(h.backend.Creates(uid), 1);
  EXPECT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 1);
  EXPECT_EQ(h.api.MetadataWrites(uid), 1);
  // Accepted, Scheduled, Running, Succeeded: the write budget for a successful Job.
  EXPECT_EQ(h.api.StatusWrites(uid), 4);
  // Two Events for a successful Job, like a native batch Job; acceptance and scheduling show in
  // the conditions only.
  for (const char* e : {"Started", "Completed"}) {
    EXPECT_EQ(CountEvents(h, e), 1) << e;
  }
  for (const char* e : {"Accepted", "BackendCreated"}) {
    EXPECT_EQ(CountEvents(h, e), 0) << e;
  }
  EXPECT_THAT(h.failures(), IsEmpty());
}

void Normal_NonZeroExit() {
  Harness h;
  const std::string uid = StartRunning(h, "fail");
  h.Advance(seconds(3));
  h.backend.Exit(uid, 3, h.Now());
  h.Settle("fail");
  api::Job j = h.Job("fail");
  EXPECT_EQ(StateOf(h, "fail"), State::kFailed);
  EXPECT_EQ(Reason(j, api::kConditionSucceeded), "False/ProcessFailed");
  ASSERT_TRUE(j.status.result);
  EXPECT_EQ(j.status.result->exitCode, 3);
  EXPECT_EQ(j.status.completionTime, h.Now());
  EXPECT_EQ(h.backend.Creates(uid), 1);
  EXPECT_THAT(h.failures(), IsEmpty());
}

void Resolution_JobClassCreatedLater() {
  Harness h;
  h.cluster.classes.clear();
  api::JobSpec spec = BasicSpec();
  spec.jobClassName = "gold";
  const std::string uid = h.Create("later", spec);
  h.Settle("later");
  h.Advance(seconds(30));
  h.Settle("later");
  api::Job j = h.Job("later");
  EXPECT_EQ(StateOf(h, "later"), State::kResolving);
  EXPECT_EQ(Reason(j, api::kConditionAccepted), "False/JobClassNotFound");
  EXPECT_EQ(Reason(j, api::kConditionSucceeded), "Unknown/Pending");
  EXPECT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 0);
  EXPECT_FALSE(j.status.resolvedJobClass);

  h.cluster.classes.insert("gold");
  h.Settle("later");
  j = h.Job("later");
  EXPECT_EQ(Reason(j, api::kConditionAccepted), "True/Valid");
  ASSERT_TRUE(j.status.resolvedJobClass);
  EXPECT_EQ(j.status.resolvedJobClass->name, "gold");
  EXPECT_EQ(h.backend.Creates(uid), 1);

  // Resolved once: the class disappearing or the default changing does not re-resolve.
  h.cluster.classes.clear();
  h.cluster.defaultClass = "other";
  h.Settle("later");
  EXPECT_EQ(h.Job("later").status.resolvedJobClass, j.status.resolvedJobClass);
  EXPECT_EQ(h.backend.Creates(uid), 1);

  // No default at all: the Job waits, it does not pick a backend.
  Harness h2;
  h2.cluster.defaultClass = "";
  const std::string uid2 = h2.Create("nodefault", BasicSpec());
  h2.Settle("nodefault");
  EXPECT_EQ(Reason(h2.Job("nodefault"), api::kConditionAccepted), "False/NoDefaultJobClass");
  EXPECT_EQ(h2.backend.Calls(AdapterCall::kEnsure, uid2), 0);
  EXPECT_THAT(h.failures(), IsEmpty());
  EXPECT_THAT(h2.failures(), IsEmpty());
}

void Resolution_SecretCreatedLater() {
  const std::string secretValue = "s3cr3t-v4lue";
  Harness h;
  api::JobSpec spec = BasicSpec();
  api::EnvVar token{"TOKEN", std::nullopt, api::EnvVarSource{}};
  token.valueFrom->secretKeyRef = api::KeySelector{"example-token", "token", false};
  api::EnvVar config{"CONFIG_VALUE", std::nullopt, api::EnvVarSource{}};
  config.valueFrom->configMapKeyRef = api::KeySelector{"example-config", "value", false};
  spec.task.env = {token, config};
  const std::string uid = h.Create("env", spec);

  h.Settle("env");
  EXPECT_EQ(Reason(h.Job("env"), api::kConditionAccepted), "False/SecretNotFound");
  h.cluster.secrets["example-token"] = {{"other", secretValue}};
  h.Settle("env");
  EXPECT_EQ(Reason(h.Job("env"), api::kConditionAccepted), "False/KeyNotFound");
  h.cluster.secrets["example-token"]["token"] = secretValue;
  h.Settle("env");
  EXPECT_EQ(Reason(h.Job("env"), api::kConditionAccepted), "False/ConfigMapNotFound");
  EXPECT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 0);
  h.cluster.configMaps["example-config"] = {{"value", "cfg"}};
  h.Settle("env");
  EXPECT_EQ(Reason(h.Job("env"), api::kConditionAccepted), "True/Valid");
  h.Settle("env");
  EXPECT_EQ(h.backend.Creates(uid), 1);
  EXPECT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 1);

  // No value anywhere in what the state machine wrote or announced.
  for (const api::JobStatus& s : h.api.History(uid)) {
    for (const api::Condition& c : s.conditions) {
      EXPECT_EQ(c.message.find(secretValue), std::string::npos) << c.message;
    }
  }
  for (const Event& e : h.events()) {
    EXPECT_EQ(e.message.find(secretValue), std::string::npos) << e.message;
  }
  EXPECT_THAT(h.failures(), IsEmpty());
}

void Backend_ImagePullFailure() {
  {
    SCOPED_TRACE("image pull fails after the backend created the execution");
    Harness h;
    h.backend.failOnCreate = "ImagePullFailed";
    const std::string uid = h.Create("pull", BasicSpec());
    h.Settle("pull");
    api::Job j = h.Job("pull");
    EXPECT_EQ(StateOf(h, "pull"), State::kFailed);
    EXPECT_EQ(Reason(j, api::kConditionSucceeded), "False/ImagePullFailed");
    EXPECT_EQ(Reason(j, api::kConditionScheduled), "True/BackendCreated");
    EXPECT_FALSE(j.status.startTime);  // legal: it never started
    EXPECT_TRUE(j.status.completionTime);
    EXPECT_FALSE(j.status.result->exitCode);
    EXPECT_EQ(h.backend.Creates(uid), 1);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
  {
    SCOPED_TRACE("the backend refuses the request (provisioning failure)");
    Harness h;
    h.backend.rejectOnEnsure = "BackendRejected";
    const std::string uid = h.Create("rejected", BasicSpec());
    h.Settle("rejected");
    api::Job j = h.Job("rejected");
    EXPECT_EQ(Reason(j, api::kConditionSucceeded), "False/BackendRejected");
    EXPECT_EQ(Cond(j, api::kConditionScheduled), nullptr);
    EXPECT_FALSE(j.status.startTime);
    EXPECT_TRUE(j.status.completionTime);
    EXPECT_EQ(h.backend.Creates(uid), 0);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
  {
    SCOPED_TRACE("OOMKilled is passed through as the failure reason");
    Harness h;
    const std::string uid = StartRunning(h, "oom");
    h.backend.Exit(uid, 137, h.Now(), "OOMKilled");
    h.Settle("oom");
    EXPECT_EQ(Reason(h.Job("oom"), api::kConditionSucceeded), "False/OOMKilled");
    EXPECT_EQ(h.Job("oom").status.result->exitCode, 137);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
  {
    SCOPED_TRACE("a policy refusal at resolution fails the Job without an execution");
    Harness h;
    h.cluster.resourcesOutOfRange = true;
    const std::string uid = h.Create("big", BasicSpec());
    h.Settle("big");
    api::Job j = h.Job("big");
    EXPECT_EQ(Reason(j, api::kConditionAccepted), "False/ResourcesOutOfRange");
    EXPECT_EQ(Reason(j, api::kConditionSucceeded), "False/ResourcesOutOfRange");
    EXPECT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 0);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
}

void Idempotency_CrashBetweenEnsureAndStatusWrite() {
  Harness h;
  const std::string uid = h.Create("crash", BasicSpec());
  RoundReport r = h.Reconcile("crash", CrashAfterCall(AdapterCall::kEnsure));
  EXPECT_TRUE(r.crashed);
  api::Job j = h.Job("crash");
  EXPECT_EQ(StateOf(h, "crash"), State::kScheduling);  // Accepted persisted, references not
  EXPECT_FALSE(j.status.execution && !j.status.execution->references.empty());
  EXPECT_EQ(h.backend.Creates(uid), 1);

  h.DropCache();  // restart
  h.Settle("crash");
  j = h.Job("crash");
  EXPECT_EQ(h.backend.Creates(uid), 1);  // found by UID, not created again
  EXPECT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 2);
  ASSERT_TRUE(j.status.execution);
  EXPECT_EQ(j.status.execution->references, h.backend.Find(uid)->references);
  EXPECT_EQ(Reason(j, api::kConditionScheduled), "True/BackendCreated");

  // The same after the response of Ensure was lost (timeout): ResultUnknown, then found.
  Harness h2;
  h2.backend.loseNextEnsureResponse = true;
  const std::string uid2 = h2.Create("lost", BasicSpec());
  h2.Settle("lost");
  h2.Settle("lost");
  EXPECT_EQ(h2.backend.Creates(uid2), 1);
  EXPECT_EQ(Reason(h2.Job("lost"), api::kConditionScheduled), "True/BackendCreated");
  EXPECT_THAT(h.failures(), IsEmpty());
  EXPECT_THAT(h2.failures(), IsEmpty());
}

void Idempotency_DuplicateReconcile() {
  Harness h;
  const std::string uid = StartRunning(h, "dup");
  const int writes = h.api.StatusWrites(uid);
  for (int i = 0; i < 10; ++i) {
    RoundReport r = h.Reconcile("dup");
    EXPECT_EQ(r.statusWrites, 0);
    EXPECT_EQ(r.finalizerWrites, 0);
  }
  EXPECT_EQ(h.api.StatusWrites(uid), writes);
  h.backend.Exit(uid, 0, h.Now());
  h.Settle("dup");
  const api::Job done = h.Job("dup");
  const int doneWrites = h.api.StatusWrites(uid);
  for (int i = 0; i < 10; ++i) {
    h.Advance(seconds(100));
    h.Reconcile("dup");
  }
  EXPECT_EQ(h.Job("dup").status, done.status);  // terminal times do not move
  EXPECT_EQ(h.api.StatusWrites(uid), doneWrites);
  EXPECT_EQ(h.backend.Creates(uid), 1);
  EXPECT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 1);
  EXPECT_EQ(CountEvents(h, "Completed"), 1);

  // Deciding twice on the same inputs gives the same plan (duplicate events are harmless).
  Facts facts;
  facts.now = h.Now();
  Plan a = Decide(done, facts);
  Plan b = Decide(done, facts);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.call, b.call);
  EXPECT_THAT(h.failures(), IsEmpty());
}

void Recovery_RestartInEachNonTerminalState() {
  struct Case {
    const char* name;
    State expected;
    std::function<std::string(Harness&)> reach;                // returns the uid
    std::function<void(Harness&, const std::string&)> finish;  // lets the world move on
    State terminal;
  };
  const std::vector<Case> cases = {
      {"Resolving", State::kResolving,
       [](Harness& h) {
         h.cluster.classes.clear();
         std::string uid = h.Create("j", BasicSpec());
         h.Settle("j");
         return uid;
       },
       [](Harness& h, const std::string& uid) {
         h.cluster.classes.insert("standard");
         h.Settle("j");
         h.backend.Exit(uid, 0, h.Now());
       },
       State::kSucceeded},
      {"Scheduling", State::kScheduling,
       [](Harness& h) {
         std::string uid = h.Create("j", BasicSpec());
         h.Reconcile("j", CrashAfterCall(AdapterCall::kEnsure));
         return uid;
       },
       [](Harness& h, const std::string& uid) {
         h.Settle("j");
         h.backend.Exit(uid, 0, h.Now());
       },
       State::kSucceeded},
      {"Starting", State::kStarting,
       [](Harness& h) {
         std::string uid = h.Create("j", BasicSpec());
         h.Settle("j");
         return uid;
       },
       [](Harness& h, const std::string& uid) { h.backend.Exit(uid, 2, h.Now()); }, State::kFailed},
      {"Running", State::kRunning, [](Harness& h) { return StartRunning(h, "j"); },
       [](Harness& h, const std::string& uid) { h.backend.Exit(uid, 0, h.Now()); },
       State::kSucceeded},
      {"Cancelling", State::kCancelling,
       [](Harness& h) {
         h.backend.slowStop = true;
         std::string uid = StartRunning(h, "j");
         h.api.SetCancelled("j");
         h.Reconcile("j");
         return uid;
       },
       [](Harness&, const std::string&) {}, State::kCancelled},
      {"ResultUnknown", State::kResultUnknown,
       [](Harness& h) {
         std::string uid = StartRunning(h, "j");
         h.backend.unreachable = true;
         h.Settle("j");
         return uid;
       },
       [](Harness& h, const std::string& uid) {
         h.backend.unreachable = false;
         h.backend.Exit(uid, 0, h.Now());
       },
       State::kSucceeded},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Harness h;
    const std::string uid = c.reach(h);
    EXPECT_EQ(StateOf(h, "j"), c.expected) << StateName(StateOf(h, "j"));
    const api::JobStatus persisted = h.Job("j").status;
    h.DropCache();  // restart: only the API server's copy survives
    h.Advance(seconds(7));
    c.finish(h, uid);
    h.Settle("j");
    api::Job j = h.Job("j");
    EXPECT_EQ(DeriveState(j), c.terminal) << StateName(DeriveState(j));
    EXPECT_LE(h.backend.Creates(uid), 1);
    if (persisted.startTime) {
      EXPECT_EQ(j.status.startTime, persisted.startTime);
    }
    if (persisted.execution && !persisted.execution->references.empty()) {
      EXPECT_EQ(j.status.execution->references, persisted.execution->references);
    }
    EXPECT_THAT(h.failures(), IsEmpty());
  }
}

void Unknown_TimeoutKeepsNonTerminal() {
  {
    SCOPED_TRACE("Ensure times out and the backend stays unreachable");
    Harness h;
    api::JobSpec spec = BasicSpec();
    spec.ttlSecondsAfterFinished = 0;
    h.backend.loseNextEnsureResponse = true;
    const std::string uid = h.Create("t", spec);
    h.Reconcile("t");  // created, but the response was lost
    EXPECT_EQ(StateOf(h, "t"), State::kResultUnknown);
    h.backend.unreachable = true;
    for (int i = 0; i < 5; ++i) {
      h.Advance(seconds(86400));
      RoundReport r = h.Reconcile("t");
      EXPECT_TRUE(r.backoff);
      EXPECT_FALSE(r.ttlDeleted);
    }
    api::Job j = h.Job("t");
    EXPECT_EQ(StateOf(h, "t"), State::kResultUnknown);
    EXPECT_EQ(Reason(j, api::kConditionSucceeded), "Unknown/ResultUnknown");
    EXPECT_FALSE(j.status.completionTime);
    EXPECT_FALSE(j.status.result);
    EXPECT_FALSE(TtlDeadline(j));
    EXPECT_FALSE(TtlExpired(j, h.Now()));
    h.backend.unreachable = false;
    h.Settle("t");
    EXPECT_EQ(h.backend.Creates(uid), 1);
    EXPECT_EQ(Reason(h.Job("t"), api::kConditionScheduled), "True/BackendCreated");
    EXPECT_THAT(h.failures(), IsEmpty());
  }
  {
    SCOPED_TRACE("Observe times out while running");
    Harness h;
    api::JobSpec spec = BasicSpec();
    spec.ttlSecondsAfterFinished = 0;
    const std::string uid = StartRunning(h, "o", spec);
    const auto started = h.Job("o").status.startTime;
    h.backend.unreachable = true;
    h.Advance(seconds(30));
    h.Settle("o");
    h.Advance(seconds(86400 * 30));
    h.Settle("o");
    api::Job j = h.Job("o");
    EXPECT_EQ(StateOf(h, "o"), State::kResultUnknown);
    EXPECT_EQ(j.status.startTime, started);
    EXPECT_FALSE(j.status.completionTime);
    EXPECT_TRUE(h.Exists("o"));
    EXPECT_EQ(CountEvents(h, "ResultUnknown"), 1);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
}

void Unknown_BackendBackToRunning() {
  Harness h;
  const std::string uid = StartRunning(h, "back");
  const auto started = h.Job("back").status.startTime;
  h.backend.unreachable = true;
  h.Advance(seconds(60));
  h.Settle("back");
  EXPECT_EQ(StateOf(h, "back"), State::kResultUnknown);
  h.backend.unreachable = false;
  h.Advance(seconds(60));
  h.Settle("back");
  api::Job j = h.Job("back");
  EXPECT_EQ(StateOf(h, "back"), State::kRunning);
  EXPECT_EQ(Reason(j, api::kConditionSucceeded), "Unknown/Running");
  EXPECT_EQ(j.status.startTime, started);
  EXPECT_EQ(CountEvents(h, "ResultRecovered"), 1);
  h.backend.Exit(uid, 0, h.Now());
  h.Settle("back");
  EXPECT_EQ(StateOf(h, "back"), State::kSucceeded);
  EXPECT_EQ(h.backend.Creates(uid), 1);
  EXPECT_THAT(h.failures(), IsEmpty());
}

void Unknown_AdminConfirmsLoss() {
  Harness h;
  {
    SCOPED_TRACE("the confirmation means nothing for a Job whose result is known");
    const std::string uid = StartRunning(h, "fine");
    h.api.Annotate("fine", api::kConfirmBackendLostAnnotation, "0:alice: INC-1");
    h.Settle("fine");
    EXPECT_EQ(StateOf(h, "fine"), State::kRunning);
    h.backend.Exit(uid, 0, h.Now());
    h.Settle("fine");
    EXPECT_EQ(StateOf(h, "fine"), State::kSucceeded);
  }
  SCOPED_TRACE("a lost execution stays ResultUnknown until confirmed");
  const std::string uid = StartRunning(h, "lost");
  const auto started = h.Job("lost").status.startTime;
  h.backend.Lose(uid);
  for (int i = 0; i < 3; ++i) {
    h.Advance(seconds(3600));
    h.Settle("lost");
    EXPECT_EQ(StateOf(h, "lost"), State::kResultUnknown);
    EXPECT_FALSE(h.Job("lost").status.completionTime);
  }
  h.Advance(seconds(10));
  SCOPED_TRACE("a confirmation that names no episode, or another one, confirms nothing");
  h.api.Annotate("lost", api::kConfirmBackendLostAnnotation, "alice: INC-2");
  h.Settle("lost");
  EXPECT_EQ(StateOf(h, "lost"), State::kResultUnknown);
  EXPECT_EQ(h.Job("lost").status.resultUnknownEpisode, 1);
  h.api.Annotate("lost", api::kConfirmBackendLostAnnotation, "2:alice: INC-2");
  h.Settle("lost");
  EXPECT_EQ(StateOf(h, "lost"), State::kResultUnknown);
  h.api.Annotate("lost", api::kConfirmBackendLostAnnotation, "1:alice: INC-2");
  h.Settle("lost");
  api::Job j = h.Job("lost");
  EXPECT_EQ(StateOf(h, "lost"), State::kFailed);
  EXPECT_EQ(Reason(j, api::kConditionSucceeded), "False/BackendLost");
  EXPECT_EQ(j.status.completionTime, h.Now());
  EXPECT_EQ(j.status.startTime, started);
  EXPECT_FALSE(j.status.result->exitCode);
  EXPECT_NE(Cond(j, api::kConditionSucceeded)->message.find("alice: INC-2"), std::string::npos);
  EXPECT_THAT(h.failures(), IsEmpty());
}

// The cancel-during-backlog race (issue 24): a busy controller decides on its cache's copy of a
// new Job, older than the cancel the API server already has. The create's confirmation reads the
// Job fresh, nothing is created, and the Job ends Cancelled without an execution; the same for a
// Job deleted meanwhile.
void Cancel_DuringBacklogBeforeTheCreate() {
  for (const bool deleted : {false, true}) {
    SCOPED_TRACE(deleted ? "deleted since the copy" : "cancelled since the copy");
    Harness h;
    h.useCache = true;
    h.backlog = true;  // the create would carry the acceptance
    const std::string uid = h.Create("c", BasicSpec());
    h.Reconcile("c", CrashAfterSteps(1));  // the finalizer; the cache keeps the copy from before
    h.SyncCache("c");
    const api::Job copy = h.Job("c");
    if (deleted) {
      ASSERT_TRUE(h.api.Delete("c", uid).ok());
    } else {
      h.api.SetCancelled("c");
    }
    h.SetCached(copy);  // the informer has not seen the change yet
    h.Reconcile("c");
    EXPECT_EQ(h.backend.Creates(uid), 0);
    EXPECT_EQ(h.backend.createsNotConfirmed, 1);
    h.SyncCache("c");
    h.Settle("c");
    EXPECT_EQ(h.backend.Creates(uid), 0);
    if (deleted) {
      EXPECT_FALSE(h.Exists("c"));
    } else {
      EXPECT_EQ(StateOf(h, "c"), State::kCancelled);
      EXPECT_FALSE(api::IsConditionTrue(h.Job("c").status.conditions, api::kConditionAccepted));
    }
    EXPECT_THAT(h.failures(), IsEmpty());
  }
}

void Cancel_InEachPhase() {
  {
    SCOPED_TRACE("Resolving: confirmed at once, nothing is ever created");
    Harness h;
    h.cluster.classes.clear();
    const std::string uid = h.Create("c", BasicSpec());
    h.Settle("c");
    h.Advance(seconds(3));
    h.api.SetCancelled("c");
    h.Settle("c");
    api::Job j = h.Job("c");
    EXPECT_EQ(StateOf(h, "c"), State::kCancelled);
    EXPECT_EQ(j.status.completionTime, h.Now());
    h.cluster.classes.insert("standard");
    h.Settle("c");
    EXPECT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 0);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
  {
    SCOPED_TRACE("Scheduling, accepted but Ensure never ran: Cancel by UID finds nothing");
    Harness h;
    const std::string uid = h.Create("c", BasicSpec());
    h.Reconcile("c", CrashAfterSteps(2));  // finalizer, Accepted status; then crash
    EXPECT_EQ(StateOf(h, "c"), State::kScheduling);
    h.api.SetCancelled("c");
    h.Settle("c");
    EXPECT_EQ(StateOf(h, "c"), State::kCancelled);
    EXPECT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 0);
    EXPECT_EQ(h.backend.Calls(AdapterCall::kCancel, uid), 1);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
  {
    SCOPED_TRACE("Scheduling after a crash between Ensure and the status write");
    Harness h;
    const std::string uid = h.Create("c", BasicSpec());
    h.Reconcile("c", CrashAfterCall(AdapterCall::kEnsure));
    h.api.SetCancelled("c");
    h.Settle("c");
    EXPECT_EQ(StateOf(h, "c"), State::kCancelled);
    EXPECT_FALSE(h.backend.Live(uid));
    EXPECT_EQ(h.backend.Creates(uid), 1);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
  {
    SCOPED_TRACE("Starting");
    Harness h;
    const std::string uid = h.Create("c", BasicSpec());
    h.Settle("c");
    h.api.SetCancelled("c");
    h.Settle("c");
    EXPECT_EQ(StateOf(h, "c"), State::kCancelled);
    EXPECT_FALSE(h.Job("c").status.startTime);
    EXPECT_FALSE(h.backend.Live(uid));
    EXPECT_THAT(h.failures(), IsEmpty());
  }
  {
    SCOPED_TRACE("Running, the stop takes a while to be confirmed");
    Harness h;
    h.backend.slowStop = true;
    const std::string uid = StartRunning(h, "c");
    h.api.SetCancelled("c");
    RoundReport r = h.Reconcile("c");
    EXPECT_EQ(StateOf(h, "c"), State::kCancelling);  // requested, not confirmed
    EXPECT_TRUE(r.backoff);
    h.Advance(seconds(2));
    h.Settle("c");
    api::Job j = h.Job("c");
    EXPECT_EQ(StateOf(h, "c"), State::kCancelled);
    EXPECT_EQ(Reason(j, api::kConditionSucceeded), "False/Cancelled");
    EXPECT_EQ(j.status.completionTime, h.Now());
    EXPECT_EQ(j.status.result->exitCode, 143);
    EXPECT_EQ(h.backend.Creates(uid), 1);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
  {
    SCOPED_TRACE("ResultUnknown: cancelled only once the backend answers");
    Harness h;
    const std::string uid = StartRunning(h, "c");
    h.backend.unreachable = true;
    h.Settle("c");
    h.api.SetCancelled("c");
    h.Settle("c");
    EXPECT_EQ(StateOf(h, "c"), State::kCancelling);
    EXPECT_FALSE(h.Job("c").status.completionTime);
    h.backend.unreachable = false;
    h.Settle("c");
    EXPECT_EQ(StateOf(h, "c"), State::kCancelled);
    EXPECT_FALSE(h.backend.Live(uid));
    EXPECT_THAT(h.failures(), IsEmpty());
  }
}

void Race_CancelVersusSuccess() {
  {
    SCOPED_TRACE("the task exits 0 before the cancel reaches the backend");
    Harness h;
    const std::string uid = StartRunning(h, "race");
    h.backend.Exit(uid, 0, h.Now());
    h.api.SetCancelled("race");
    h.Settle("race");
    EXPECT_EQ(StateOf(h, "race"), State::kSucceeded);
    EXPECT_EQ(h.backend.Calls(AdapterCall::kCancel, uid), 1);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
  {
    SCOPED_TRACE("cancelling an already Succeeded Job changes nothing");
    Harness h;
    const std::string uid = StartRunning(h, "done");
    h.backend.Exit(uid, 0, h.Now());
    h.Settle("done");
    const api::JobStatus before = h.Job("done").status;
    h.api.SetCancelled("done");
    h.Advance(seconds(10));
    h.Settle("done");
    api::Job j = h.Job("done");
    EXPECT_EQ(StateOf(h, "done"), State::kSucceeded);
    EXPECT_EQ(j.status.completionTime, before.completionTime);
    EXPECT_EQ(j.status.result, before.result);
    EXPECT_EQ(j.status.observedGeneration, 2);  // the new spec was seen
    EXPECT_EQ(h.backend.Calls(AdapterCall::kCancel, uid), 0);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
}

void Deadline_Expiry() {
  Harness h;
  h.backend.slowStop = true;
  api::JobSpec spec = BasicSpec();
  spec.activeDeadlineSeconds = 60;
  const std::string uid = h.Create("dl", spec);
  h.Settle("dl");
  h.Advance(seconds(600));  // queueing and provisioning do not count
  EXPECT_FALSE(h.Reconcile("dl").requeueAfter);
  h.backend.Start(uid, h.Now());
  const Time started = h.Now();
  EXPECT_EQ(h.Reconcile("dl").requeueAfter, seconds(60));
  h.Advance(seconds(45));
  RoundReport r = h.Reconcile("dl");
  EXPECT_EQ(r.requeueAfter, seconds(15));
  EXPECT_EQ(h.backend.Calls(AdapterCall::kCancel, uid), 0);
  h.Advance(seconds(15));
  r = h.Reconcile("dl");
  EXPECT_EQ(h.backend.Calls(AdapterCall::kCancel, uid), 1);  // requested
  EXPECT_EQ(StateOf(h, "dl"), State::kRunning);              // not yet confirmed
  EXPECT_TRUE(r.backoff);
  h.Advance(seconds(3));
  h.Settle("dl");
  api::Job j = h.Job("dl");
  EXPECT_EQ(Reason(j, api::kConditionSucceeded), "False/DeadlineExceeded");
  EXPECT_EQ(j.status.startTime, started);
  EXPECT_EQ(j.status.completionTime, h.Now());
  EXPECT_GE(*j.status.completionTime, started + seconds(60));
  EXPECT_FALSE(h.backend.Live(uid));
  EXPECT_THAT(h.failures(), IsEmpty());
}

void Deletion_InEachNonTerminalState() {
  struct Case {
    const char* name;
    std::function<std::string(Harness&)> reach;
  };
  const std::vector<Case> cases = {
      {"Resolving",
       [](Harness& h) {
         h.cluster.classes.clear();
         std::string uid = h.Create("d", BasicSpec());
         h.Settle("d");
         return uid;
       }},
      {"Scheduling",
       [](Harness& h) {
         std::string uid = h.Create("d", BasicSpec());
         h.Reconcile("d", CrashAfterCall(AdapterCall::kEnsure));
         return uid;
       }},
      {"Starting",
       [](Harness& h) {
         std::string uid = h.Create("d", BasicSpec());
         h.Settle("d");
         return uid;
       }},
      {"Running", [](Harness& h) { return StartRunning(h, "d"); }},
      {"Cancelling",
       [](Harness& h) {
         std::string uid = StartRunning(h, "d");
         h.api.SetCancelled("d");
         h.Reconcile("d");
         return uid;
       }},
      {"ResultUnknown",
       [](Harness& h) {
         std::string uid = StartRunning(h, "d");
         h.backend.unreachable = true;
         h.Settle("d");
         h.backend.unreachable = false;
         return uid;
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Harness h;
    h.backend.slowStop = true;
    const std::string uid = c.reach(h);
    ASSERT_TRUE(h.api.Delete("d", uid).ok());
    EXPECT_EQ(StateOf(h, "d"), State::kDeleting);
    for (int round = 0; round < 6 && h.Exists("d"); ++round) {
      // While the object exists its backend execution may exist; once it is gone, it must not.
      h.Reconcile("d");
      h.Advance(seconds(1));
    }
    EXPECT_FALSE(h.Exists("d"));
    EXPECT_EQ(h.backend.Find(uid), nullptr);
    EXPECT_LE(h.backend.Creates(uid), 1);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
}

void Deletion_BackendUnreachable() {
  Harness h;
  const std::string uid = StartRunning(h, "d");
  h.backend.unreachable = true;
  ASSERT_TRUE(h.api.Delete("d", uid).ok());
  for (int i = 0; i < 5; ++i) {
    h.Advance(seconds(600));
    RoundReport r = h.Reconcile("d");
    EXPECT_EQ(r.finalizerWrites, 0);
    EXPECT_TRUE(r.backoff);
  }
  EXPECT_TRUE(h.Exists("d"));
  EXPECT_TRUE(HasFinalizer(h.Job("d")));
  EXPECT_NE(h.backend.Find(uid), nullptr);

  h.backend.unreachable = false;
  h.Settle("d");
  EXPECT_FALSE(h.Exists("d"));
  EXPECT_EQ(h.backend.Find(uid), nullptr);

  // The same when only Delete fails, for a terminal Job.
  Harness h2;
  const std::string uid2 = StartRunning(h2, "t");
  h2.backend.Exit(uid2, 0, h2.Now());
  h2.Settle("t");
  h2.backend.unreachable = true;
  ASSERT_TRUE(h2.api.Delete("t", uid2).ok());
  h2.Reconcile("t");
  h2.Reconcile("t");
  EXPECT_TRUE(h2.Exists("t"));
  EXPECT_GE(h2.backend.Calls(AdapterCall::kDelete, uid2), 2);
  h2.backend.unreachable = false;
  h2.Settle("t");
  EXPECT_FALSE(h2.Exists("t"));
  EXPECT_THAT(h.failures(), IsEmpty());
  EXPECT_THAT(h2.failures(), IsEmpty());
}

void Ttl_ThreeTerminalStates() {
  for (const char* outcome : {"Succeeded", "Failed", "Cancelled"}) {
    SCOPED_TRACE(outcome);
    Harness h;
    api::JobSpec spec = BasicSpec();
    spec.ttlSecondsAfterFinished = 100;
    const std::string uid = StartRunning(h, "ttl", spec);
    if (std::string(outcome) == "Succeeded") h.backend.Exit(uid, 0, h.Now());
    if (std::string(outcome) == "Failed") h.backend.Exit(uid, 1, h.Now());
    if (std::string(outcome) == "Cancelled") h.api.SetCancelled("ttl");
    h.Settle("ttl");
    ASSERT_EQ(StateName(StateOf(h, "ttl")), std::string(outcome));
    const Time completed = *h.Job("ttl").status.completionTime;
    EXPECT_EQ(TtlDeadline(h.Job("ttl")), completed + seconds(100));
    EXPECT_EQ(h.Reconcile("ttl").requeueAfter, seconds(100) - (h.Now() - completed));
    h.Advance(completed + seconds(99) - h.Now());
    RoundReport r = h.Reconcile("ttl");
    EXPECT_EQ(r.freshReads, 0);  // no TTL deletion considered
    EXPECT_EQ(r.requeueAfter, seconds(1));
    EXPECT_EQ(h.api.Deletes(uid), 0);
    h.Advance(seconds(1));
    r = h.Reconcile("ttl");
    EXPECT_EQ(r.freshReads, 1);  // the TTL rechecked on the Job as the server has it
    EXPECT_TRUE(r.ttlDeleted);
    EXPECT_EQ(h.api.Deletes(uid), 1);
    h.Settle("ttl");  // the finalizer path cleans the backend
    EXPECT_FALSE(h.Exists("ttl"));
    EXPECT_EQ(h.backend.Find(uid), nullptr);
    EXPECT_THAT(h.failures(), IsEmpty());
  }
}

void Ttl_RestartWhileWaiting() {
  Harness h;
  api::JobSpec spec = BasicSpec();
  spec.ttlSecondsAfterFinished = 100;
  const std::string uid = StartRunning(h, "ttl", spec);
  h.backend.Exit(uid, 0, h.Now());
  h.Settle("ttl");
  EXPECT_EQ(h.Reconcile("ttl").requeueAfter, seconds(100));
  h.DropCache();  // restart: the timer is gone, the status is not
  h.Advance(seconds(60));
  EXPECT_EQ(h.Reconcile("ttl").requeueAfter, seconds(40));
  h.Advance(seconds(40));
  // The old timer and the informer's resync both fire: deleted exactly once.
  EXPECT_TRUE(h.Reconcile("ttl").ttlDeleted);
  h.Reconcile("ttl");
  h.Reconcile("ttl");
  EXPECT_FALSE(h.Exists("ttl"));
  EXPECT_EQ(h.api.Deletes(uid), 1);
  EXPECT_THAT(h.failures(), IsEmpty());
}

void Ttl_ExtendedNearExpiry() {
  Harness h;
  h.useCache = true;
  api::JobSpec spec = BasicSpec();
  spec.ttlSecondsAfterFinished = 100;
  const std::string uid = StartRunning(h, "ttl", spec);
  h.backend.Exit(uid, 0, h.Now());
  h.Settle("ttl");
  h.SyncCache("ttl");
  h.Advance(seconds(100));
  h.api.SetTtl("ttl", 1000);  // the cache has not seen this yet
  RoundReport r = h.Reconcile("ttl");
  EXPECT_EQ(r.freshReads, 1);  // decided on the stale copy to delete...
  EXPECT_FALSE(r.ttlDeleted);  // ...but the fresh GET says no
  EXPECT_EQ(h.api.Deletes(uid), 0);
  h.SyncCache("ttl");
  r = h.Reconcile("ttl");
  EXPECT_EQ(r.freshReads, 0);
  EXPECT_EQ(r.requeueAfter, seconds(900));
  h.Advance(seconds(900));
  h.SyncCache("ttl");
  EXPECT_TRUE(h.Reconcile("ttl").ttlDeleted);
  EXPECT_EQ(h.api.Deletes(uid), 1);
  EXPECT_THAT(h.failures(), IsEmpty());
}

void Isolation_SameNameNewUid() {
  Harness h;
  h.useCache = true;
  const std::string old = StartRunning(h, "same");
  h.SyncCache("same");
  // The old Job is deleted while its backend is unreachable; the administrator forces the
  // finalizer off (runbook), leaving the old execution running in the backend.
  h.backend.unreachable = true;
  ASSERT_TRUE(h.api.Delete("same", old).ok());
  h.SyncCache("same");
  h.Reconcile("same");
  const api::Job staleOld = h.Job("same");
  h.api.ForceRemoveFinalizers("same");
  h.backend.unreachable = false;
  ASSERT_FALSE(h.Exists("same"));
  ASSERT_TRUE(h.backend.Live(old));

  const std::string fresh = h.Create("same", BasicSpec());
  ASSERT_NE(fresh, old);
  h.SyncCache("same");
  h.Settle("same");
  const std::vector<api::ExecutionReference> newRefs = h.Job("same").status.execution->references;
  EXPECT_NE(newRefs, h.backend.Find(old)->references);
  EXPECT_EQ(h.backend.Creates(fresh), 1);

  // The old execution finishing does not touch the new Job.
  h.backend.Exit(old, 1, h.Now());
  h.Settle("same");
  EXPECT_EQ(StateOf(h, "same"), State::kStarting);

  // An informer that still holds the old object: the round acts for the OLD uid only (its
  // backend calls are keyed by it) and its writes fail the resourceVersion precondition.
  const int writes = h.api.StatusWrites(fresh);
  const auto finalizers = h.Job("same").metadata.finalizers;
  auto callsFor = [&](const std::string& uid) {
    int n = 0;
    for (AdapterCall c : {AdapterCall::kEnsure, AdapterCall::kObserve, AdapterCall::kCancel,
                          AdapterCall::kDelete}) {
      n += h.backend.Calls(c, uid);
    }
    return n;
  };
  const int freshCalls = callsFor(fresh);
  const int oldCalls = callsFor(old);
  Facts staleFacts;
  staleFacts.now = h.Now();
  Plan stale = Decide(staleOld, staleFacts);
  EXPECT_EQ(stale.call, AdapterCall::kCancel);  // by the OLD uid
  h.SetCached(staleOld);
  RoundReport r = h.Reconcile("same");
  EXPECT_TRUE(r.aborted);
  EXPECT_GT(callsFor(old), oldCalls);
  EXPECT_EQ(callsFor(fresh), freshCalls);
  EXPECT_EQ(h.api.StatusWrites(fresh), writes);
  EXPECT_EQ(h.Job("same").metadata.finalizers, finalizers);
  EXPECT_NE(h.backend.Find(fresh), nullptr);

  h.backend.Start(fresh, h.Now());
  h.backend.Exit(fresh, 0, h.Now());
  h.Settle("same");
  EXPECT_EQ(StateOf(h, "same"), State::kSucceeded);
  EXPECT_EQ(h.Job("same").status.execution->references, newRefs);
  EXPECT_EQ(h.backend.Creates(fresh), 1);
  EXPECT_EQ(h.backend.Creates(old), 1);
  EXPECT_THAT(h.failures(), IsEmpty());
}

void Validation_CancelledBackToRunningStaysCancelled() {
  // CEL rejects this edit (test/integration covers that); the state machine must not resurrect
  // a cancelled Job even if the edit got through.
  Harness h;
  const std::string uid = h.Create("v", BasicSpec());
  h.Reconcile("v", CrashAfterSteps(2));
  h.api.SetCancelled("v");
  h.Settle("v");
  ASSERT_EQ(StateOf(h, "v"), State::kCancelled);
  h.api.EditSpecUnchecked("v",
                          [](api::JobSpec& s) { s.desiredState = api::DesiredState::kRunning; });
  h.Settle("v");
  EXPECT_EQ(StateOf(h, "v"), State::kCancelled);
  EXPECT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 0);
  EXPECT_THAT(h.failures(), IsEmpty());
}

void References_SandboxAndCommandStable() {
  Harness h;
  h.backend.referencesPerExecution = 2;
  const std::string uid = h.Create("osb", BasicSpec());
  h.Reconcile("osb", CrashAfterCall(AdapterCall::kEnsure));
  h.backend.loseNextEnsureResponse = true;
  h.Settle("osb");  // a lost response: ResultUnknown
  h.Settle("osb");  // found by UID
  const auto refs = h.Job("osb").status.execution->references;
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].type, "Sandbox");
  EXPECT_EQ(refs[1].type, "Command");
  for (int i = 0; i < 5; ++i) {
    h.Advance(seconds(1));
    h.Reconcile("osb");
  }
  h.backend.Start(uid, h.Now());
  h.backend.Exit(uid, 0, h.Now());
  h.Settle("osb");
  EXPECT_EQ(h.Job("osb").status.execution->references, refs);
  EXPECT_EQ(h.backend.Creates(uid), 1);
  EXPECT_THAT(h.failures(), IsEmpty());
}

// ---------------------------------------------------------------------------------------------

struct Row {
  const char* name;
  void (*run)();
};

const Row kMatrix[] = {
    {"Normal_CreateStartExit0", Normal_CreateStartExit0},
    {"Normal_NonZeroExit", Normal_NonZeroExit},
    {"Resolution_JobClassCreatedLater", Resolution_JobClassCreatedLater},
    {"Resolution_SecretCreatedLater", Resolution_SecretCreatedLater},
    {"Backend_ImagePullFailure", Backend_ImagePullFailure},
    {"Idempotency_CrashBetweenEnsureAndStatusWrite", Idempotency_CrashBetweenEnsureAndStatusWrite},
    {"Idempotency_DuplicateReconcile", Idempotency_DuplicateReconcile},
    {"Recovery_RestartInEachNonTerminalState", Recovery_RestartInEachNonTerminalState},
    {"Unknown_TimeoutKeepsNonTerminal", Unknown_TimeoutKeepsNonTerminal},
    {"Unknown_BackendBackToRunning", Unknown_BackendBackToRunning},
    {"Unknown_AdminConfirmsLoss", Unknown_AdminConfirmsLoss},
    {"Cancel_InEachPhase", Cancel_InEachPhase},
    {"Cancel_DuringBacklogBeforeTheCreate", Cancel_DuringBacklogBeforeTheCreate},
    {"Race_CancelVersusSuccess", Race_CancelVersusSuccess},
    {"Deadline_Expiry", Deadline_Expiry},
    {"Deletion_InEachNonTerminalState", Deletion_InEachNonTerminalState},
    {"Deletion_BackendUnreachable", Deletion_BackendUnreachable},
    {"Ttl_ThreeTerminalStates", Ttl_ThreeTerminalStates},
    {"Ttl_RestartWhileWaiting", Ttl_RestartWhileWaiting},
    {"Ttl_ExtendedNearExpiry", Ttl_ExtendedNearExpiry},
    {"Isolation_SameNameNewUid", Isolation_SameNameNewUid},
    {"Validation_CancelledBackToRunningStaysCancelled",
     Validation_CancelledBackToRunningStaysCancelled},
    {"References_SandboxAndCommandStable", References_SandboxAndCommandStable},
};

class StateMachineMatrix : public ::testing::TestWithParam<Row> {};

TEST_P(StateMachineMatrix, Row) { GetParam().run(); }

INSTANTIATE_TEST_SUITE_P(Spec, StateMachineMatrix, ::testing::ValuesIn(kMatrix),
                         [](const ::testing::TestParamInfo<Row>& row) {
                           return std::string(row.param.name);
                         });

// ---------------------------------------------------------------------------------------------
// Every waiting Job says why, through the shipped reconciler: within the round that hears it, and
// at most one changed waiting message per kWaitingMessageInterval per Job (FakeClock).

std::string SucceededMessage(const api::Job& job) {
  const api::Condition* c = Cond(job, api::kConditionSucceeded);
  return c == nullptr ? "" : c->message;
}

TEST(WaitingMessage, SaysWhyAtOnceAndChangesAtMostEvery30Seconds) {
  Harness h;
  const std::string uid = h.Create("held", BasicSpec());
  h.Settle("held");
  ASSERT_EQ(StateOf(h, "held"), State::kStarting);
  const int writesBefore = h.api.StatusWrites(uid);

  h.backend.Hold(uid, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.");
  RoundReport first = h.Reconcile("held");
  EXPECT_EQ(first.statusWrites, 1);
  EXPECT_EQ(Reason(h.Job("held"), api::kConditionSucceeded), "Unknown/Scheduling");
  EXPECT_EQ(SucceededMessage(h.Job("held")),
            "Waiting for the backend to start the task: Unschedulable: 0/1 nodes are available: "
            "1 Insufficient cpu.");
  EXPECT_EQ(CountEvents(h, "Unschedulable"), 1);

  // The reason changes 5 s later: held, the round asks to come back when it may be written.
  h.Advance(seconds(5));
  h.backend.Hold(uid, "Unschedulable", "0/1 nodes are available: 1 Insufficient memory.");
  RoundReport held = h.Reconcile("held");
  EXPECT_EQ(held.statusWrites, 0);
  ASSERT_TRUE(held.requeueAfter.has_value());
  EXPECT_EQ(*held.requeueAfter, seconds(25));
  EXPECT_THAT(SucceededMessage(h.Job("held")), ::testing::HasSubstr("Insufficient cpu"));
  EXPECT_EQ(CountEvents(h, "Unschedulable"), 1);

  // Another change within the interval: still held.
  h.Advance(seconds(20));
  h.backend.Hold(uid, "CreateContainerConfigError", "couldn't find key token in Secret sim/t");
  EXPECT_EQ(h.Reconcile("held").statusWrites, 0);

  // Once 30 s have passed since the last write, the newest message is written.
  h.Advance(seconds(5));
  RoundReport later = h.Reconcile("held");
  EXPECT_EQ(later.statusWrites, 1);
  EXPECT_EQ(SucceededMessage(h.Job("held")),
            "Waiting for the backend to start the task: CreateContainerConfigError: couldn't "
            "find key token in Secret sim/t");
  EXPECT_EQ(CountEvents(h, "CreateContainerConfigError"), 1);

  // Starting is never held back.
  h.Advance(seconds(1));
  h.backend.Start(uid, h.Now());
  EXPECT_EQ(h.Reconcile("held").statusWrites, 1);
  EXPECT_EQ(StateOf(h, "held"), State::kRunning);
  EXPECT_EQ(h.api.StatusWrites(uid), writesBefore + 3);
  EXPECT_THAT(h.failures(), IsEmpty());
}

TEST(WaitingMessage, HappyPathWritesNoWaitingMessage) {
  Harness h;
  const std::string uid = h.Create("ok", BasicSpec());
  h.Settle("ok");
  h.Advance(seconds(1));
  h.backend.Start(uid, h.Now());
  h.Settle("ok");
  h.backend.Exit(uid, 0, h.Now());
  h.Settle("ok");
  EXPECT_EQ(StateOf(h, "ok"), State::kSucceeded);
  // Finalizer, accepted, scheduled, started, the result: the pending observations in between
  // (no reason: on its way) write nothing.
  EXPECT_EQ(h.api.StatusWrites(uid) + h.api.MetadataWrites(uid), 5);
  for (const api::JobStatus& st : h.api.History(uid)) {
    const api::Condition* c = api::FindCondition(st.conditions, api::kConditionSucceeded);
    if (c != nullptr && c->reason == kReasonScheduling) {
      EXPECT_EQ(c->message, "Waiting for the backend to start the task");
    }
  }
  EXPECT_THAT(h.failures(), IsEmpty());
}

TEST(WaitingMessage, SecretDeletedAfterAcceptanceIsNamedAndNothingIsCreated) {
  const std::string secretValue = "v4lue-never-shown";
  Harness h;
  h.cluster.secrets["creds"] = {{"token", secretValue}};
  api::JobSpec spec = BasicSpec();
  api::EnvVar token{"TOKEN", std::nullopt, api::EnvVarSource{}};
  token.valueFrom->secretKeyRef = api::KeySelector{"creds", "token", false};
  spec.task.env = {token};
  const std::string uid = h.Create("env", spec);
  // Accepted (finalizer, then the status write), then the round ends before the Ensure.
  h.Reconcile("env", CrashAfterSteps(2));
  ASSERT_EQ(Reason(h.Job("env"), api::kConditionAccepted), "True/Valid");
  ASSERT_EQ(h.backend.Calls(AdapterCall::kEnsure, uid), 0);

  h.cluster.secrets.erase("creds");
  RoundReport r = h.Reconcile("env");
  EXPECT_TRUE(r.backoff);
  EXPECT_EQ(h.backend.Creates(uid), 0);
  EXPECT_EQ(Reason(h.Job("env"), api::kConditionSucceeded), "Unknown/Scheduling");
  EXPECT_THAT(SucceededMessage(h.Job("env")),
              ::testing::HasSubstr("ReferenceNotFound: Secret sim/creds"));
  EXPECT_EQ(CountEvents(h, "ReferenceNotFound"), 1);

  h.cluster.secrets["creds"] = {{"token", secretValue}};
  h.Advance(seconds(31));
  h.Settle("env");
  EXPECT_EQ(h.backend.Creates(uid), 1);
  EXPECT_EQ(SucceededMessage(h.Job("env")), "Waiting for the backend to start the task");
  for (const api::JobStatus& s : h.api.History(uid)) {
    for (const api::Condition& c : s.conditions) {
      EXPECT_EQ(c.message.find(secretValue), std::string::npos) << c.message;
    }
  }
  for (const Event& e : h.events()) EXPECT_EQ(e.message.find(secretValue), std::string::npos);
  EXPECT_THAT(h.failures(), IsEmpty());
}

TEST(WaitingMessage, DeletionBlockedByAnUnreachableBackendRecordsAWarning) {
  Harness h;
  const std::string uid = h.Create("done", BasicSpec());
  h.Settle("done");
  h.backend.Start(uid, h.Now());
  h.backend.Exit(uid, 0, h.Now());
  h.Settle("done");
  ASSERT_EQ(StateOf(h, "done"), State::kSucceeded);
  h.backend.unreachable = true;
  ASSERT_TRUE(h.api.Delete("done", uid).ok());
  h.Reconcile("done");
  EXPECT_TRUE(h.Exists("done"));  // the finalizer stays
  EXPECT_GE(CountEvents(h, kEventCleanupBlocked), 1);
  h.backend.unreachable = false;
  h.Settle("done");
  EXPECT_FALSE(h.Exists("done"));
  EXPECT_THAT(h.failures(), IsEmpty());
}

TEST(StartTimeout, AJobThatDoesNotStartInTimeIsStoppedAndFails) {
  Harness h;
  h.cluster.startTimeoutSeconds = 60;
  const std::string uid = h.Create("slow", BasicSpec());
  RoundReport accepted = h.Reconcile("slow");
  ASSERT_EQ(StateOf(h, "slow"), State::kStarting);
  // The round comes back when the start timeout expires (no backend event may come).
  ASSERT_TRUE(accepted.requeueAfter.has_value());
  EXPECT_EQ(*accepted.requeueAfter, seconds(60));
  h.backend.Hold(uid, "Unschedulable", "0/1 nodes are available");
  h.Settle("slow");
  h.Advance(seconds(59));
  h.Settle("slow");
  EXPECT_EQ(StateOf(h, "slow"), State::kStarting);
  h.Advance(seconds(1));
  h.Settle("slow");
  api::Job j = h.Job("slow");
  EXPECT_EQ(Reason(j, api::kConditionSucceeded), "False/StartTimeout");
  EXPECT_THAT(SucceededMessage(j), ::testing::HasSubstr("startTimeoutSeconds=60"));
  EXPECT_THAT(SucceededMessage(j), ::testing::HasSubstr("Unschedulable: 0/1 nodes are available"));
  EXPECT_FALSE(j.status.startTime.has_value());
  EXPECT_GE(h.backend.Calls(AdapterCall::kCancel, uid), 1);  // stopped before it could start
  EXPECT_FALSE(h.backend.Live(uid));
  EXPECT_THAT(h.failures(), IsEmpty());
}

TEST(StartTimeout, AStartedJobIsNotAffectedAndNoTimeoutIsTheDefault) {
  Harness h;
  h.cluster.startTimeoutSeconds = 60;
  const std::string uid = StartRunning(h, "started");
  h.Advance(seconds(600));
  h.Settle("started");
  EXPECT_EQ(StateOf(h, "started"), State::kRunning);

  Harness plain;
  const std::string uid2 = plain.Create("waits", BasicSpec());
  plain.Settle("waits");
  plain.Advance(seconds(100000));
  plain.Settle("waits");
  EXPECT_EQ(StateOf(plain, "waits"), State::kStarting);
  EXPECT_EQ(plain.backend.Calls(AdapterCall::kCancel, uid2), 0);
  EXPECT_THAT(h.failures(), IsEmpty());
  EXPECT_THAT(plain.failures(), IsEmpty());
  (void)uid;
}

}  // namespace
}  // namespace ayatori::statemachine::testing
