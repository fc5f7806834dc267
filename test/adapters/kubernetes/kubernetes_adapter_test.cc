// KubernetesAdapter against the in-memory FakeKubeClient: the request pattern (how many calls,
// which preconditions), the error mapping, ownership checks, the watch cache and the timer. The
// behaviour against a real apiserver, Job controller and kwok is kubernetes_adapter_e2e_test.
#include "adapters/kubernetes/kubernetes_adapter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "adapters/kubernetes/batch_job.h"
#include "api/json.h"
#include "kube/testing/fake_clock.h"
#include "kube/testing/fake_kube_client.h"
#include "test/support/wait.h"

namespace ayatori::adapters::kubernetes {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using ayatori::testing::Eventually;

constexpr const char* kNs = "ci";
constexpr const char* kUid = "0c6a5e3e-5f7a-4c1e-9d55-3f1c2b7a9e01";

class KubernetesAdapterTest : public ::testing::Test {
 protected:
  KubernetesAdapterTest() {
    KubernetesAdapterOptions o;
    o.clock = &clock_;
    o.syncTimeout = 5s;
    o.log = [this](const std::string& line) {
      std::lock_guard lock(mu_);
      logs_.push_back(line);
    };
    o.streamPath = [this](std::string_view path, const std::stop_token&,
                          const std::function<bool(std::string_view)>& onData) {
      std::lock_guard lock(mu_);
      streamed_.emplace_back(path);
      onData("log line\n");
      return Status::Ok();
    };
    client_.SetClock(&clock_);
    adapter_ = std::make_unique<KubernetesAdapter>(client_, o);
  }
  ~KubernetesAdapterTest() override { adapter_->Stop(); }

  void StartWatching() {
    Status s = adapter_->Start([this](const std::string& ns, const std::string& name) {
      std::lock_guard lock(mu_);
      notified_.push_back(ns + "/" + name);
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  static ExecutionRequest Request(json parameters = json::object()) {
    ExecutionRequest r;
    r.job.metadata.namespace_ = kNs;
    r.job.metadata.name = "hello";
    r.job.metadata.uid = kUid;
    r.job.spec.task.image = "busybox";
    r.parameters = std::move(parameters);
    return r;
  }

  static ExecutionKey Key(std::vector<api::ExecutionReference> refs = {},
                          json parameters = json::object()) {
    return {kUid, kNs, "hello", std::move(refs), std::move(parameters)};
  }

  json StoredBatchJob() {
    auto j = client_.Peek(BatchJobsResource(), kNs, BatchJobName(kUid));
    return j ? *j : json();
  }

  // The pod the Job controller would make for the stored batch Job, in `state`.
  json CreatePod(const std::string& phase, json state) {
    json job = StoredBatchJob();
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", BatchJobName(kUid) + "-x1y2z"},
                  {"namespace", kNs},
                  {"labels", job["spec"]["template"]["metadata"]["labels"]},
                  {"annotations", job["spec"]["template"]["metadata"]["annotations"]},
                  {"ownerReferences",
                   {{{"apiVersion", "batch/v1"},
                     {"kind", "Job"},
                     {"name", job["metadata"]["name"]},
                     {"uid", job["metadata"]["uid"]},
                     {"controller", true}}}}}},
                {"spec", {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}}},
                {"status", {{"phase", phase}}}};
    if (!state.is_null()) {
      pod["status"]["containerStatuses"] = {{{"name", "main"}, {"state", std::move(state)}}};
    }
    // Like the apiserver, the fake drops the status of a create: write it to /status after.
    json status = pod["status"];
    auto created = client_.Create(PodsResource(), kNs, pod, {});
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    if (!created.ok()) return json();
    json withStatus = *created;
    withStatus["status"] = status;
    auto updated = client_.UpdateStatus(PodsResource(), kNs, withStatus, {});
    EXPECT_TRUE(updated.ok()) << updated.status().ToString();
    return updated.ok() ? *updated : json();
  }

