#include "test/statemachine/sim.h"

#include <algorithm>
#include <stdexcept>
#include <streambuf>

#include "api/conditions.h"
#include "api/json.h"
#include "base/base64.h"
#include "controller/backend_snapshot.h"
#include "controller/controller.h"
#include "controller/kinds.h"
#include "kube/config.h"
#include "kube/object_metadata.h"
#include "kube/resource.h"
#include "obs/log.h"
#include "statemachine/invariants.h"

namespace ayatori::statemachine::testing {

// ---------------------------------------------------------------------------------------------
// FakeBackend

Observation FakeBackend::Describe(const FakeExecution& e) const {
  Observation o;
  o.phase = e.phase;
  o.startedAt = e.startedAt;
  o.finishedAt = e.finishedAt;
  o.exitCode = e.exitCode;
  o.reason = e.reason;
  o.message = e.message;
  o.references = e.references;
  return o;
}

void FakeBackend::Hold(const std::string& uid, std::string reason, std::string message) {
  auto it = executions_.find(uid);
  if (it == executions_.end() || it->second.phase != ExecutionPhase::kPending) return;
  it->second.reason = std::move(reason);
  it->second.message = std::move(message);
}

Observation FakeBackend::Unreachable() const {
  Observation o;
  o.phase = ExecutionPhase::kUnknown;
  o.reason = "BackendUnreachable";
  o.message = "connection refused";
  return o;
}

void FakeBackend::Record(const FakeExecution& e) {
  ExecutionTruth& t = truth_[e.uid];
  t.phase = e.phase;
  t.exitCode = e.exitCode;
  t.reason = e.reason;
}

const FakeExecution* FakeBackend::Find(const std::string& uid) const {
  auto it = executions_.find(uid);
  return it == executions_.end() ? nullptr : &it->second;
}

bool FakeBackend::Live(const std::string& uid) const {
  const FakeExecution* e = Find(uid);
  return e != nullptr && !IsStopped(e->phase);
}

int FakeBackend::Creates(const std::string& uid) const {
  auto it = creates_.find(uid);
  return it == creates_.end() ? 0 : it->second;
}

int FakeBackend::Calls(AdapterCall call, const std::string& uid) const {
  auto it = calls_.find({call, uid});
  return it == calls_.end() ? 0 : it->second;
}

bool FakeBackend::WouldCreate(const std::string& uid) const {
  return !unreachable && rejectOnEnsure.empty() && Find(uid) == nullptr;
}

Observation FakeBackend::Ensure(const api::Job& job, Time now, const std::string& acceptance) {
  const std::string& uid = job.metadata.uid;
  ++calls_[{AdapterCall::kEnsure, uid}];
  if (unreachable) return Unreachable();
  if (!rejectOnEnsure.empty() && Find(uid) == nullptr) {
    Observation o;
    o.phase = ExecutionPhase::kFailed;
    o.reason = rejectOnEnsure;
    o.message = "the backend cannot run this request";
    ExecutionTruth& t = truth_[uid];
    t.phase = ExecutionPhase::kFailed;
    t.reason = rejectOnEnsure;
    return o;
  }
  if (Find(uid) == nullptr) {  // look up by UID first; create only if absent
    FakeExecution e;
    e.uid = uid;
    e.acceptance = acceptance;
    for (int i = 0; i < referencesPerExecution; ++i) {
      const int id = nextId_++;
      e.references.push_back(i == 0
                                 ? api::ExecutionReference{"Sandbox", "sbx-" + std::to_string(id)}
                                 : api::ExecutionReference{"Command", "cmd-" + std::to_string(id)});
    }
    if (!failOnCreate.empty()) {
      e.phase = ExecutionPhase::kFailed;
      e.reason = failOnCreate;
      e.finishedAt = now;
    } else if (startOnCreate) {
      e.phase = ExecutionPhase::kRunning;
      e.startedAt = now;
    }
    ++creates_[uid];
    executions_[uid] = e;
    Record(e);
  }
  if (loseNextEnsureResponse) {
    loseNextEnsureResponse = false;
    Observation o = Unreachable();
    o.reason = "Timeout";
    o.message = "the create request timed out";
    return o;
  }
  return Describe(executions_.at(uid));
}

Observation FakeBackend::Observe(const std::string& uid, Time /*now*/) {
  ++calls_[{AdapterCall::kObserve, uid}];
  if (unreachable) return Unreachable();
  const FakeExecution* e = Find(uid);
  if (e == nullptr) {
    Observation o;
    o.phase = ExecutionPhase::kAbsent;
    return o;
  }
  auto last = lastObservation_.find(uid);
  if (rng != nullptr && last != lastObservation_.end() &&
      std::uniform_real_distribution<double>(0, 1)(*rng) < staleObserveProbability) {
    return last->second;  // a lagging backend cache: an older, out-of-order answer
  }
  Observation o = Describe(*e);
  lastObservation_[uid] = o;
  return o;
}

Observation FakeBackend::Cancel(const std::string& uid, Time now) {
  ++calls_[{AdapterCall::kCancel, uid}];
  if (unreachable) return Unreachable();
  auto it = executions_.find(uid);
  if (it == executions_.end()) {
    Observation o;
    o.phase = ExecutionPhase::kAbsent;
    return o;
  }
  FakeExecution& e = it->second;
  if (!IsStopped(e.phase)) {
    const bool firstRequest = !e.stopRequested;
    e.stopRequested = true;
    if (slowStop && firstRequest) return Describe(e);
    CompleteRequestedStop(uid, now);
  }
  return Describe(e);
}

Status FakeBackend::Delete(const std::string& uid) {
  ++calls_[{AdapterCall::kDelete, uid}];
  if (unreachable) return Status(StatusCode::kUnavailable, "connection refused");
  executions_.erase(uid);
  lastObservation_.erase(uid);
  return Status::Ok();
}

void FakeBackend::Start(const std::string& uid, Time at) {
  auto it = executions_.find(uid);
  if (it == executions_.end() || it->second.phase != ExecutionPhase::kPending) return;
  it->second.phase = ExecutionPhase::kRunning;
  it->second.startedAt = at;
  it->second.reason.clear();  // what held it up is over
  it->second.message.clear();
  Record(it->second);
}

void FakeBackend::Exit(const std::string& uid, int32_t code, Time at, std::string reason) {
  auto it = executions_.find(uid);
  if (it == executions_.end() || IsStopped(it->second.phase)) return;
  FakeExecution& e = it->second;
  if (!e.startedAt) e.startedAt = at;
  e.phase = code == 0 ? ExecutionPhase::kSucceeded : ExecutionPhase::kFailed;
  e.exitCode = code;
  e.finishedAt = at;
  e.reason = code == 0 ? "" : (reason.empty() ? "ProcessFailed" : std::move(reason));
  Record(e);
}

void FakeBackend::StopExternally(const std::string& uid, Time at) {
  auto it = executions_.find(uid);
  if (it == executions_.end() || IsStopped(it->second.phase)) return;
  it->second.phase = ExecutionPhase::kCancelled;
  it->second.finishedAt = at;
  Record(it->second);
  truth_[uid].stoppedExternally = true;
}

void FakeBackend::CompleteRequestedStop(const std::string& uid, Time at) {
  auto it = executions_.find(uid);
  if (it == executions_.end() || IsStopped(it->second.phase) || !it->second.stopRequested) return;
  FakeExecution& e = it->second;
  if (e.phase == ExecutionPhase::kRunning) e.exitCode = 143;  // SIGTERM
  e.phase = ExecutionPhase::kCancelled;
  e.finishedAt = at;
  Record(e);
  truth_[uid].stoppedByRequest = true;
}

void FakeBackend::Lose(const std::string& uid) {
  if (executions_.erase(uid) > 0) truth_[uid].lost = true;
  lastObservation_.erase(uid);
}

// ---------------------------------------------------------------------------------------------
// FakeAdapter

Time FakeAdapter::Now() const { return std::chrono::floor<std::chrono::seconds>(clock_.Now()); }

Observation FakeAdapter::Refused() {
  Observation o;
  o.phase = ExecutionPhase::kUnknown;
  o.reason = "ControllerCrashed";
  o.message = "the call was never sent";
  return o;
}

Observation FakeAdapter::Ensure(const ExecutionRequest& request) {
  const std::string& uid = request.job.metadata.uid;
  if (!gate_(AdapterCall::kEnsure, uid, &request)) return Refused();
  if (backend_.WouldCreate(uid)) {
    // As every adapter: the controller's fresh confirmation right before the create.
    if (!request.CreateConfirmed()) {
      ++backend_.createsNotConfirmed;
      return NotCreated();
    }
    if (onCreate_) onCreate_(request);
  }
  return backend_.Ensure(request.job, Now(), request.acceptance);
}

StatusOr<std::optional<std::string>> FakeAdapter::RecordedAcceptance(const std::string& /*ns*/,
                                                                     const std::string& uid) {
  const FakeExecution* e = backend_.Find(uid);
  if (e == nullptr || e->acceptance.empty()) return std::optional<std::string>();
  ++backend_.acceptancesReadBack;
  return std::optional<std::string>(e->acceptance);
}

Observation FakeAdapter::Observe(const ExecutionKey& key) {
  if (!gate_(AdapterCall::kObserve, key.uid, nullptr)) return Refused();
  return backend_.Observe(key.uid, Now());
}

Observation FakeAdapter::Cancel(const ExecutionKey& key) {
  if (!gate_(AdapterCall::kCancel, key.uid, nullptr)) return Refused();
  return backend_.Cancel(key.uid, Now());
}

Status FakeAdapter::Delete(const ExecutionKey& key) {
  if (!gate_(AdapterCall::kDelete, key.uid, nullptr)) {
    return Status(StatusCode::kUnavailable, "the call was never sent");
  }
  return backend_.Delete(key.uid);
}

// ---------------------------------------------------------------------------------------------
// SimApi

namespace {

int Lookup(const std::map<std::string, int>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

std::optional<api::Job> DecodeJob(const std::optional<nlohmann::json>& j) {
  if (!j) return std::nullopt;
  auto job = api::JobFromJson(*j);
  if (!job.ok()) return std::nullopt;
  return std::move(*job);
}

}  // namespace

api::Job SimApi::Create(const std::string& name, api::JobSpec spec) {
  api::Job job;
  job.metadata.name = name;
  job.metadata.namespace_ = kNamespace;
  job.spec = std::move(spec);
  auto created = server_.Create(controller::kJobs, kNamespace, api::ToJson(job), {});
  if (!created.ok()) return api::Job{};
  std::optional<api::Job> stored = DecodeJob(*created);
  if (!stored) return api::Job{};
  history_[stored->metadata.uid].push_back(stored->status);
  return *stored;
}

std::optional<api::Job> SimApi::Get(const std::string& name) const {
  return DecodeJob(server_.Peek(controller::kJobs, kNamespace, name));
}

void SimApi::Edit(const std::string& name, const std::function<void(api::Job&)>& edit) {
  std::optional<api::Job> job = Get(name);
  if (!job) return;
  edit(*job);
  // A PUT of the whole object: the server keeps the status and bumps generation for spec edits.
  (void)server_.Update(controller::kJobs, kNamespace, api::ToJson(*job), {});
}

void SimApi::SetCancelled(const std::string& name) {
  Edit(name, [](api::Job& j) { j.spec.desiredState = api::DesiredState::kCancelled; });
}

void SimApi::SetTtl(const std::string& name, std::optional<int32_t> ttl) {
  Edit(name, [&](api::Job& j) { j.spec.ttlSecondsAfterFinished = ttl; });
}

void SimApi::Annotate(const std::string& name, const std::string& key, const std::string& value) {
  Edit(name, [&](api::Job& j) { j.metadata.annotations[key] = value; });
}

Status SimApi::Delete(const std::string& name, const std::string& uid) {
  DeleteOptions options;
  options.preconditionUid = uid;
  return server_.Delete(controller::kJobs, kNamespace, name, options);
}

void SimApi::ForceRemoveFinalizers(const std::string& name) {
  Edit(name, [](api::Job& j) { j.metadata.finalizers.clear(); });
}

void SimApi::EditSpecUnchecked(const std::string& name,
                               const std::function<void(api::JobSpec&)>& edit) {
  Edit(name, [&](api::Job& j) { edit(j.spec); });
}

int SimApi::StatusWrites(const std::string& uid) const { return Lookup(statusWrites_, uid); }
int SimApi::MetadataWrites(const std::string& uid) const { return Lookup(metadataWrites_, uid); }
int SimApi::Deletes(const std::string& uid) const { return Lookup(deletes_, uid); }

const std::vector<api::JobStatus>& SimApi::History(const std::string& uid) const {
  static const std::vector<api::JobStatus> kNone;
  auto it = history_.find(uid);
  return it == history_.end() ? kNone : it->second;
}

// ---------------------------------------------------------------------------------------------
// SimCache: the informer caches of the controller, read from the fake API server. Jobs come as
// the controller's cache keeps them (CompactJobForCache) and, with Harness::useCache, from the
// copy the harness last synced (an informer lagging behind the server).

class SimCache final : public controller::ClusterCache {
 public:
  explicit SimCache(Harness& h) : h_(h) {}

