// The Job controller on the real API server of the test control plane, in process, for the
// integration tests of test/controller/: one RestClient from the control plane's kubeconfig, the
// CRDs installed once, a JobClass "test" served by the in-process test backend, and ONE
// adapters::InProcessTestAdapter that outlives the controller instances, so a test can stop,
// "crash" and restart the controller and still see the executions it created.
//
// A crash is the reconciler's crash hook firing at a named point (controller/reconciler.h) for a
// chosen Job: that instance stops working as a killed process would; RestartController()
// destroys it and starts a new one. Logs of the obs library are captured in memory so tests can
// check what the controller wrote (and that no Secret value is in it).
//
// Everything waits on conditions with deadlines (test/support/wait.h; the API server is polled
// every 50 ms), never on bare sleeps.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/registry.h"
#include "adapters/testing/in_process_adapter.h"
#include "api/types.h"
#include "ayatori/status.h"
#include "controller/controller.h"
#include "kube/events.h"
#include "kube/rest_client.h"
#include "obs/metrics.h"
#include "test/support/counting_kube_client.h"
#include "test/support/wait.h"  // Eventually and HoldsFor, for the users of this harness

namespace ayatori::testing {

// The JobClass every test Job uses unless it says otherwise: controllerName
// execution.ayatori.ddupan.top/test, secretEnvForwarding Allowed, no parameters.
inline constexpr const char* kTestJobClass = "test";

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

// How often a wait GETs from the API server (the poll of Eventually and HoldsFor when their
// condition reads the API): often enough not to slow the tests down, rarely enough not to load
// the control plane the tests measure.
inline constexpr std::chrono::milliseconds kApiPoll = 50ms;

// ---------------------------------------------------------------------------------------------
// Log capture.

// Routes the obs logs of this process (debug level, JSON lines) into memory, thread-safely.
// Set AYATORI_TEST_LOG=1 to also copy them to stderr.
class LogCapture {
 public:
  static LogCapture& Install();
  std::string Text() const;
  size_t Size() const;
  // The captured lines that contain `needle` (e.g. a namespace), at most `maxLines` of them.
  std::string LinesWith(std::string_view needle, size_t maxLines = 200) const;

 private:
  LogCapture();
  struct Sink;
  Sink* sink_;
};

// ---------------------------------------------------------------------------------------------
// An adapter decorator that counts the calls the controller makes per Job UID and forwards them
// to the in-process test backend. Not a fake: every call reaches the real backend object.

enum class Call { kEnsure, kObserve, kCancel, kDelete };

class RecordingAdapter final : public Adapter {
 public:
  explicit RecordingAdapter(std::shared_ptr<adapters::InProcessTestAdapter> backend);

  std::string Name() const override { return backend_->Name(); }
  Status Start(std::function<void(const std::string&, const std::string&)> notify) override;
  void Stop() override;
  Status Validate(const ExecutionRequest& request) override;
  std::optional<Refusal> AcceptanceRefusal(const ExecutionRequest& request) override;
  Observation Ensure(const ExecutionRequest& request) override;
  Observation Observe(const ExecutionKey& key) override;
  Observation Cancel(const ExecutionKey& key) override;
  Status Delete(const ExecutionKey& key) override;

  int Calls(const std::string& uid, Call call) const;

 private:
  void Count(const std::string& uid, Call call);
  std::shared_ptr<adapters::InProcessTestAdapter> backend_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, Call>, int> calls_;
};

// ---------------------------------------------------------------------------------------------
// Job manifests and condition helpers.

// [{name, value}] for literal env vars.
nlohmann::json Env(const std::vector<std::pair<std::string, std::string>>& vars);

// A Job of class "test" whose execution stays pending until the test starts it (no
// AYATORI_TEST_RUN_SECONDS), with `spec` merged in (RFC 7386: null removes a field).
nlohmann::json JobManifest(const std::string& ns, const std::string& name,
                           const nlohmann::json& spec = nlohmann::json::object());

// The Condition of `type`, or nullptr.
const api::Condition* FindCondition(const api::Job& job, const char* type);
// "<status>/<reason>" of a condition, "" when absent: e.g. "True/Completed".
std::string ConditionSummary(const api::Job& job, const char* type);
bool HasCondition(const api::Job& job, const char* type, api::ConditionStatus status,
                  const std::string& reason);
bool IsFinished(const api::Job& job);  // Succeeded True or False
// One line for failure messages: uid, generation, desiredState, conditions, times, references,
// finalizers, deletion. Never Secret values (status holds none).
std::string Describe(const api::Job& job);

// ---------------------------------------------------------------------------------------------
// The harness.

struct ControllerSettings {
  int workers = 2;
  // Cap of the workqueue's per-Job exponential backoff (production: 1000 s). Backoff retries
  // are what notice a backend that became reachable without telling anyone, so keep it short.
  std::chrono::milliseconds maxBackoff = 1000ms;
  // ReconcilerOptions::backlog; unset: the controller's own (keys ready in its queue).
  std::function<bool()> backlog;
  // ReconcilerOptions::kueue: queue labelled Jobs through Kueue (needs the "kueue" fixture).
  bool kueue = false;
};

class ControllerHarness {
 public:
  // The process-wide harness. The first call connects to the control plane, installs the CRDs
  // and creates JobClass "test"; if that failed, ok() is false and setupError() says why.
  static ControllerHarness& Instance();
  ~ControllerHarness();