  // A pod made by someone else in the namespace (any tenant with pod-create rights) that copies
  // the Job's UID label, with `owners` as its ownerReferences, in `phase`/`state`.
  json CreateImpostorPod(const std::string& name, json owners, const std::string& phase,
                         json state) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", name},
                  {"namespace", kNs},
                  {"labels", {{api::kJobUidLabel, kUid}, {kManagedByLabel, kManagedByValue}}},
                  {"annotations", {{kJobNameAnnotation, "hello"}}},
                  {"ownerReferences", std::move(owners)}}},
                {"spec", {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}};
    auto created = client_.Create(PodsResource(), kNs, pod, {});
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    if (!created.ok()) return json();
    SetPodState(*created, phase, std::move(state));
    return *created;
  }
  // A controller ownerReference that names our batch Job but not its uid (a forgery).
  static json ForgedOwner() {
    return {{{"apiVersion", "batch/v1"},
             {"kind", "Job"},
             {"name", BatchJobName(kUid)},
             {"uid", "forged-0000"},
             {"controller", true}}};
  }
  std::vector<std::string> Streamed() {
    std::lock_guard lock(mu_);
    return streamed_;
  }

  void SetPodState(json pod, const std::string& phase, json state) {
    pod["status"] = {{"phase", phase},
                     {"containerStatuses", {{{"name", "main"}, {"state", std::move(state)}}}}};
    auto updated = client_.UpdateStatus(PodsResource(), kNs, pod, {});
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  }

  static json Running() { return {{"running", {{"startedAt", "2026-11-29T08:01:00Z"}}}}; }
  static json Exited(int code) {
    return {{"terminated",
             {{"exitCode", code},
              {"reason", code == 0 ? "Completed" : "Error"},
              {"startedAt", "2026-11-29T08:01:00Z"},
              {"finishedAt", "2026-11-29T08:02:00Z"}}}};
  }

  size_t Reads() { return client_.CountActions("get") + client_.CountActions("list"); }

  bool WasNotified(const std::string& key) {
    std::lock_guard lock(mu_);
    return std::find(notified_.begin(), notified_.end(), key) != notified_.end();
  }
  size_t NotifyCount() {
    std::lock_guard lock(mu_);
    return notified_.size();
  }
  void ClearNotified() {
    std::lock_guard lock(mu_);
    notified_.clear();
  }

  kube::testing::FakeKubeClient client_;
  kube::testing::FakeClock clock_;
  std::unique_ptr<KubernetesAdapter> adapter_;
  std::mutex mu_;
  std::vector<std::string> notified_;
  std::vector<std::string> logs_;
  std::vector<std::string> streamed_;
};

TEST_F(KubernetesAdapterTest, EnsureCreatesTheBatchJobWithOneRequest) {
  Observation o = adapter_->Ensure(Request());
  EXPECT_EQ(o.phase, ExecutionPhase::kPending) << o.message;
  EXPECT_EQ(client_.Actions().size(), 1u);
  EXPECT_EQ(client_.CountActions("create", "jobs.batch"), 1u);
  json stored = StoredBatchJob();
  ASSERT_TRUE(stored.is_object());
  EXPECT_TRUE(IsOwnedBy(stored, kUid));
  ASSERT_EQ(o.references.size(), 1u);
  EXPECT_EQ(o.references[0].type, "Job");
  EXPECT_EQ(o.references[0].id, stored["metadata"]["uid"]);
}

TEST_F(KubernetesAdapterTest, EnsureAgainAdoptsInsteadOfCreatingASecond) {
  Observation first = adapter_->Ensure(Request());
  Observation again = adapter_->Ensure(Request());
  EXPECT_EQ(again.phase, ExecutionPhase::kPending) << again.message;
  EXPECT_EQ(again.references, first.references);
  ListOptions all;
  auto list = client_.List(BatchJobsResource(), kNs, all);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->items.size(), 1u);
}