  std::shared_ptr<const api::Job> GetJob(const std::string& ns,
                                         const std::string& name) const override {
    return GetJobCopy(ns, name).job;
  }
  JobCopy GetJobCopy(const std::string& /*ns*/, const std::string& name) const override {
    std::optional<api::Job> job;
    auto cached = h_.cached_.find(name);
    if (h_.useCache && cached != h_.cached_.end()) {
      job = cached->second;
    } else {
      job = h_.api.Get(name);
    }
    if (!job) return {};
    bool complete = false;
    api::Job compact = controller::CompactJobForCache(std::move(*job), &complete);
    return {std::make_shared<const api::Job>(std::move(compact)), complete};
  }
  std::shared_ptr<const api::JobClass> GetJobClass(const std::string& name) const override {
    return DecodeClass(h_.server.Peek(controller::kJobClasses, "", name));
  }
  std::vector<std::shared_ptr<const api::JobClass>> ListJobClasses() const override {
    std::vector<std::shared_ptr<const api::JobClass>> out;
    for (auto& j : h_.server.PeekAll(controller::kJobClasses)) {
      if (auto c = DecodeClass(j)) out.push_back(std::move(c));
    }
    return out;
  }
  // The simulation's JobClasses have no parameters.
  std::shared_ptr<const nlohmann::json> GetParameters(const std::string& /*kind*/,
                                                      const std::string& /*name*/) const override {
    return nullptr;
  }
  std::string NamespaceDefaultJobClass(const std::string& ns) const override {
    auto j = h_.server.Peek(controller::kNamespaces, "", ns);
    static const nlohmann::json::json_pointer kAnnotations("/metadata/annotations");
    if (!j || !j->contains(kAnnotations)) return "";
    return j->at(kAnnotations).value(api::kDefaultClassAnnotation, std::string());
  }
  // What the metadata-only informers hold: only the metadata of the object.
  std::shared_ptr<const kube::ObjectMetadata> GetSecret(const std::string& ns,
                                                        const std::string& name) const override {
    return MetadataOf(h_.server.Peek(controller::kSecrets, ns, name));
  }
  std::shared_ptr<const kube::ObjectMetadata> GetConfigMap(const std::string& ns,
                                                           const std::string& name) const override {
    return MetadataOf(h_.server.Peek(controller::kConfigMaps, ns, name));
  }
  // The backend snapshots the reconciler stored, read as the controller's label-selected
  // informer decodes them.
  std::shared_ptr<const controller::BackendSnapshot> GetBackendSnapshot(
      const std::string& name) const override {
    auto j = h_.server.Peek(controller::kConfigMaps, controller::kDefaultControllerNamespace, name);
    return j ? controller::DecodeBackendSnapshot(*j) : nullptr;
  }

