// The execution adapter contract: Ensure / Observe / Cancel / Delete, each idempotent and keyed by
// the Job UID (docs/design.md § At most one execution per Job). Adapters report facts about the
// backend; the pure state machine (src/statemachine) decides what those facts mean for the Job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori {

// What the backend says about the one execution of a Job.
enum class ExecutionPhase {
  kAbsent,     // the backend has no execution for this UID (never created, or already deleted)
  kPending,    // the execution exists; its main process has not started yet
  kRunning,    // the main process is running
  kSucceeded,  // the main process exited 0
  kFailed,     // it failed: non-zero exit, OOM, image pull, provisioning, rejection
  kCancelled,  // it was stopped on our request before finishing by itself
  kUnknown,    // the backend could not be asked or answered ambiguously: NOT a failure
};

const char* ExecutionPhaseName(ExecutionPhase phase);

inline bool IsStopped(ExecutionPhase p) {
  return p == ExecutionPhase::kSucceeded || p == ExecutionPhase::kFailed ||
         p == ExecutionPhase::kCancelled;
}

struct Observation {
  ExecutionPhase phase = ExecutionPhase::kUnknown;
  std::optional<api::Time> startedAt;   // when the main process started, if the backend knows
  std::optional<api::Time> finishedAt;  // when it stopped, if the backend knows
  std::optional<int32_t> exitCode;      // main process exit code, when the backend can tell
  // Stable PascalCase classification for kFailed (ProcessFailed, OOMKilled, ImagePullFailed,
  // BackendRejected, ...) or the cause of kUnknown (BackendUnreachable, ...). For kPending: why
  // the task has not started yet when the backend says so (Unschedulable, FailedCreate,
  // CreateContainerConfigError, ImagePullBackOff, ImagePulling, SecretNotFound, ...), shown in
  // the Job's Succeeded message and a Warning Event; empty while it is just on its way. kPending
  // with a reason and no references from Ensure means nothing was created: it waits.
  std::string reason;
  std::string message;  // for humans; never carries Secret values or request bodies
  // The stable references to persist in status.execution (type/id only, no credentials).
  std::vector<api::ExecutionReference> references;
  // kUnknown only: the execution has ended (nothing of it runs any more) but its result is not
  // known, e.g. the engine lost its exit status. The Job stays ResultUnknown; one being deleted
  // has the execution removed, as nothing is left to stop.
  bool ended = false;
};

// A value that must never be logged or printed: Secret contents, registry passwords.
class SensitiveString {
 public:
  SensitiveString() = default;
  explicit SensitiveString(std::string v) : value_(std::move(v)) {}
  const std::string& reveal() const { return value_; }
  bool operator==(const SensitiveString&) const = default;

 private:
  std::string value_;
};

struct ResolvedEnvVar {
  std::string name;
  SensitiveString value;
};

// Everything an adapter needs to run a Job, resolved by the controller beforehand.
struct ExecutionRequest {
  api::Job job;                         // metadata (namespace, name, uid) and spec
  api::ResolvedJobClass jobClass;       // as written to status.resolvedJobClass
  nlohmann::json parameters;            // the class's typed parameters object, as JSON
  api::ResourceRequirements resources;  // status.effectiveResources
  // Literal and resolved env in spec order. Filled only for adapters that cannot pass references
  // (Docker, OpenSandbox) and only when the class allows Secret forwarding; the Kubernetes adapter
  // passes the spec's references through untouched.
  std::vector<ResolvedEnvVar> resolvedEnv;
  // Contents of the Job's kubernetes.io/dockerconfigjson imagePullSecrets, in spec order.
  std::vector<SensitiveString> imagePullConfigs;
  // As ExecutionKey::resultUnknown: an Ensure that finds the execution already there may find an
  // end recorded while nobody could confirm it.
  bool resultUnknown = false;
  // Set only for an adapter whose descriptor says recordsAcceptance, when the controller has not
  // written the Job's acceptance yet (a busy controller folds it into the Job's next write): the
  // accepted status as JSON. Ensure stores it with the execution it creates, in the same
  // request, so that after a restart RecordedAcceptance finds which class and backend the
  // execution was created for. Never holds a Secret value (a status never does).
  std::string acceptance;
  // Called by Ensure immediately before the request that creates the execution, never when it
  // finds one to adopt: the controller reads the Job fresh from the API server and answers OK only
  // if that Job still wants the execution the round decided on (same UID and resourceVersion:
  // not cancelled, not being deleted since). Any other answer: create nothing and return
  // NotCreated() (the controller decides again on the fresh Job). Unset: create (unit tests).
  std::function<Status()> confirmCreate;

