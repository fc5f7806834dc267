#include "api/json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace ayatori::api {
namespace {

using nlohmann::json;
using std::chrono::seconds;

Time At(const char* rfc3339) {
  StatusOr<Time> t = ParseTime(rfc3339);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : Time{};
}

// The API's example Job (docs/api.md § Example), with the elided status values filled in.
const char* const kExampleJob = R"({
  "apiVersion": "execution.ayatori.ddupan.top/v1alpha1",
  "kind": "Job",
  "metadata": {"generateName": "hello-", "namespace": "ci"},
  "spec": {
    "jobClassName": "default",
    "task": {
      "image": "docker.io/library/alpine:3.22",
      "imagePullSecrets": [],
      "command": ["/bin/sh", "-c"],
      "args": ["echo \"hello ${TARGET}\""],
      "workingDir": "/workspace",
      "env": [
        {"name": "TARGET", "value": "world"},
        {"name": "TOKEN",
         "valueFrom": {"secretKeyRef": {"name": "example-token", "key": "token", "optional": false}}},
        {"name": "CONFIG_VALUE",
         "valueFrom": {"configMapKeyRef": {"name": "example-config", "key": "value"}}}
      ]
    },
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                  "limits": {"cpu": "1", "memory": "512Mi"}},
    "activeDeadlineSeconds": 600,
    "ttlSecondsAfterFinished": 3600,
    "desiredState": "Running"
  },
  "status": {
    "observedGeneration": 1,
    "conditions": [
      {"type": "Accepted", "status": "True", "reason": "Valid", "message": "",
       "observedGeneration": 1, "lastTransitionTime": "2026-11-29T08:00:00Z"},
      {"type": "Scheduled", "status": "True", "reason": "BackendCreated", "message": "",
       "observedGeneration": 1, "lastTransitionTime": "2026-11-29T08:00:01Z"},
      {"type": "Succeeded", "status": "Unknown", "reason": "Running", "message": "",
       "observedGeneration": 1, "lastTransitionTime": "2026-11-29T08:00:02Z"}
    ],
    "resolvedJobClass": {
      "name": "default",
      "uid": "8aa4f0c2-7d0e-4f3b-9a57-3f1c2b6d9e10",
      "controllerName": "execution.ayatori.ddupan.top/kubernetes",
      "parametersRef": {"group": "execution.ayatori.ddupan.top",
                        "kind": "KubernetesExecutionParameters", "name": "default",
                        "uid": "c413e0a1-5b2c-4d7e-8f90-1a2b3c4d5e6f"}
    },
    "effectiveResources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                           "limits": {"cpu": "1", "memory": "512Mi"}},
    "execution": {"adapter": "kubernetes",
                  "references": [{"type": "Job", "id": "5cb0a3e4-1f2d-4c5b-a6e7-8d9f0a1b2c3d"}]},
    "startTime": "2026-11-29T08:00:03Z",
    "completionTime": "2026-11-29T08:00:09Z",
    "result": {"exitCode": 0, "reason": "Completed"}
  }
})";

