// Pinned backends (docs/jobclass.md § What an administrator may change): a Job keeps talking to
// the backend it was accepted for. JobReconciler over a FakeKubeClient, a FakeClusterCache and a
// FakeEnginesAdapter that keeps executions on several engines, one per endpoint, so a Job sent
// to another engine would show up there. Each Reconcile uses a new JobReconciler, as a restarted
// controller process would. The pinned values live in a backend snapshot ConfigMap of the
// controller's namespace (src/controller/backend_snapshot.h), never in the Job.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/json.h"
#include "controller/backend_snapshot.h"
#include "controller/kinds.h"
#include "controller/reconciler.h"
#include "kube/testing/fake_clock.h"
#include "kube/testing/fake_kube_client.h"
#include "obs/metrics.h"
#include "test/controller/fake_cluster_cache.h"

namespace ayatori::controller {
namespace {

using nlohmann::json;

constexpr const char* kNs = "team-a";
constexpr const char* kEngineA = "unix:///run/engine-a.sock";
constexpr const char* kEngineB = "unix:///run/engine-b.sock";
// Where a Docker-like adapter goes when the parameters name no endpoint.
constexpr const char* kDefaultEngine = "unix:///var/run/docker.sock";

// Executions on several engines, keyed by endpoint and Job UID. Each call goes to the engine its
// parameters name (spec.endpoint, else kDefaultEngine), like the Docker adapter; Ensure adopts
// the execution of the UID on that engine or creates one there.
class FakeEnginesAdapter final : public Adapter {
 public:
  struct Call {
    std::string call;
    std::string endpoint;
    json parameters;
    bool resultUnknown = false;  // Ensure: the request's; Observe, Cancel: the key's
  };

  // The id of an execution: the engine's socket name, never its endpoint (the Job's status must
  // show no backend configuration), and the UID.
  static std::string ReferenceId(const std::string& endpoint, const std::string& uid) {
    return endpoint.substr(endpoint.rfind('/') + 1) + "#" + uid;
  }

  std::string Name() const override { return "fake-engines"; }
  Status Start(std::function<void(const std::string&, const std::string&)>) override {
    return Status::Ok();
  }
  Status Validate(const ExecutionRequest&) override { return Status::Ok(); }
  std::map<std::string, std::string> PinnedParameters(const json& parameters) const override {
    return {{"endpoint", EndpointOf(parameters)}};
  }

  Observation Ensure(const ExecutionRequest& request) override {
    const std::string endpoint = Record("Ensure", request.parameters);
    calls_.back().resultUnknown = request.resultUnknown;
    if (unreachable_.contains(endpoint)) return Unreachable(endpoint);
    auto& engine = engines_[endpoint];
    auto it = engine.find(request.job.metadata.uid);
    if (it == engine.end()) {
      it = engine.emplace(request.job.metadata.uid, Execution{}).first;
      ++creations_;
    }
    return View(endpoint, request.job.metadata.uid, it->second);
  }
  Observation Observe(const ExecutionKey& key) override {
    const std::string endpoint = Record("Observe", key.parameters);
    calls_.back().resultUnknown = key.resultUnknown;
    if (unreachable_.contains(endpoint)) return Unreachable(endpoint);
    const Execution* e = Find(endpoint, key.uid);
    return e == nullptr ? Absent() : View(endpoint, key.uid, *e);
  }
  Observation Cancel(const ExecutionKey& key) override {
    const std::string endpoint = Record("Cancel", key.parameters);
    calls_.back().resultUnknown = key.resultUnknown;
    if (unreachable_.contains(endpoint)) return Unreachable(endpoint);
    Execution* e = Find(endpoint, key.uid);
    if (e == nullptr) return Absent();
    if (e->phase == ExecutionPhase::kRunning) e->phase = ExecutionPhase::kCancelled;
    return View(endpoint, key.uid, *e);
  }
  Status Delete(const ExecutionKey& key) override {
    const std::string endpoint = Record("Delete", key.parameters);
    if (unreachable_.contains(endpoint)) return {StatusCode::kUnavailable, endpoint + " is down"};
    engines_[endpoint].erase(key.uid);
    return Status::Ok();
  }