  // confirmCreate allows the create (or is unset).
  bool CreateConfirmed() const { return !confirmCreate || confirmCreate().ok(); }
};

// Reason of the Observation an Ensure returns when confirmCreate refused the create.
inline constexpr const char* kReasonCreateNotConfirmed = "CreateNotConfirmed";
// What Ensure returns when confirmCreate refused the create: nothing exists, nothing was made.
Observation NotCreated();

// Identifies an existing execution: the Job UID is the idempotency key; references are hints.
struct ExecutionKey {
  std::string uid;
  std::string namespace_;
  std::string name;
  std::vector<api::ExecutionReference> references;
  nlohmann::json parameters;
  // The Job is in a ResultUnknown episode (Succeeded=Unknown/ResultUnknown): at the last look
  // the controller could not confirm the task's state, so an end the backend reports now may
  // have been recorded while nobody could confirm it; an adapter that knows how its backend
  // marks a lost result (Docker: exit code 255) keeps such an end unknown.
  bool resultUnknown = false;
};

// `parameters` (a parameters object as JSON, or {}) with spec.<key> = value for every pinned
// field: what an adapter call of an accepted Job receives.
nlohmann::json WithPinnedParameters(nlohmann::json parameters,
                                    const std::map<std::string, std::string>& pinned);

// The typed, cluster-scoped object a JobClass's parametersRef names for an adapter.
struct ParametersKind {
  std::string group;     // API group, e.g. execution.ayatori.ddupan.top
  std::string version;   // e.g. v1alpha1
  std::string kind;      // e.g. DockerExecutionParameters
  std::string resource;  // plural resource name, e.g. dockerexecutionparameters
  // Spec fields the adapter honours. A parameters object that sets any other field asks for
  // something this adapter does not do, and its class is refused (RequirementsNotEnforced).
  std::vector<std::string> fields;
  bool operator==(const ParametersKind&) const = default;
};

// What an adapter guarantees for every execution it runs. Fail-closed: an adapter claims only
// what it enforces, and a Job whose class asks for anything else is refused at acceptance
// (RequirementsNotEnforced in src/adapters/registry.h), never run with the ask ignored. A
// default-constructed Enforcement claims nothing.
struct Enforcement {
  bool memoryLimit = false;    // limits.memory caps the task's memory
  bool cpuLimit = false;       // limits.cpu caps the task's CPU time
  bool egressDeny = false;     // the task can be kept from opening outbound connections
  bool isolation = false;      // the task runs in its own container, pod or sandbox boundary
  bool imagePullAuth = false;  // the Job's imagePullSecrets authenticate its image pull
  bool operator==(const Enforcement&) const = default;

  // Every guarantee: for in-process test backends, which run nothing that could escape one.
  static Enforcement Everything() { return {true, true, true, true, true}; }
};

// Why a Job is refused at acceptance: a stable PascalCase reason (the Accepted=False condition's
// reason, docs/api.md) and a message for humans that never shows backend configuration or Secret
// values.
struct Refusal {
  // The reasons of refusals by Adapter::Validate (Adapter::AcceptanceRefusal).
  static constexpr const char* kBackendRejected = "BackendRejected";
  static constexpr const char* kNotEnforceable = "NotEnforceable";

  std::string reason;
  std::string message;
  bool operator==(const Refusal&) const = default;
};

