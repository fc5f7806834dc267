// Every constraint of the CRDs in config/crd, proven by the real kube-apiserver: each case creates
// an object (and optionally changes it) with kubectl and expects either success or a rejection
// whose message contains the constraint's message. Each rejected case sits next to a good
// neighbour that the apiserver accepts, so a rule that rejected everything would fail too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <optional>
#include <ostream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "test/integration/crd_kubectl.h"
#include "test/support/testenv.h"

namespace ayatori::testing {
namespace {

using ::testing::HasSubstr;

// ---- building objects ---------------------------------------------------------------------------

// {NS} and {NAME} are replaced by a fresh namespace and a unique name when the case runs.
std::string Object(const std::string& kind, bool namespaced, const std::string& spec,
                   const std::string& name = "{NAME}") {
  std::string yaml = "apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: " + kind +
                     "\nmetadata: {name: " + name + (namespaced ? ", namespace: {NS}}" : "}") +
                     "\n";
  if (!spec.empty()) yaml += "spec: " + spec + "\n";
  return yaml;
}
std::string Job(const std::string& spec) { return Object("Job", true, spec); }
std::string JobNamed(const std::string& name, const std::string& spec) {
  return Object("Job", true, spec, name);
}
std::string JobClass(const std::string& spec) { return Object("JobClass", false, spec); }
std::string Docker(const std::string& spec) {
  return Object("DockerExecutionParameters", false, spec);
}
std::string Kube(const std::string& spec) {
  return Object("KubernetesExecutionParameters", false, spec);
}
std::string Sandbox(const std::string& spec) {
  return Object("OpenSandboxExecutionParameters", false, spec);
}

// A change: a JSON merge patch or JSON patch, to the object or to its status subresource.
struct Step {
  bool status = false;
  std::string type;  // merge | json
  std::string patch;
};
Step Merge(const std::string& patch) { return {false, "merge", patch}; }
Step JsonPatch(const std::string& patch) { return {false, "json", patch}; }
Step StatusMerge(const std::string& body) {
  return {true, "merge", R"({"status":{)" + body + "}}"};
}
Step StatusJsonPatch(const std::string& patch) { return {true, "json", patch}; }

constexpr const char* kT0 = "2026-01-01T00:00:00Z";

std::string Cond(const std::string& type, const std::string& status, const std::string& reason) {
  return R"({"type":")" + type + R"(","status":")" + status + R"(","reason":")" + reason +
         R"(","message":"","lastTransitionTime":")" + kT0 + R"("})";
}
const std::string kScheduled = Cond("Scheduled", "True", "BackendCreated");
const std::string kRunning = Cond("Succeeded", "Unknown", "Running");
const std::string kCompleted = Cond("Succeeded", "True", "Completed");
const std::string kFailed = Cond("Succeeded", "False", "ProcessFailed");
std::string Conditions(const std::string& a, const std::string& b = "") {
  return R"("conditions":[)" + a + (b.empty() ? "" : "," + b) + "]";
}
const std::string kResolved =
    R"("resolvedJobClass":{"name":"gold","uid":"8aa4c1f0-0000-4000-8000-000000000001",)"
    R"("controllerName":"execution.ayatori.ddupan.top/docker","parametersRef":)"
    R"({"group":"execution.ayatori.ddupan.top","kind":"DockerExecutionParameters",)"
    R"("name":"default","uid":"c4130000-0000-4000-8000-000000000002"}})";
// A class resolved with its backend pinned (status.resolvedJobClass.backendSnapshot).
const std::string kPinnedResolved =
    R"("resolvedJobClass":{"name":"gold","controllerName":"execution.ayatori.ddupan.top/docker",)"
    R"("backendSnapshot":"ayatori-backend-0123456789abcdef"})";
const std::string kExecution =
    R"("execution":{"adapter":"docker","references":[{"type":"Container","id":"abc123"}]})";
// The status of a Job whose process is running.
const Step kStarted = StatusMerge(Conditions(kScheduled, kRunning) + R"(,"startTime":")" + kT0 +
                                  R"(",)" + kResolved + "," + kExecution);
// ... and of one that completed.
const Step kFinished = StatusMerge(
    Conditions(kScheduled, kCompleted) +
    R"(,"completionTime":"2026-01-01T00:05:00Z","result":{"exitCode":0,"reason":"Completed"})");

const std::string kMinimalJob = "{task: {image: busybox}}";
const std::string kFullJob =
    "{jobClassName: gold, task: {image: busybox, command: [sh, -c], args: ['echo hi'], "
    "env: [{name: A, value: a}]}, resources: {requests: {cpu: 100m, memory: 64Mi}, "
    "limits: {cpu: '1', memory: 128Mi}}, activeDeadlineSeconds: 600, ttlSecondsAfterFinished: 60}";

std::string Repeated(const std::string& item, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i == 0 ? "" : ", ") + item;
  return s;
}

// `n` two-byte UTF-8 characters (é), quoted for YAML.
std::string Utf8Run(int n) {
  std::string s = "'";
  for (int i = 0; i < n; ++i) s += "\xC3\xA9";
  return s + "'";
}

// `count` env entries E00..E<count-1> (3-byte names) with literal values of `valueBytes` bytes.
std::string EnvRun(int count, int valueBytes) {
  std::string s;
  for (int i = 0; i < count; ++i) {
    const std::string name =
        std::string("E") + static_cast<char>('0' + i / 10) + static_cast<char>('0' + i % 10);
    s += (i == 0 ? "" : ", ") +
         ("{name: " + name + ", value: " + std::string(valueBytes, 'v') + "}");
  }
  return s;
}

// ---- the table
// ------------------------------------------------------------------------------------

struct Case {
  std::string description;
  std::string object;               // created first
  std::vector<Step> setup = {};     // then applied, each must succeed
  std::optional<Step> update = {};  // the change under test; absent: the create is under test
  std::string error = {};           // substring of the rejection; empty: accepted
  std::vector<std::pair<std::string, std::string>> expect = {};  // jsonpath -> value, if accepted
};

