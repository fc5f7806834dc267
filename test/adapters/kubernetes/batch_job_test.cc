#include "adapters/kubernetes/batch_job.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "adapters/kubernetes/descriptor.h"
#include "adapters/registry.h"
#include "api/quantity.h"

namespace ayatori::adapters::kubernetes {
namespace {

using nlohmann::json;

constexpr const char* kUid = "5cb0a1f2-0000-4000-8000-00000000abcd";

ExecutionRequest MakeRequest() {
  ExecutionRequest r;
  r.job.metadata.namespace_ = "ci";
  r.job.metadata.name = "hello-x7k2p";
  r.job.metadata.uid = kUid;
  auto& task = r.job.spec.task;
  task.image = "docker.io/library/alpine:3.22";
  task.command = {"/bin/sh", "-c"};
  task.args = {"echo \"hello ${TARGET}\""};
  task.workingDir = "/workspace";
  task.imagePullSecrets = {{"regcred"}};
  task.env.push_back({"TARGET", "world", std::nullopt});
  task.env.push_back(
      {"TOKEN", std::nullopt,
       api::EnvVarSource{api::KeySelector{"example-token", "token", false}, std::nullopt}});
  task.env.push_back(
      {"CONFIG_VALUE", std::nullopt,
       api::EnvVarSource{std::nullopt, api::KeySelector{"example-config", "value", true}}});
  r.resources.requests.cpu = api::Quantity::MustParse("100m");
  r.resources.requests.memory = api::Quantity::MustParse("128Mi");
  r.resources.limits.cpu = api::Quantity::MustParse("1");
  r.resources.limits.memory = api::Quantity::MustParse("512Mi");
  return r;
}

TEST(BatchJobName, IsDerivedFromTheUidAndFitsALabelValue) {
  EXPECT_EQ(BatchJobName(kUid), std::string("ayj-") + kUid);
  EXPECT_LE(BatchJobName(kUid).size(), 63u);
  EXPECT_NE(BatchJobName(kUid), BatchJobName("5cb0a1f2-0000-4000-8000-00000000abce"));
}

TEST(BuildBatchJob, RunsOnceWithNoRetries) {
  json j = BuildBatchJob(MakeRequest(), {});
  EXPECT_EQ(j["apiVersion"], "batch/v1");
  EXPECT_EQ(j["kind"], "Job");
  EXPECT_EQ(j["metadata"]["name"], std::string("ayj-") + kUid);
  EXPECT_EQ(j["metadata"]["namespace"], "ci");
  EXPECT_EQ(j["spec"]["backoffLimit"], 0);
  EXPECT_EQ(j["spec"]["completions"], 1);
  EXPECT_EQ(j["spec"]["parallelism"], 1);
  EXPECT_EQ(j["spec"]["podReplacementPolicy"], "Failed");
  EXPECT_EQ(j["spec"]["template"]["spec"]["restartPolicy"], "Never");
  EXPECT_FALSE(j["spec"].contains("activeDeadlineSeconds"))
      << "a Job without a deadline gets no backstop either";
  EXPECT_FALSE(j["spec"].contains("ttlSecondsAfterFinished"));
}

TEST(BuildBatchJob, IsControlledByTheAyatoriJob) {
  json j = BuildBatchJob(MakeRequest(), {});
  ASSERT_EQ(j["metadata"]["ownerReferences"].size(), 1u);
  json ref = j["metadata"]["ownerReferences"][0];
  EXPECT_EQ(ref["apiVersion"], "execution.ayatori.ddupan.top/v1alpha1");
  EXPECT_EQ(ref["kind"], "Job");
  EXPECT_EQ(ref["name"], "hello-x7k2p");
  EXPECT_EQ(ref["uid"], kUid);
  EXPECT_EQ(ref["controller"], true);
  EXPECT_EQ(ref["blockOwnerDeletion"], true);
  EXPECT_TRUE(IsOwnedBy(j, kUid));
  EXPECT_FALSE(IsOwnedBy(j, "another-uid"));
}

TEST(BuildBatchJob, ContainerCarriesTheTask) {
  json c = BuildBatchJob(MakeRequest(), {})["spec"]["template"]["spec"]["containers"];
  ASSERT_EQ(c.size(), 1u);
  c = c[0];
  EXPECT_EQ(c["name"], "main");
  EXPECT_EQ(c["image"], "docker.io/library/alpine:3.22");
  EXPECT_EQ(c["command"], json({"/bin/sh", "-c"}));
  // $ doubled: the kubelet turns $$ back into $ (the next test).
  EXPECT_EQ(c["args"], json({"echo \"hello $${TARGET}\""}));
  EXPECT_EQ(c["workingDir"], "/workspace");
  EXPECT_EQ(c["resources"], json::parse(R"({"requests": {"cpu": "100m", "memory": "128Mi"},
                                            "limits": {"cpu": "1", "memory": "512Mi"}})"));
}

// What the kubelet does to a container's command and args (Kubernetes' expansion of dependent
// environment variables): $$ is $, $(NAME) of a defined variable is its value, anything else is
// kept.
std::string KubeletExpand(const std::string& in, const std::map<std::string, std::string>& env) {
  std::string out;
  size_t i = 0;
  while (i < in.size()) {
    if (in.compare(i, 2, "$$") == 0) {
      out += '$';
      i += 2;
      continue;
    }
    if (const size_t close = in.find(')', i); in.compare(i, 2, "$(") == 0 && close != in.npos) {
      if (auto var = env.find(in.substr(i + 2, close - i - 2)); var != env.end()) {
        out += var->second;
        i = close + 1;
        continue;
      }
    }
    out += in[i++];
  }
  return out;
}

TEST(BuildBatchJob, TheKubeletRunsTheArgvVerbatimAsDockerAndOpenSandboxDo) {
  const std::map<std::string, std::string> env = {{"HOME", "/root"}, {"TARGET", "world"}};
  const std::vector<std::string> argv = {
      "echo '$(HOME) $$'", "$(TARGET)", "$", "$$$", "a$", "$(", "$()", "${HOME}", "$$(HOME)", ""};
  ExecutionRequest r = MakeRequest();
  r.job.spec.task.command = argv;
  r.job.spec.task.args = argv;
  json c = BuildBatchJob(r, {})["spec"]["template"]["spec"]["containers"][0];
  ASSERT_EQ(c["command"].size(), argv.size());
  ASSERT_EQ(c["args"].size(), argv.size());
  EXPECT_EQ(c["command"][0], "echo '$$(HOME) $$$$'");
  for (size_t i = 0; i < argv.size(); ++i) {
    SCOPED_TRACE(argv[i]);
    EXPECT_EQ(KubeletExpand(c["command"][i].get<std::string>(), env), argv[i]);
    EXPECT_EQ(KubeletExpand(c["args"][i].get<std::string>(), env), argv[i]);
  }
  // Without the escape, the kubelet would have changed it.
  EXPECT_NE(KubeletExpand(argv[0], env), argv[0]);
}

TEST(BuildBatchJob, OmitsWhatTheTaskLeavesEmpty) {
  ExecutionRequest r = MakeRequest();
  r.job.spec.task.command.clear();
  r.job.spec.task.args.clear();
  r.job.spec.task.workingDir.clear();
  r.job.spec.task.imagePullSecrets.clear();
  r.resources = {};
  json j = BuildBatchJob(r, {});
  json c = j["spec"]["template"]["spec"]["containers"][0];
  EXPECT_FALSE(c.contains("command")) << "empty command means the image entrypoint";
  EXPECT_FALSE(c.contains("args"));
  EXPECT_FALSE(c.contains("workingDir"));
  EXPECT_FALSE(c.contains("resources"));
  EXPECT_FALSE(j["spec"]["template"]["spec"].contains("imagePullSecrets"));
  EXPECT_FALSE(j["spec"]["template"]["spec"].contains("serviceAccountName"));
}

TEST(BuildBatchJob, PassesSecretAndConfigMapReferencesThroughAndAddsIdentity) {
  json env = BuildBatchJob(MakeRequest(), {})["spec"]["template"]["spec"]["containers"][0]["env"];
  EXPECT_EQ(env, json::parse(R"([
    {"name": "TARGET", "value": "world"},
    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "example-token", "key": "token"}}},
    {"name": "CONFIG_VALUE",
     "valueFrom": {"configMapKeyRef": {"name": "example-config", "key": "value", "optional": true}}},
    {"name": "AYATORI_JOB_NAMESPACE", "value": "ci"},
    {"name": "AYATORI_JOB_NAME", "value": "hello-x7k2p"},
    {"name": "AYATORI_JOB_UID", "value": "5cb0a1f2-0000-4000-8000-00000000abcd"}
  ])"));
}