TEST_F(KubernetesAdapterTest, EnsureNeverAdoptsNorTouchesAStrangersObject) {
  json stranger = BuildBatchJob(Request(), {});
  stranger["metadata"]["labels"] = {{"app", "other"}};
  stranger["metadata"].erase("ownerReferences");
  ASSERT_TRUE(client_.Create(BatchJobsResource(), kNs, stranger, {}).ok());
  const std::string strangerUid = StoredBatchJob()["metadata"]["uid"];

  Observation o = adapter_->Ensure(Request());
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(o.reason, "BackendRejected");
  EXPECT_TRUE(o.references.empty());

  EXPECT_EQ(adapter_->Observe(Key()).phase, ExecutionPhase::kAbsent);
  EXPECT_EQ(adapter_->Cancel(Key()).phase, ExecutionPhase::kCancelled);
  EXPECT_TRUE(adapter_->Delete(Key()).ok());
  EXPECT_TRUE(adapter_->Delete(Key({{"Job", "stale-uid"}})).ok());
  EXPECT_EQ(client_.CountActions("delete", "jobs.batch"), 1u)
      << "only the precondition-guarded delete of the stale reference, which must fail";
  EXPECT_EQ(StoredBatchJob()["metadata"]["uid"], strangerUid);
}

TEST_F(KubernetesAdapterTest, EnsureMapsApiErrors) {
  struct Case {
    StatusCode code;
    ExecutionPhase phase;
    const char* reason;
  };
  for (const Case& c :
       {Case{StatusCode::kInvalid, ExecutionPhase::kFailed, "BackendRejected"},
        Case{StatusCode::kInvalidArgument, ExecutionPhase::kFailed, "BackendRejected"},
        Case{StatusCode::kForbidden, ExecutionPhase::kUnknown, "Forbidden"},
        Case{StatusCode::kServerError, ExecutionPhase::kUnknown, "BackendError"},
        Case{StatusCode::kTooManyRequests, ExecutionPhase::kUnknown, "BackendError"},
        Case{StatusCode::kUnavailable, ExecutionPhase::kUnknown, "BackendUnreachable"},
        Case{StatusCode::kDeadlineExceeded, ExecutionPhase::kUnknown, "BackendUnreachable"}}) {
    client_.FailNext("create", "jobs.batch", Status(c.code, "injected"));
    Observation o = adapter_->Ensure(Request());
    EXPECT_EQ(o.phase, c.phase) << StatusCodeName(c.code);
    EXPECT_EQ(o.reason, c.reason) << StatusCodeName(c.code);
    EXPECT_NE(o.message.find("injected"), std::string::npos) << o.message;
    EXPECT_TRUE(StoredBatchJob().is_null());
  }
  EXPECT_EQ(adapter_->Ensure(Request()).phase, ExecutionPhase::kPending);
}