  // Test controls and facts.
  void SetUnreachable(const std::string& endpoint, bool down) {
    if (down) {
      unreachable_.insert(endpoint);
    } else {
      unreachable_.erase(endpoint);
    }
  }
  void Finish(const std::string& endpoint, const std::string& uid, int exitCode) {
    Execution* e = Find(endpoint, uid);
    ASSERT_NE(e, nullptr) << "no execution of " << uid << " on " << endpoint;
    e->phase = exitCode == 0 ? ExecutionPhase::kSucceeded : ExecutionPhase::kFailed;
    e->exitCode = exitCode;
  }
  size_t ExecutionsOn(const std::string& endpoint) const {
    auto it = engines_.find(endpoint);
    return it == engines_.end() ? 0 : it->second.size();
  }
  int creations() const { return creations_; }
  const std::vector<Call>& calls() const { return calls_; }
  // Endpoints that any call was sent to.
  std::set<std::string> EndpointsCalled() const {
    std::set<std::string> out;
    for (const Call& c : calls_) out.insert(c.endpoint);
    return out;
  }

 private:
  struct Execution {
    ExecutionPhase phase = ExecutionPhase::kRunning;
    int exitCode = 0;
  };

  static std::string EndpointOf(const json& parameters) {
    std::string endpoint = parameters.value("/spec/endpoint"_json_pointer, std::string());
    return endpoint.empty() ? kDefaultEngine : endpoint;
  }
  std::string Record(const char* call, const json& parameters) {
    calls_.push_back({call, EndpointOf(parameters), parameters});
    return calls_.back().endpoint;
  }
  Execution* Find(const std::string& endpoint, const std::string& uid) {
    auto engine = engines_.find(endpoint);
    if (engine == engines_.end()) return nullptr;
    auto it = engine->second.find(uid);
    return it == engine->second.end() ? nullptr : &it->second;
  }
  static Observation View(const std::string& endpoint, const std::string& uid, const Execution& e) {
    Observation o;
    o.phase = e.phase;
    if (IsStopped(e.phase)) o.exitCode = e.exitCode;
    if (e.phase == ExecutionPhase::kFailed) o.reason = "ProcessFailed";
    o.references = {{"Container", ReferenceId(endpoint, uid)}};
    return o;
  }
  static Observation Absent() {
    Observation o;
    o.phase = ExecutionPhase::kAbsent;
    return o;
  }
  static Observation Unreachable(const std::string& endpoint) {
    Observation o;
    o.phase = ExecutionPhase::kUnknown;
    o.reason = "BackendUnreachable";
    o.message = endpoint + " does not answer";
    return o;
  }

  std::map<std::string, std::map<std::string, Execution>> engines_;
  std::set<std::string> unreachable_;
  std::vector<Call> calls_;
  int creations_ = 0;
};

// What happens to the parameters object after the Job was accepted.
enum class Change { kEdited, kDeleted, kReplaced };

std::string ChangeName(const ::testing::TestParamInfo<Change>& info) {
  switch (info.param) {
    case Change::kEdited:
      return "Edited";
    case Change::kDeleted:
      return "Deleted";
    case Change::kReplaced:
      return "Replaced";
  }
  return "";
}

// The engines stand in for the Docker adapter: its controllerName and parameters kind.
constexpr const char* kControllerEngines = "execution.ayatori.ddupan.top/docker";

AdapterDescriptor EnginesDescriptor() {
  AdapterDescriptor d;
  d.controllerName = kControllerEngines;
  d.parameters = ParametersKind{api::kGroup,
                                api::kVersion,
                                "DockerExecutionParameters",
                                "dockerexecutionparameters",
                                {"endpoint", "stopGracePeriodSeconds"}};
  d.enforces = Enforcement::Everything();
  return d;
}

class PinnedBackendTest : public ::testing::Test {
 protected:
  PinnedBackendTest() : engines_(std::make_shared<FakeEnginesAdapter>()) {
    EXPECT_TRUE(registry_.Register(EnginesDescriptor(), engines_).ok());
    cache_.ServeJobsFrom(&client_);
    cache_.ServeBackendSnapshotsFrom(&client_, kDefaultControllerNamespace);
    api::JobClass c;
    c.metadata.name = "engines";
    c.metadata.uid = "class-uid";
    c.spec.controllerName = kControllerEngines;
    c.spec.parametersRef = api::ParametersRef{api::kGroup, "DockerExecutionParameters", "p", ""};
    cache_.AddJobClass(c);
    SetParameters("params-uid-1", kEngineA, 10);
  }