TEST(JsonTest, DecodesTheSpecExampleJob) {
  StatusOr<Job> job = JobFromJson(json::parse(kExampleJob));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->metadata.generateName, "hello-");
  EXPECT_EQ(job->metadata.namespace_, "ci");
  const JobSpec& spec = job->spec;
  EXPECT_EQ(spec.jobClassName, "default");
  EXPECT_EQ(spec.task.image, "docker.io/library/alpine:3.22");
  EXPECT_EQ(spec.task.command, (std::vector<std::string>{"/bin/sh", "-c"}));
  EXPECT_EQ(spec.task.args, (std::vector<std::string>{"echo \"hello ${TARGET}\""}));
  EXPECT_EQ(spec.task.workingDir, "/workspace");
  ASSERT_EQ(spec.task.env.size(), 3u);
  EXPECT_EQ(spec.task.env[0].value, "world");
  EXPECT_FALSE(spec.task.env[0].valueFrom.has_value());
  ASSERT_TRUE(spec.task.env[1].valueFrom && spec.task.env[1].valueFrom->secretKeyRef);
  EXPECT_FALSE(spec.task.env[1].value.has_value());
  EXPECT_EQ(spec.task.env[1].valueFrom->secretKeyRef->name, "example-token");
  EXPECT_EQ(spec.task.env[1].valueFrom->secretKeyRef->key, "token");
  ASSERT_TRUE(spec.task.env[2].valueFrom && spec.task.env[2].valueFrom->configMapKeyRef);
  EXPECT_EQ(spec.task.env[2].valueFrom->configMapKeyRef->name, "example-config");
  ASSERT_TRUE(spec.resources.has_value());
  EXPECT_EQ(spec.resources->requests.cpu->str(), "100m");
  EXPECT_EQ(spec.resources->limits.memory, Quantity::MustParse("512Mi"));
  EXPECT_EQ(spec.activeDeadlineSeconds, 600);
  EXPECT_EQ(spec.ttlSecondsAfterFinished, 3600);
  EXPECT_EQ(spec.desiredState, DesiredState::kRunning);

  const JobStatus& status = job->status;
  EXPECT_EQ(status.observedGeneration, 1);
  ASSERT_EQ(status.conditions.size(), 3u);
  EXPECT_EQ(status.conditions[2].type, kConditionSucceeded);
  EXPECT_EQ(status.conditions[2].status, ConditionStatus::kUnknown);
  EXPECT_EQ(status.conditions[2].lastTransitionTime, At("2026-11-29T08:00:02Z"));
  ASSERT_TRUE(status.resolvedJobClass && status.resolvedJobClass->parametersRef);
  EXPECT_EQ(status.resolvedJobClass->controllerName, "execution.ayatori.ddupan.top/kubernetes");
  EXPECT_EQ(status.resolvedJobClass->parametersRef->uid, "c413e0a1-5b2c-4d7e-8f90-1a2b3c4d5e6f");
  ASSERT_TRUE(status.execution.has_value());
  EXPECT_EQ(status.execution->references,
            (std::vector<ExecutionReference>{{"Job", "5cb0a3e4-1f2d-4c5b-a6e7-8d9f0a1b2c3d"}}));
  EXPECT_EQ(status.startTime, At("2026-11-29T08:00:03Z"));
  EXPECT_EQ(status.completionTime, At("2026-11-29T08:00:09Z"));
  ASSERT_TRUE(status.result.has_value());
  EXPECT_EQ(status.result->exitCode, 0);
  EXPECT_EQ(status.result->reason, "Completed");
}

TEST(JsonTest, SpecExampleJobRoundTrips) {
  const json input = json::parse(kExampleJob);
  StatusOr<Job> job = JobFromJson(input);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  // Output is the input minus what omitempty drops: the empty imagePullSecrets and the
  // `optional: false` that equals the default.
  json want = input;
  want["spec"]["task"].erase("imagePullSecrets");
  want["spec"]["task"]["env"][1]["valueFrom"]["secretKeyRef"].erase("optional");
  const json out = ToJson(*job);
  EXPECT_EQ(out, want) << out.dump(2);
  StatusOr<Job> again = JobFromJson(out);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *job);
}

JobStatus FullStatus() {
  JobStatus s;
  s.observedGeneration = 3;
  s.conditions = {
      {kConditionAccepted, ConditionStatus::kTrue, "Valid", "", 3, At("2026-11-29T08:00:00Z")},
      {kConditionScheduled, ConditionStatus::kTrue, "BackendCreated", "created", 3,
       At("2026-11-29T08:00:01Z")},
      {kConditionSucceeded, ConditionStatus::kFalse, "ProcessFailed", "exit code 3", 2,
       At("2026-11-29T08:01:00Z")},
  };
  s.resolvedJobClass =
      ResolvedJobClass{"sandboxed", "uid-class", "execution.ayatori.ddupan.top/opensandbox",
                       ParametersRef{kGroup, "OpenSandboxExecutionParameters", "sb", "uid-params"},
                       "ayatori-backend-0123456789abcdef"};
  s.effectiveResources =
      ResourceRequirements{{Quantity::MustParse("250m"), std::nullopt},
                           {Quantity::MustParse("2"), Quantity::MustParse("1Gi")}};
  s.execution =
      ExecutionStatus{"opensandbox", {{"Sandbox", "sandbox-123"}, {"Command", "command-456"}}};
  s.startTime = At("2026-11-29T08:00:05Z");
  s.completionTime = At("2026-11-29T08:01:00Z");
  s.result = JobResult{3, "ProcessFailed"};
  return s;
}