// One adapter describes itself to the controller with this value (src/adapters/<backend>/ each
// define theirs); registering it (AdapterRegistry::Register) is all the controller needs to
// serve the backend: the parameters informer, env handling and the enforcement check follow.
struct AdapterDescriptor {
  // The JobClass spec.controllerName the adapter serves.
  std::string controllerName;
  // nullopt: the adapter takes no parameters object; a class that names one is refused.
  std::optional<ParametersKind> parameters;
  // Non-empty: a JobClass for controllerName must name a parameters object, and this says why
  // (OpenSandbox: "it holds the server endpoint"); the JobClass CRD's CEL rule for the
  // controllerName, which `make generate` writes (src/adapters/manifests.h), refuses a class
  // without one with this in its message. Empty: the parameters object is optional.
  std::string parametersRequiredBecause;
  // True: the backend resolves env secretKeyRef/configMapKeyRef and imagePullSecrets itself
  // (Kubernetes: the kubelet), so the controller passes the references and never reads values.
  // False: the controller resolves them into ExecutionRequest.resolvedEnv/imagePullConfigs, and
  // Secret values only when the class allows forwarding.
  bool resolvesEnvReferences = false;
  Enforcement enforces;
  // What a parameters object (as JSON, or {} without one) asks the backend to enforce, beyond
  // the resource limits and image auth every Job may ask for (e.g. networkMode none asks for
  // egress deny). Null: the parameters ask for nothing of the kind.
  std::function<Enforcement(const nlohmann::json& parameters)> parametersAsk;
  // Refuses, at acceptance, a parameters object (as JSON, spec overrides laid over it) that the
  // adapter will never run a Job with, under a reason of its own (Docker: InsecureEndpoint for a
  // plain-HTTP engine endpoint). nullopt, or a null function: nothing to refuse here. Part of
  // the one acceptance check, adapters::RefusedAtAcceptance (src/adapters/registry.h).
  std::function<std::optional<Refusal>(const nlohmann::json& parameters)> refuseParameters;
  // True: Ensure stores ExecutionRequest::acceptance with the execution it creates and
  // Adapter::RecordedAcceptance finds it again by the Job's UID without a backend request unless
  // there is one (Kubernetes: an annotation of the batch Job, found in the adapter's watch
  // cache). Only then may a busy controller create the execution before it writes Accepted=True
  // (docs/design.md § At most one execution per Job).
  bool recordsAcceptance = false;
  // True: a Job without spec.task.command runs the image's entrypoint with spec.task.args, as the
  // spec says. False (OpenSandbox: execd runs a command line in a sandbox and the adapter cannot
  // read the image's entrypoint): such a Job is refused at acceptance with reason
  // CommandRequired (RefusedAtAcceptance) instead of running something else.
  bool runsImageEntrypoint = true;
  // True: the parameters' spec.nodeSelector and spec.tolerations place the task (Kubernetes). For
  // a Job queued through Kueue the controller lays the nodeLabels and tolerations of the
  // ResourceFlavors its Workload was admitted on over them before Ensure (docs/queueing.md), as
  // Kueue's own integrations do with their pod templates.
  bool placedByFlavors = false;
  // Values laid over spec.<field> of every parameters object of the kind as it is read, e.g.
  // the Docker endpoint of --docker-endpoint. Set by whoever registers the adapter.
  std::map<std::string, std::string> specOverrides;
};

// What a reader of an execution's output asks for (the query of the jobs/log subresource,
// docs/kubectl-ayatori.md "Logs"). Backends apply what they can natively; unset means all.
struct LogOptions {
  bool follow = false;                  // keep streaming until the execution ends
  std::optional<int64_t> tailLines;     // only the last N lines (>= 0)
  std::optional<int64_t> sinceSeconds;  // only what was printed in the last S seconds (> 0)
  bool timestamps = false;              // prefix each line with its RFC 3339 time, if known
  // Requested when the reader has gone: a backend that can end a blocked read (one waiting on
  // a silent execution) ends it then; the others end at their next output (the sink returns
  // false).
  std::stop_token stop;
};

// Receives output bytes as they arrive; returning false ends the stream (the reader left).
using LogSink = std::function<bool(std::string_view)>;

// Where the last `lines` lines of `text` start (a final line without its newline counts as a
// line, as kubectl logs --tail counts it): 0 when `text` has no more lines than that. For
// backends that keep the output as one text (OpenSandbox execd).
size_t LastLinesOffset(std::string_view text, int64_t lines);

class Adapter {
 public:
  virtual ~Adapter() = default;

  // Short name written to status.execution.adapter ("docker", "kubernetes", ...).
  virtual std::string Name() const = 0;

  // Starts background machinery (event streams, watches). `notify(namespace, name)` is called
  // whenever an execution of that Job may have changed, so the controller re-observes it instead
  // of polling. The JobController that uses an adapter calls Start() once, when it starts, and
  // Stop() when it stops for good; an adapter need not start again after Stop() (the Kubernetes
  // adapter refuses to).
  virtual Status Start(std::function<void(const std::string&, const std::string&)> notify) = 0;
  virtual void Stop() {}