 private:
  static std::shared_ptr<const api::JobClass> DecodeClass(const std::optional<nlohmann::json>& j) {
    if (!j) return nullptr;
    auto c = api::JobClassFromJson(*j);
    return c.ok() ? std::make_shared<const api::JobClass>(std::move(*c)) : nullptr;
  }
  static std::shared_ptr<const kube::ObjectMetadata> MetadataOf(
      const std::optional<nlohmann::json>& j) {
    if (!j) return nullptr;
    auto m = kube::DecodeObjectMetadata(kube::PartialObjectMetadataOf(*j));
    return m.ok() ? std::make_shared<const kube::ObjectMetadata>(std::move(*m)) : nullptr;
  }

  Harness& h_;
};

// ---------------------------------------------------------------------------------------------
// CheckingKubeClient: the reconciler's client. Forwards to the fake API server and checks, on
// every Job write the server accepts, what the protocol promises (statemachine.h § Protocol):
// the invariants between the status before and after, results only as the backend reported
// them, the finalizer removed only from a Job being deleted whose backend execution is gone, TTL
// deletions only of expired terminal Jobs and only with the UID precondition. After a "crash"
// every request fails without reaching the server.

namespace {

Status CrashedRequest() {
  return Status(StatusCode::kUnavailable, "the controller crashed before sending this request");
}

}  // namespace

class CheckingKubeClient final : public KubeClient {
 public:
  explicit CheckingKubeClient(Harness& h) : h_(h), server_(h.server) {}