TEST(BuildBatchJob, IdentityEnvCannotBeOverriddenByTheTask) {
  ExecutionRequest r = MakeRequest();
  r.job.spec.task.env = {{"AYATORI_JOB_UID", "forged", std::nullopt}};
  json env = BuildBatchJob(r, {})["spec"]["template"]["spec"]["containers"][0]["env"];
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[2], json({{"name", "AYATORI_JOB_UID"}, {"value", kUid}}));
}

TEST(BuildBatchJob, PassesImagePullSecretsByName) {
  json spec = BuildBatchJob(MakeRequest(), {})["spec"]["template"]["spec"];
  EXPECT_EQ(spec["imagePullSecrets"], json::parse(R"([{"name": "regcred"}])"));
}

TEST(BuildBatchJob, LabelsJobAndPodWithTheUid) {
  KubernetesExecutionParameters params;
  params.extraLabels = {{"team", "ci"}};
  params.extraAnnotations = {{"example.com/cost-center", "42"}};
  json j = BuildBatchJob(MakeRequest(), params);
  for (const json& meta : {j["metadata"], j["spec"]["template"]["metadata"]}) {
    EXPECT_EQ(meta["labels"]["execution.ayatori.ddupan.top/job-uid"], kUid);
    EXPECT_EQ(meta["labels"]["execution.ayatori.ddupan.top/job-namespace"], "ci");
    EXPECT_EQ(meta["labels"]["execution.ayatori.ddupan.top/job-name"], "hello-x7k2p");
    EXPECT_EQ(meta["labels"]["app.kubernetes.io/managed-by"], "ayatori");
    EXPECT_EQ(meta["labels"]["team"], "ci");
    EXPECT_EQ(meta["annotations"]["example.com/cost-center"], "42");
    EXPECT_EQ(meta["annotations"]["execution.ayatori.ddupan.top/job-name"], "hello-x7k2p");
  }
}