TEST(JsonTest, FullStatusRoundTripsWithWireNames) {
  const JobStatus status = FullStatus();
  const json j = StatusToJson(status);
  EXPECT_EQ(j["observedGeneration"], 3);
  EXPECT_EQ(j["conditions"][2],
            json::parse(R"({"type": "Succeeded", "status": "False", "reason": "ProcessFailed",
                            "message": "exit code 3", "observedGeneration": 2,
                            "lastTransitionTime": "2026-11-29T08:01:00Z"})"));
  EXPECT_EQ(j["effectiveResources"], json::parse(R"({"requests": {"cpu": "250m"},
                                                     "limits": {"cpu": "2", "memory": "1Gi"}})"));
  EXPECT_EQ(j["execution"]["references"][1],
            json::parse(R"({"type": "Command", "id": "command-456"})"));
  EXPECT_EQ(j["resolvedJobClass"]["parametersRef"]["uid"], "uid-params");
  EXPECT_EQ(j["resolvedJobClass"]["backendSnapshot"], "ayatori-backend-0123456789abcdef");
  EXPECT_EQ(j["startTime"], "2026-11-29T08:00:05Z");
  EXPECT_EQ(j["result"], json::parse(R"({"exitCode": 3, "reason": "ProcessFailed"})"));

  StatusOr<JobStatus> back = JobStatusFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, status);

  Job job;
  job.metadata.name = "x";
  job.spec.task.image = "busybox";
  job.status = status;
  StatusOr<Job> job_back = JobFromJson(ToJson(job));
  ASSERT_TRUE(job_back.ok()) << job_back.status().ToString();
  EXPECT_EQ(*job_back, job);
}

TEST(JsonTest, EmptyAndAbsentFieldsAreOmitted) {
  Job job;
  job.metadata.name = "minimal";
  job.spec.task.image = "busybox";
  EXPECT_EQ(ToJson(job), json::parse(R"({
    "apiVersion": "execution.ayatori.ddupan.top/v1alpha1", "kind": "Job",
    "metadata": {"name": "minimal"},
    "spec": {"task": {"image": "busybox"}, "desiredState": "Running"}})"));
  EXPECT_EQ(StatusToJson(JobStatus{}), json::object());

  // Present-but-empty values that mean something are kept: an empty env value, exit code 0.
  job.spec.task.env = {{"EMPTY", std::string(), std::nullopt}};
  job.status.result = JobResult{0, ""};
  job.spec.ttlSecondsAfterFinished = 0;
  const json j = ToJson(job);
  EXPECT_EQ(j["spec"]["task"]["env"][0], json::parse(R"({"name": "EMPTY", "value": ""})"));
  EXPECT_EQ(j["spec"]["ttlSecondsAfterFinished"], 0);
  EXPECT_EQ(j["status"], json::parse(R"({"result": {"exitCode": 0}})"));
}

// A Job accepted before backend snapshots existed has none: absent on the wire, nullopt back.
TEST(JsonTest, BackendSnapshotIsOptional) {
  JobStatus old;
  old.resolvedJobClass =
      ResolvedJobClass{"k", "", "execution.ayatori.ddupan.top/kubernetes", std::nullopt, {}};
  const json u = StatusToJson(old);
  EXPECT_FALSE(u["resolvedJobClass"].contains("backendSnapshot")) << u.dump();
  StatusOr<JobStatus> uback = JobStatusFromJson(u);
  ASSERT_TRUE(uback.ok()) << uback.status().ToString();
  EXPECT_FALSE(uback->resolvedJobClass->backendSnapshot.has_value());

  json bad = u;
  bad["resolvedJobClass"]["backendSnapshot"] = 5;
  StatusOr<JobStatus> wrong = JobStatusFromJson(bad);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("resolvedJobClass.backendSnapshot: expected a string"),
            std::string::npos)
      << wrong.status().message();
}