  StatusOr<nlohmann::json> Get(const ResourceRef& ref, std::string_view ns,
                               std::string_view name) override {
    if (h_.Dead()) return CrashedRequest();
    auto r = server_.Get(ref, ns, name);
    if (ref == controller::kJobs && h_.round_ != nullptr) {
      ++h_.round_->freshReads;
      if (r.ok() && r->value("/metadata/resourceVersion"_json_pointer, "") != h_.roundRv_) {
        ++h_.counters_.staleReads;
      }
    }
    (void)Note(r.status());
    return r;
  }
  StatusOr<ObjectList> List(const ResourceRef& ref, std::string_view ns,
                            const ListOptions& options) override {
    Unexpected("list", ref);
    return server_.List(ref, ns, options);
  }
  StatusOr<nlohmann::json> Create(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override {
    if (h_.Dead()) return CrashedRequest();
    // The one create the protocol has: the backend snapshot ConfigMap in the controller's
    // namespace, stored before the status write that records acceptance (backend_snapshot.h).
    if (!(ref == controller::kConfigMaps && ns == controller::kDefaultControllerNamespace)) {
      Unexpected("create", ref);
    }
    return server_.Create(ref, ns, object, options);
  }
  StatusOr<nlohmann::json> Update(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override {
    Unexpected("update", ref);
    return server_.Update(ref, ns, object, options);
  }
  Status Watch(const ResourceRef& ref, std::string_view ns, const WatchOptions& options,
               std::stop_token stop, const WatchHandler& handler) override {
    Unexpected("watch", ref);
    return server_.Watch(ref, ns, options, std::move(stop), handler);
  }

  StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref, std::string_view ns,
                                        const nlohmann::json& object,
                                        const WriteOptions& options) override {
    if (h_.Dead()) return CrashedRequest();
    if (!(ref == controller::kJobs)) {
      Unexpected("status update", ref);
      return server_.UpdateStatus(ref, ns, object, options);
    }
    std::optional<api::Job> before =
        h_.api.Get(object.value("/metadata/name"_json_pointer, std::string()));
    auto r = server_.UpdateStatus(ref, ns, object, options);
    if (!r.ok()) return Note(r.status());
    std::optional<api::Job> after = DecodeJob(*r);
    if (!before || !after) {
      h_.Fail("a status write the server accepted for a Job it did not have");
      return r;
    }
    const std::string& uid = after->metadata.uid;
    // The server accepted the resourceVersion precondition: `before` is what the reconciler's
    // decision started from.
    h_.CheckStatusWrite(*before, after->status);
    h_.api.history_[uid].push_back(after->status);
    ++h_.api.statusWrites_[uid];
    ++h_.round_->statusWrites;
    h_.Step();
    return MaybeLoseAnswer(std::move(r));
  }

  StatusOr<nlohmann::json> Patch(const ResourceRef& ref, std::string_view ns, std::string_view name,
                                 PatchType type, const nlohmann::json& patch,
                                 const PatchOptions& options) override {
    if (h_.Dead()) return CrashedRequest();
    if (!(ref == controller::kJobs)) {
      Unexpected("patch", ref);
      return server_.Patch(ref, ns, name, type, patch, options);
    }
    std::optional<api::Job> before = h_.api.Get(std::string(name));
    auto r = server_.Patch(ref, ns, name, type, patch, options);
    if (!r.ok()) return Note(r.status());
    std::optional<api::Job> after = DecodeJob(*r);
    if (!before || !after) {
      h_.Fail("a patch the server accepted for a Job it did not have");
      return r;
    }
    const std::string& uid = after->metadata.uid;
    if (!(before->status == after->status) || !(before->spec == after->spec)) {
      h_.Fail(uid + ": a metadata patch changed the spec or the status");
    }
    if (HasFinalizer(*before) && !HasFinalizer(*after)) {
      if (!before->metadata.deletionTimestamp) {
        h_.Fail(uid + ": finalizer removed from a Job that is not being deleted");
      }
      if (h_.backend.Find(uid) != nullptr) {
        h_.Fail(uid + ": finalizer removed while the backend still has the execution");
      }
      ++h_.counters_.finalizerRemovals;
    }
    ++h_.api.metadataWrites_[uid];
    ++h_.round_->finalizerWrites;
    h_.Step();
    return MaybeLoseAnswer(std::move(r));
  }

  Status Delete(const ResourceRef& ref, std::string_view ns, std::string_view name,
                const DeleteOptions& options) override {
    if (h_.Dead()) return CrashedRequest();
    if (!(ref == controller::kJobs)) {
      Unexpected("delete", ref);
      return server_.Delete(ref, ns, name, options);
    }
    std::optional<api::Job> before = h_.api.Get(std::string(name));
    if (before) {
      const std::string& uid = before->metadata.uid;
      if (!options.preconditionUid) {
        h_.Fail(uid + ": TTL deletion without the UID precondition");
      } else if (*options.preconditionUid == uid) {
        if (!IsTerminal(before->status)) h_.Fail(uid + ": TTL deletion of a non-terminal Job");
        if (!TtlExpired(*before, h_.Now())) h_.Fail(uid + ": TTL deletion before the TTL expired");
      }
    }
    Status s = server_.Delete(ref, ns, name, options);
    if (!s.ok()) return Note(s);
    ++h_.api.deletes_[before->metadata.uid];
    h_.round_->ttlDeleted = true;
    ++h_.counters_.ttlDeletions;
    h_.Step();
    if (h_.loseNextWriteResponse) return LoseAnswer();
    return s;
  }

 private:
  // Counts the failures that end rounds, so the property test can show it exercised them.
  Status Note(const Status& s) {
    if (s.code() == StatusCode::kConflict) ++h_.counters_.conflicts;
    if (s.code() == StatusCode::kServerError) ++h_.counters_.injectedFailures;
    return s;
  }
  void Unexpected(const char* what, const ResourceRef& ref) {
    h_.Fail(std::string("the reconciler sent a ") + what + " of " + ref.GroupResource());
  }
  Status LoseAnswer() {
    h_.loseNextWriteResponse = false;
    ++h_.counters_.injectedFailures;
    return Status(StatusCode::kUnavailable, "the answer was lost (timeout)");
  }
  StatusOr<nlohmann::json> MaybeLoseAnswer(StatusOr<nlohmann::json> r) {
    if (h_.loseNextWriteResponse) return LoseAnswer();
    return r;
  }

  Harness& h_;
  kube::testing::FakeKubeClient& server_;
};

// ---------------------------------------------------------------------------------------------
// LogTap: the reconciler logs what it does; the simulation keeps that quiet and reads the Events
// it recorded from the "event" lines (reason and message; the log line has no Event type).

struct LogTap final : std::streambuf {
  static LogTap& Install() {
    static LogTap tap;
    static std::ostream out(&tap);
    static const bool configured = [] {
      obs::ConfigureLogging(obs::LogLevel::kInfo, obs::LogFormat::kJson, &out);
      return true;
    }();
    (void)configured;
    return tap;
  }