std::vector<Case> JobSpecCases() {
  return {
      {.description = "minimal Job accepted and desiredState defaults to Running",
       .object = Job(kMinimalJob),
       .expect = {{"{.spec.desiredState}", "Running"}}},
      {.description = "Job with every field accepted", .object = Job(kFullJob)},
      {.description = "task required",
       .object = Job("{jobClassName: gold}"),
       .error = "spec.task: Required value"},
      {.description = "image required",
       .object = Job("{task: {command: [sh]}}"),
       .error = "spec.task.image: Required value"},
      {.description = "image must not be empty",
       .object = Job("{task: {image: ''}}"),
       .error = "spec.task.image must be a non-empty OCI image reference without spaces"},
      {.description = "image must not contain spaces",
       .object = Job("{task: {image: 'alpine 3'}}"),
       .error = "spec.task.image must be a non-empty OCI image reference without spaces"},
      {.description = "image with registry and digest accepted",
       .object = Job("{task: {image: 'registry.example.com:5000/team/app@sha256:"
                     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'}}")},
      {.description = "workingDir must be absolute",
       .object = Job("{task: {image: busybox, workingDir: workspace}}"),
       .error = "spec.task.workingDir must be an absolute path"},
      {.description = "absolute workingDir accepted",
       .object = Job("{task: {image: busybox, workingDir: /workspace}}")},
      {.description = "command limited to 64 items",
       .object = Job("{task: {image: busybox, command: [" + Repeated("x", 65) + "]}}"),
       .error = "must have at most 64 items"},
      {.description = "command of 64 items accepted",
       .object = Job("{task: {image: busybox, command: [" + Repeated("x", 64) + "]}}")},
      // Totals (docs/api.md § Limits at a glance): 256 KiB of argv, 256 KiB of env names and
      // literal values, in bytes of UTF-8.
      {.description = "argv of more than 256 KiB rejected",
       .object = Job("{task: {image: busybox, command: [" + Repeated(std::string(4096, 'c'), 32) +
                     "], args: [" + Repeated(std::string(8192, 'a'), 16) + ", x]}}"),
       .error = "spec.task.command and spec.task.args together must be at most 262144 bytes"},
      {.description = "argv of exactly 256 KiB accepted",
       .object = Job("{task: {image: busybox, command: [" + Repeated(std::string(4096, 'c'), 32) +
                     "], args: [" + Repeated(std::string(8192, 'a'), 16) + "]}}")},
      {.description = "argv counted in bytes, not characters",
       .object = Job("{task: {image: busybox, args: [" + Repeated(Utf8Run(4096), 33) + "]}}"),
       .error = "spec.task.command and spec.task.args together must be at most 262144 bytes"},
      {.description = "argv of two-byte characters within 256 KiB accepted",
       .object = Job("{task: {image: busybox, args: [" + Repeated(Utf8Run(4095), 32) + "]}}")},
      {.description = "env of more than 256 KiB rejected",
       .object = Job("{task: {image: busybox, env: [" + EnvRun(32, 8192 - 3) +
                     ", {name: X, value: ''}]}}"),
       .error = "spec.task.env names and literal values together must be at most 262144 bytes"},
      {.description = "env of exactly 256 KiB accepted",
       .object = Job("{task: {image: busybox, env: [" + EnvRun(32, 8192 - 3) + "]}}")},
      {.description = "an env reference's name counts toward the env total",
       .object = Job("{task: {image: busybox, env: [" + EnvRun(32, 8192 - 3) +
                     ", {name: R, valueFrom: {secretKeyRef: {name: s, key: k}}}]}}"),
       .error = "spec.task.env names and literal values together must be at most 262144 bytes"},
      {.description = "an env reference's Secret name and key do not count toward the env total",
       .object = Job("{task: {image: busybox, env: [" + EnvRun(32, 8192 - 4) +
                     ", {name: R, valueFrom: {secretKeyRef: {name: s, key: " +
                     std::string(253, 'k') + "}}}]}}")},
      {.description = "env with value and valueFrom rejected",
       .object = Job("{task: {image: busybox, env: [{name: A, value: a, valueFrom: "
                     "{configMapKeyRef: {name: c, key: k}}}]}}"),
       .error = "each spec.task.env entry must set exactly one of value or valueFrom"},
      {.description = "env with neither value nor valueFrom rejected",
       .object = Job("{task: {image: busybox, env: [{name: A}]}}"),
       .error = "each spec.task.env entry must set exactly one of value or valueFrom"},
      {.description = "env with an empty literal value accepted",
       .object = Job("{task: {image: busybox, env: [{name: A, value: ''}]}}")},
      {.description = "valueFrom with secretKeyRef and configMapKeyRef rejected",
       .object = Job("{task: {image: busybox, env: [{name: A, valueFrom: {secretKeyRef: "
                     "{name: s, key: k}, configMapKeyRef: {name: c, key: k}}}]}}"),
       .error = "spec.task.env valueFrom must set exactly one of secretKeyRef or configMapKeyRef"},
      {.description = "empty valueFrom rejected",
       .object = Job("{task: {image: busybox, env: [{name: A, valueFrom: {}}]}}"),
       .error = "spec.task.env valueFrom must set exactly one of secretKeyRef or configMapKeyRef"},
      {.description = "valueFrom secretKeyRef accepted",
       .object = Job("{task: {image: busybox, env: [{name: A, valueFrom: {secretKeyRef: "
                     "{name: s, key: k, optional: true}}}]}}")},
      {.description = "valueFrom configMapKeyRef accepted",
       .object = Job("{task: {image: busybox, env: [{name: A, valueFrom: {configMapKeyRef: "
                     "{name: c, key: k}}}]}}")},
      {.description = "secretKeyRef needs a key",
       .object = Job("{task: {image: busybox, env: [{name: A, valueFrom: {secretKeyRef: "
                     "{name: s}}}]}}"),
       .error = "spec.task.env[0].valueFrom.secretKeyRef.key: Required value"},
      {.description = "duplicate env names rejected",
       .object = Job("{task: {image: busybox, env: [{name: A, value: a}, {name: B, value: b}, "
                     "{name: A, value: c}]}}"),
       .error = "spec.task.env names must be unique"},
      {.description = "distinct env names accepted",
       .object = Job("{task: {image: busybox, env: [{name: A, value: a}, {name: B, value: b}, "
                     "{name: _a.b-1, value: c}]}}")},
      {.description = "env name starting with a digit rejected",
       .object = Job("{task: {image: busybox, env: [{name: 1A, value: a}]}}"),
       .error = "spec.task.env names must consist of letters, digits"},
      {.description = "env name with equals sign rejected",
       .object = Job("{task: {image: busybox, env: [{name: 'A=B', value: a}]}}"),
       .error = "spec.task.env names must consist of letters, digits"},
      {.description = "duplicate imagePullSecrets rejected",
       .object = Job("{task: {image: busybox, imagePullSecrets: [{name: r}, {name: r}]}}"),
       .error = "Duplicate value"},
      {.description = "imagePullSecrets accepted",
       .object = Job("{task: {image: busybox, imagePullSecrets: [{name: r1}, {name: r2}]}}")},
      {.description = "jobClassName must be an object name",
       .object = Job("{jobClassName: Gold_Class, task: {image: busybox}}"),
       .error = "spec.jobClassName must be the name of a JobClass"},
      {.description = "jobClassName with dots accepted",
       .object = Job("{jobClassName: gold.v1, task: {image: busybox}}")},
      {.description = "name longer than 63 characters rejected",
       .object = JobNamed(std::string(64, 'a'), kMinimalJob),
       .error = "metadata.name: Too long: may not be more than 63"},
      {.description = "name of 63 characters accepted",
       .object = JobNamed(std::string(63, 'a'), kMinimalJob)},
      {.description = "cpu request above cpu limit rejected",
       .object = Job("{task: {image: busybox}, resources: {requests: {cpu: 1500m}, limits: "
                     "{cpu: '1'}}}"),
       .error = "resources.requests.cpu must be less than or equal to resources.limits.cpu"},
      {.description = "cpu request equal to cpu limit written differently accepted",
       .object = Job("{task: {image: busybox}, resources: {requests: {cpu: 1000m}, limits: "
                     "{cpu: 1}}}")},
      {.description = "memory request above memory limit rejected",
       .object = Job("{task: {image: busybox}, resources: {requests: {memory: 1Gi}, limits: "
                     "{memory: 1000Mi}}}"),
       .error = "resources.requests.memory must be less than or equal to resources.limits.memory"},
      {.description = "memory request in decimal units below binary limit accepted",
       .object = Job("{task: {image: busybox}, resources: {requests: {memory: 1G}, limits: "
                     "{memory: 1Gi}}}")},
      {.description = "requests without limits accepted",
       .object = Job("{task: {image: busybox}, resources: {requests: {cpu: 2, memory: 1Gi}}}")},
      {.description = "malformed quantity rejected",
       .object = Job("{task: {image: busybox}, resources: {requests: {cpu: one}}}"),
       .error = "spec.resources.requests.cpu in body should match"},
      {.description = "negative quantity string rejected",
       .object = Job("{task: {image: busybox}, resources: {limits: {memory: '-1Mi'}}}"),
       .error = "spec.resources.limits.memory in body should match"},
      {.description = "negative quantity number rejected",
       .object = Job("{task: {image: busybox}, resources: {limits: {cpu: -1}}}"),
       .error = "spec.resources.limits.cpu in body should be greater than or equal to 0"},
      {.description = "resources other than cpu and memory rejected",
       .object = Job("{task: {image: busybox}, resources: {limits: {nvidia.com/gpu: 1}}}"),
       .error = R"(unknown field "spec.resources.limits.nvidia.com/gpu")"},
      {.description = "unknown Job field rejected",
       .object = Job("{task: {image: busybox}, retries: 3}"),
       .error = R"(unknown field "spec.retries")"},
      {.description = "activeDeadlineSeconds zero rejected",
       .object = Job("{task: {image: busybox}, activeDeadlineSeconds: 0}"),
       .error = "spec.activeDeadlineSeconds in body should be greater than or equal to 1"},
      {.description = "activeDeadlineSeconds one accepted",
       .object = Job("{task: {image: busybox}, activeDeadlineSeconds: 1}")},
      {.description = "ttlSecondsAfterFinished negative rejected",
       .object = Job("{task: {image: busybox}, ttlSecondsAfterFinished: -1}"),
       .error = "spec.ttlSecondsAfterFinished in body should be greater than or equal to 0"},
      {.description = "ttlSecondsAfterFinished zero accepted",
       .object = Job("{task: {image: busybox}, ttlSecondsAfterFinished: 0}")},
      {.description = "desiredState outside the enum rejected",
       .object = Job("{task: {image: busybox}, desiredState: Paused}"),
       .error = R"(Unsupported value: "Paused": supported values: "Running", "Cancelled")"},
      {.description = "Job created Cancelled accepted",
       .object = Job("{task: {image: busybox}, desiredState: Cancelled}"),
       .expect = {{"{.spec.desiredState}", "Cancelled"}}},
  };
}

std::vector<Case> JobUpdateCases() {
  const std::string immutableTask =
      "spec.task is immutable: create a new Job to run a different task";
  const std::string immutableClass = "spec.jobClassName is immutable";
  const std::string immutableResources = "spec.resources is immutable";
  const std::string immutableDeadline = "spec.activeDeadlineSeconds is immutable";
  const std::string noResume = "spec.desiredState can only change from Running to Cancelled";
  return {
      {.description = "task image change rejected",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"task":{"image":"alpine"}}})"),
       .error = immutableTask},
      {.description = "task env change rejected",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"task":{"env":[{"name":"A","value":"b"}]}}})"),
       .error = immutableTask},
      {.description = "task workingDir added rejected",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"task":{"workingDir":"/tmp"}}})"),
       .error = immutableTask},
      {.description = "task sent unchanged accepted",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"task":{"image":"busybox"}}})")},
      {.description = "jobClassName change rejected",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"jobClassName":"silver"}})"),
       .error = immutableClass},
      {.description = "jobClassName added rejected",
       .object = Job(kMinimalJob),
       .update = Merge(R"({"spec":{"jobClassName":"silver"}})"),
       .error = immutableClass},
      {.description = "jobClassName removed rejected",
       .object = Job(kFullJob),
       .update = JsonPatch(R"([{"op":"remove","path":"/spec/jobClassName"}])"),
       .error = immutableClass},
      {.description = "jobClassName sent unchanged accepted",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"jobClassName":"gold"}})")},
      {.description = "resources change rejected",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"resources":{"limits":{"cpu":"2"}}}})"),
       .error = immutableResources},
      {.description = "resources added rejected",
       .object = Job(kMinimalJob),
       .update = Merge(R"({"spec":{"resources":{"limits":{"cpu":"2"}}}})"),
       .error = immutableResources},
      {.description = "resources removed rejected",
       .object = Job(kFullJob),
       .update = JsonPatch(R"([{"op":"remove","path":"/spec/resources"}])"),
       .error = immutableResources},
      {.description = "activeDeadlineSeconds change rejected",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"activeDeadlineSeconds":601}})"),
       .error = immutableDeadline},
      {.description = "activeDeadlineSeconds added rejected",
       .object = Job(kMinimalJob),
       .update = Merge(R"({"spec":{"activeDeadlineSeconds":60}})"),
       .error = immutableDeadline},
      {.description = "activeDeadlineSeconds removed rejected",
       .object = Job(kFullJob),
       .update = JsonPatch(R"([{"op":"remove","path":"/spec/activeDeadlineSeconds"}])"),
       .error = immutableDeadline},
      {.description = "ttlSecondsAfterFinished change accepted",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"ttlSecondsAfterFinished":7200}})"),
       .expect = {{"{.spec.ttlSecondsAfterFinished}", "7200"}}},
      {.description = "ttlSecondsAfterFinished added accepted",
       .object = Job(kMinimalJob),
       .update = Merge(R"({"spec":{"ttlSecondsAfterFinished":0}})"),
       .expect = {{"{.spec.ttlSecondsAfterFinished}", "0"}}},
      {.description = "ttlSecondsAfterFinished removed accepted",
       .object = Job(kFullJob),
       .update = JsonPatch(R"([{"op":"remove","path":"/spec/ttlSecondsAfterFinished"}])"),
       .expect = {{"{.spec.ttlSecondsAfterFinished}", ""}}},
      {.description = "ttlSecondsAfterFinished changed to negative rejected",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"ttlSecondsAfterFinished":-5}})"),
       .error = "spec.ttlSecondsAfterFinished in body should be greater than or equal to 0"},
      {.description = "Running to Cancelled accepted",
       .object = Job(kFullJob),
       .update = Merge(R"({"spec":{"desiredState":"Cancelled"}})"),
       .expect = {{"{.spec.desiredState}", "Cancelled"}}},
      {.description = "Cancelled to Running rejected",
       .object = Job(kFullJob),
       .setup = {Merge(R"({"spec":{"desiredState":"Cancelled"}})")},
       .update = Merge(R"({"spec":{"desiredState":"Running"}})"),
       .error = noResume},
      {.description = "desiredState removed after Cancelled rejected",
       .object = Job(kFullJob),
       .setup = {Merge(R"({"spec":{"desiredState":"Cancelled"}})")},
       .update = JsonPatch(R"([{"op":"remove","path":"/spec/desiredState"}])"),
       .error = noResume},
      {.description = "Cancelled sent again accepted",
       .object = Job(kFullJob),
       .setup = {Merge(R"({"spec":{"desiredState":"Cancelled"}})")},
       .update = Merge(R"({"spec":{"desiredState":"Cancelled","ttlSecondsAfterFinished":1}})"),
       .expect = {{"{.spec.desiredState}", "Cancelled"}}},
  };
}