TEST(JsonTest, DecodingIgnoresUnknownFieldsAndNulls) {
  const json j = json::parse(R"({
    "apiVersion": "execution.ayatori.ddupan.top/v1alpha1", "kind": "Job",
    "metadata": {"name": "a", "namespace": "ci", "uid": "u-1", "resourceVersion": "42",
                 "generation": 2, "creationTimestamp": "2026-11-29T08:00:00Z",
                 "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
                 "labels": null, "selfLink": "/x"},
    "spec": {"task": {"image": "busybox", "command": null, "futureField": {"a": 1}},
             "resources": null, "somethingNew": true},
    "status": null
  })");
  StatusOr<Job> job = JobFromJson(j);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->metadata.resourceVersion, "42");
  EXPECT_EQ(job->metadata.generation, 2);
  EXPECT_EQ(job->metadata.creationTimestamp, At("2026-11-29T08:00:00Z"));
  EXPECT_TRUE(job->spec.task.command.empty());
  EXPECT_FALSE(job->spec.resources.has_value());
  EXPECT_EQ(job->status, JobStatus{});
}

TEST(JsonTest, QuantitiesMayBeBareNumbers) {
  StatusOr<Job> job = JobFromJson(json::parse(R"({"spec": {"task": {"image": "x"},
      "resources": {"limits": {"cpu": 1, "memory": 1073741824}, "requests": {"cpu": 0.5}}}})"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->spec.resources->limits.cpu, Quantity::MustParse("1"));
  EXPECT_EQ(job->spec.resources->limits.memory, Quantity::MustParse("1Gi"));
  EXPECT_EQ(job->spec.resources->requests.cpu, Quantity::MustParse("500m"));
}

struct BadCase {
  const char* pointer;  // JSON pointer of the value to replace in a valid Job
  const char* value;    // the replacement, as JSON
  const char* message;  // the expected error message
};

TEST(JsonTest, WrongTypesAreErrorsNamingThePath) {
  const json valid = json::parse(kExampleJob);
  const BadCase cases[] = {
      {"/spec/task/image", "5",
       "cannot decode Job ci/hello-abc: spec.task.image: expected a string, got number"},
      {"/spec/task/command", R"("echo hi")",
       "cannot decode Job ci/hello-abc: spec.task.command: expected an array, got string"},
      {"/spec/task/env/1/name", "true",
       "cannot decode Job ci/hello-abc: spec.task.env[1].name: expected a string, got boolean"},
      {"/spec/task/env/1/valueFrom/secretKeyRef/optional", R"("no")",
       "cannot decode Job ci/hello-abc: spec.task.env[1].valueFrom.secretKeyRef.optional: "
       "expected a boolean, got string"},
      {"/metadata/labels", R"({"app": 1})",
       "cannot decode Job ci/hello-abc: metadata.labels[\"app\"]: expected a string, got number"},
      {"/spec/resources/limits/cpu", R"("lots")",
       "cannot decode Job ci/hello-abc: spec.resources.limits.cpu: invalid quantity \"lots\": "
       "expected a number such as 100m, 1.5, 512Mi or 1e3"},
      {"/spec/resources/requests", "[]",
       "cannot decode Job ci/hello-abc: spec.resources.requests: expected an object, got array"},
      {"/spec/desiredState", R"("Paused")",
       "cannot decode Job ci/hello-abc: spec.desiredState: expected one of \"Running\", "
       "\"Cancelled\", got \"Paused\""},
      {"/spec/ttlSecondsAfterFinished", "4294967296",
       "cannot decode Job ci/hello-abc: spec.ttlSecondsAfterFinished: integer 4294967296 out of "
       "range [-2147483648, 2147483647]"},
      {"/spec/activeDeadlineSeconds", "1.5",
       "cannot decode Job ci/hello-abc: spec.activeDeadlineSeconds: expected an integer, got 1.5"},
      {"/spec/activeDeadlineSeconds", R"("600")",
       "cannot decode Job ci/hello-abc: spec.activeDeadlineSeconds: expected an integer, got "
       "string"},
      {"/status/conditions/0/status", R"("Maybe")",
       "cannot decode Job ci/hello-abc: status.conditions[0].status: expected one of \"True\", "
       "\"False\", \"Unknown\", got \"Maybe\""},
      {"/status/startTime", R"("yesterday")",
       "cannot decode Job ci/hello-abc: status.startTime: invalid time \"yesterday\": want RFC "
       "3339 such as 2026-11-29T08:00:00Z"},
      {"/status/result/exitCode", "{}",
       "cannot decode Job ci/hello-abc: status.result.exitCode: expected an integer, got object"},
      {"/spec", R"("x")", "cannot decode Job ci/hello-abc: spec: expected an object, got string"},
      {"/kind", R"("Pod")", "cannot decode Job ci/hello-abc: kind: expected \"Job\", got \"Pod\""},
      {"/apiVersion", R"("batch/v1")",
       "cannot decode Job ci/hello-abc: apiVersion: expected "
       "\"execution.ayatori.ddupan.top/v1alpha1\", got \"batch/v1\""},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(std::string(c.pointer) + " = " + c.value);
    json j = valid;
    j["metadata"]["name"] = "hello-abc";
    j[json::json_pointer(c.pointer)] = json::parse(c.value);
    StatusOr<Job> job = JobFromJson(j);
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(job.status().message(), c.message);
    // The throwing ADL hook reports the same problem.
    EXPECT_THROW((void)j.get<Job>(), json::type_error);
  }
  for (const char* top : {"[]", "null", "7", R"("Job")"}) {
    SCOPED_TRACE(top);
    StatusOr<Job> job = JobFromJson(json::parse(top));
    ASSERT_FALSE(job.ok());
    EXPECT_NE(job.status().message().find("expected an object"), std::string::npos)
        << job.status().message();
  }
}

