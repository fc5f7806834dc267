// The adapter registry and the descriptors the adapters describe themselves with.
#include "adapters/registry.h"

#include <gtest/gtest.h>

#include <set>

#include "adapters/docker/descriptor.h"
#include "adapters/docker/parameters.h"
#include "adapters/kubernetes/descriptor.h"
#include "adapters/kubernetes/parameters.h"
#include "adapters/opensandbox/descriptor.h"
#include "adapters/opensandbox/parameters.h"
#include "adapters/testing/in_process_adapter.h"
#include "api/json.h"

namespace ayatori::adapters {
namespace {

using nlohmann::json;

AdapterDescriptor Described(const std::string& controllerName, const std::string& kind = "") {
  AdapterDescriptor d;
  d.controllerName = controllerName;
  if (!kind.empty()) d.parameters = ParametersKind{"example.com", "v1", kind, "things", {"size"}};
  return d;
}

TEST(AdapterRegistryTest, RegistersOnceByControllerNameAndParametersKind) {
  AdapterRegistry registry;
  auto adapter = std::make_shared<InProcessTestAdapter>();
  ASSERT_TRUE(registry.Register(Described("example.com/a", "Thing"), adapter).ok());
  ASSERT_TRUE(registry.Register(Described("example.com/b"), adapter).ok());

  Status again = registry.Register(Described("example.com/a"), adapter);
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.message().find("example.com/a"), std::string::npos) << again.message();
  Status sameKind = registry.Register(Described("example.com/c", "Thing"), adapter);
  EXPECT_EQ(sameKind.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(sameKind.message().find("Thing.example.com"), std::string::npos) << sameKind.message();

  EXPECT_EQ(registry.Register(Described(""), adapter).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register(Described("example.com/d"), nullptr).code(),
            StatusCode::kInvalidArgument);
  AdapterDescriptor noResource = Described("example.com/e", "Other");
  noResource.parameters->resource.clear();
  EXPECT_EQ(registry.Register(noResource, adapter).code(), StatusCode::kInvalidArgument);

  // The refused registrations left nothing behind.
  ASSERT_EQ(registry.All().size(), 2u);
  EXPECT_EQ(registry.ControllerNames(), "example.com/a, example.com/b");
  EXPECT_EQ(registry.Find("example.com/b"), adapter);
  EXPECT_EQ(registry.Find("example.com/c"), nullptr);
  ASSERT_NE(registry.FindByParametersKind("example.com", "Thing"), nullptr);
  EXPECT_EQ(registry.FindByParametersKind("example.com", "Thing")->controllerName, "example.com/a");
  EXPECT_EQ(registry.FindByParametersKind("other.example.com", "Thing"), nullptr);
  EXPECT_EQ(AdapterRegistry().ControllerNames(), "none");
}

api::Job PlainJob() {
  api::Job job;
  job.metadata.name = "j";
  job.metadata.namespace_ = "ns";
  job.metadata.uid = "u";
  job.spec.task.image = "busybox";
  return job;
}

// A default descriptor claims nothing: every ask is refused, each with its own message.
TEST(RequirementsNotEnforcedTest, ADescriptorThatClaimsNothingRefusesEveryAsk) {
  AdapterDescriptor nothing = Described("example.com/none", "Thing");
  nothing.parametersAsk = [](const json& p) {
    Enforcement ask;
    ask.egressDeny = p.value("/spec/offline"_json_pointer, false);
    ask.isolation = p.value("/spec/sandboxed"_json_pointer, false);
    return ask;
  };
  nothing.parameters->fields = {"offline", "sandboxed"};
  const api::Job job = PlainJob();
  api::ResourceRequirements none;
  EXPECT_EQ(RequirementsNotEnforced(nothing, "c", json::object(), none, job), std::nullopt);

  auto says = [&](const json& params, const api::ResourceRequirements& r, const api::Job& j) {
    return RequirementsNotEnforced(nothing, "c", params, r, j).value_or("(enforced)");
  };
  api::ResourceRequirements memory;
  memory.limits.memory = api::Quantity::MustParse("1Gi");
  EXPECT_EQ(says(json::object(), memory, job),
            "JobClass \"c\" asks for a memory limit (limits.memory 1Gi), which the adapter for "
            "example.com/none does not enforce");
  api::ResourceRequirements cpu;
  cpu.limits.cpu = api::Quantity::MustParse("2");
  EXPECT_NE(says(json::object(), cpu, job).find("a cpu limit (limits.cpu 2)"), std::string::npos);
  // Requests alone are admission, not enforcement.
  api::ResourceRequirements requests;
  requests.requests.cpu = api::Quantity::MustParse("2");
  EXPECT_EQ(says(json::object(), requests, job), "(enforced)");

  api::Job pulls = PlainJob();
  pulls.spec.task.imagePullSecrets.push_back({"creds"});
  EXPECT_NE(says(json::object(), none, pulls).find("imagePullSecrets"), std::string::npos);

  EXPECT_NE(says({{"spec", {{"gpus", 1}}}}, none, job).find("Thing spec.gpus"), std::string::npos);
  EXPECT_NE(says({{"spec", {{"offline", true}}}}, none, job).find("egress deny"),
            std::string::npos);
  EXPECT_NE(says({{"spec", {{"sandboxed", true}}}}, none, job).find("isolation"),
            std::string::npos);
  EXPECT_EQ(says({{"spec", {{"offline", false}}}}, none, job), "(enforced)");

  // The same asks pass once the descriptor claims them.
  nothing.enforces = {.memoryLimit = true,
                      .cpuLimit = true,
                      .egressDeny = true,
                      .isolation = true,
                      .imagePullAuth = true};
  api::ResourceRequirements both = memory;
  both.limits.cpu = cpu.limits.cpu;
  EXPECT_EQ(RequirementsNotEnforced(
                nothing, "c", {{"spec", {{"offline", true}, {"sandboxed", true}}}}, both, pulls),
            std::nullopt);
}

// One check at acceptance: what the adapter does not enforce first (NotEnforceable), then the
// descriptor's own refusal of the parameters under its own reason.
TEST(RefusedAtAcceptanceTest, NotEnforceableFirstThenTheDescriptorsRefusal) {
  AdapterDescriptor d = Described("example.com/r", "Thing");
  d.parameters->fields = {"size"};
  const api::Job job = PlainJob();
  EXPECT_EQ(RefusedAtAcceptance(d, "c", {{"spec", {{"size", 1}}}}, {}, job), std::nullopt);
  d.refuseParameters = [](const json& p) -> std::optional<Refusal> {
    if (p.value("/spec/size"_json_pointer, 0) > 3) return Refusal{"TooBig", "size above 3"};
    return std::nullopt;
  };
  EXPECT_EQ(RefusedAtAcceptance(d, "c", {{"spec", {{"size", 1}}}}, {}, job), std::nullopt);
  EXPECT_EQ(RefusedAtAcceptance(d, "c", {{"spec", {{"size", 4}}}}, {}, job),
            (Refusal{"TooBig", "size above 3"}));
  const auto both = RefusedAtAcceptance(d, "c", {{"spec", {{"size", 4}, {"gpus", 1}}}}, {}, job);
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->reason, kReasonNotEnforceable);
  EXPECT_NE(both->message.find("Thing spec.gpus"), std::string::npos) << both->message;
}

// The Docker descriptor refuses a plain-HTTP engine endpoint as InsecureEndpoint, also when the
// endpoint comes from --docker-endpoint (a spec override laid over the parameters as read).
// A backend that runs a command line (OpenSandbox) never takes args for the program: a Job
// without spec.task.command is refused at acceptance with CommandRequired (issue 24, docs/api.md).
TEST(RefusedAtAcceptanceTest, ABackendThatCannotRunTheEntrypointRequiresACommand) {
  AdapterDescriptor d;
  d.controllerName = "execution.ayatori.ddupan.top/opensandbox";
  d.runsImageEntrypoint = false;
  api::Job job;
  job.spec.task.image = "busybox";
  job.spec.task.args = {"echo", "hi"};
  auto refused = RefusedAtAcceptance(d, "sb", nlohmann::json::object(), {}, job);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->reason, kReasonCommandRequired);
  EXPECT_NE(refused->message.find("spec.task.command"), std::string::npos) << refused->message;
  job.spec.task.command = {"/bin/echo"};
  EXPECT_FALSE(RefusedAtAcceptance(d, "sb", nlohmann::json::object(), {}, job).has_value());
  d.runsImageEntrypoint = true;  // the other backends run the entrypoint with the args
  job.spec.task.command.clear();
  EXPECT_FALSE(RefusedAtAcceptance(d, "k8s", nlohmann::json::object(), {}, job).has_value());
}

