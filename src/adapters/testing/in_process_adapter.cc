#include "adapters/testing/in_process_adapter.h"

#include <algorithm>
#include <charconv>

namespace ayatori::adapters {

AdapterDescriptor TestDescriptor() {
  AdapterDescriptor d;
  d.controllerName = kControllerTest;
  d.enforces = Enforcement::Everything();
  return d;
}
namespace {

api::Time ToApiTime(std::chrono::system_clock::time_point t) {
  return std::chrono::floor<std::chrono::seconds>(t);
}

Observation Unreachable() {
  Observation o;
  o.phase = ExecutionPhase::kUnknown;
  o.reason = "BackendUnreachable";
  o.message = "the in-process test backend is set unreachable";
  return o;
}

std::optional<int> ParseInt(const std::string& s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

InProcessTestAdapter::InProcessTestAdapter(const Clock& clock) : clock_(clock) {}

InProcessTestAdapter::~InProcessTestAdapter() { Stop(); }

Status InProcessTestAdapter::Start(
    std::function<void(const std::string&, const std::string&)> notify) {
  std::lock_guard lock(mu_);
  notify_ = std::move(notify);
  stopping_ = false;
  if (!timer_.joinable()) timer_ = std::thread([this] { TimerLoop(); });
  return Status::Ok();
}

void InProcessTestAdapter::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    notify_ = nullptr;
  }
  cv_.notify_all();
  if (timer_.joinable()) timer_.join();
}

// Wakes at the earliest auto-finish time and tells the controller, so tests need no polling.
void InProcessTestAdapter::TimerLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    std::optional<std::chrono::system_clock::time_point> next;
    for (auto& [uid, e] : executions_) {
      AdvanceLocked(e);
      if (e.autoFinishAt && e.phase == ExecutionPhase::kRunning) {
        if (!next || *e.autoFinishAt < *next) next = e.autoFinishAt;
      }
    }
    if (next) {
      cv_.wait_until(lock, *next + std::chrono::milliseconds(5));
    } else {
      cv_.wait(lock);
    }
  }
}

void InProcessTestAdapter::NotifyLater(const Execution& e) {
  if (notify_) notify_(e.namespace_, e.name);
}

void InProcessTestAdapter::AdvanceLocked(Execution& e) {
  if (e.phase == ExecutionPhase::kRunning && e.autoFinishAt && clock_.Now() >= *e.autoFinishAt) {
    e.phase = e.exitCode == 0 ? ExecutionPhase::kSucceeded : ExecutionPhase::kFailed;
    e.finishedAt = ToApiTime(*e.autoFinishAt);
    NotifyLater(e);
  }
}

Status InProcessTestAdapter::Validate(const ExecutionRequest& request) {
  for (const auto& env : request.job.spec.task.env) {
    if (env.name == "AYATORI_TEST_REJECT" && env.value) {
      return {StatusCode::kInvalidArgument, "the test backend rejects this Job: " + *env.value};
    }
    if (env.name == "AYATORI_TEST_NOT_ENFORCEABLE" && env.value) {
      return {StatusCode::kFailedPrecondition,
              "the test backend cannot enforce this Job's class: " + *env.value};
    }
  }
  return Status::Ok();
}

Observation InProcessTestAdapter::Ensure(const ExecutionRequest& request) {
  std::unique_lock lock(mu_);
  const std::string& uid = request.job.metadata.uid;
  ensureCalls_[uid]++;
  if (unreachable_) return Unreachable();
  auto it = executions_.find(uid);
  if (it == executions_.end()) {
    if (!request.CreateConfirmed()) return NotCreated();
    Execution e;
    e.namespace_ = request.job.metadata.namespace_;
    e.name = request.job.metadata.name;
    e.id = "exec-" + std::to_string(nextId_++);
    for (const auto& v : request.job.spec.task.env) {
      if (v.value) e.env[v.name] = *v.value;
    }
    for (const auto& v : request.resolvedEnv) e.env[v.name] = v.value.reveal();
    auto fail = e.env.find("AYATORI_TEST_FAIL_REASON");
    auto run = e.env.find("AYATORI_TEST_RUN_SECONDS");
    auto code = e.env.find("AYATORI_TEST_EXIT_CODE");
    if (code != e.env.end()) e.exitCode = ParseInt(code->second).value_or(1);
    if (fail != e.env.end()) {
      e.phase = ExecutionPhase::kFailed;
      e.failReason = fail->second;
      e.finishedAt = ToApiTime(clock_.Now());
    } else if (run != e.env.end()) {
      e.phase = ExecutionPhase::kRunning;
      e.startedAt = ToApiTime(clock_.Now());
      e.autoFinishAt = clock_.Now() + std::chrono::seconds(ParseInt(run->second).value_or(0));
    }
    it = executions_.emplace(uid, std::move(e)).first;
    creations_[uid]++;
    cv_.notify_all();
  }
  if (loseNextEnsure_) {
    loseNextEnsure_ = false;
    Observation o;
    o.phase = ExecutionPhase::kUnknown;
    o.reason = "EnsureResponseLost";
    o.message = "the test backend dropped the response to Ensure";
    return o;
  }
  return ObserveLocked(uid);
}