  bool ok() const { return setupError_.empty(); }
  const std::string& setupError() const { return setupError_; }
  const std::string& kubeconfig() const { return kubeconfig_; }

  kube::RestClient& client() { return *client_; }
  // The controller instances' client: it counts their API writes (the harness's own requests go
  // through client() and are not counted).
  const WriteCountingKubeClient& controllerClient() const { return *controllerClient_; }
  adapters::InProcessTestAdapter& backend() { return *backend_; }
  const RecordingAdapter& calls() const { return *recording_; }
  LogCapture& logs() { return *logs_; }

  // Backend reachable, cancels honoured, no crash armed.
  void ResetBackend();

  // --- the controller -----------------------------------------------------------------------
  // Starts a new JobController instance (stopping any current one first) and waits until its
  // informers synced.
  Status StartController(const ControllerSettings& settings = {});
  // Stops the current instance (after its workers' current rounds) and destroys it.
  void StopController();
  // StopController + StartController with the same settings: a restart of the process.
  Status RestartController();
  bool ControllerRunning() const { return instance_ != nullptr; }
  controller::JobController& controller() { return *instance_->controller; }
  obs::Registry& metrics() { return *instance_->metrics; }

  // Makes the reconciler of the current and later instances crash once at `point` (one of
  // controller::kCrash*) for the first Job `match` accepts; then the crash is disarmed.
  void ArmCrash(std::string point, std::function<bool(const api::Job&)> match);
  // Arms a crash for the Job ns/name.
  void ArmCrash(std::string point, const std::string& ns, const std::string& name);
  void DisarmCrash();
  // Waits until the current instance crashed; the UID it crashed for is crashedUid().
  bool WaitCrashed(std::chrono::milliseconds timeout = 20s);
  std::string crashedUid() const;

  // --- the API ------------------------------------------------------------------------------
  // A namespace of its own for one test ("<prefix>-<pid>-<n>").
  std::string CreateNamespace(const std::string& prefix);
  StatusOr<api::Job> CreateJob(const nlohmann::json& manifest);
  StatusOr<api::Job> GetJob(const std::string& ns, const std::string& name);
  StatusOr<nlohmann::json> GetJobJson(const std::string& ns, const std::string& name);
  StatusOr<api::Job> PatchJob(const std::string& ns, const std::string& name,
                              const nlohmann::json& mergePatch);
  // Sets label ayatori-test/touch to a new value: an update event that changes nothing the
  // controller cares about.
  Status TouchJob(const std::string& ns, const std::string& name);
  Status DeleteJob(const std::string& ns, const std::string& name);

  // Polls the Job until `done` accepts it; `last` receives the last Job read (if any).
  bool WaitForJob(const std::string& ns, const std::string& name,
                  const std::function<bool(const api::Job&)>& done,
                  std::chrono::milliseconds timeout = 20s, api::Job* last = nullptr);
  // Polls until GET answers NotFound.
  bool WaitForJobGone(const std::string& ns, const std::string& name,
                      std::chrono::milliseconds timeout = 20s);

  // Creates or replaces a cluster-scoped JobClass served by the test backend.
  Status ApplyJobClass(const std::string& name, const nlohmann::json& spec = {},
                       const std::map<std::string, std::string>& annotations = {});
  Status DeleteJobClass(const std::string& name);
  // Names of the JobClasses annotated is-default-class=true.
  std::vector<std::string> DefaultJobClasses();
  Status AnnotateNamespace(const std::string& ns, const std::string& key,
                           const std::optional<std::string>& value);
  // Creates or replaces a Secret (type Opaque unless given) / ConfigMap with string data.
  Status ApplySecret(const std::string& ns, const std::string& name,
                     const std::map<std::string, std::string>& data,
                     const std::string& type = "Opaque");
  Status ApplyConfigMap(const std::string& ns, const std::string& name,
                        const std::map<std::string, std::string>& data);

  // DELETE requests for the Job ns/name that the API server accepted (2xx), by anyone using
  // this harness's client (the in-process controller and the harness itself).
  int SuccessfulJobDeletes(const std::string& ns, const std::string& name) const;

  // Deletes every Job of `ns` and waits for the controller to clean them up (starting one if
  // none is running); Jobs still present after `timeout` lose their finalizer by force, as the
  // runbook does, and are listed in the returned message ("" when all went the normal way).
  std::string CleanupNamespace(const std::string& ns, std::chrono::milliseconds timeout = 20s);

 private:
  ControllerHarness();
  void Setup();
  bool ShouldCrash(std::string_view point, const api::Job& job);

  struct Running {
    std::unique_ptr<obs::Registry> metrics;
    std::unique_ptr<kube::EventRecorder> events;
    std::unique_ptr<controller::JobController> controller;
  };

  std::string setupError_;
  std::string kubeconfig_;
  LogCapture* logs_ = nullptr;
  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<WriteCountingKubeClient> controllerClient_;
  std::shared_ptr<adapters::InProcessTestAdapter> backend_;
  std::shared_ptr<RecordingAdapter> recording_;
  adapters::AdapterRegistry registry_;
  std::unique_ptr<Running> instance_;
  ControllerSettings settings_;
  int instances_ = 0;

  mutable std::mutex crashMu_;
  std::string crashPoint_;
  std::function<bool(const api::Job&)> crashMatch_;
  std::string crashedUid_;

  mutable std::mutex deletesMu_;
  std::map<std::string, int> successfulDeletes_;  // "ns/name"
};

}  // namespace ayatori::testing