TEST(RefusedAtAcceptanceTest, DockerRefusesPlainHttpEndpointsAsInsecureEndpoint) {
  const api::Job job = PlainJob();
  auto refusal = [&](const AdapterDescriptor& d, const json& spec) {
    return RefusedAtAcceptance(d, "c", WithSpecOverrides(d, {{"spec", spec}}), {}, job);
  };
  const AdapterDescriptor local = docker::Descriptor();
  EXPECT_EQ(refusal(local, json::object()), std::nullopt);  // the local unix socket
  EXPECT_EQ(refusal(local, {{"endpoint", "tcp://127.0.0.1:2375"}, {"insecure", true}}),
            std::nullopt);
  EXPECT_EQ(refusal(local, {{"endpoint", "https://127.0.0.1:2376"}}), std::nullopt);
  for (const json& spec :
       {json{{"endpoint", "tcp://127.0.0.1:2375"}}, json{{"endpoint", "http://127.0.0.1:2375"}},
        json{{"endpoint", "http://127.0.0.1:2375"},
             {"tlsSecretRef", {{"namespace", "ns"}, {"name", "tls"}}},
             {"insecure", true}}}) {
    const auto r = refusal(local, spec);
    ASSERT_TRUE(r.has_value()) << spec.dump();
    EXPECT_EQ(r->reason, "InsecureEndpoint");
    EXPECT_NE(r->message.find("plain HTTP"), std::string::npos) << r->message;
    EXPECT_EQ(r->message.find("127.0.0.1"), std::string::npos) << r->message;
  }
  const AdapterDescriptor overridden = docker::Descriptor("tcp://127.0.0.1:2375");
  const auto r = refusal(overridden, {{"endpoint", "unix:///var/run/docker.sock"}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->reason, "InsecureEndpoint");
  // Parameters that do not decode are the adapter's Validate's to refuse (BackendRejected).
  EXPECT_EQ(refusal(local, {{"endpoint", 7}}), std::nullopt);
}

// Issue 26: every parameters kind's *SecretRef must name the controller's namespace unless the
// spec allows others; the allowance is no backend ask (never NotEnforceable).
TEST(SecretNamespaceRefusalTest, SecretRefsOutsideTheControllerNamespaceUnlessAllowed) {
  const json osb = {
      {"kind", "OpenSandboxExecutionParameters"},
      {"spec",
       {{"endpoint", "http://127.0.0.1:8080/v1"},
        {"apiKeySecretRef", {{"namespace", "team-a"}, {"name", "key"}, {"key", "api-key"}}}}}};
  auto r = SecretNamespaceRefusal("sb", osb, "ayatori-system");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->reason, kReasonSecretNamespaceNotAllowed);
  EXPECT_NE(r->message.find("OpenSandboxExecutionParameters spec.apiKeySecretRef names Secret "
                            "\"team-a/key\", outside the controller's namespace ayatori-system"),
            std::string::npos)
      << r->message;
  EXPECT_EQ(SecretNamespaceRefusal("sb", osb, "team-a"), std::nullopt);
  json allowed = osb;
  allowed["spec"][kAllowCrossNamespaceSecretRefs] = true;
  EXPECT_EQ(SecretNamespaceRefusal("sb", allowed, "ayatori-system"), std::nullopt);
  json notAllowed = osb;
  notAllowed["spec"][kAllowCrossNamespaceSecretRefs] = false;
  EXPECT_TRUE(SecretNamespaceRefusal("sb", notAllowed, "ayatori-system").has_value());
  // Other fields, and parameters without a spec, are not references.
  EXPECT_EQ(SecretNamespaceRefusal("c", {{"spec", {{"extraLabels", {{"namespace", "x"}}}}}},
                                   "ayatori-system"),
            std::nullopt);
  EXPECT_EQ(SecretNamespaceRefusal("c", json::object(), "ayatori-system"), std::nullopt);
  // The allowance is accepted by every kind's enforcement check.
  const AdapterDescriptor d = docker::Descriptor();
  EXPECT_EQ(RequirementsNotEnforced(d, "c", {{"spec", {{kAllowCrossNamespaceSecretRefs, true}}}},
                                    {}, PlainJob()),
            std::nullopt);
}