std::vector<Case> JobStatusCases() {
  return {
      {.description = "status of a running Job accepted",
       .object = Job(kMinimalJob),
       .update = kStarted,
       .expect = {{"{.status.startTime}", kT0}, {"{.status.resolvedJobClass.name}", "gold"}}},
      {.description = "startTime before Scheduled is True rejected",
       .object = Job(kMinimalJob),
       .update = StatusMerge(Conditions(Cond("Scheduled", "False", "BackendPending")) +
                             R"(,"startTime":")" + kT0 + R"(")"),
       .error = "status.startTime requires the Scheduled condition to be True"},
      {.description = "startTime change rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusMerge(R"("startTime":"2026-01-01T00:00:01Z")"),
       .error = "status.startTime cannot change once set"},
      {.description = "startTime removal rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusJsonPatch(R"([{"op":"remove","path":"/status/startTime"}])"),
       .error = "status.startTime cannot change once set"},
      {.description = "startTime sent unchanged accepted",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update =
           StatusMerge(R"("startTime":")" + std::string(kT0) + R"(","observedGeneration":1)")},
      {.description = "Succeeded True without completionTime rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusMerge(Conditions(kScheduled, kCompleted)),
       .error = "status.completionTime must be set when the Succeeded condition is True or False"},
      {.description = "completionTime before startTime rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusMerge(Conditions(kScheduled, kFailed) +
                             R"(,"completionTime":"2025-12-31T23:59:59Z")"),
       .error = "status.completionTime must not be earlier than status.startTime"},
      {.description = "completion with time and result accepted",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = kFinished,
       .expect = {{"{.status.result.exitCode}", "0"},
                  {"{.status.conditions[?(@.type==\"Succeeded\")].reason}", "Completed"}}},
      {.description = "failure before start without startTime accepted",
       .object = Job(kMinimalJob),
       .update = StatusMerge(Conditions(kScheduled, Cond("Succeeded", "False", "ImagePullFailed")) +
                             R"(,"completionTime":")" + kT0 + R"(")")},
      {.description = "completionTime change rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted, kFinished},
       .update = StatusMerge(R"("completionTime":"2026-01-01T00:06:00Z")"),
       .error = "status.completionTime cannot change once set"},
      {.description = "finished Succeeded condition status change rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted, kFinished},
       .update = StatusMerge(Conditions(kScheduled, kFailed)),
       .error =
           "a finished Job's Succeeded condition (True or False) and its reason cannot change"},
      {.description = "finished Succeeded condition reason change rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted, kFinished},
       .update = StatusMerge(Conditions(kScheduled, Cond("Succeeded", "True", "Done"))),
       .error =
           "a finished Job's Succeeded condition (True or False) and its reason cannot change"},
      {.description = "finished Job observedGeneration update accepted",
       .object = Job(kMinimalJob),
       .setup = {kStarted, kFinished},
       .update = StatusMerge(R"("observedGeneration":2)"),
       .expect = {{"{.status.observedGeneration}", "2"}}},
      {.description = "result change after completion rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted, kFinished},
       .update = StatusMerge(R"("result":{"exitCode":1,"reason":"ProcessFailed"})"),
       .error = "status.result cannot change once status.completionTime is set"},
      {.description = "completionTime while Succeeded is Unknown rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusMerge(R"("completionTime":"2026-01-01T00:05:00Z")"),
       .error = "status.completionTime may only be set when the Succeeded condition is True or "
                "False"},
      {.description = "Accepted leaving True rejected",
       .object = Job(kMinimalJob),
       .setup = {StatusMerge(Conditions(Cond("Accepted", "True", "Valid"), kRunning))},
       .update = StatusMerge(Conditions(Cond("Accepted", "False", "NoDefaultJobClass"), kRunning)),
       .error = "the Accepted condition cannot leave True"},
      {.description = "Accepted False to True accepted",
       .object = Job(kMinimalJob),
       .setup = {StatusMerge(Conditions(Cond("Accepted", "False", "NoDefaultJobClass"), kRunning))},
       .update = StatusMerge(Conditions(Cond("Accepted", "True", "Valid"), kRunning))},
      {.description = "Scheduled leaving True rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusMerge(Conditions(Cond("Scheduled", "Unknown", "BackendPending"), kRunning)),
       .error = "the Scheduled condition cannot leave True"},
      {.description = "effectiveResources change rejected",
       .object = Job(kMinimalJob),
       .setup = {StatusMerge(R"("effectiveResources":{"limits":{"cpu":"1"}})")},
       .update = StatusMerge(R"("effectiveResources":{"limits":{"cpu":"2"}})"),
       .error = "status.effectiveResources cannot change once set"},
      {.description = "effectiveResources set accepted",
       .object = Job(kMinimalJob),
       .update = StatusMerge(R"("effectiveResources":{"requests":{"cpu":"100m","memory":"64Mi"},)"
                             R"("limits":{"cpu":"1","memory":"512Mi"}})"),
       .expect = {{"{.status.effectiveResources.limits.memory}", "512Mi"}}},
      {.description = "resolvedJobClass change rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusMerge(R"("resolvedJobClass":{"name":"silver"})"),
       .error = "status.resolvedJobClass cannot change once set"},
      {.description = "resolvedJobClass removal rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusJsonPatch(R"([{"op":"remove","path":"/status/resolvedJobClass"}])"),
       .error = "status.resolvedJobClass cannot change once set"},
      {.description = "backendSnapshot recorded with the class accepted",
       .object = Job(kMinimalJob),
       .update = StatusMerge(kPinnedResolved),
       .expect = {{"{.status.resolvedJobClass.backendSnapshot}",
                   "ayatori-backend-0123456789abcdef"}}},
      {.description = "backendSnapshot that is not a snapshot name rejected",
       .object = Job(kMinimalJob),
       .update = StatusMerge(
           R"("resolvedJobClass":{"name":"k","backendSnapshot":"unix:///run/engine-a.sock"})"),
       .error = "status.resolvedJobClass.backendSnapshot"},
      {.description = "pinned values are not part of the status (pruned)",
       .object = Job(kMinimalJob),
       .update = StatusMerge(
           R"("resolvedJobClass":{"name":"k","pinnedParameters":{"endpoint":"unix:///x.sock"}})"),
       .expect = {{"{.status.resolvedJobClass}", R"({"name":"k"})"}}},
      {.description = "backendSnapshot change rejected",
       .object = Job(kMinimalJob),
       .setup = {StatusMerge(kPinnedResolved)},
       .update = StatusMerge(
           R"("resolvedJobClass":{"backendSnapshot":"ayatori-backend-fedcba9876543210"})"),
       .error = "status.resolvedJobClass.backendSnapshot cannot change once set"},
      {.description = "backendSnapshot removal rejected",
       .object = Job(kMinimalJob),
       .setup = {StatusMerge(kPinnedResolved)},
       .update = StatusJsonPatch(
           R"([{"op":"remove","path":"/status/resolvedJobClass/backendSnapshot"}])"),
       .error = "status.resolvedJobClass.backendSnapshot cannot change once set"},
      {.description = "backendSnapshot added to a class accepted without one rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusMerge(
           R"("resolvedJobClass":{"backendSnapshot":"ayatori-backend-fedcba9876543210"})"),
       .error = "status.resolvedJobClass cannot change once set"},
      {.description = "execution removal rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusJsonPatch(R"([{"op":"remove","path":"/status/execution"}])"),
       .error = "status.execution cannot be removed once set"},
      {.description = "execution adapter change rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusMerge(R"("execution":{"adapter":"kubernetes","references":[)"
                             R"({"type":"Container","id":"abc123"}]})"),
       .error = "status.execution.adapter cannot change once set"},
      {.description = "execution reference replaced rejected",
       .object = Job(kMinimalJob),
       .setup = {kStarted},
       .update = StatusMerge(R"("execution":{"adapter":"docker","references":[)"
                             R"({"type":"Container","id":"def456"}]})"),
       .error = "status.execution.references cannot be removed or replaced"},
      {.description = "execution reference appended accepted",
       .object = Job(kMinimalJob),
       .update = StatusMerge(R"("execution":{"adapter":"opensandbox","references":[)"
                             R"({"type":"Sandbox","id":"sandbox-123"}]})"),
       .expect = {{"{.status.execution.references[0].id}", "sandbox-123"}}},
      {.description = "second execution reference added accepted",
       .object = Job(kMinimalJob),
       .setup = {StatusMerge(R"("execution":{"adapter":"opensandbox","references":[)"
                             R"({"type":"Sandbox","id":"sandbox-123"}]})")},
       .update = StatusMerge(R"("execution":{"adapter":"opensandbox","references":[)"
                             R"({"type":"Sandbox","id":"sandbox-123"},)"
                             R"({"type":"Command","id":"command-456"}]})"),
       .expect = {{"{.status.execution.references[1].id}", "command-456"}}},
      {.description = "execution without adapter rejected",
       .object = Job(kMinimalJob),
       .update = StatusMerge(R"("execution":{"references":[{"type":"Job","id":"x"}]})"),
       .error = "status.execution.adapter: Required value"},
      {.description = "execution reference with empty type rejected",
       .object = Job(kMinimalJob),
       .update = StatusMerge(R"("execution":{"adapter":"docker","references":[)"
                             R"({"type":"","id":"x"}]})"),
       .error = "references[0].type in body should be at least 1 chars long"},
      {.description = "execution reference with empty id rejected",
       .object = Job(kMinimalJob),
       .update = StatusMerge(R"("execution":{"adapter":"docker","references":[)"
                             R"({"type":"Container","id":""}]})"),
       .error = "references[0].id in body should be at least 1 chars long"},
      {.description = "execution reference type longer than 63 rejected",
       .object = Job(kMinimalJob),
       .update = StatusMerge(R"("execution":{"adapter":"docker","references":[{"type":")" +
                             std::string(64, 'T') + R"(","id":"x"}]})"),
       .error = "Too long: may not be more than 63"},
      {.description = "execution reference id longer than 253 rejected",
       .object = Job(kMinimalJob),
       .update =
           StatusMerge(R"("execution":{"adapter":"docker","references":[{"type":"Job","id":")" +
                       std::string(254, 'i') + R"("}]})"),
       .error = "Too long: may not be more than 253"},
      {.description = "execution reference id of 253 characters accepted",
       .object = Job(kMinimalJob),
       .update =
           StatusMerge(R"("execution":{"adapter":"docker","references":[{"type":"Job","id":")" +
                       std::string(253, 'i') + R"("}]})")},
      {.description = "more than 8 execution references rejected",
       .object = Job(kMinimalJob),
       .update = StatusMerge(R"("execution":{"adapter":"docker","references":[)" +
                             Repeated(R"({"type":"Job","id":"x"})", 9) + "]}"),
       .error = "must have at most 8 items"},
      {.description = "condition status outside True False Unknown rejected",
       .object = Job(kMinimalJob),
       .update = StatusMerge(Conditions(Cond("Accepted", "Maybe", "Valid"))),
       .error = R"(Unsupported value: "Maybe")"},
  };
}