ObjectMeta FullMeta(const char* name) {
  ObjectMeta m;
  m.name = name;
  m.generateName = "gen-";
  m.uid = "uid-1";
  m.resourceVersion = "77";
  m.generation = 4;
  m.creationTimestamp = At("2026-11-29T07:00:00Z");
  m.deletionTimestamp = At("2026-11-29T09:00:00Z");
  m.labels = {{kJobUidLabel, "abc"}, {"app", "demo"}};
  m.annotations = {{kIsDefaultClassAnnotation, "true"}};
  m.finalizers = {kFinalizer};
  m.ownerReferences = {{"v1", "ConfigMap", "owner", "uid-o", true, true}};
  return m;
}

TEST(JsonTest, ObjectMetaRoundTrips) {
  ObjectMeta m = FullMeta("meta");
  m.namespace_ = "ci";
  const json j = ToJson(m);
  EXPECT_EQ(j["namespace"], "ci");
  EXPECT_EQ(j["deletionTimestamp"], "2026-11-29T09:00:00Z");
  EXPECT_EQ(j["ownerReferences"][0],
            json::parse(R"({"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                            "uid": "uid-o", "controller": true, "blockOwnerDeletion": true})"));
  StatusOr<ObjectMeta> back = ObjectMetaFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, m);
}