  // The DockerExecutionParameters "p" as the cache holds it.
  void SetParameters(const std::string& uid, const std::string& endpoint, int grace) {
    cache_.AddParameters("DockerExecutionParameters", "p",
                         {{"apiVersion", api::kApiVersion},
                          {"kind", "DockerExecutionParameters"},
                          {"metadata", {{"name", "p"}, {"uid", uid}}},
                          {"spec", {{"endpoint", endpoint}, {"stopGracePeriodSeconds", grace}}}});
  }

  void Apply(Change change) {
    switch (change) {
      case Change::kEdited:  // same object, another engine and grace period
        SetParameters("params-uid-1", kEngineB, 30);
        return;
      case Change::kDeleted:
        cache_.RemoveParameters("DockerExecutionParameters", "p");
        return;
      case Change::kReplaced:  // deleted and created again under the same name
        SetParameters("params-uid-2", kEngineB, 30);
        return;
    }
  }

  std::string CreateJob(const std::string& name) {
    json manifest = {{"apiVersion", api::kApiVersion},
                     {"kind", "Job"},
                     {"metadata", {{"name", name}, {"namespace", kNs}}},
                     {"spec", {{"jobClassName", "engines"}, {"task", {{"image", "busybox"}}}}}};
    auto created = client_.Create(kJobs, kNs, manifest, {});
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? created->value("/metadata/uid"_json_pointer, std::string()) : "";
  }

  // One reconcile round by a new reconciler (a new controller process); `crashAt` names the
  // crash point where that process dies.
  ReconcileResult Reconcile(const std::string& name, const std::string& crashAt = "") {
    ReconcilerOptions options;
    options.crashHook = [crashAt](std::string_view point, const api::Job&) {
      return point == crashAt;
    };
    JobReconciler reconciler(client_, cache_, registry_, clock_, metrics_, nullptr, options);
    return reconciler.Reconcile(kNs, name);
  }

  api::Job Get(const std::string& name) {
    auto j = client_.Get(kJobs, kNs, name);
    if (!j.ok()) return {};
    auto job = api::JobFromJson(*j);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? *job : api::Job{};
  }

  static std::string Succeeded(const api::Job& job) {
    const api::Condition* c = api::FindCondition(job.status.conditions, api::kConditionSucceeded);
    return c == nullptr ? "<none>" : api::ToString(c->status) + "/" + c->reason;
  }
  static std::string Accepted(const api::Job& job) {
    const api::Condition* c = api::FindCondition(job.status.conditions, api::kConditionAccepted);
    return c == nullptr ? "<none>" : api::ToString(c->status) + "/" + c->reason;
  }
  static std::string Message(const api::Job& job, const char* type) {
    const api::Condition* c = api::FindCondition(job.status.conditions, type);
    return c == nullptr ? "" : c->message;
  }

  // The snapshot a Job accepted with engine `endpoint` names.
  static std::string SnapshotFor(const std::string& endpoint) {
    return BackendSnapshotName({kControllerEngines, {{"endpoint", endpoint}}});
  }
  StatusOr<json> GetSnapshot(const std::string& name) {
    return client_.Get(kConfigMaps, kDefaultControllerNamespace, name);
  }