std::vector<Case> JobClassCases() {
  const std::string k8s = "{controllerName: execution.ayatori.ddupan.top/kubernetes";
  const std::string docker = "{controllerName: execution.ayatori.ddupan.top/docker";
  const std::string sandbox = "{controllerName: execution.ayatori.ddupan.top/opensandbox";
  return {
      {.description = "JobClass without parameters accepted and secretEnvForwarding defaults to "
                      "Denied",
       .object = JobClass(docker + "}"),
       .expect = {{"{.spec.secretEnvForwarding}", "Denied"}}},
      {.description = "JobClass without controllerName rejected",
       .object = JobClass("{secretEnvForwarding: Allowed}"),
       .error = "spec.controllerName: Required value"},
      {.description = "controllerName without domain rejected",
       .object = JobClass("{controllerName: kubernetes}"),
       .error = "spec.controllerName must be a domain-prefixed path"},
      {.description = "controllerName of another controller accepted",
       .object = JobClass("{controllerName: example.com/runner, parametersRef: {group: "
                          "example.com, kind: RunnerConfig, name: r}}")},
      {.description = "controllerName change rejected",
       .object = JobClass(docker + "}"),
       .update = Merge(R"({"spec":{"controllerName":"execution.ayatori.ddupan.top/kubernetes"}})"),
       .error = "spec.controllerName is immutable: create a new JobClass for another controller"},
      {.description = "secretEnvForwarding change accepted",
       .object = JobClass(docker + "}"),
       .update = Merge(R"({"spec":{"secretEnvForwarding":"Allowed"}})"),
       .expect = {{"{.spec.secretEnvForwarding}", "Allowed"}}},
      {.description = "secretEnvForwarding outside the enum rejected",
       .object = JobClass(docker + ", secretEnvForwarding: Sometimes}"),
       .error = R"(Unsupported value: "Sometimes": supported values: "Allowed", "Denied")"},
      {.description = "kubernetes class with Docker parameters rejected",
       .object = JobClass(k8s + ", parametersRef: {kind: DockerExecutionParameters, name: d}}"),
       .error = "must name a KubernetesExecutionParameters"},
      {.description = "kubernetes class with Kubernetes parameters accepted and group defaulted",
       .object = JobClass(k8s + ", parametersRef: {kind: KubernetesExecutionParameters, name: k}}"),
       .expect = {{"{.spec.parametersRef.group}", "execution.ayatori.ddupan.top"}}},
      {.description = "opensandbox class without parameters rejected",
       .object = JobClass(sandbox + "}"),
       .error = "must name an OpenSandboxExecutionParameters"},
      {.description = "opensandbox class with OpenSandbox parameters accepted",
       .object = JobClass(sandbox + ", parametersRef: {kind: OpenSandboxExecutionParameters, "
                                    "name: o}}")},
      {.description = "docker class with parameters of another group rejected",
       .object = JobClass(docker + ", parametersRef: {group: example.com, kind: "
                                   "DockerExecutionParameters, name: d}}"),
       .error = "must name a DockerExecutionParameters"},
      {.description = "docker class with Docker parameters accepted",
       .object = JobClass(docker + ", parametersRef: {kind: DockerExecutionParameters, name: d}}")},
      {.description = "parametersRef without name rejected",
       .object = JobClass(docker + ", parametersRef: {kind: DockerExecutionParameters}}"),
       .error = "spec.parametersRef.name: Required value"},
      {.description = "default cpu request above default cpu limit rejected",
       .object = JobClass(docker + ", resources: {defaults: {requests: {cpu: 2}, limits: "
                                   "{cpu: 1}}}}"),
       .error = "resources.defaults.requests.cpu must be less than or equal to "
                "resources.defaults.limits.cpu"},
      {.description = "default memory request above default memory limit rejected",
       .object = JobClass(docker + ", resources: {defaults: {requests: {memory: 2Gi}, limits: "
                                   "{memory: 1Gi}}}}"),
       .error = "resources.defaults.requests.memory must be less than or equal to "
                "resources.defaults.limits.memory"},
      {.description = "min cpu above max cpu rejected",
       .object = JobClass(docker + ", resources: {min: {cpu: 2}, max: {cpu: 1500m}}}"),
       .error = "resources.min.cpu must be less than or equal to resources.max.cpu"},
      {.description = "min memory above max memory rejected",
       .object = JobClass(docker + ", resources: {min: {memory: 2Gi}, max: {memory: 2G}}}"),
       .error = "resources.min.memory must be less than or equal to resources.max.memory"},
      {.description = "default cpu below min rejected",
       .object = JobClass(docker + ", resources: {defaults: {requests: {cpu: 50m}}, min: "
                                   "{cpu: 100m}}}"),
       .error = "resources.defaults for cpu must not be below resources.min.cpu"},
      {.description = "default cpu limit above max rejected",
       .object = JobClass(docker + ", resources: {defaults: {limits: {cpu: 8}}, max: {cpu: 4}}}"),
       .error = "resources.defaults for cpu must not exceed resources.max.cpu"},
      {.description = "default memory below min rejected",
       .object = JobClass(docker + ", resources: {defaults: {limits: {memory: 8Mi}}, min: "
                                   "{memory: 16Mi}}}"),
       .error = "resources.defaults for memory must not be below resources.min.memory"},
      {.description = "default memory request above max rejected",
       .object = JobClass(docker + ", resources: {defaults: {requests: {memory: 5Gi}}, max: "
                                   "{memory: 4Gi}}}"),
       .error = "resources.defaults for memory must not exceed resources.max.memory"},
      {.description = "defaults within min and max accepted",
       .object = JobClass(docker + ", resources: {defaults: {requests: {cpu: 100m, memory: "
                                   "64Mi}, limits: {cpu: 1, memory: 512Mi}}, min: {cpu: 100m, "
                                   "memory: 16Mi}, max: {cpu: '1', memory: 4Gi}}}")},
      {.description = "malformed min quantity rejected",
       .object = JobClass(docker + ", resources: {min: {cpu: lots}}}"),
       .error = "spec.resources.min.cpu in body should match"},
      {.description = "JobClass TTL default and maximum accepted",
       .object = JobClass(docker + ", ttlSecondsAfterFinished: {default: 600, maximum: 3600}}"),
       .expect = {{"{.spec.ttlSecondsAfterFinished.default}", "600"},
                  {"{.spec.ttlSecondsAfterFinished.maximum}", "3600"}}},
      {.description = "JobClass TTL default equal to the maximum accepted",
       .object = JobClass(docker + ", ttlSecondsAfterFinished: {default: 0, maximum: 0}}")},
      {.description = "JobClass TTL maximum alone accepted",
       .object = JobClass(docker + ", ttlSecondsAfterFinished: {maximum: 60}}")},
      {.description = "JobClass TTL default above the maximum rejected",
       .object = JobClass(docker + ", ttlSecondsAfterFinished: {default: 7200, maximum: 3600}}"),
       .error = "spec.ttlSecondsAfterFinished.default must not exceed "
                "spec.ttlSecondsAfterFinished.maximum"},
      {.description = "JobClass TTL maximum lowered below the default by an update rejected",
       .object = JobClass(docker + ", ttlSecondsAfterFinished: {default: 600, maximum: 3600}}"),
       .update = Merge(R"({"spec":{"ttlSecondsAfterFinished":{"maximum":60}}})"),
       .error = "spec.ttlSecondsAfterFinished.default must not exceed"},
      {.description = "JobClass negative TTL default rejected",
       .object = JobClass(docker + ", ttlSecondsAfterFinished: {default: -1}}"),
       .error =
           "spec.ttlSecondsAfterFinished.default in body should be greater than or equal to 0"},
      {.description = "JobClass negative TTL maximum rejected",
       .object = JobClass(docker + ", ttlSecondsAfterFinished: {maximum: -5}}"),
       .error =
           "spec.ttlSecondsAfterFinished.maximum in body should be greater than or equal to 0"},
      {.description = "JobClass empty TTL policy rejected",
       .object = JobClass(docker + ", ttlSecondsAfterFinished: {}}"),
       .error = "spec.ttlSecondsAfterFinished in body should have at least 1 properties"},
      {.description = "unknown JobClass field rejected",
       .object = JobClass(docker + ", backend: docker}"),
       .error = R"(unknown field "spec.backend")"},
  };
}