TEST_F(KubernetesAdapterTest, BadParametersAreRejectedBeforeAnyRequest) {
  ExecutionRequest r = Request(json{{"spec", {{"imagePullFailureTimeoutSeconds", -1}}}});
  EXPECT_EQ(adapter_->Validate(r).code(), StatusCode::kInvalidArgument);
  Observation o = adapter_->Ensure(r);
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(o.reason, "BackendRejected");
  EXPECT_EQ(client_.CountActions("create"), 0u);

  r = Request(json{{"spec", {{"extraLabels", {{"execution.ayatori.ddupan.top/job-uid", "x"}}}}}});
  EXPECT_EQ(adapter_->Validate(r).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(adapter_->Ensure(r).phase, ExecutionPhase::kFailed);
  EXPECT_EQ(client_.CountActions("create"), 0u);
}

TEST_F(KubernetesAdapterTest, ObserveWithoutWatchesReadsFresh) {
  Observation ensured = adapter_->Ensure(Request());
  CreatePod("Running", Running());
  client_.ClearActions();
  Observation o = adapter_->Observe(Key(ensured.references));
  EXPECT_EQ(o.phase, ExecutionPhase::kRunning);
  EXPECT_EQ(client_.CountActions("get", "jobs.batch"), 1u);
  EXPECT_EQ(client_.CountActions("list", "pods"), 1u);
}

TEST_F(KubernetesAdapterTest, ReadErrorsAreUnknownNeverFailed) {
  Observation ensured = adapter_->Ensure(Request());
  client_.FailNext("list", "pods", Status(StatusCode::kUnavailable, "connection refused"));
  Observation o = adapter_->Observe(Key(ensured.references));
  EXPECT_EQ(o.phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(o.reason, "BackendUnreachable");
  client_.FailNext("get", "jobs.batch", Status(StatusCode::kUnavailable, "connection refused"));
  EXPECT_EQ(adapter_->Cancel(Key(ensured.references)).phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(StoredBatchJob()["metadata"]["name"], BatchJobName(kUid)) << "nothing was deleted";
}

TEST_F(KubernetesAdapterTest, WatchCacheServesProgressAndResultsAreReadFresh) {
  StartWatching();
  Observation ensured = adapter_->Ensure(Request());
  json pod = CreatePod("Running", Running());
  ExecutionKey key = Key(ensured.references);
  ASSERT_TRUE(
      Eventually([&] { return adapter_->Observe(key).phase == ExecutionPhase::kRunning; }, 5s));

  // Once the watch has delivered the pod, progress comes from the cache: no request.
  EXPECT_TRUE(Eventually(
      [&] {
        client_.ClearActions();
        return adapter_->Observe(key).phase == ExecutionPhase::kRunning && Reads() == 0;
      },
      5s));

  SetPodState(pod, "Succeeded", Exited(0));
  ASSERT_TRUE(
      Eventually([&] { return adapter_->Observe(key).phase == ExecutionPhase::kSucceeded; }, 5s));
  client_.ClearActions();
  Observation done = adapter_->Observe(key);
  EXPECT_EQ(done.phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(done.exitCode, 0);
  EXPECT_EQ(client_.CountActions("get", "pods"), 1u) << "a result is confirmed by a fresh read";
  EXPECT_EQ(Reads(), 1u) << "of the pod alone: its terminated state is final";
}

TEST_F(KubernetesAdapterTest, ACachedResultThePodNoLongerConfirmsIsReadWhole) {
  StartWatching();
  Observation ensured = adapter_->Ensure(Request());
  json pod = CreatePod("Failed", Exited(3));
  ExecutionKey key = Key(ensured.references);
  // Until the watch has delivered the pod, Observe reads the Job and the pods fresh (and answers
  // Failed too); once it has, the cached result costs only the pod's confirming GET.
  ASSERT_TRUE(Eventually(
      [&] {
        client_.ClearActions();
        return adapter_->Observe(key).phase == ExecutionPhase::kFailed && Reads() == 1 &&
               client_.CountActions("get", "pods") == 1;
      },
      5s));

  // The pod disappears from the apiserver before the watch says so: its GET finds nothing, so
  // the batch Job and the pods are read fresh, and the result is not trusted from the cache.
  client_.FailNext("get", "pods", Status(StatusCode::kNotFound, "pods not found"));
  client_.ClearActions();
  Observation o = adapter_->Observe(key);
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(o.exitCode, 3);
  EXPECT_EQ(client_.CountActions("get", "pods"), 1u);
  EXPECT_EQ(client_.CountActions("get", "jobs.batch"), 1u);
  EXPECT_EQ(client_.CountActions("list", "pods"), 1u);
}

TEST_F(KubernetesAdapterTest, AnAcceptanceTheCreateCarriesIsFoundAgainByUid) {
  ExecutionRequest carrying = Request();
  carrying.acceptance = R"({"conditions":[{"type":"Accepted","status":"True"}]})";
  adapter_->Ensure(carrying);
  json stored = StoredBatchJob();
  EXPECT_EQ(stored["metadata"]["annotations"][kAcceptanceAnnotation], carrying.acceptance);
  // Not on the pod: a restarted controller reads it from the batch Job only.
  EXPECT_FALSE(
      stored["spec"]["template"]["metadata"]["annotations"].contains(kAcceptanceAnnotation));
  // Before the watch cache is synced the API server answers.
  client_.ClearActions();
  auto direct = adapter_->RecordedAcceptance(kNs, kUid);
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  EXPECT_EQ(direct->value_or(""), carrying.acceptance);
  EXPECT_EQ(client_.CountActions("get", "jobs.batch"), 1u);
  // With the cache: no request for a UID without a batch Job, one GET for the one that has it.
  StartWatching();
  const std::string other = "5b2f3e0a-1d4c-4b8e-8f00-000000000002";
  ASSERT_TRUE(Eventually(
      [&] {
        client_.ClearActions();
        auto none = adapter_->RecordedAcceptance(kNs, other);
        return none.ok() && !none->has_value() && client_.Actions().empty();
      },
      5s));
  client_.ClearActions();
  auto cached = adapter_->RecordedAcceptance(kNs, kUid);
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  EXPECT_EQ(cached->value_or(""), carrying.acceptance);
  EXPECT_EQ(client_.CountActions("get", "jobs.batch"), 1u);
}

// Before the cache is synced: an error the controller retries, except a 403 (no identity that
// cannot read batch Jobs has made one).
TEST_F(KubernetesAdapterTest, ReadingAnAcceptanceBackFailsOnlyWhereItCouldExist) {
  client_.FailNext("get", "jobs.batch", Status(StatusCode::kUnavailable, "connection refused"));
  EXPECT_FALSE(adapter_->RecordedAcceptance(kNs, kUid).ok());
  client_.FailNext("get", "jobs.batch", Status(StatusCode::kForbidden, "forbidden"));
  auto forbidden = adapter_->RecordedAcceptance(kNs, kUid);
  ASSERT_TRUE(forbidden.ok()) << forbidden.status().ToString();
  EXPECT_FALSE(forbidden->has_value());
}

TEST_F(KubernetesAdapterTest, ABatchJobWithoutAnAcceptanceHasNoneToReadBack) {
  adapter_->Ensure(Request());
  EXPECT_FALSE(StoredBatchJob()["metadata"]["annotations"].contains(kAcceptanceAnnotation));
  StartWatching();
  ASSERT_TRUE(Eventually(
      [&] {
        client_.ClearActions();
        auto none = adapter_->RecordedAcceptance(kNs, kUid);
        return none.ok() && !none->has_value() && client_.Actions().empty();
      },
      5s));
}

TEST_F(KubernetesAdapterTest, EnsureWithTheWatchCacheNeedsNoRequestOnceCreated) {
  StartWatching();
  Observation first = adapter_->Ensure(Request());
  ASSERT_TRUE(Eventually(
      [&] {
        client_.ClearActions();
        return adapter_->Ensure(Request()).references == first.references &&
               client_.Actions().empty();
      },
      5s));
}

TEST_F(KubernetesAdapterTest, WatchEventsNotifyTheAyatoriJob) {
  StartWatching();
  adapter_->Ensure(Request());
  EXPECT_TRUE(Eventually([&] { return WasNotified("ci/hello"); }, 5s));
  ClearNotified();
  json pod = CreatePod("Pending", json());
  EXPECT_TRUE(Eventually([&] { return WasNotified("ci/hello"); }, 5s));
  ClearNotified();
  SetPodState(pod, "Running", Running());
  EXPECT_TRUE(Eventually([&] { return WasNotified("ci/hello"); }, 5s));
}

TEST_F(KubernetesAdapterTest, PodLeftWithoutItsBatchJobBlocksASecondCreate) {
  adapter_->Ensure(Request());
  json pod = CreatePod("Running", Running());
  ASSERT_TRUE(client_.Delete(BatchJobsResource(), kNs, BatchJobName(kUid), {}).ok());
  StartWatching();  // the caches start from this state (Start waits for their first lists)
  client_.ClearActions();
  Observation o = adapter_->Ensure(Request());
  EXPECT_EQ(o.phase, ExecutionPhase::kRunning);
  EXPECT_EQ(client_.CountActions("create"), 0u);
}

// The attack: another tenant of the namespace creates pods carrying the Job's UID label, newer
// than the real one, one without an owner and one whose controller reference names our batch Job
// with a forged uid. Neither may feed the log, change the observed state, hold the deletion up or
// be deleted by the controller.
TEST_F(KubernetesAdapterTest, PodsThatCopyTheLabelNeitherSpeakForTheJobNorFeedItsLog) {
  Observation ensured = adapter_->Ensure(Request());
  json pod = CreatePod("Running", Running());
  clock_.Advance(10s);  // the impostors are the newest pods
  CreateImpostorPod("impostor-unowned", json::array(), "Failed", Exited(1));
  CreateImpostorPod("impostor-forged", ForgedOwner(), "Running", Running());
  const ExecutionKey key = Key(ensured.references);
  const std::string realPod = pod["metadata"]["name"].get<std::string>();

  for (bool watching : {false, true}) {
    SCOPED_TRACE(watching ? "from the watch cache" : "read fresh");
    if (watching) StartWatching();
    Observation o = adapter_->Observe(key);
    EXPECT_EQ(o.phase, ExecutionPhase::kRunning) << o.reason << ": " << o.message;
    ASSERT_TRUE(adapter_->StreamLogs(key, {}, [](std::string_view) { return true; }).ok());
    ASSERT_FALSE(Streamed().empty());
    EXPECT_NE(Streamed().back().find("/pods/" + realPod + "/log"), std::string::npos)
        << Streamed().back();
  }

  SetPodState(pod, "Succeeded", Exited(0));
  ASSERT_TRUE(Eventually(
      [&] {
        Observation o = adapter_->Observe(key);
        return o.phase == ExecutionPhase::kSucceeded && o.exitCode == 0;
      },
      5s))
      << "the unowned impostor's exit 1 must not be the result";
  // The forged pod still runs: it is not ours, so it neither holds the deletion up nor is
  // deleted by a cancellation after the batch Job is gone.
  EXPECT_TRUE(adapter_->Delete(key).ok());
  client_.ClearActions();
  adapter_->Cancel(key);
  EXPECT_EQ(client_.CountActions("delete", "pods"), 0u);
  EXPECT_EQ(adapter_->StreamLogs(key, {}, [](std::string_view) { return true; }).code(),
            StatusCode::kOk);
}

TEST_F(KubernetesAdapterTest, APodThatOnlyCopiesTheLabelIsNotAnExecutionToReport) {
  CreateImpostorPod("impostor-unowned", json::array(), "Running", Running());
  StartWatching();  // the caches start with the impostor (Start waits for their first lists)
  client_.ClearActions();
  Observation o = adapter_->Ensure(Request());
  EXPECT_EQ(client_.CountActions("create", "jobs.batch"), 1u)
      << "the impostor held the create up: " << o.message;
  EXPECT_EQ(o.phase, ExecutionPhase::kPending) << o.message;
  // Nor does it wake the Job up: a pod whose changes do not concern it would be a way to make
  // the controller reconcile at will.
  ASSERT_TRUE(Eventually([&] { return WasNotified("ci/hello"); }, 5s));  // the batch Job's add
  ClearNotified();
  json impostor = *client_.Peek(PodsResource(), kNs, "impostor-unowned");
  SetPodState(impostor, "Failed", Exited(1));
  CreateImpostorPod("impostor-2", json::array(), "Running", Running());
  ASSERT_TRUE(client_.Delete(PodsResource(), kNs, "impostor-2", {}).ok());
  // A pod of another Job's batch Job, made after them on the same watch: once it has woken its
  // Job, the impostors' events have all been delivered.
  const std::string otherUid = "1d2c3b4a-0000-4000-8000-000000000002";
  json flush = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", "other-pod"},
                  {"namespace", kNs},
                  {"labels", {{api::kJobUidLabel, otherUid}, {kManagedByLabel, kManagedByValue}}},
                  {"annotations", {{kJobNameAnnotation, "other"}}},
                  {"ownerReferences",
                   {{{"apiVersion", "batch/v1"},
                     {"kind", "Job"},
                     {"name", BatchJobName(otherUid)},
                     {"uid", "batch-of-other"},
                     {"controller", true}}}}}}};
  ASSERT_TRUE(client_.Create(PodsResource(), kNs, flush, {}).ok());
  ASSERT_TRUE(Eventually([&] { return WasNotified("ci/other"); }, 5s));
  EXPECT_FALSE(WasNotified("ci/hello")) << "an impostor's events woke the Job";
  // Without the batch Job nor a pod of it, there is no log to read, whatever the label says.
  ASSERT_TRUE(client_.Delete(BatchJobsResource(), kNs, BatchJobName(kUid), {}).ok());
  EXPECT_EQ(
      adapter_->StreamLogs(Key(o.references), {}, [](std::string_view) { return true; }).code(),
      StatusCode::kNotFound);
  // (Once the watch cache has seen the deletion too.)
  EXPECT_TRUE(Eventually(
      [&] { return adapter_->Observe(Key(o.references)).phase == ExecutionPhase::kAbsent; }, 5s));
}

TEST_F(KubernetesAdapterTest, ImagePullTimeoutWakesTheController) {
  StartWatching();
  json params = {{"spec", {{"imagePullFailureTimeoutSeconds", 60}}}};
  Observation ensured = adapter_->Ensure(Request(params));
  json pod = CreatePod("Pending", {{"waiting", {{"reason", "ErrImagePull"}}}});
  auto created = api::ParseTime(pod["metadata"]["creationTimestamp"].get<std::string>());
  ASSERT_TRUE(created.ok());
  // The fake clock stands just after the pod's creation.
  clock_.Advance(*created - std::chrono::floor<std::chrono::seconds>(clock_.Now()) + 1s);
  ExecutionKey key = Key(ensured.references, params);
  ASSERT_TRUE(Eventually(
      [&] {
        Observation o = adapter_->Observe(key);
        return o.phase == ExecutionPhase::kPending && o.reason == "ErrImagePull";
      },
      5s));
  // Three watch events so far (batch Job added, pod added, pod status written); the fake has no
  // controllers, so nothing else changes and a fourth wake-up can only come from the timer.
  ASSERT_TRUE(Eventually([&] { return NotifyCount() == 3; }, 5s)) << NotifyCount();
  clock_.Advance(60s);
  EXPECT_TRUE(Eventually([&] { return NotifyCount() == 4; }, 5s))
      << "no Kubernetes event marks the timeout; the adapter must";
  EXPECT_TRUE(WasNotified("ci/hello"));
  Observation failed = adapter_->Observe(key);
  EXPECT_EQ(failed.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(failed.reason, "ImagePullFailed");
  EXPECT_FALSE(failed.startedAt);
}

TEST_F(KubernetesAdapterTest, CancelDeletesTheBatchJobThenReportsUntilNothingRuns) {
  Observation ensured = adapter_->Ensure(Request());
  json pod = CreatePod("Running", Running());
  ExecutionKey key = Key(ensured.references);

  Observation stopping = adapter_->Cancel(key);
  EXPECT_EQ(stopping.phase, ExecutionPhase::kRunning);
  EXPECT_TRUE(StoredBatchJob().is_null());
  EXPECT_EQ(client_.CountActions("delete", "jobs.batch"), 1u);

  // The fake has no garbage collector: the pod is still running without deletionTimestamp, so
  // the next Cancel deletes it itself.
  Observation again = adapter_->Cancel(key);
  EXPECT_EQ(client_.CountActions("delete", "pods"), 1u);
  EXPECT_TRUE(again.phase == ExecutionPhase::kRunning || again.phase == ExecutionPhase::kCancelled);
  Observation done = adapter_->Cancel(key);
  EXPECT_EQ(done.phase, ExecutionPhase::kCancelled) << done.message;
}

TEST_F(KubernetesAdapterTest, CancelAfterTheProcessEndedKeepsItsResult) {
  Observation ensured = adapter_->Ensure(Request());
  CreatePod("Failed", Exited(3));
  Observation o = adapter_->Cancel(Key(ensured.references));
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(o.exitCode, 3);
  EXPECT_EQ(client_.CountActions("delete"), 0u);
}

TEST_F(KubernetesAdapterTest, CancelOfNothingIsCancelled) {
  EXPECT_EQ(adapter_->Cancel(Key()).phase, ExecutionPhase::kCancelled);
  EXPECT_EQ(client_.CountActions("delete"), 0u);
}

TEST_F(KubernetesAdapterTest, DeleteWithARecordedReferenceIsOnePreconditionedDelete) {
  Observation ensured = adapter_->Ensure(Request());
  client_.ClearActions();
  EXPECT_TRUE(adapter_->Delete(Key(ensured.references)).ok());
  EXPECT_TRUE(StoredBatchJob().is_null());
  EXPECT_EQ(client_.CountActions("delete", "jobs.batch"), 1u);
  EXPECT_EQ(client_.CountActions("get", "jobs.batch"), 0u);
  // Repeatable.
  EXPECT_TRUE(adapter_->Delete(Key(ensured.references)).ok());
}

TEST_F(KubernetesAdapterTest, DeleteWithoutReferenceLooksTheBatchJobUpByUid) {
  adapter_->Ensure(Request());
  EXPECT_TRUE(adapter_->Delete(Key()).ok());
  EXPECT_TRUE(StoredBatchJob().is_null());
}

TEST_F(KubernetesAdapterTest, DeleteIsNotDoneWhileAPodRuns) {
  Observation ensured = adapter_->Ensure(Request());
  json pod = CreatePod("Running", Running());
  Status s = adapter_->Delete(Key(ensured.references));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  SetPodState(pod, "Failed", Exited(137));
  EXPECT_TRUE(adapter_->Delete(Key(ensured.references)).ok());
}

TEST_F(KubernetesAdapterTest, DeleteErrorsAreReturned) {
  Observation ensured = adapter_->Ensure(Request());
  client_.FailNext("delete", "jobs.batch", Status(StatusCode::kUnavailable, "refused"));
  EXPECT_EQ(adapter_->Delete(Key(ensured.references)).code(), StatusCode::kUnavailable);
  EXPECT_FALSE(StoredBatchJob().is_null());
}

// The adapter serves one controller's life: its watches are never restarted (a restart would
// keep the stopped watch caches and their synced flags).
TEST_F(KubernetesAdapterTest, StartsOnceAndStopIsFinal) {
  StartWatching();
  if (HasFatalFailure()) return;
  Status again = adapter_->Start([](const std::string&, const std::string&) {});
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again.ToString();
  adapter_->Stop();
  const size_t lists = client_.CountActions("list");
  Status afterStop = adapter_->Start([](const std::string&, const std::string&) {});
  EXPECT_EQ(afterStop.code(), StatusCode::kFailedPrecondition) << afterStop.ToString();
  EXPECT_EQ(client_.CountActions("list"), lists) << "Start() after Stop() listed again";
}

TEST_F(KubernetesAdapterTest, AStoppedAdapterThatNeverStartedDoesNotStart) {
  adapter_->Stop();
  Status s = adapter_->Start([](const std::string&, const std::string&) {});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(client_.CountActions("list"), 0u);
}

}  // namespace
}  // namespace ayatori::adapters::kubernetes