  kube::testing::FakeKubeClient client_;
  kube::testing::FakeClock clock_;
  obs::Registry metrics_;
  testing::FakeClusterCache cache_;
  adapters::AdapterRegistry registry_;
  std::shared_ptr<FakeEnginesAdapter> engines_;
};

TEST_F(PinnedBackendTest, AcceptanceRecordsTheEngineAndTheParametersUid) {
  std::string uid = CreateJob("job");
  Reconcile("job");
  api::Job job = Get("job");
  ASSERT_TRUE(job.status.resolvedJobClass.has_value());
  const auto& resolved = *job.status.resolvedJobClass;
  ASSERT_TRUE(resolved.parametersRef.has_value());
  EXPECT_EQ(resolved.parametersRef->uid, "params-uid-1");
  EXPECT_EQ(resolved.backendSnapshot, SnapshotFor(kEngineA));
  EXPECT_EQ(Succeeded(job), "Unknown/Running");
  EXPECT_EQ(engines_->ExecutionsOn(kEngineA), 1u);

  // The values are in an immutable, labelled ConfigMap of the controller's namespace, stored
  // before the status write that named it; the Job's status holds no backend configuration.
  auto snapshot = GetSnapshot(SnapshotFor(kEngineA));
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  EXPECT_EQ(snapshot->value("immutable", false), true);
  EXPECT_EQ((*snapshot)["metadata"]["labels"][kBackendSnapshotLabel], "true");
  EXPECT_EQ((*snapshot)["data"], json({{"endpoint", kEngineA}}));
  std::optional<size_t> snapshotCreate;
  std::optional<size_t> firstStatusWrite;
  const auto actions = client_.Actions();
  for (size_t i = 0; i < actions.size(); ++i) {
    if (actions[i].verb == "create" && actions[i].resource == "configmaps" && !snapshotCreate) {
      snapshotCreate = i;
    }
    if (actions[i].subresource == "status" && !firstStatusWrite) firstStatusWrite = i;
  }
  ASSERT_TRUE(snapshotCreate && firstStatusWrite);
  EXPECT_LT(*snapshotCreate, *firstStatusWrite) << "the status named a snapshot not stored yet";
  auto stored = client_.Get(kJobs, kNs, "job");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ((*stored)["status"].dump().find(kEngineA), std::string::npos)
      << (*stored)["status"].dump();
}

// Jobs accepted with the same values share one snapshot, whether the cache has it already or
// not yet (then the create meets AlreadyExists and the stored content is checked).
TEST_F(PinnedBackendTest, JobsWithTheSameValuesShareOneSnapshot) {
  cache_.ServeBackendSnapshotsFrom(nullptr, "");  // the informer lags behind
  CreateJob("one");
  CreateJob("two");
  Reconcile("one");
  Reconcile("two");
  EXPECT_EQ(Succeeded(Get("one")), "Unknown/Running");
  EXPECT_EQ(Succeeded(Get("two")), "Unknown/Running");
  EXPECT_EQ(Get("two").status.resolvedJobClass->backendSnapshot, SnapshotFor(kEngineA));
  auto list = client_.List(kConfigMaps, kDefaultControllerNamespace, {});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->items.size(), 1u);
}

// An object under the snapshot's name that holds something else is never taken for it: the Job
// is not accepted, and says why.
TEST_F(PinnedBackendTest, ConflictingObjectUnderTheSnapshotNameKeepsTheJobPending) {
  BackendSnapshot other{kControllerEngines, {{"endpoint", kEngineB}}};
  json impostor = BackendSnapshotConfigMap(kDefaultControllerNamespace, other);
  impostor["metadata"]["name"] = SnapshotFor(kEngineA);
  ASSERT_TRUE(client_.Create(kConfigMaps, kDefaultControllerNamespace, impostor, {}).ok());
  CreateJob("job");
  Reconcile("job");
  api::Job job = Get("job");
  EXPECT_EQ(Accepted(job), "False/BackendSnapshotConflict");
  EXPECT_NE(Message(job, api::kConditionAccepted).find(SnapshotFor(kEngineA)), std::string::npos);
  EXPECT_FALSE(job.status.resolvedJobClass.has_value());
  EXPECT_TRUE(engines_->calls().empty());
}

// Without the controller's namespace no snapshot can be stored: the Job stays unaccepted with a
// reason that names the namespace, and nothing runs.
TEST_F(PinnedBackendTest, MissingControllerNamespaceKeepsTheJobPending) {
  client_.FailNext("create", "configmaps",
                   {StatusCode::kNotFound, "namespaces \"ayatori-system\" not found"}, 5);
  CreateJob("job");
  ReconcileResult r = Reconcile("job");
  EXPECT_TRUE(r.error.ok()) << r.error.ToString();
  api::Job job = Get("job");
  EXPECT_EQ(Accepted(job), "False/ControllerNamespaceNotFound");
  EXPECT_NE(Message(job, api::kConditionAccepted).find(kDefaultControllerNamespace),
            std::string::npos)
      << Message(job, api::kConditionAccepted);
  EXPECT_FALSE(job.status.resolvedJobClass.has_value());
  EXPECT_TRUE(engines_->calls().empty());

  client_.ClearFailures();
  Reconcile("job");
  EXPECT_EQ(Accepted(Get("job")), "True/Valid");
  EXPECT_EQ(engines_->ExecutionsOn(kEngineA), 1u);
}

// Someone deleted the snapshot: the controller does not fall back to the current parameters. No
// adapter call is made, the result is unknown with a reason naming the ConfigMap (never the
// values). Restored with the same content, the Job goes on; an object with other values under
// that name is refused.
TEST_F(PinnedBackendTest, MissingSnapshotIsResultUnknownWithoutAdapterCalls) {
  std::string uid = CreateJob("job");
  Reconcile("job");
  ASSERT_EQ(Succeeded(Get("job")), "Unknown/Running");
  const std::string name = SnapshotFor(kEngineA);
  auto original = GetSnapshot(name);
  ASSERT_TRUE(original.ok());
  ASSERT_TRUE(client_.Delete(kConfigMaps, kDefaultControllerNamespace, name, {}).ok());
  const size_t callsBefore = engines_->calls().size();

  ReconcileResult r = Reconcile("job");
  EXPECT_TRUE(r.backoff);
  api::Job job = Get("job");
  EXPECT_EQ(Succeeded(job), "Unknown/ResultUnknown");
  const std::string message = Message(job, api::kConditionSucceeded);
  EXPECT_TRUE(message.starts_with("BackendSnapshotMissing: ")) << message;
  EXPECT_NE(message.find(std::string(kDefaultControllerNamespace) + "/" + name), std::string::npos)
      << message;
  EXPECT_EQ(message.find(kEngineA), std::string::npos) << message;
  EXPECT_EQ(engines_->calls().size(), callsBefore) << "an adapter call was made";
  EXPECT_FALSE(job.status.completionTime.has_value());

  // Another engine under the snapshot's name: still unknown, still no call.
  BackendSnapshot other{kControllerEngines, {{"endpoint", kEngineB}}};
  json impostor = BackendSnapshotConfigMap(kDefaultControllerNamespace, other);
  impostor["metadata"]["name"] = name;
  ASSERT_TRUE(client_.Create(kConfigMaps, kDefaultControllerNamespace, impostor, {}).ok());
  Reconcile("job");
  EXPECT_EQ(Succeeded(Get("job")), "Unknown/ResultUnknown");
  EXPECT_EQ(engines_->calls().size(), callsBefore) << "an adapter call was made";

  // Restored as it was: the Job is observed on its engine again.
  ASSERT_TRUE(client_.Delete(kConfigMaps, kDefaultControllerNamespace, name, {}).ok());
  json restored = BackendSnapshotConfigMap(kDefaultControllerNamespace,
                                           {kControllerEngines, {{"endpoint", kEngineA}}});
  ASSERT_TRUE(client_.Create(kConfigMaps, kDefaultControllerNamespace, restored, {}).ok());
  engines_->Finish(kEngineA, uid, 0);
  Reconcile("job");
  EXPECT_EQ(Succeeded(Get("job")), "True/Completed");
  EXPECT_EQ(engines_->EndpointsCalled(), std::set<std::string>{kEngineA});
}

class PinnedBackendChangeTest : public PinnedBackendTest,
                                public ::testing::WithParamInterface<Change> {};

// The Job runs on engine A; the parameters change; a restarted controller reports the true result
// from A and cleans up there, and never talks to B.
TEST_P(PinnedBackendChangeTest, RunningJobEndsAndIsCleanedUpOnTheEngineItWasAcceptedFor) {
  std::string uid = CreateJob("job");
  Reconcile("job");
  ASSERT_EQ(Succeeded(Get("job")), "Unknown/Running");
  ASSERT_EQ(engines_->ExecutionsOn(kEngineA), 1u);

  Apply(GetParam());
  engines_->Finish(kEngineA, uid, 3);
  Reconcile("job");
  api::Job job = Get("job");
  EXPECT_EQ(Succeeded(job), "False/ProcessFailed");
  ASSERT_TRUE(job.status.result.has_value());
  EXPECT_EQ(job.status.result->exitCode, 3);

  // Fields that are not pinned come from the same object only: an edit applies to later calls,
  // a replacement's (or a deleted object's) do not.
  const json& last = engines_->calls().back().parameters;
  if (GetParam() == Change::kEdited) {
    EXPECT_EQ(last.value("/spec/stopGracePeriodSeconds"_json_pointer, 0), 30) << last.dump();
  } else {
    EXPECT_FALSE(last.contains("/spec/stopGracePeriodSeconds"_json_pointer)) << last.dump();
  }

  ASSERT_TRUE(client_.Delete(kJobs, kNs, "job", {}).ok());
  Reconcile("job");
  EXPECT_EQ(engines_->ExecutionsOn(kEngineA), 0u) << "the execution outlived its Job";
  EXPECT_FALSE(client_.Get(kJobs, kNs, "job").ok()) << "the finalizer was not removed";

  EXPECT_EQ(engines_->creations(), 1);
  EXPECT_EQ(engines_->EndpointsCalled(), std::set<std::string>{kEngineA});
}

// The controller dies after Ensure created the execution on A and before the status named it; the
// parameters change meanwhile. The next process's Ensure must find that execution on A, not
// create a second one elsewhere.
TEST_P(PinnedBackendChangeTest, CrashBetweenEnsureAndStatusWriteAdoptsTheExecutionOnItsEngine) {
  std::string uid = CreateJob("job");
  ReconcileResult crashed = Reconcile("job", kCrashAfterEnsure);
  ASSERT_TRUE(crashed.crashed);
  api::Job atCrash = Get("job");
  ASSERT_TRUE(api::IsConditionTrue(atCrash.status.conditions, api::kConditionAccepted));
  ASSERT_FALSE(atCrash.status.execution && !atCrash.status.execution->references.empty())
      << "the crash point is after the status write";
  ASSERT_EQ(engines_->ExecutionsOn(kEngineA), 1u);

  Apply(GetParam());
  Reconcile("job");
  api::Job job = Get("job");
  EXPECT_EQ(Succeeded(job), "Unknown/Running");
  ASSERT_TRUE(job.status.execution.has_value());
  EXPECT_EQ(job.status.execution->references,
            (std::vector<api::ExecutionReference>{
                {"Container", FakeEnginesAdapter::ReferenceId(kEngineA, uid)}}));
  EXPECT_EQ(engines_->creations(), 1);
  EXPECT_EQ(engines_->ExecutionsOn(kEngineB), 0u);
  EXPECT_EQ(engines_->ExecutionsOn(kDefaultEngine), 0u);
  EXPECT_EQ(engines_->EndpointsCalled(), std::set<std::string>{kEngineA});
}

INSTANTIATE_TEST_SUITE_P(Parameters, PinnedBackendChangeTest,
                         ::testing::Values(Change::kEdited, Change::kDeleted, Change::kReplaced),
                         ChangeName);

// The recorded engine does not answer: the Job's result is unknown, never a failure, and pointing
// the parameters at a healthy engine does not move it there. Once its own engine answers, the Job
// runs there.
TEST_F(PinnedBackendTest, UnreachableRecordedEngineIsResultUnknownAndTheJobWaitsForIt) {
  engines_->SetUnreachable(kEngineA, true);
  std::string uid = CreateJob("job");
  ReconcileResult r = Reconcile("job");
  EXPECT_TRUE(r.backoff);
  api::Job job = Get("job");
  EXPECT_EQ(Succeeded(job), "Unknown/ResultUnknown");
  EXPECT_FALSE(job.status.completionTime.has_value());
  EXPECT_FALSE(job.status.result.has_value());

  SetParameters("params-uid-1", kEngineB, 10);
  for (int round = 0; round < 3; ++round) Reconcile("job");
  job = Get("job");
  EXPECT_EQ(Succeeded(job), "Unknown/ResultUnknown");
  EXPECT_EQ(engines_->ExecutionsOn(kEngineB), 0u);
  EXPECT_EQ(engines_->EndpointsCalled(), std::set<std::string>{kEngineA});

  engines_->SetUnreachable(kEngineA, false);
  Reconcile("job");
  job = Get("job");
  EXPECT_EQ(Succeeded(job), "Unknown/Running");
  EXPECT_EQ(engines_->ExecutionsOn(kEngineA), 1u);
  EXPECT_EQ(engines_->creations(), 1);
  EXPECT_EQ(engines_->EndpointsCalled(), std::set<std::string>{kEngineA});
}

// Adapters learn from the key whether the Job is in a ResultUnknown episode (the Docker adapter
// keeps an exit code 255 found then unknown: ObservationFromInspect), and only while it lasts.
TEST_F(PinnedBackendTest, ObserveSaysWhetherTheJobIsInAResultUnknownEpisode) {
  std::string uid = CreateJob("job");
  Reconcile("job");
  ASSERT_EQ(Succeeded(Get("job")), "Unknown/Running");
  Reconcile("job");
  ASSERT_EQ(engines_->calls().back().call, "Observe");
  EXPECT_FALSE(engines_->calls().back().resultUnknown);

  engines_->SetUnreachable(kEngineA, true);
  Reconcile("job");
  api::Job job = Get("job");
  ASSERT_EQ(Succeeded(job), "Unknown/ResultUnknown");

  engines_->SetUnreachable(kEngineA, false);
  engines_->Finish(kEngineA, uid, 3);
  Reconcile("job");
  ASSERT_EQ(engines_->calls().back().call, "Observe");
  EXPECT_TRUE(engines_->calls().back().resultUnknown);
  EXPECT_EQ(Succeeded(Get("job")), "False/ProcessFailed");
}

// Every call that may look at an existing execution learns of the episode: a Cancel during it
// (the Docker adapter must not report a lost exit status as a cancel's result) and an Ensure
// (which adopts an execution already there).
TEST_F(PinnedBackendTest, CancelAndEnsureSayWhetherTheJobIsInAResultUnknownEpisode) {
  CreateJob("cancelled");
  Reconcile("cancelled");
  ASSERT_EQ(engines_->calls().back().call, "Ensure");
  EXPECT_FALSE(engines_->calls().back().resultUnknown);
  engines_->SetUnreachable(kEngineA, true);
  Reconcile("cancelled");
  ASSERT_EQ(Succeeded(Get("cancelled")), "Unknown/ResultUnknown");
  ASSERT_TRUE(client_
                  .Patch(kJobs, kNs, "cancelled", PatchType::kMerge,
                         {{"spec", {{"desiredState", "Cancelled"}}}}, {})
                  .ok());
  engines_->SetUnreachable(kEngineA, false);
  Reconcile("cancelled");
  ASSERT_EQ(engines_->calls().back().call, "Cancel");
  EXPECT_TRUE(engines_->calls().back().resultUnknown);
  EXPECT_EQ(Succeeded(Get("cancelled")), "False/Cancelled");

  // An episode before the execution's reference was recorded: the next Ensure is in it.
  CreateJob("unconfirmed");
  engines_->SetUnreachable(kEngineA, true);
  Reconcile("unconfirmed");
  ASSERT_EQ(Succeeded(Get("unconfirmed")), "Unknown/ResultUnknown");
  engines_->SetUnreachable(kEngineA, false);
  Reconcile("unconfirmed");
  ASSERT_EQ(engines_->calls().back().call, "Ensure");
  EXPECT_TRUE(engines_->calls().back().resultUnknown);
}

// A Job accepted before the record existed (no backendSnapshot) reads the parameters by name as
// it always did: an edit of the endpoint does reach its calls. This is what the record prevents.
TEST_F(PinnedBackendTest, JobAcceptedWithoutARecordReadsTheParametersByName) {
  std::string uid = CreateJob("old");
  Reconcile("old");
  api::Job job = Get("old");
  ASSERT_EQ(Succeeded(job), "Unknown/Running");
  ASSERT_TRUE(job.status.resolvedJobClass && job.status.resolvedJobClass->backendSnapshot);
  job.status.resolvedJobClass->backendSnapshot.reset();
  json body = {
      {"apiVersion", api::kApiVersion},
      {"kind", "Job"},
      {"metadata",
       {{"name", "old"}, {"namespace", kNs}, {"resourceVersion", job.metadata.resourceVersion}}},
      {"status", api::StatusToJson(job.status)}};
  ASSERT_TRUE(client_.UpdateStatus(kJobs, kNs, body, {}).ok());

  SetParameters("params-uid-1", kEngineB, 10);
  Reconcile("old");
  ASSERT_FALSE(engines_->calls().empty());
  EXPECT_EQ(engines_->calls().back().endpoint, kEngineB);
}

}  // namespace
}  // namespace ayatori::controller