TEST(WithSpecOverridesTest, OverridesReplaceSpecFieldsAndLeaveTheRest) {
  AdapterDescriptor d = docker::Descriptor("tcp://127.0.0.1:2375");
  json p = {{"kind", "DockerExecutionParameters"},
            {"spec", {{"endpoint", "unix:///var/run/docker.sock"}, {"networkMode", "host"}}}};
  json out = WithSpecOverrides(d, p);
  EXPECT_EQ(out["spec"]["endpoint"], "tcp://127.0.0.1:2375");
  EXPECT_EQ(out["spec"]["networkMode"], "host");
  EXPECT_EQ(WithSpecOverrides(docker::Descriptor(), p), p);
  EXPECT_EQ(WithSpecOverrides(d, {{"kind", "DockerExecutionParameters"}})["spec"]["endpoint"],
            "tcp://127.0.0.1:2375");
}

// The shipped descriptors register together, and each lists only fields of its kind's API model:
// the typed model's JSON (defaults filled in, optional fields set) has every listed field.
TEST(ShippedDescriptorsTest, RegisterTogetherAndListOnlyFieldsOfTheirKind) {
  AdapterRegistry registry;
  auto adapter = std::make_shared<InProcessTestAdapter>();
  ASSERT_TRUE(registry.Register(docker::Descriptor(), adapter).ok());
  ASSERT_TRUE(registry.Register(kubernetes::Descriptor(), adapter).ok());
  ASSERT_TRUE(registry.Register(opensandbox::Descriptor(), adapter).ok());
  ASSERT_TRUE(registry.Register(TestDescriptor(), adapter).ok());

  docker::DockerExecutionParameters dockerModel;
  dockerModel.runtime = "runc";
  dockerModel.extraLabels = {{"a", "b"}};
  dockerModel.tlsSecretRef = api::SecretKeyReference{"ns", "n", "k"};
  dockerModel.insecure = true;          // encoded only when set
  dockerModel.allowHostNetwork = true;  // encoded only when set
  kubernetes::KubernetesExecutionParameters k8sModel;
  k8sModel.serviceAccountName = "sa";
  k8sModel.nodeSelector = {{"a", "b"}};
  k8sModel.tolerations.resize(1);
  k8sModel.tolerations[0].key = "k";
  k8sModel.tolerations[0].operator_ = "Exists";
  k8sModel.runtimeClassName = "r";
  k8sModel.priorityClassName = "p";
  k8sModel.extraLabels = {{"a", "b"}};
  k8sModel.extraAnnotations = {{"a", "b"}};
  opensandbox::OpenSandboxExecutionParameters osModel;
  osModel.endpoint = "http://127.0.0.1:8080/v1";
  osModel.apiKeySecretRef = api::SecretKeyReference{"ns", "n", "k"};
  osModel.extraMetadata = {{"a", "b"}};
  osModel.caBundle = "-----BEGIN CERTIFICATE-----";
  const std::map<std::string, json> models = {
      {"DockerExecutionParameters", docker::ToJson(dockerModel)},
      {"KubernetesExecutionParameters", kubernetes::ToJson(k8sModel)},
      {"OpenSandboxExecutionParameters", opensandbox::ToJson(osModel)}};
  std::set<std::string> kinds;
  for (const auto& [descriptor, a] : registry.All()) {
    if (!descriptor.parameters) continue;
    const ParametersKind& p = *descriptor.parameters;
    kinds.insert(p.kind);
    EXPECT_EQ(p.group, api::kGroup);
    ASSERT_TRUE(models.contains(p.kind)) << p.kind;
    const json& spec = models.at(p.kind)["spec"];
    for (const auto& field : p.fields) {
      EXPECT_TRUE(spec.contains(field)) << p.kind << " has no field " << field;
    }
  }
  // Parameters with their defaults only ask for nothing the adapter does not enforce.
  const std::map<std::string, json> defaults = {
      {"DockerExecutionParameters", docker::ToJson(docker::DockerExecutionParameters{})},
      {"KubernetesExecutionParameters",
       kubernetes::ToJson(kubernetes::KubernetesExecutionParameters{})},
      {"OpenSandboxExecutionParameters",
       opensandbox::ToJson(opensandbox::OpenSandboxExecutionParameters{})}};
  for (const auto& [descriptor, a] : registry.All()) {
    if (!descriptor.parameters) continue;
    EXPECT_EQ(RequirementsNotEnforced(descriptor, "c", defaults.at(descriptor.parameters->kind), {},
                                      PlainJob()),
              std::nullopt);
  }
  EXPECT_EQ(kinds.size(), 3u);
  EXPECT_TRUE(registry.FindDescriptor(kubernetes::kControllerName)->resolvesEnvReferences);
  EXPECT_FALSE(registry.FindDescriptor(docker::kControllerName)->resolvesEnvReferences);
  EXPECT_FALSE(registry.FindDescriptor(opensandbox::kControllerName)->resolvesEnvReferences);
  // Egress deny: only Docker (networkMode none) keeps a task off the network by itself.
  EXPECT_TRUE(registry.FindDescriptor(docker::kControllerName)->enforces.egressDeny);
  EXPECT_FALSE(registry.FindDescriptor(kubernetes::kControllerName)->enforces.egressDeny);
  EXPECT_FALSE(registry.FindDescriptor(opensandbox::kControllerName)->enforces.egressDeny);
}

}  // namespace
}  // namespace ayatori::adapters