  // Checks, before the Job is accepted, that the backend can honour the request (resources,
  // image auth, parameters). A non-OK status is a permanent refusal with a clear message.
  // kFailedPrecondition means the backend as it is cannot enforce what the class asks (e.g.
  // Docker: an OCI runtime the engine does not have); AcceptanceRefusal says what each means.
  virtual Status Validate(const ExecutionRequest& request) = 0;

  // The refusal a Job gets at acceptance from this adapter (its Accepted=False reason and
  // message), nullopt when the backend can honour the request. The controller asks this, never
  // Validate, so that the reason is the adapter's word, not a guess from a status code.
  // Refusals of the parameters alone are the descriptor's (AdapterDescriptor::refuseParameters),
  // checked before this. The default answers from Validate: kFailedPrecondition is
  // NotEnforceable, any other error BackendRejected (docs/api.md lists the reasons); an adapter
  // that knows more overrides it with a reason of its own.
  virtual std::optional<Refusal> AcceptanceRefusal(const ExecutionRequest& request) {
    Status validated = Validate(request);
    if (validated.ok()) return std::nullopt;
    return Refusal{validated.code() == StatusCode::kFailedPrecondition ? Refusal::kNotEnforceable
                                                                       : Refusal::kBackendRejected,
                   validated.message()};
  }

  // The fields of the parameters' spec that decide which backend holds a Job's execution and
  // what it is (Docker: the engine endpoint, network mode, runtime), with the values they have
  // in `parameters` (the class's parameters object as JSON, or {} without one), defaults filled
  // in. Called at acceptance, after Validate accepted `parameters`; the controller records the
  // result in a backend snapshot (src/controller/backend_snapshot.h; the Job's status names it,
  // status.resolvedJobClass.backendSnapshot) and lays it over the parameters of every
  // later call (WithPinnedParameters), so editing, deleting or replacing the parameters object
  // never moves an accepted Job to another backend. Fields left out (credentials, grace periods)
  // are read from the parameters object at each call. Keys are spec field names of string fields.
  virtual std::map<std::string, std::string> PinnedParameters(
      const nlohmann::json& parameters) const {
    (void)parameters;
    return {};
  }

  // Establishes the one execution for request.job's UID: looks it up by UID first and adopts it,
  // creates it only if absent. Never creates a second one. Returns what it then observes.
  virtual Observation Ensure(const ExecutionRequest& request) = 0;

  // Reads the execution's current state.
  virtual Observation Observe(const ExecutionKey& key) = 0;

  // For adapters that record the acceptance (AdapterDescriptor::recordsAcceptance): the
  // ExecutionRequest::acceptance stored with the execution of the Job `uid` in namespace `ns`,
  // or nullopt when the adapter holds no execution of that UID (or none created with one).
  // Asked for every round of a Job whose acceptance is not written, so it must answer from a
  // cache and go to the backend only when an execution is there; an error when it cannot tell.
  virtual StatusOr<std::optional<std::string>> RecordedAcceptance(const std::string& ns,
                                                                  const std::string& uid) {
    (void)ns;
    (void)uid;
    return std::optional<std::string>();
  }

  // Requests that the execution stop; repeatable. Returns the observation after the request:
  // kCancelled/kSucceeded/kFailed once the backend confirms it is stopped, kRunning while stopping,
  // kUnknown with `ended` when it had ended by itself but how is not known.
  virtual Observation Cancel(const ExecutionKey& key) = 0;

  // Removes backend resources of the execution; repeatable; OK when nothing is left.
  virtual Status Delete(const ExecutionKey& key) = 0;

  // Writes what the execution printed (stdout and stderr, interleaved as the backend keeps
  // them) to `sink`; with options.follow, keeps writing until the execution ends. kNotFound when
  // the execution does not exist (never created, or removed); kUnavailable when the backend
  // cannot be reached; kFailedPrecondition when the backend keeps no output. Messages never carry
  // credentials. Called from the log API's threads, concurrently with the other calls.
  virtual Status StreamLogs(const ExecutionKey& key, const LogOptions& options,
                            const LogSink& sink) {
    (void)key;
    (void)options;
    (void)sink;
    return Status(StatusCode::kFailedPrecondition,
                  "the " + Name() + " backend does not keep the output of its executions");
  }
};

}  // namespace ayatori