Observation InProcessTestAdapter::ObserveLocked(const std::string& uid) {
  auto it = executions_.find(uid);
  Observation o;
  if (it == executions_.end()) {
    o.phase = ExecutionPhase::kAbsent;
    return o;
  }
  AdvanceLocked(it->second);
  const Execution& e = it->second;
  o.phase = e.phase;
  o.startedAt = e.startedAt;
  o.finishedAt = e.finishedAt;
  o.references = {{"Execution", e.id}};
  if (e.phase == ExecutionPhase::kSucceeded || e.phase == ExecutionPhase::kFailed) {
    if (e.failReason.empty()) o.exitCode = e.exitCode;
    o.reason = e.phase == ExecutionPhase::kSucceeded
                   ? "Completed"
                   : (e.failReason.empty() ? "ProcessFailed" : e.failReason);
  }
  if (e.phase == ExecutionPhase::kCancelled) o.reason = "Cancelled";
  return o;
}

Observation InProcessTestAdapter::Observe(const ExecutionKey& key) {
  std::lock_guard lock(mu_);
  if (unreachable_) return Unreachable();
  return ObserveLocked(key.uid);
}

Observation InProcessTestAdapter::Cancel(const ExecutionKey& key) {
  std::lock_guard lock(mu_);
  if (unreachable_) return Unreachable();
  auto it = executions_.find(key.uid);
  if (it != executions_.end()) {
    Execution& e = it->second;
    AdvanceLocked(e);
    if (!ignoreCancel_ &&
        (e.phase == ExecutionPhase::kPending || e.phase == ExecutionPhase::kRunning)) {
      e.phase = ExecutionPhase::kCancelled;
      e.finishedAt = ToApiTime(clock_.Now());
      e.autoFinishAt.reset();
    }
  }
  return ObserveLocked(key.uid);
}

Status InProcessTestAdapter::Delete(const ExecutionKey& key) {
  std::lock_guard lock(mu_);
  if (unreachable_) return {StatusCode::kUnavailable, "the in-process test backend is unreachable"};
  // Like the Docker and Kubernetes backends, Delete force-removes a running execution.
  executions_.erase(key.uid);
  return Status::Ok();
}

void InProcessTestAdapter::StartExecution(const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = executions_.find(uid);
  if (it == executions_.end() || it->second.phase != ExecutionPhase::kPending) return;
  it->second.phase = ExecutionPhase::kRunning;
  it->second.startedAt = ToApiTime(clock_.Now());
  NotifyLater(it->second);
}

void InProcessTestAdapter::FinishExecution(const std::string& uid, int exitCode,
                                           const std::string& reason) {
  std::lock_guard lock(mu_);
  auto it = executions_.find(uid);
  if (it == executions_.end() || IsStopped(it->second.phase)) return;
  Execution& e = it->second;
  if (!e.startedAt && reason.empty()) e.startedAt = ToApiTime(clock_.Now());
  e.phase = exitCode == 0 && reason.empty() ? ExecutionPhase::kSucceeded : ExecutionPhase::kFailed;
  e.exitCode = exitCode;
  e.failReason = reason;
  e.finishedAt = ToApiTime(clock_.Now());
  e.autoFinishAt.reset();
  NotifyLater(e);
}

void InProcessTestAdapter::SetUnreachable(bool unreachable) {
  std::lock_guard lock(mu_);
  unreachable_ = unreachable;
  if (!unreachable) {
    for (auto& [uid, e] : executions_) NotifyLater(e);
  }
}

void InProcessTestAdapter::LoseNextEnsureResponse() {
  std::lock_guard lock(mu_);
  loseNextEnsure_ = true;
}

void InProcessTestAdapter::SetIgnoreCancel(bool ignore) {
  std::lock_guard lock(mu_);
  ignoreCancel_ = ignore;
}

int InProcessTestAdapter::EnsureCalls(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = ensureCalls_.find(uid);
  return it == ensureCalls_.end() ? 0 : it->second;
}

int InProcessTestAdapter::Creations(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = creations_.find(uid);
  return it == creations_.end() ? 0 : it->second;
}

int InProcessTestAdapter::TotalCreations() const {
  std::lock_guard lock(mu_);
  int total = 0;
  for (const auto& [uid, n] : creations_) total += n;
  return total;
}

bool InProcessTestAdapter::Exists(const std::string& uid) const {
  std::lock_guard lock(mu_);
  return executions_.contains(uid);
}

bool InProcessTestAdapter::IsRunning(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = executions_.find(uid);
  return it != executions_.end() && it->second.phase == ExecutionPhase::kRunning;
}

std::map<std::string, std::string> InProcessTestAdapter::EnvOf(const std::string& uid) const {
  std::lock_guard lock(mu_);
  auto it = executions_.find(uid);
  return it == executions_.end() ? std::map<std::string, std::string>{} : it->second.env;
}

}  // namespace ayatori::adapters