std::vector<Case> DockerParametersCases() {
  return {
      {.description = "Docker parameters without spec get every default",
       .object = Docker(""),
       .expect = {{"{.spec.endpoint}", "unix:///var/run/docker.sock"},
                  {"{.spec.networkMode}", "none"},
                  {"{.spec.pullPolicy}", "IfNotPresent"},
                  {"{.spec.stopGracePeriodSeconds}", "10"},
                  {"{.spec.allowHostNetwork}", "false"},
                  {"{.spec.init}", "true"},
                  {"{.spec.securityProfile.runAsUser}", "65534"},
                  {"{.spec.securityProfile.runAsGroup}", "65534"},
                  {"{.spec.securityProfile.runAsRoot}", "false"},
                  {"{.spec.securityProfile.allowPrivilegeEscalation}", "false"},
                  {"{.spec.securityProfile.seccompProfile}", "RuntimeDefault"},
                  {"{.spec.securityProfile.pidsLimit}", "256"},
                  {"{.spec.securityProfile.readOnlyRootFilesystem}", "true"},
                  {"{.spec.securityProfile.tmpSizeMiB}", "64"},
                  {"{.spec.securityProfile.openFilesLimit}", "1024"},
                  {"{.spec.securityProfile.logMaxBytes}", "10485760"}}},
      {.description = "Docker runAsUser 0 without runAsRoot rejected",
       .object = Docker("{securityProfile: {runAsUser: 0}}"),
       .error = "spec.securityProfile.runAsUser 0 runs the task as root"},
      {.description = "Docker runAsUser 0 with runAsRoot accepted",
       .object = Docker("{securityProfile: {runAsUser: 0, runAsRoot: true}}"),
       .expect = {{"{.spec.securityProfile.runAsUser}", "0"},
                  {"{.spec.securityProfile.pidsLimit}", "256"}}},
      {.description = "Docker seccompProfile outside the enum rejected",
       .object = Docker("{securityProfile: {seccompProfile: Strict}}"),
       .error = R"(Unsupported value: "Strict": supported values: "RuntimeDefault", "Unconfined")"},
      {.description = "Docker capability in lower case rejected",
       .object = Docker("{securityProfile: {addCapabilities: [net_raw]}}"),
       .error = "spec.securityProfile.addCapabilities[0]"},
      {.description = "Docker pidsLimit 0 rejected",
       .object = Docker("{securityProfile: {pidsLimit: 0}}"),
       .error = "spec.securityProfile.pidsLimit in body should be greater than or equal to 1"},
      {.description = "Docker bridge network rejected",
       .object = Docker("{networkMode: bridge}"),
       .error = R"(Unsupported value: "bridge": supported values: "none", "host")"},
      {.description = "Docker host network without allowHostNetwork rejected",
       .object = Docker("{networkMode: host}"),
       .error = "spec.networkMode host shares the engine host's network"},
      {.description = "Docker host network with allowHostNetwork accepted",
       .object = Docker("{networkMode: host, allowHostNetwork: true}"),
       .expect = {{"{.spec.networkMode}", "host"}}},
      {.description = "Docker endpoint without scheme rejected",
       .object = Docker("{endpoint: /var/run/docker.sock}"),
       .error = "spec.endpoint must be unix:///path/to/docker.sock or tcp://host:port"},
      {.description = "Docker tcp endpoint with TLS accepted",
       .object = Docker("{endpoint: 'tcp://127.0.0.1:2376', tlsSecretRef: {namespace: "
                        "ayatori-system, name: docker-tls}}")},
      {.description = "Docker tcp endpoint without TLS rejected",
       .object = Docker("{endpoint: 'tcp://127.0.0.1:2375'}"),
       .error = "spec.endpoint is plain HTTP (tcp:// without spec.tlsSecretRef, or http://)"},
      {.description = "Docker http endpoint without insecure rejected",
       .object = Docker("{endpoint: 'http://127.0.0.1:2375'}"),
       .error = "spec.endpoint is plain HTTP (tcp:// without spec.tlsSecretRef, or http://)"},
      {.description = "Docker tcp endpoint without TLS accepted with insecure: true",
       .object = Docker("{endpoint: 'tcp://127.0.0.1:2375', insecure: true}"),
       .expect = {{"{.spec.insecure}", "true"}}},
      {.description = "Docker http endpoint with tlsSecretRef rejected",
       .object = Docker("{endpoint: 'http://127.0.0.1:2375', insecure: true, tlsSecretRef: "
                        "{namespace: ayatori-system, name: docker-tls}}"),
       .error = "spec.endpoint http:// is plain HTTP and cannot use spec.tlsSecretRef"},
      {.description = "Docker https endpoint without tlsSecretRef accepted",
       .object = Docker("{endpoint: 'https://127.0.0.1:2376'}"),
       .expect = {{"{.spec.insecure}", "false"}}},
      {.description = "Docker tlsSecretRef without name rejected",
       .object = Docker("{endpoint: 'tcp://127.0.0.1:2376', tlsSecretRef: {namespace: x}}"),
       .error = "spec.tlsSecretRef.name: Required value"},
      {.description = "Docker pullPolicy outside the enum rejected",
       .object = Docker("{pullPolicy: Sometimes}"),
       .error =
           R"(Unsupported value: "Sometimes": supported values: "IfNotPresent", "Always", "Never")"},
      {.description = "Docker runtime with a space rejected",
       .object = Docker("{runtime: 'run c'}"),
       .error = "spec.runtime must be a runtime name such as runc or runsc"},
      {.description = "Docker runtime runsc accepted", .object = Docker("{runtime: runsc}")},
      {.description = "Docker extraLabels with the controller prefix rejected",
       .object = Docker("{extraLabels: {execution.ayatori.ddupan.top/job-uid: x}}"),
       .error = "must not use the prefix execution.ayatori.ddupan.top/"},
      {.description = "Docker extraLabels accepted",
       .object = Docker("{extraLabels: {example.com/team: platform}}")},
      {.description = "Docker negative stopGracePeriodSeconds rejected",
       .object = Docker("{stopGracePeriodSeconds: -1}"),
       .error = "spec.stopGracePeriodSeconds in body should be greater than or equal to 0"},
      {.description = "unknown Docker parameters field rejected",
       .object = Docker("{privileged: true}"),
       .error = R"(unknown field "spec.privileged")"},
  };
}