TEST(JsonTest, JobClassRoundTrips) {
  JobClass c;
  c.metadata = FullMeta("standard");
  c.spec.controllerName = "execution.ayatori.ddupan.top/docker";
  c.spec.parametersRef = ParametersRef{kGroup, "DockerExecutionParameters", "local", ""};
  c.spec.resources.defaults.requests.cpu = Quantity::MustParse("100m");
  c.spec.resources.defaults.limits.memory = Quantity::MustParse("512Mi");
  c.spec.resources.min.cpu = Quantity::MustParse("10m");
  c.spec.resources.max.cpu = Quantity::MustParse("4");
  c.spec.resources.max.memory = Quantity::MustParse("8Gi");
  c.spec.secretEnvForwarding = SecretEnvForwarding::kAllowed;
  const json j = ToJson(c);
  EXPECT_EQ(j["apiVersion"], kApiVersion);
  EXPECT_EQ(j["kind"], "JobClass");
  EXPECT_EQ(j["spec"], json::parse(R"({
    "controllerName": "execution.ayatori.ddupan.top/docker",
    "parametersRef": {"group": "execution.ayatori.ddupan.top",
                      "kind": "DockerExecutionParameters", "name": "local"},
    "resources": {"defaults": {"requests": {"cpu": "100m"}, "limits": {"memory": "512Mi"}},
                  "min": {"cpu": "10m"}, "max": {"cpu": "4", "memory": "8Gi"}},
    "secretEnvForwarding": "Allowed"})"));
  StatusOr<JobClass> back = JobClassFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);

  // Absent secretEnvForwarding means Denied; a wrong kind is refused.
  StatusOr<JobClass> minimal = JobClassFromJson(json::parse(
      R"({"kind": "JobClass", "metadata": {"name": "m"}, "spec": {"controllerName": "x"}})"));
  ASSERT_TRUE(minimal.ok()) << minimal.status().ToString();
  EXPECT_EQ(minimal->spec.secretEnvForwarding, SecretEnvForwarding::kDenied);
  EXPECT_EQ(ToJson(*minimal)["spec"],
            json::parse(R"({"controllerName": "x", "secretEnvForwarding": "Denied"})"));
  EXPECT_FALSE(JobClassFromJson(json::parse(R"({"kind": "Job"})")).ok());
  StatusOr<JobClass> bad = JobClassFromJson(
      json::parse(R"({"metadata": {"name": "m"}, "spec": {"secretEnvForwarding": "Yes"}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "cannot decode JobClass m: spec.secretEnvForwarding: expected one of \"Allowed\", "
            "\"Denied\", got \"Yes\"");
}

TEST(JsonTest, AdlHooksConvertEveryKind) {
  StatusOr<Job> job = JobFromJson(json::parse(kExampleJob));
  ASSERT_TRUE(job.ok());
  json j = *job;
  EXPECT_EQ(j.get<Job>(), *job);
  json spec = job->spec;
  EXPECT_EQ(spec.get<JobSpec>(), job->spec);
  json conditions = job->status.conditions;
  EXPECT_EQ(conditions.get<std::vector<Condition>>(), job->status.conditions);
  json q = Quantity::MustParse("1.5Gi");
  EXPECT_EQ(q, "1.5Gi");
  EXPECT_EQ(q.get<Quantity>(), Quantity::MustParse("1536Mi"));
  json t = At("2026-11-29T08:00:00Z");
  EXPECT_EQ(t, "2026-11-29T08:00:00Z");
  EXPECT_EQ(t.get<Time>(), At("2026-11-29T08:00:00Z"));
  EXPECT_THROW((void)json("soon").get<Time>(), json::type_error);
  EXPECT_THROW((void)json(3).get<DesiredState>(), json::type_error);
  EXPECT_EQ(json("Cancelled").get<DesiredState>(), DesiredState::kCancelled);
  EXPECT_EQ(json(ConditionStatus::kFalse), "False");
  EXPECT_EQ(json(SecretEnvForwarding::kAllowed), "Allowed");
}

// base::ParseTime (test/base/time_test.cc) in whole seconds: the fraction is dropped.
TEST(TimeTest, ParsesRfc3339InWholeSeconds) {
  const Time eight =
      Time(std::chrono::sys_days(std::chrono::year(2026) / 11 / 29)) + std::chrono::hours(8);
  EXPECT_EQ(At("2026-11-29T08:00:00.999999999Z"), eight);
  EXPECT_EQ(At("2026-11-29T10:00:00.5+02:00"), eight);
  StatusOr<Time> t = ParseTime("2026-11-29T08:00:60Z");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("\"2026-11-29T08:00:60Z\""), std::string::npos);
}

TEST(TimeTest, FormatsUtcWithSeconds) {
  EXPECT_EQ(FormatTime(Time{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(At("2026-11-29T10:00:00.75+02:00")), "2026-11-29T08:00:00Z");
  EXPECT_EQ(FormatTime(At("2024-02-29T23:59:59Z")), "2024-02-29T23:59:59Z");
  EXPECT_EQ(FormatTime(At("1969-12-31T23:59:59Z")), "1969-12-31T23:59:59Z");
}

}  // namespace
}  // namespace ayatori::api