  Harness* active = nullptr;

 protected:
  int_type overflow(int_type c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    Put(traits_type::to_char_type(c));
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) Put(s[i]);
    return n;
  }

 private:
  void Put(char c) {
    if (c != '\n') {
      line_.push_back(c);
      return;
    }
    if (active != nullptr) active->OnLogLine(line_);
    line_.clear();
  }
  std::string line_;
};

// ---------------------------------------------------------------------------------------------
// Harness

api::JobSpec BasicSpec() {
  api::JobSpec s;
  s.task.image = "registry.local/busybox:1";
  s.task.command = {"/bin/true"};
  return s;
}

RoundOptions CrashAfterCall(AdapterCall call) {
  RoundOptions o;
  switch (call) {
    case AdapterCall::kEnsure:
      o.crashPoint = controller::kCrashAfterEnsure;
      break;
    case AdapterCall::kCancel:
      o.crashPoint = controller::kCrashAfterCancel;
      break;
    case AdapterCall::kDelete:
      o.crashPoint = controller::kCrashAfterDelete;
      break;
    case AdapterCall::kObserve:
    case AdapterCall::kNone:
      break;  // the reconciler has no crash point there
  }
  return o;
}

namespace {

// Calls are ordered (statemachine.h § Termination): within a round each call ranks above the
// previous one.
int Rank(AdapterCall call) {
  switch (call) {
    case AdapterCall::kNone:
      return 0;
    case AdapterCall::kEnsure:
    case AdapterCall::kObserve:
      return 1;
    case AdapterCall::kCancel:
      return 2;
    case AdapterCall::kDelete:
      return 3;
  }
  return 0;
}

// Creates the object or replaces what the server has (keeping what the server owns).
void Upsert(kube::testing::FakeKubeClient& server, const ResourceRef& ref, const std::string& ns,
            nlohmann::json object) {
  const std::string name = object["metadata"]["name"].get<std::string>();
  if (!server.Peek(ref, ns, name)) {
    (void)server.Create(ref, ns, object, {});
  } else {
    (void)server.Update(ref, ns, object, {});
  }
}

// Makes the objects of `ref` in `ns` exactly `wanted` (name → object).
void Publish(kube::testing::FakeKubeClient& server, const ResourceRef& ref, const std::string& ns,
             const std::map<std::string, nlohmann::json>& wanted) {
  for (const auto& existing : server.PeekAll(ref, ns)) {
    const std::string name = existing["metadata"]["name"].get<std::string>();
    if (wanted.count(name) == 0) (void)server.Delete(ref, ns, name, {});
  }
  for (const auto& [name, object] : wanted) Upsert(server, ref, ns, object);
}

nlohmann::json DataObject(const char* kind, const std::string& name,
                          const std::map<std::string, std::string>& data, bool base64) {
  nlohmann::json j = {{"apiVersion", "v1"},
                      {"kind", kind},
                      {"metadata", {{"name", name}, {"namespace", kNamespace}}},
                      {"data", nlohmann::json::object()}};
  if (base64) j["type"] = "Opaque";
  for (const auto& [k, v] : data) j["data"][k] = base64 ? base::Base64Encode(v) : v;
  return j;
}

}  // namespace

Harness::Harness() : clock(At(1'700'000'000)), api(server) {
  LogTap::Install();
  server.SetClock(&clock);
  adapter_ = std::make_shared<FakeAdapter>(
      backend, clock,
      [this](AdapterCall call, const std::string& uid, const ExecutionRequest* r) {
        return GateCall(call, uid, r);
      },
      [this](const ExecutionRequest& r) { CheckCreate(r); });
  AdapterDescriptor descriptor;
  descriptor.controllerName = kFakeControllerName;
  descriptor.enforces = Enforcement::Everything();
  descriptor.recordsAcceptance = true;  // under a backlog the create may carry the acceptance
  if (Status s = registry_.Register(descriptor, adapter_); !s.ok()) {
    throw std::logic_error(s.ToString());
  }
  cache_ = std::make_unique<SimCache>(*this);
  client_ = std::make_unique<CheckingKubeClient>(*this);
  StartReconciler();
}

void Harness::StartReconciler() {
  controller::ReconcilerOptions options;
  options.backlog = [this] { return backlog; };
  // statemachine.h § Termination: a round needs at most five Decide calls; a round that needs
  // more fails (kInternal) and the Harness reports it.
  options.maxSteps = 5;
  options.crashHook = [this](std::string_view point, const api::Job& /*job*/) {
    if (dead_ || point == options_.crashPoint) dead_ = true;
    return dead_;
  };
  reconciler_ = std::make_unique<controller::JobReconciler>(*client_, *cache_, registry_, clock,
                                                            metrics_, nullptr, options);
}

Harness::~Harness() = default;

Time Harness::Now() const { return std::chrono::floor<std::chrono::seconds>(clock.Now()); }

void Harness::PublishCluster() {
  if (published_ == cluster) return;
  std::map<std::string, nlohmann::json> classes;
  for (const std::string& name : cluster.classes) {
    api::JobClass c;
    c.metadata.name = name;
    c.spec.controllerName = kFakeControllerName;
    c.spec.secretEnvForwarding = api::SecretEnvForwarding::kAllowed;
    c.spec.startTimeoutSeconds = cluster.startTimeoutSeconds;
    if (cluster.resourcesOutOfRange) c.spec.resources.max.memory = api::Quantity::MustParse("1Gi");
    classes[name] = api::ToJson(c);
  }
  Publish(server, controller::kJobClasses, "", classes);
  nlohmann::json ns = {
      {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNamespace}}}};
  if (!cluster.defaultClass.empty()) {
    ns["metadata"]["annotations"] = {{api::kDefaultClassAnnotation, cluster.defaultClass}};
  }
  Publish(server, controller::kNamespaces, "", {{kNamespace, ns}});
  std::map<std::string, nlohmann::json> secrets, configMaps;
  for (const auto& [name, data] : cluster.secrets) {
    secrets[name] = DataObject("Secret", name, data, true);
  }
  for (const auto& [name, data] : cluster.configMaps) {
    configMaps[name] = DataObject("ConfigMap", name, data, false);
  }
  Publish(server, controller::kSecrets, kNamespace, secrets);
  Publish(server, controller::kConfigMaps, kNamespace, configMaps);
  published_ = cluster;
}

std::string Harness::Create(const std::string& name, api::JobSpec spec) {
  api::Job job = api.Create(name, std::move(spec));
  if (job.metadata.uid.empty()) {
    Fail("cannot create Job " + name);
    return "";
  }
  cached_[name] = job;
  return job.metadata.uid;
}

void Harness::SyncCache(const std::string& name) {
  if (std::optional<api::Job> j = api.Get(name)) {
    cached_[name] = *j;
  } else {
    cached_.erase(name);
  }
}

void Harness::DropCache() {
  cached_.clear();
  StartReconciler();
}

void Harness::SetCached(const api::Job& job) { cached_[job.metadata.name] = job; }

api::Job Harness::Job(const std::string& name) const { return api.Get(name).value_or(api::Job{}); }

std::string Harness::ClassUid(const std::string& name) const {
  auto c = server.Peek(controller::kJobClasses, "", name);
  return c ? c->value("/metadata/uid"_json_pointer, std::string()) : "";
}

void Harness::Step() {
  ++steps_;
  if (options_.crashAfterSteps && steps_ >= *options_.crashAfterSteps) dead_ = true;
}

bool Harness::GateCall(AdapterCall call, const std::string& uid,
                       const ExecutionRequest* /*request*/) {
  if (dead_ || round_ == nullptr) return false;
  // An Ensure whose create the fresh read refused is decided again, on the newer Job: the one
  // call that may follow a call of its own rank.
  const bool afterRefusedCreate = call == AdapterCall::kEnsure && !round_->calls.empty() &&
                                  round_->calls.back() == AdapterCall::kEnsure &&
                                  backend.createsNotConfirmed > round_->createsNotConfirmed;
  round_->createsNotConfirmed = backend.createsNotConfirmed;
  if (!round_->calls.empty() && Rank(call) <= Rank(round_->calls.back()) && !afterRefusedCreate) {
    Fail(uid + ": " + AdapterCallName(call) + " after " + AdapterCallName(round_->calls.back()) +
         " in one round");
  }
  round_->calls.push_back(call);
  Step();  // the call is made; a crash after it stops what follows
  return true;
}

// Right before the backend creates an execution (FakeAdapter::Ensure, after confirmCreate
// allowed it): the spec's rule that nothing is created for a Job that is cancelled, deleted or
// replaced holds against the API server's Job at this very moment, in every path (a busy round
// carrying the acceptance included).
void Harness::CheckCreate(const ExecutionRequest& request) {
  const api::Job& job = request.job;
  const std::string& uid = job.metadata.uid;
  if (!request.confirmCreate) Fail(uid + ": create without confirmCreate");
  std::optional<api::Job> current = api.Get(job.metadata.name);
  if (!current || current->metadata.uid != uid) {
    Fail(uid + ": create for a Job the API server no longer has");
    return;
  }
  if (!HasFinalizer(*current)) Fail(uid + ": create without the finalizer");
  if (job.metadata.resourceVersion != current->metadata.resourceVersion) {
    Fail(uid + ": create decided on a stale copy of the Job (resourceVersion " +
         job.metadata.resourceVersion + ", the server has " + current->metadata.resourceVersion +
         ")");
  }
  if (!(job.spec == current->spec)) Fail(uid + ": create without the Job's whole spec");
  if (current->spec.desiredState == api::DesiredState::kCancelled) {
    Fail(uid + ": create after desiredState=Cancelled");
  }
  if (current->metadata.deletionTimestamp) Fail(uid + ": create while deleting");
  if (!request.acceptance.empty()) {
    ++counters_.carriedAcceptances;
    // The create carries the acceptance (a busy round, statemachine.h): it must be whole, and
    // one the API server does not have yet.
    auto parsed = nlohmann::json::parse(request.acceptance, nullptr, false);
    auto status = parsed.is_discarded()
                      ? StatusOr<api::JobStatus>(Status(StatusCode::kInvalidArgument, "not JSON"))
                      : api::JobStatusFromJson(parsed);
    if (!status.ok() || !api::IsConditionTrue(status->conditions, api::kConditionAccepted) ||
        !status->resolvedJobClass || !(status->resolvedJobClass == job.status.resolvedJobClass)) {
      Fail(uid + ": create carrying an acceptance that is not the Job's: " + request.acceptance);
    }
    if (api::IsConditionTrue(current->status.conditions, api::kConditionAccepted)) {
      Fail(uid + ": create carrying an acceptance the API server already has");
    }
    return;
  }
  if (!api::IsConditionTrue(current->status.conditions, api::kConditionAccepted) ||
      !current->status.resolvedJobClass) {
    Fail(uid + ": create before Accepted=True and resolvedJobClass were persisted");
  }
}

void Harness::OnLogLine(const std::string& line) {
  if (line.find(R"("msg":"event")") == std::string::npos) return;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  Event e;
  e.reason = j.value("reason", "");
  e.message = j.value("message", "");
  events_.push_back(std::move(e));
}

void Harness::CheckResultTruth(const api::Job& job, const api::JobStatus& before,
                               const api::JobStatus& after) {
  if (IsTerminal(before) || !IsTerminal(after)) return;
  const std::string& uid = job.metadata.uid;
  const api::Condition* s = api::FindCondition(after.conditions, api::kConditionSucceeded);
  auto it = backend.truth().find(uid);
  const ExecutionTruth* truth = it == backend.truth().end() ? nullptr : &it->second;
  auto fail = [&](const std::string& why) {
    Fail(uid + ": terminal " + api::ToString(s->status) + "/" + s->reason + " " + why);
  };
  if (after.result && after.result->exitCode &&
      (truth == nullptr || truth->exitCode != after.result->exitCode)) {
    fail("carries an exit code the backend never reported");
  }
  const std::string& reason = s->reason;
  // Terminal only once the backend confirmed the execution will not continue (an administrator's
  // BackendLost is the one exception: the backend could not be asked).
  if (reason != kReasonBackendLost && backend.Live(uid)) fail("while the execution still runs");
  const bool succeededTruth = truth != nullptr && truth->phase == ExecutionPhase::kSucceeded;
  if (s->status == api::ConditionStatus::kTrue) {
    if (!succeededTruth) fail("but the execution did not succeed");
    return;
  }
  const api::Condition* accepted = api::FindCondition(after.conditions, api::kConditionAccepted);
  if (reason == kReasonCancelled) {
    if (job.spec.desiredState != api::DesiredState::kCancelled && !job.metadata.deletionTimestamp) {
      fail("but nobody cancelled or deleted the Job");
    }
    // A stop is confirmed by the execution's own record, or by there never having been one: a
    // request the backend refused (BackendRejected) leaves no execution, so a Cancel finds
    // nothing and nothing can run; when the write of that refusal was lost, Cancelled is true.
    if (truth != nullptr && !truth->lost && truth->phase != ExecutionPhase::kCancelled &&
        backend.Creates(uid) > 0) {
      fail("but the backend did not confirm a stop (its last phase " +
           std::to_string(static_cast<int>(truth->phase)) + " " + truth->reason + ")");
    }
  } else if (reason == kReasonDeadlineExceeded) {
    std::optional<api::Time> deadline =
        after.startTime && job.spec.activeDeadlineSeconds
            ? std::optional<api::Time>(*after.startTime +
                                       std::chrono::seconds(*job.spec.activeDeadlineSeconds))
            : std::nullopt;
    if (!deadline || Now() < *deadline) fail("before the deadline passed");
    if (succeededTruth) fail("but the execution succeeded");
  } else if (reason == kReasonStartTimeout) {
    const std::optional<int64_t> timeout = cluster.startTimeoutSeconds;
    if (!timeout || accepted == nullptr || accepted->status != api::ConditionStatus::kTrue ||
        Now() < accepted->lastTransitionTime + std::chrono::seconds(*timeout)) {
      fail("before the class's startTimeoutSeconds passed since acceptance");
    }
    if (after.startTime) fail("but the task had started");
    if (succeededTruth) fail("but the execution succeeded");
  } else if (reason == kReasonBackendLost) {
    const api::Condition* prev = api::FindCondition(before.conditions, api::kConditionSucceeded);
    auto confirmation = job.metadata.annotations.find(api::kConfirmBackendLostAnnotation);
    if (confirmation == job.metadata.annotations.end() || prev == nullptr ||
        prev->reason != kReasonResultUnknown ||
        ConfirmedEpisode(confirmation->second) != before.resultUnknownEpisode) {
      fail("without the administrator's confirmation of this ResultUnknown episode");
    }
  } else if (reason == kReasonExecutionStopped) {
    if (truth == nullptr || !truth->stoppedExternally) fail("but nobody stopped it externally");
  } else if (accepted != nullptr && accepted->status == api::ConditionStatus::kFalse) {
    // Refused at resolution, for good.
    if (accepted->reason != reason) fail("but Accepted=False says " + accepted->reason);
    if (truth != nullptr) fail("but an execution was created");
  } else {
    // A failure reported by the backend: ProcessFailed, ImagePullFailed, BackendRejected...
    if (truth == nullptr || truth->phase != ExecutionPhase::kFailed || truth->reason != reason) {
      fail("but the backend reported no such failure");
    }
  }
}

void Harness::CheckStatusWrite(const api::Job& before, const api::JobStatus& after) {
  for (const std::string& v : CheckInvariants(before.status, after)) {
    Fail(before.metadata.uid + ": " + v);
  }
  CheckResultTruth(before, before.status, after);
}

RoundReport Harness::Reconcile(const std::string& name, RoundOptions options) {
  PublishCluster();
  RoundReport rep;
  std::shared_ptr<const api::Job> start = cache_->GetJob(kNamespace, name);
  if (!start) return rep;
  rep.ran = true;
  ++counters_.rounds;
  const std::string uid = start->metadata.uid;
  const int removalsBefore = counters_.finalizerRemovals;
  round_ = &rep;
  options_ = std::move(options);
  roundRv_ = start->metadata.resourceVersion;
  steps_ = 0;
  dead_ = false;

  LogTap::Install().active = this;
  controller::ReconcileResult result = reconciler_->Reconcile(kNamespace, name);
  LogTap::Install().active = nullptr;

  round_ = nullptr;
  rep.crashed = result.crashed || dead_;
  rep.requeueAfter = result.requeueAfter;
  rep.backoff = result.backoff;
  rep.error = result.error;
  if (reconciler_->HasUnreportedExecution(kube::ObjectKey(kNamespace, name))) {
    ++counters_.unreportedExecutions;
  }
  counters_.acceptancesReadBack = backend.acceptancesReadBack;
  counters_.createsNotConfirmed = backend.createsNotConfirmed;
  if (rep.crashed) {
    ++counters_.crashes;
    // A restarted controller lists anew: its cache has every write the old one made.
    std::vector<std::string> names;
    for (const auto& entry : cached_) names.push_back(entry.first);
    for (const std::string& n : names) SyncCache(n);
    StartReconciler();
  } else if (!result.error.ok()) {
    rep.aborted = true;
    switch (result.error.code()) {
      case StatusCode::kConflict:     // decided on a stale copy: nothing happened
      case StatusCode::kNotFound:     // the Job went away
      case StatusCode::kUnavailable:  // an injected failure, a lost answer
      case StatusCode::kServerError:
        break;
      default:
        Fail(uid + ": the round failed: " + result.error.ToString());
    }
    SyncCache(name);  // the watch delivers the newer object; the next round starts from it
  }
  if (counters_.finalizerRemovals != removalsBefore) SyncCache(name);
  // Only the current round's requests matter; keep the fake's books from growing.
  server.ClearActions();
  server.Compact();
  return rep;
}

int Harness::Settle(const std::string& name, int maxRounds) {
  for (int i = 0; i < maxRounds; ++i) {
    RoundReport rep = Reconcile(name);
    if (!rep.ran) return i;
    if (rep.statusWrites == 0 && rep.finalizerWrites == 0 && !rep.ttlDeleted && !rep.aborted) {
      return i + 1;
    }
  }
  Fail(name + ": did not settle in " + std::to_string(maxRounds) + " rounds");
  return maxRounds;
}

}  // namespace ayatori::statemachine::testing