std::vector<Case> KubernetesParametersCases() {
  return {
      {.description = "Kubernetes parameters without spec get the image pull timeout default",
       .object = Kube(""),
       .expect = {{"{.spec.imagePullFailureTimeoutSeconds}", "300"}}},
      {.description = "Kubernetes parameters with every field accepted",
       .object = Kube("{serviceAccountName: runner, nodeSelector: {example.com/pool: batch}, "
                      "tolerations: [{key: example.com/dedicated, operator: Equal, value: batch, "
                      "effect: NoExecute, tolerationSeconds: 30}, {operator: Exists}], "
                      "runtimeClassName: gvisor, priorityClassName: low, extraLabels: {team: a}, "
                      "extraAnnotations: {example.com/note: 'free text'}, "
                      "imagePullFailureTimeoutSeconds: 60}")},
      {.description = "toleration without key and operator Equal rejected",
       .object = Kube("{tolerations: [{operator: Equal, value: x}]}"),
       .error = "a toleration without a key must use operator Exists"},
      {.description = "toleration with operator Exists and a value rejected",
       .object = Kube("{tolerations: [{key: k, operator: Exists, value: x}]}"),
       .error = "a toleration with operator Exists must not set a value"},
      {.description = "tolerationSeconds with effect NoSchedule rejected",
       .object = Kube("{tolerations: [{key: k, operator: Exists, effect: NoSchedule, "
                      "tolerationSeconds: 5}]}"),
       .error = "tolerationSeconds is only allowed with effect NoExecute"},
      {.description = "toleration operator outside the enum rejected",
       .object = Kube("{tolerations: [{key: k, operator: In}]}"),
       .error = R"(Unsupported value: "In")"},
      {.description = "serviceAccountName with capitals rejected",
       .object = Kube("{serviceAccountName: Runner_SA}"),
       .error = "spec.serviceAccountName must be a valid ServiceAccount name"},
      {.description = "runtimeClassName with capitals rejected",
       .object = Kube("{runtimeClassName: gVisor}"),
       .error = "spec.runtimeClassName must be a valid RuntimeClass name"},
      {.description = "priorityClassName with spaces rejected",
       .object = Kube("{priorityClassName: 'low prio'}"),
       .error = "spec.priorityClassName must be a valid PriorityClass name"},
      {.description = "nodeSelector key with spaces rejected",
       .object = Kube("{nodeSelector: {'bad key': x}}"),
       .error = "spec.nodeSelector keys must be label keys"},
      {.description = "nodeSelector value that is not a label value rejected",
       .object = Kube("{nodeSelector: {pool: -batch-}}"),
       .error = "should match"},
      {.description = "extraLabels with the controller prefix rejected",
       .object = Kube("{extraLabels: {execution.ayatori.ddupan.top/job-name: x}}"),
       .error = "spec.extraLabels must not use the prefix execution.ayatori.ddupan.top/"},
      {.description = "extraLabels key that is not a label key rejected",
       .object = Kube("{extraLabels: {'a/b/c': x}}"),
       .error = "spec.extraLabels keys must be label keys"},
      {.description = "extraAnnotations key that is not an annotation key rejected",
       .object = Kube("{extraAnnotations: {'-bad': x}}"),
       .error = "spec.extraAnnotations keys must be annotation keys"},
      {.description = "imagePullFailureTimeoutSeconds zero rejected",
       .object = Kube("{imagePullFailureTimeoutSeconds: 0}"),
       .error = "spec.imagePullFailureTimeoutSeconds in body should be greater than or equal to 1"},
      {.description = "Kubernetes parameters get the restricted security profile by default",
       .object = Kube(""),
       .expect = {{"{.spec.securityProfile.runAsUser}", "65534"},
                  {"{.spec.securityProfile.runAsGroup}", "65534"},
                  {"{.spec.securityProfile.readOnlyRootFilesystem}", "true"},
                  {"{.spec.securityProfile.seccompProfile}", "RuntimeDefault"},
                  {"{.spec.securityProfile.tmpSizeMiB}", "64"},
                  {"{.spec.automountServiceAccountToken}", "false"}}},
      {.description = "Kubernetes securityProfile with every field accepted",
       .object = Kube("{serviceAccountName: runner, automountServiceAccountToken: true, "
                      "securityProfile: {runAsUser: 1000, runAsGroup: 1000, runAsRoot: false, "
                      "addCapabilities: [NET_BIND_SERVICE], allowPrivilegeEscalation: false, "
                      "seccompProfile: Unconfined, readOnlyRootFilesystem: false, tmpSizeMiB: 8, "
                      "pidsLimit: 256, openFilesLimit: 1024, logMaxBytes: 1048576}}")},
      {.description = "Kubernetes runAsUser 0 without runAsRoot rejected",
       .object = Kube("{securityProfile: {runAsUser: 0}}"),
       .error = "spec.securityProfile.runAsUser 0 is root: set spec.securityProfile.runAsRoot"},
      {.description = "Kubernetes runAsUser 0 with runAsRoot accepted",
       .object = Kube("{securityProfile: {runAsUser: 0, runAsRoot: true}}")},
      {.description = "Kubernetes capability with the CAP_ prefix rejected",
       .object = Kube("{securityProfile: {addCapabilities: [CAP_NET_ADMIN]}}"),
       .error = "spec.securityProfile.addCapabilities must be capability names"},
      {.description = "Kubernetes seccompProfile outside the enum rejected",
       .object = Kube("{securityProfile: {seccompProfile: Localhost}}"),
       .error = R"(Unsupported value: "Localhost")"},
      {.description = "Kubernetes tmpSizeMiB zero rejected",
       .object = Kube("{securityProfile: {tmpSizeMiB: 0}}"),
       .error = "spec.securityProfile.tmpSizeMiB in body should be greater than or equal to 1"},
      {.description = "Kubernetes automountServiceAccountToken without serviceAccountName rejected",
       .object = Kube("{automountServiceAccountToken: true}"),
       .error = "spec.automountServiceAccountToken: true needs spec.serviceAccountName"},
      {.description = "unknown Kubernetes parameters field rejected",
       .object = Kube("{namespace: jobs}"),
       .error = R"(unknown field "spec.namespace")"},
  };
}