TEST(BuildBatchJob, LongJobNamesGoToTheAnnotationOnly) {
  ExecutionRequest r = MakeRequest();
  r.job.metadata.name = std::string(100, 'a');
  json meta = BuildBatchJob(r, {})["metadata"];
  EXPECT_FALSE(meta["labels"].contains("execution.ayatori.ddupan.top/job-name"));
  EXPECT_EQ(meta["annotations"]["execution.ayatori.ddupan.top/job-name"], r.job.metadata.name);
  EXPECT_EQ(meta["ownerReferences"][0]["name"], r.job.metadata.name);
}

TEST(BuildBatchJob, AppliesSchedulingParameters) {
  KubernetesExecutionParameters params;
  params.serviceAccountName = "runner";
  params.nodeSelector = {{"pool", "batch"}};
  params.tolerations = {{"dedicated", "Equal", "batch", "NoSchedule", std::nullopt},
                        {"", "Exists", "", "", 30}};
  params.runtimeClassName = "gvisor";
  params.priorityClassName = "low";
  json spec = BuildBatchJob(MakeRequest(), params)["spec"]["template"]["spec"];
  EXPECT_EQ(spec["serviceAccountName"], "runner");
  EXPECT_EQ(spec["nodeSelector"], json({{"pool", "batch"}}));
  EXPECT_EQ(spec["tolerations"], json::parse(R"([
    {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"},
    {"operator": "Exists", "tolerationSeconds": 30}])"));
  EXPECT_EQ(spec["runtimeClassName"], "gvisor");
  EXPECT_EQ(spec["priorityClassName"], "low");
}

TEST(BuildBatchJob, DefaultPodPassesTheRestrictedPodSecurityStandard) {
  json spec = BuildBatchJob(MakeRequest(), {})["spec"]["template"]["spec"];
  // Pod level: non-root with the nobody ids, the runtime's default seccomp profile.
  EXPECT_EQ(spec["securityContext"], json::parse(R"({"runAsNonRoot": true, "runAsUser": 65534,
    "runAsGroup": 65534, "seccompProfile": {"type": "RuntimeDefault"}})"));
  EXPECT_EQ(spec["automountServiceAccountToken"], false);
  EXPECT_FALSE(spec.contains("hostNetwork") || spec.contains("hostPID") ||
               spec.contains("hostIPC"));
  json c = spec["containers"][0];
  EXPECT_EQ(c["securityContext"], json::parse(R"({"allowPrivilegeEscalation": false,
    "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": true})"));
  // Only emptyDir volumes (allowed by "restricted"): /tmp, and the working directory because
  // the root filesystem is read-only.
  EXPECT_EQ(spec["volumes"], json::parse(R"([
    {"name": "ayatori-tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
    {"name": "ayatori-workdir", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}}])"));
  EXPECT_EQ(c["volumeMounts"], json::parse(R"([
    {"name": "ayatori-tmp", "mountPath": "/tmp"},
    {"name": "ayatori-workdir", "mountPath": "/workspace"}])"));
}

TEST(BuildBatchJob, AppliesTheSecurityProfile) {
  KubernetesExecutionParameters params;
  auto& sec = params.securityProfile;
  sec.runAsUser = 1000;
  sec.runAsGroup = 2000;
  sec.addCapabilities = {"NET_BIND_SERVICE"};
  sec.allowPrivilegeEscalation = true;
  sec.seccompProfile = SeccompProfile::kUnconfined;
  sec.readOnlyRootFilesystem = false;
  sec.tmpSizeMiB = 8;
  json spec = BuildBatchJob(MakeRequest(), params)["spec"]["template"]["spec"];
  EXPECT_EQ(spec["securityContext"]["runAsUser"], 1000);
  EXPECT_EQ(spec["securityContext"]["runAsGroup"], 2000);
  EXPECT_EQ(spec["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(spec["securityContext"]["seccompProfile"]["type"], "Unconfined");
  json c = spec["containers"][0]["securityContext"];
  EXPECT_EQ(c["allowPrivilegeEscalation"], true);
  EXPECT_EQ(c["capabilities"], json::parse(R"({"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})"));
  EXPECT_EQ(c["readOnlyRootFilesystem"], false);
  // A writable root filesystem: the working directory keeps the image's content.
  EXPECT_EQ(spec["volumes"], json::parse(R"([
    {"name": "ayatori-tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}}])"));
}

TEST(BuildBatchJob, RootOnlyWhenTheProfileSaysSo) {
  KubernetesExecutionParameters params;
  params.securityProfile.runAsUser = 0;
  params.securityProfile.runAsRoot = true;
  json ctx = BuildBatchJob(MakeRequest(), params)["spec"]["template"]["spec"]["securityContext"];
  EXPECT_EQ(ctx["runAsUser"], 0);
  EXPECT_FALSE(ctx.contains("runAsNonRoot"));
}

TEST(BuildBatchJob, AWorkingDirUnderTmpNeedsNoVolumeOfItsOwn) {
  ExecutionRequest r = MakeRequest();
  r.job.spec.task.workingDir = "/tmp/work";
  json spec = BuildBatchJob(r, {})["spec"]["template"]["spec"];
  EXPECT_EQ(spec["volumes"].size(), 1u) << spec["volumes"].dump();
  r.job.spec.task.workingDir.clear();
  EXPECT_EQ(BuildBatchJob(r, {})["spec"]["template"]["spec"]["volumes"].size(), 1u);
}

TEST(BuildBatchJob, TheServiceAccountTokenOnlyWhenANamedAccountAsksForIt) {
  KubernetesExecutionParameters params;
  params.automountServiceAccountToken = true;  // without a name: still no token
  EXPECT_EQ(BuildBatchJob(MakeRequest(),
                          params)["spec"]["template"]["spec"]["automountServiceAccountToken"],
            false);
  params.serviceAccountName = "runner";
  EXPECT_EQ(BuildBatchJob(MakeRequest(),
                          params)["spec"]["template"]["spec"]["automountServiceAccountToken"],
            true);
  params.automountServiceAccountToken = false;
  EXPECT_EQ(BuildBatchJob(MakeRequest(),
                          params)["spec"]["template"]["spec"]["automountServiceAccountToken"],
            false);
}

TEST(BuildBatchJob, ActiveDeadlineIsABackstopBehindTheControllers) {
  ExecutionRequest r = MakeRequest();
  r.job.spec.activeDeadlineSeconds = 600;
  json j = BuildBatchJob(r, {});
  EXPECT_EQ(j["spec"]["activeDeadlineSeconds"], 600 + kActiveDeadlineMarginSeconds);
  EXPECT_GT(j["spec"]["activeDeadlineSeconds"].get<int64_t>(), 600);
}

TEST(IsOwnedBy, RequiresBothTheUidLabelAndTheControllerReference) {
  json j = BuildBatchJob(MakeRequest(), {});
  json noLabel = j;
  noLabel["metadata"]["labels"].erase("execution.ayatori.ddupan.top/job-uid");
  EXPECT_FALSE(IsOwnedBy(noLabel, kUid));
  json notController = j;
  notController["metadata"]["ownerReferences"][0]["controller"] = false;
  EXPECT_FALSE(IsOwnedBy(notController, kUid));
  json otherOwner = j;
  otherOwner["metadata"]["ownerReferences"][0]["uid"] = "someone-else";
  EXPECT_FALSE(IsOwnedBy(otherOwner, kUid));
  json otherKind = j;
  otherKind["metadata"]["ownerReferences"][0]["apiVersion"] = "batch/v1";
  EXPECT_FALSE(IsOwnedBy(otherKind, kUid));
  EXPECT_FALSE(IsOwnedBy(json::object(), kUid));
  EXPECT_FALSE(IsOwnedBy(json("not an object"), kUid));
}

TEST(ValidateRequest, AcceptsAPlainRequest) {
  EXPECT_TRUE(ValidateRequest(MakeRequest(), {}).ok());
}

TEST(ValidateRequest, RejectsBadOrReservedLabelsAndAnnotations) {
  KubernetesExecutionParameters p;
  p.extraLabels = {{"team", "a b"}};
  Status s = ValidateRequest(MakeRequest(), p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("extraLabels[team]"), std::string::npos) << s.message();

  p.extraLabels = {{"execution.ayatori.ddupan.top/job-uid", "x"}};
  s = ValidateRequest(MakeRequest(), p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cannot be overridden"), std::string::npos) << s.message();

  p.extraLabels = {{"-bad", "x"}};
  EXPECT_EQ(ValidateRequest(MakeRequest(), p).code(), StatusCode::kInvalidArgument);

  p.extraLabels = {};
  p.extraAnnotations = {{"batch.kubernetes.io/job-tracking", ""}};
  EXPECT_EQ(ValidateRequest(MakeRequest(), p).code(), StatusCode::kInvalidArgument);

  p.extraAnnotations = {};
  p.nodeSelector = {{"pool", std::string(64, 'x')}};
  EXPECT_EQ(ValidateRequest(MakeRequest(), p).code(), StatusCode::kInvalidArgument);
}

TEST(ValidateRequest, RejectsAJobWithoutIdentityOrImage) {
  ExecutionRequest r = MakeRequest();
  r.job.metadata.uid.clear();
  EXPECT_EQ(ValidateRequest(r, {}).code(), StatusCode::kInvalidArgument);
  r = MakeRequest();
  r.job.spec.task.image.clear();
  EXPECT_EQ(ValidateRequest(r, {}).code(), StatusCode::kInvalidArgument);
}

TEST(ParseParameters, EmptyMeansDefaults) {
  auto p = ParseParameters(json());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->imagePullFailureTimeoutSeconds, 300);
  p = ParseParameters(json::object());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
}

TEST(ParseParameters, ReadsTheSpec) {
  auto p = ParseParameters(json::parse(R"({
    "apiVersion": "execution.ayatori.ddupan.top/v1alpha1", "kind": "KubernetesExecutionParameters",
    "metadata": {"name": "default"},
    "spec": {"serviceAccountName": "runner", "imagePullFailureTimeoutSeconds": 5,
             "extraLabels": {"team": "ci"}}})"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->serviceAccountName, "runner");
  EXPECT_EQ(p->imagePullFailureTimeoutSeconds, 5);
  EXPECT_EQ(p->extraLabels.at("team"), "ci");
}

TEST(ParseParameters, RejectsANonPositiveImagePullTimeout) {
  auto p = ParseParameters(json::parse(R"({"spec": {"imagePullFailureTimeoutSeconds": 0}})"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("imagePullFailureTimeoutSeconds"), std::string::npos);
}

TEST(ParseParameters, ReadsTheSecurityProfileAndItsDefaults) {
  auto p = ParseParameters(json::parse(R"({"spec": {"securityProfile": {"runAsUser": 1000}}})"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->securityProfile.runAsUser, 1000);
  EXPECT_EQ(p->securityProfile.runAsGroup, 65534);
  EXPECT_EQ(p->securityProfile.readOnlyRootFilesystem, true);
  EXPECT_EQ(p->securityProfile.tmpSizeMiB, 64);
  EXPECT_EQ(p->securityProfile.seccompProfile, SeccompProfile::kRuntimeDefault);
}

TEST(ParseParameters, RejectsAnUnsafeOrMalformedSecurityProfile) {
  struct Case {
    const char* spec;
    const char* says;
  } cases[] = {
      {R"({"securityProfile": {"runAsUser": 0}})", "runAsRoot: true"},
      {R"({"securityProfile": {"runAsUser": -1}})", "runAsUser must be"},
      {R"({"securityProfile": {"seccompProfile": "Localhost"}})",
       R"("RuntimeDefault", "Unconfined")"},
      {R"({"securityProfile": {"tmpSizeMiB": 0}})", "tmpSizeMiB"},
      {R"({"securityProfile": {"addCapabilities": ["CAP_NET_ADMIN"]}})", "CAP_NET_ADMIN"},
      {R"({"securityProfile": {"addCapabilities": ["ALL"]}})", "ALL is not allowed"},
      {R"({"securityProfile": {"addCapabilities": ["net_admin"]}})", "net_admin"},
      {R"({"automountServiceAccountToken": true})", "needs spec.serviceAccountName"},
      {R"({"securityProfile": {"runAsRoot": "yes"}})", "runAsRoot"},
  };
  for (const auto& c : cases) {
    auto p = ParseParameters(json{{"spec", json::parse(c.spec)}});
    ASSERT_FALSE(p.ok()) << c.spec;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(p.status().message().find(c.says), std::string::npos)
        << c.spec << ": " << p.status().message();
  }
  auto root = ParseParameters(
      json::parse(R"({"spec": {"securityProfile": {"runAsUser": 0, "runAsRoot": true}}})"));
  EXPECT_TRUE(root.ok()) << root.status().ToString();
}

TEST(ValidateRequest, RefusesNodeSettingsAPodCannotCarry) {
  for (const char* field : {"pidsLimit", "openFilesLimit", "logMaxBytes"}) {
    auto p = ParseParameters(json{{"spec", {{"securityProfile", {{field, 100}}}}}});
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    Status s = ValidateRequest(MakeRequest(), *p);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
  }
}

TEST(Descriptor, AcceptsTheSecurityProfileAndRefusesNodeSettingsAsNotEnforceable) {
  const AdapterDescriptor d = Descriptor();
  const ExecutionRequest r = MakeRequest();
  auto refusal = [&](const json& spec) {
    return RefusedAtAcceptance(d, "k8s", {{"metadata", {{"name", "p"}}}, {"spec", spec}}, {},
                               r.job);
  };
  EXPECT_EQ(refusal(json::parse(R"({"automountServiceAccountToken": false,
    "serviceAccountName": "runner", "securityProfile": {"runAsUser": 1000,
    "addCapabilities": ["NET_BIND_SERVICE"], "readOnlyRootFilesystem": false, "tmpSizeMiB": 16,
    "pidsLimit": null}})")),
            std::nullopt);
  for (const char* field : {"pidsLimit", "openFilesLimit", "logMaxBytes"}) {
    auto refused = refusal({{"securityProfile", {{field, 512}}}});
    ASSERT_TRUE(refused.has_value()) << field;
    EXPECT_EQ(refused->reason, "NotEnforceable");
    EXPECT_NE(refused->message.find(std::string("spec.securityProfile.") + field),
              std::string::npos)
        << refused->message;
    EXPECT_NE(refused->message.find("KubernetesExecutionParameters \"p\""), std::string::npos)
        << refused->message;
  }
}

TEST(Selectors, SelectEverythingManagedOrOneUid) {
  EXPECT_EQ(ManagedSelector(), "execution.ayatori.ddupan.top/job-uid");
  EXPECT_EQ(SelectorForUid("u1"), "execution.ayatori.ddupan.top/job-uid=u1");
}

}  // namespace
}  // namespace ayatori::adapters::kubernetes