std::vector<Case> OpenSandboxParametersCases() {
  return {
      {.description = "OpenSandbox parameters accepted with defaults",
       .object = Sandbox("{endpoint: 'http://127.0.0.1:8080/v1', insecure: true}"),
       .expect = {{"{.spec.pollIntervalSeconds}", "2"},
                  {"{.spec.sandboxTimeoutSeconds}", "0"},
                  {"{.spec.sandboxTimeoutMarginSeconds}", "300"},
                  {"{.spec.useServerProxy}", "false"}}},
      {.description = "OpenSandbox parameters without spec rejected",
       .object = Sandbox(""),
       .error = "spec: Required value"},
      {.description = "OpenSandbox parameters without endpoint rejected",
       .object = Sandbox("{pollIntervalSeconds: 5}"),
       .error = "spec.endpoint: Required value"},
      {.description = "OpenSandbox endpoint that is not http rejected",
       .object = Sandbox("{endpoint: 'ftp://127.0.0.1/v1'}"),
       .error = "spec.endpoint must be an http:// or https:// URL"},
      {.description = "OpenSandbox https endpoint with API key accepted",
       .object = Sandbox("{endpoint: 'https://sandbox.example.com', apiKeySecretRef: {namespace: "
                         "ayatori-system, name: opensandbox, key: api-key}}")},
      {.description = "OpenSandbox apiKeySecretRef without key rejected",
       .object = Sandbox("{endpoint: 'https://sandbox.example.com', apiKeySecretRef: {namespace: "
                         "ayatori-system, name: opensandbox}}"),
       .error = "spec.apiKeySecretRef.key: Required value"},
      {.description = "OpenSandbox pollIntervalSeconds zero rejected",
       .object = Sandbox(
           "{endpoint: 'http://127.0.0.1:8080/v1', insecure: true, pollIntervalSeconds: 0}"),
       .error = "spec.pollIntervalSeconds in body should be greater than or equal to 1"},
      {.description = "OpenSandbox negative sandboxTimeoutSeconds rejected",
       .object = Sandbox(
           "{endpoint: 'http://127.0.0.1:8080/v1', insecure: true, sandboxTimeoutSeconds: -1}"),
       .error = "spec.sandboxTimeoutSeconds in body should be greater than or equal to 0"},
      {.description = "OpenSandbox sandboxTimeoutSeconds below the server's minimum rejected",
       .object = Sandbox(
           "{endpoint: 'http://127.0.0.1:8080/v1', insecure: true, sandboxTimeoutSeconds: 30}"),
       .error = "spec.sandboxTimeoutSeconds must be 0 (no server-side timeout) or at least 60"},
      {.description = "OpenSandbox sandboxTimeoutSeconds of 60 accepted",
       .object = Sandbox(
           "{endpoint: 'http://127.0.0.1:8080/v1', insecure: true, sandboxTimeoutSeconds: 60}")},
      {.description = "OpenSandbox negative sandboxTimeoutMarginSeconds rejected",
       .object = Sandbox("{endpoint: 'http://127.0.0.1:8080/v1', insecure: true, "
                         "sandboxTimeoutMarginSeconds: -1}"),
       .error = "spec.sandboxTimeoutMarginSeconds in body should be greater than or equal to 0"},
      {.description = "OpenSandbox extraMetadata with the controller prefix rejected",
       .object = Sandbox("{endpoint: 'http://127.0.0.1:8080/v1', insecure: true, extraMetadata: "
                         "{execution.ayatori.ddupan.top/job-uid: x}}"),
       .error = "must not use the prefix execution.ayatori.ddupan.top/"},
      {.description = "OpenSandbox http endpoint without insecure rejected",
       .object = Sandbox("{endpoint: 'http://127.0.0.1:8080/v1'}"),
       .error = "spec.endpoint is plain HTTP (http://): use https://, or set spec.insecure: true"},
      {.description = "OpenSandbox https endpoint with a caBundle accepted",
       .object = Sandbox("{endpoint: 'https://sandbox.example.com', caBundle: '-----BEGIN "
                         "CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----'}"),
       .expect = {{"{.spec.insecure}", "false"}}},
      {.description = "OpenSandbox caBundle that is not PEM rejected",
       .object = Sandbox("{endpoint: 'https://sandbox.example.com', caBundle: hello}"),
       .error = "spec.caBundle must hold PEM certificates"},
      {.description = "OpenSandbox caBundle with an http endpoint rejected",
       .object = Sandbox("{endpoint: 'http://127.0.0.1:8080/v1', insecure: true, caBundle: "
                         "'-----BEGIN CERTIFICATE-----'}"),
       .error = "spec.caBundle is only used with an https:// endpoint"},
      {.description = "OpenSandbox parameters run the task as nobody by default",
       .object = Sandbox("{endpoint: 'https://sandbox.example.com'}"),
       .expect = {{"{.spec.securityProfile.runAsUser}", "65534"},
                  {"{.spec.securityProfile.runAsGroup}", "65534"}}},
      {.description = "OpenSandbox runAsUser 0 without runAsRoot rejected",
       .object =
           Sandbox("{endpoint: 'https://sandbox.example.com', securityProfile: {runAsUser: 0}}"),
       .error = "spec.securityProfile.runAsUser 0 is root: set spec.securityProfile.runAsRoot"},
      {.description = "OpenSandbox securityProfile field it cannot carry rejected",
       .object = Sandbox("{endpoint: 'https://sandbox.example.com', securityProfile: "
                         "{readOnlyRootFilesystem: true}}"),
       .error = R"(unknown field "spec.securityProfile.readOnlyRootFilesystem")"},
      {.description = "unknown OpenSandbox parameters field rejected",
       .object = Sandbox("{endpoint: 'http://127.0.0.1:8080/v1', insecure: true, apiKey: secret}"),
       .error = R"(unknown field "spec.apiKey")"},
  };
}

// ---- running a case
// -------------------------------------------------------------------------------

struct KindInfo {
  std::string resource;
  bool namespaced;
};

KindInfo InfoOf(const std::string& yaml) {
  std::smatch m;
  std::regex kindLine("\nkind: (\\w+)\n");
  if (!std::regex_search(yaml, m, kindLine)) return {"", false};
  std::string kind = m[1];
  if (kind == "Job") return {"jobs.execution.ayatori.ddupan.top", true};
  if (kind == "JobClass") return {"jobclasses.execution.ayatori.ddupan.top", false};
  if (kind == "DockerExecutionParameters")
    return {"dockerexecutionparameters.execution.ayatori.ddupan.top", false};
  if (kind == "KubernetesExecutionParameters")
    return {"kubernetesexecutionparameters.execution.ayatori.ddupan.top", false};
  if (kind == "OpenSandboxExecutionParameters")
    return {"opensandboxexecutionparameters.execution.ayatori.ddupan.top", false};
  return {"", false};
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

// A gtest name from a description: "task image change rejected" -> "TaskImageChangeRejected".
std::string TestName(const std::string& description) {
  std::string name;
  bool upper = true;
  for (char ch : description) {
    if (std::isalnum(static_cast<unsigned char>(ch)) == 0) {
      upper = true;
      continue;
    }
    name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    upper = false;
  }
  return name;
}

void ExpectOutcome(const std::string& what, const ProcessResult& r, const std::string& error) {
  if (error.empty()) {
    EXPECT_EQ(r.exitCode, 0) << what << " should be accepted, the apiserver said: " << r.err;
  } else {
    EXPECT_NE(r.exitCode, 0) << what << " should be rejected with \"" << error
                             << "\" but was accepted: " << r.out;
    EXPECT_THAT(r.err, HasSubstr(error)) << what << " was rejected for another reason";
  }
}

// gtest prints a failing case by its description, not as bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.description; }

class CrdValidationTest : public ::testing::TestWithParam<Case> {};

TEST_P(CrdValidationTest, Case) {
  ASSERT_TRUE(InstallCrds());
  const Case& c = GetParam();
  KindInfo info = InfoOf(c.object);
  ASSERT_FALSE(info.resource.empty()) << "no known kind in the case's object:\n" << c.object;
  std::string ns = info.namespaced ? CreateTestNamespace("crd") : "";
  std::string yaml = ReplaceAll(ReplaceAll(c.object, "{NS}", ns), "{NAME}",
                                info.namespaced ? "job" : UniqueName("crdtest"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(yaml, m, std::regex("metadata: \\{name: ([^,}]+)")));
  const std::string name = m[1];
  std::vector<std::string> nsArgs;
  if (!ns.empty()) nsArgs = {"-n", ns};
  struct DeleteClusterScoped {
    std::string resource, name;
    ~DeleteClusterScoped() {
      if (!name.empty())
        RunKubectl({"delete", resource, name, "--ignore-not-found", "--wait=false"});
    }
  } cleanup{info.resource, info.namespaced ? "" : name};

  auto patch = [&](const Step& step) {
    std::vector<std::string> args{"patch",   info.resource, name,      "--type",
                                  step.type, "-p",          step.patch};
    if (step.status) args.emplace_back("--subresource=status");
    args.insert(args.end(), nsArgs.begin(), nsArgs.end());
    return RunKubectl(args);
  };
  auto get = [&](const std::string& jsonPath) {
    return GetJsonPath(info.resource, ns, name, jsonPath);
  };

  SCOPED_TRACE(yaml);
  auto created = RunKubectl({"create", "-f", "-"}, yaml);
  if (!c.update) {
    ExpectOutcome("creating the object", created, c.error);
    if (!c.error.empty()) {
      std::vector<std::string> args{"get", info.resource, name, "--ignore-not-found", "-o", "name"};
      args.insert(args.end(), nsArgs.begin(), nsArgs.end());
      EXPECT_EQ(RunKubectl(args).out, "") << "a rejected object must not exist";
    }
  } else {
    ASSERT_EQ(created.exitCode, 0) << "creating the object of an update case: " << created.err;
    for (const Step& step : c.setup) {
      auto r = patch(step);
      ASSERT_EQ(r.exitCode, 0) << "setup patch " << step.patch << ": " << r.err;
    }
    std::string versionBefore = get("{.metadata.resourceVersion}");
    auto r = patch(*c.update);
    ExpectOutcome("the change " + c.update->patch, r, c.error);
    if (!c.error.empty()) {
      EXPECT_EQ(get("{.metadata.resourceVersion}"), versionBefore)
          << "a rejected change must leave the object unchanged";
    }
  }
  if (c.error.empty()) {
    for (const auto& [jsonPath, want] : c.expect) EXPECT_EQ(get(jsonPath), want) << jsonPath;
  }
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return TestName(info.param.description);
}

INSTANTIATE_TEST_SUITE_P(JobSpec, CrdValidationTest, ::testing::ValuesIn(JobSpecCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(JobUpdate, CrdValidationTest, ::testing::ValuesIn(JobUpdateCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(JobStatus, CrdValidationTest, ::testing::ValuesIn(JobStatusCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(JobClass, CrdValidationTest, ::testing::ValuesIn(JobClassCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(DockerParameters, CrdValidationTest,
                         ::testing::ValuesIn(DockerParametersCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(KubernetesParameters, CrdValidationTest,
                         ::testing::ValuesIn(KubernetesParametersCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(OpenSandboxParameters, CrdValidationTest,
                         ::testing::ValuesIn(OpenSandboxParametersCases()), CaseName);

}  // namespace
}  // namespace ayatori::testing
