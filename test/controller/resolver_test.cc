// ResolveJob over a FakeClusterCache: every reason the resolver can give (docs/api.md §
// Conditions and reasons) and what a resolved Job carries.
#include "controller/resolver.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "adapters/docker/descriptor.h"
#include "adapters/docker/docker_adapter.h"
#include "adapters/testing/in_process_adapter.h"
#include "api/json.h"
#include "controller/backend_snapshot.h"
#include "controller/kinds.h"
#include "kube/testing/fake_kube_client.h"
#include "test/controller/fake_cluster_cache.h"

namespace ayatori::controller {
namespace {

using statemachine::Resolution;
using testing::FakeClusterCache;
using Outcome = Resolution::Outcome;

constexpr const char* kNs = "team-a";
// A backend whose kubelet-like executor resolves env references itself.
constexpr const char* kControllerPassing = "example.com/passes-references";
constexpr const char* kTestParametersKind = "TestExecutionParameters";

// The test backend, with a parameters kind of its own.
AdapterDescriptor TestWithParameters() {
  AdapterDescriptor d = adapters::TestDescriptor();
  d.parameters = ParametersKind{
      api::kGroup, api::kVersion, kTestParametersKind, "testexecutionparameters", {"size"}};
  return d;
}

AdapterDescriptor Passing() {
  AdapterDescriptor d = adapters::TestDescriptor();
  d.controllerName = kControllerPassing;
  d.resolvesEnvReferences = true;
  return d;
}

api::JobClass Class(const std::string& name, const std::string& controllerName,
                    bool isDefault = false) {
  api::JobClass c;
  c.metadata.name = name;
  c.metadata.uid = "uid-of-" + name;
  c.spec.controllerName = controllerName;
  c.spec.secretEnvForwarding = api::SecretEnvForwarding::kAllowed;
  if (isDefault) c.metadata.annotations[api::kIsDefaultClassAnnotation] = "true";
  return c;
}

api::Job Job(const std::string& className) {
  api::Job j;
  j.metadata.name = "job";
  j.metadata.namespace_ = kNs;
  j.metadata.uid = "job-uid";
  j.spec.jobClassName = className;
  j.spec.task.image = "registry.invalid/x:1";
  return j;
}

api::EnvVar SecretEnv(const std::string& env, const std::string& secret, const std::string& key,
                      bool optional = false) {
  api::EnvVar v;
  v.name = env;
  v.valueFrom = api::EnvVarSource{api::KeySelector{secret, key, optional}, std::nullopt};
  return v;
}

api::EnvVar ConfigMapEnv(const std::string& env, const std::string& cm, const std::string& key,
                         bool optional = false) {
  api::EnvVar v;
  v.name = env;
  v.valueFrom = api::EnvVarSource{std::nullopt, api::KeySelector{cm, key, optional}};
  return v;
}

class ResolverTest : public ::testing::Test {
 protected:
  ResolverTest() : backend_(std::make_shared<adapters::InProcessTestAdapter>()) {
    EXPECT_TRUE(registry_.Register(TestWithParameters(), backend_).ok());
    // A backend that resolves references itself (like Kubernetes): the test backend stands in
    // for it, only its descriptor matters here.
    EXPECT_TRUE(registry_.Register(Passing(), backend_).ok());
    cache_.AddJobClass(Class("test", adapters::kControllerTest));
  }

  Resolution Resolve(const api::Job& job) {
    auto r = ResolveJob(job, cache_, registry_, reader_, kDefaultControllerNamespace);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Resolution{};
  }

  // A Secret (ConfigMap) with these keys, as the API server holds it (for the reader) and as
  // the metadata cache knows it.
  void AddSecret(const std::string& ns, const std::string& name, const std::set<std::string>& keys,
                 const std::string& type = "Opaque") {
    nlohmann::json data = nlohmann::json::object();
    for (const auto& k : keys) data[k] = "dmFsdWU=";  // "value"
    cache_.AddSecret(
        ns, name,
        Put(kSecrets,
            {{"metadata", {{"name", name}, {"namespace", ns}}}, {"type", type}, {"data", data}}));
  }
  void AddConfigMap(const std::string& ns, const std::string& name,
                    const std::set<std::string>& keys) {
    nlohmann::json data = nlohmann::json::object();
    for (const auto& k : keys) data[k] = "value";
    cache_.AddConfigMap(
        ns, name,
        Put(kConfigMaps, {{"metadata", {{"name", name}, {"namespace", ns}}}, {"data", data}}));
  }
  // Creates or replaces the object in the fake API server; returns its resourceVersion.
  std::string Put(const ResourceRef& ref, const nlohmann::json& object) {
    const std::string ns = object["metadata"]["namespace"];
    (void)client_.Delete(ref, ns, object["metadata"]["name"].get<std::string>(), {});
    auto created = client_.Create(ref, ns, object, {});
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? (*created)["metadata"].value("resourceVersion", "") : "";
  }

  std::shared_ptr<adapters::InProcessTestAdapter> backend_;
  adapters::AdapterRegistry registry_;
  FakeClusterCache cache_;
  kube::testing::FakeKubeClient client_;
  ReferenceReader reader_{client_};
};

#define EXPECT_PENDING(r, why)                                \
  do {                                                        \
    EXPECT_EQ((r).outcome, Outcome::kPending) << (r).message; \
    EXPECT_EQ((r).reason, why) << (r).message;                \
    EXPECT_FALSE((r).message.empty());                        \
  } while (0)

#define EXPECT_REJECTED(r, why)                                \
  do {                                                         \
    EXPECT_EQ((r).outcome, Outcome::kRejected) << (r).message; \
    EXPECT_EQ((r).reason, why) << (r).message;                 \
    EXPECT_FALSE((r).message.empty());                         \
  } while (0)

TEST_F(ResolverTest, ResolvedWritesClassUidAdapterAndDefaultedResources) {
  api::JobClass c = Class("with-defaults", adapters::kControllerTest);
  c.spec.resources.defaults.limits.cpu = api::Quantity::MustParse("1");
  c.spec.resources.defaults.limits.memory = api::Quantity::MustParse("256Mi");
  cache_.AddJobClass(c);
  Resolution r = Resolve(Job("with-defaults"));
  ASSERT_EQ(r.outcome, Outcome::kResolved) << r.reason << ": " << r.message;
  EXPECT_EQ(r.jobClass.name, "with-defaults");
  EXPECT_EQ(r.jobClass.uid, "uid-of-with-defaults");
  EXPECT_EQ(r.jobClass.controllerName, adapters::kControllerTest);
  EXPECT_FALSE(r.jobClass.parametersRef.has_value());
  EXPECT_EQ(r.adapter, "test");
  EXPECT_EQ(r.resources.limits.cpu, api::Quantity::MustParse("1"));
  // A request left unset equals the limit.
  EXPECT_EQ(r.resources.requests.memory, api::Quantity::MustParse("256Mi"));
}

TEST_F(ResolverTest, ResolvedWithParametersRefCarriesTheParametersUid) {
  api::JobClass c = Class("with-params", adapters::kControllerTest);
  c.spec.parametersRef = api::ParametersRef{api::kGroup, kTestParametersKind, "p", ""};
  cache_.AddJobClass(c);
  cache_.AddParameters(kTestParametersKind, "p",
                       {{"kind", kTestParametersKind},
                        {"metadata", {{"name", "p"}, {"uid", "params-uid-1"}}},
                        {"spec", {{"size", 1}}}});
  Resolution r = Resolve(Job("with-params"));
  ASSERT_EQ(r.outcome, Outcome::kResolved) << r.reason << ": " << r.message;
  ASSERT_TRUE(r.jobClass.parametersRef.has_value());
  EXPECT_EQ(r.jobClass.parametersRef->kind, kTestParametersKind);
  EXPECT_EQ(r.jobClass.parametersRef->name, "p");
  EXPECT_EQ(r.jobClass.parametersRef->group, api::kGroup);
  EXPECT_EQ(r.jobClass.parametersRef->uid, "params-uid-1");
  // The test backend pins nothing, and says so: a snapshot of nothing, not "no snapshot" (which
  // means "accepted before snapshots existed").
  EXPECT_TRUE(r.pinnedParameters.empty());
  EXPECT_EQ(r.jobClass.backendSnapshot, BackendSnapshotName({adapters::kControllerTest, {}}));
}

// The Docker adapter's pinned fields, as the resolver records them: where the container lives and
// the isolation it was accepted with, defaults filled in.
TEST_F(ResolverTest, ResolvedDockerJobPinsEndpointNetworkModeAndRuntime) {
  adapters::docker::DockerAdapterOptions options;
  options.defaultEndpoint = "unix:///run/ayatori/default.sock";
  ASSERT_TRUE(registry_
                  .Register(adapters::docker::Descriptor(),
                            std::make_shared<adapters::docker::DockerAdapter>(options))
                  .ok());
  api::JobClass withParams = Class("docker", adapters::docker::kControllerName);
  withParams.spec.parametersRef =
      api::ParametersRef{api::kGroup, "DockerExecutionParameters", "d", ""};
  cache_.AddJobClass(withParams);
  cache_.AddParameters("DockerExecutionParameters", "d",
                       {{"kind", "DockerExecutionParameters"},
                        {"metadata", {{"name", "d"}, {"uid", "d-uid"}}},
                        {"spec",
                         {{"endpoint", "tcp://127.0.0.1:2376"},
                          {"tlsSecretRef", {{"namespace", "ayatori-system"}, {"name", "tls"}}},
                          {"networkMode", "host"},
                          {"allowHostNetwork", true},
                          {"runtime", "runsc"},
                          {"stopGracePeriodSeconds", 5},
                          {"extraLabels", {{"team", "a"}}}}}});
  Resolution r = Resolve(Job("docker"));
  ASSERT_EQ(r.outcome, Outcome::kResolved) << r.reason << ": " << r.message;
  const std::map<std::string, std::string> pinned{
      {"endpoint", "tcp://127.0.0.1:2376"}, {"networkMode", "host"}, {"runtime", "runsc"}};
  EXPECT_EQ(r.pinnedParameters, pinned);
  // The status carries only the snapshot's name: a hash of the values, not the values.
  EXPECT_EQ(r.jobClass.backendSnapshot,
            BackendSnapshotName({adapters::docker::kControllerName, pinned}));
  api::JobStatus accepted;
  accepted.resolvedJobClass = r.jobClass;
  EXPECT_EQ(api::StatusToJson(accepted).dump().find("127.0.0.1"), std::string::npos);

  // No parametersRef: the adapter's default engine, network none, the engine's default runtime.
  cache_.AddJobClass(Class("docker-defaults", adapters::docker::kControllerName));
  Resolution d = Resolve(Job("docker-defaults"));
  ASSERT_EQ(d.outcome, Outcome::kResolved) << d.reason << ": " << d.message;
  EXPECT_EQ(d.pinnedParameters,
            (std::map<std::string, std::string>{{"endpoint", "unix:///run/ayatori/default.sock"},
                                                {"networkMode", "none"},
                                                {"runtime", ""}}));
  EXPECT_NE(d.jobClass.backendSnapshot, r.jobClass.backendSnapshot);
}

// Issue 26: a class's parameters may name Secrets only in the controller's namespace (the CRD
// cannot know it: it is a flag), unless the parameters allow others; the allowance field is no
// backend ask (not NotEnforceable).
TEST_F(ResolverTest, ParametersSecretOutsideTheControllerNamespaceIsRefusedUnlessAllowed) {
  ASSERT_TRUE(registry_
                  .Register(adapters::docker::Descriptor(),
                            std::make_shared<adapters::docker::DockerAdapter>(
                                adapters::docker::DockerAdapterOptions{}))
                  .ok());
  auto addClass = [&](const std::string& name, const std::string& secretNamespace, bool allow) {
    api::JobClass c = Class(name, adapters::docker::kControllerName);
    c.spec.parametersRef = api::ParametersRef{api::kGroup, "DockerExecutionParameters", name, ""};
    cache_.AddJobClass(c);
    nlohmann::json spec = {
        {"endpoint", "tcp://127.0.0.1:2376"},
        {"tlsSecretRef", {{"namespace", secretNamespace}, {"name", "engine-tls"}}}};
    if (allow) spec["allowCrossNamespaceSecretRefs"] = true;
    cache_.AddParameters("DockerExecutionParameters", name,
                         {{"kind", "DockerExecutionParameters"},
                          {"metadata", {{"name", name}, {"uid", name + "-uid"}}},
                          {"spec", spec}});
  };
  addClass("own", kDefaultControllerNamespace, false);
  addClass("tenant", kNs, false);
  addClass("allowed", kNs, true);

  EXPECT_EQ(Resolve(Job("own")).outcome, Outcome::kResolved);
  Resolution r = Resolve(Job("tenant"));
  EXPECT_REJECTED(r, "SecretNamespaceNotAllowed");
  EXPECT_EQ(r.message,
            "JobClass \"tenant\": its DockerExecutionParameters spec.tlsSecretRef names Secret "
            "\"team-a/engine-tls\", outside the controller's namespace ayatori-system: move the "
            "Secret to ayatori-system, or let a cluster administrator set "
            "spec.allowCrossNamespaceSecretRefs: true in the parameters");
  EXPECT_EQ(Resolve(Job("allowed")).outcome, Outcome::kResolved);
  // The controller's namespace is the one it runs with (--namespace), not a fixed name.
  auto elsewhere = ResolveJob(Job("own"), cache_, registry_, reader_, "ops");
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status().ToString();
  EXPECT_REJECTED(*elsewhere, "SecretNamespaceNotAllowed");
  elsewhere = ResolveJob(Job("tenant"), cache_, registry_, reader_, kNs);
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status().ToString();
  EXPECT_EQ(elsewhere->outcome, Outcome::kResolved) << elsewhere->message;
}

// The class's TTL policy travels with the resolved class: the state machine applies it from the
// status, so later edits of the class do not change accepted Jobs.
TEST_F(ResolverTest, ResolvedClassCarriesTheTtlPolicy) {
  api::JobClass c = Class("short-lived", adapters::kControllerTest);
  c.spec.ttlSecondsAfterFinished = api::TtlPolicy{300, 3600};
  cache_.AddJobClass(c);
  Resolution r = Resolve(Job("short-lived"));
  ASSERT_EQ(r.outcome, Outcome::kResolved) << r.reason << ": " << r.message;
  EXPECT_EQ(r.jobClass.ttlSecondsAfterFinished, (api::TtlPolicy{300, 3600}));
  Resolution none = Resolve(Job("test"));
  ASSERT_EQ(none.outcome, Outcome::kResolved);
  EXPECT_FALSE(none.jobClass.ttlSecondsAfterFinished);
}

// Queueing (spec.queueing): the Job's label wins, the class's default LocalQueue stands in for
// a missing one, and a class that requires queueing keeps Jobs without a queue (or all of them,
// on a controller that does not queue) waiting with a reason.
TEST_F(ResolverTest, QueueFromTheLabelOrTheClassDefault) {
  api::JobClass c = Class("queued", adapters::kControllerTest);
  c.spec.queueing = api::QueueingPolicy{false, "team-queue"};
  cache_.AddJobClass(c);
  Resolution byDefault = Resolve(Job("queued"));
  ASSERT_EQ(byDefault.outcome, Outcome::kResolved) << byDefault.message;
  EXPECT_EQ(byDefault.queueName, "team-queue");
  api::Job labelled = Job("queued");
  labelled.metadata.labels[statemachine::kQueueNameLabel] = "own-queue";
  EXPECT_EQ(Resolve(labelled).queueName, "own-queue");
  EXPECT_EQ(Resolve(Job("test")).queueName, "");
}

TEST_F(ResolverTest, AClassThatRequiresQueueingKeepsAJobWithoutAQueueWaiting) {
  api::JobClass c = Class("quota-only", adapters::kControllerTest);
  c.spec.queueing = api::QueueingPolicy{true, ""};
  cache_.AddJobClass(c);
  auto resolve = [&](const api::Job& job, bool kueue) {
    auto r = ResolveJob(job, cache_, registry_, reader_, kDefaultControllerNamespace, kueue);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Resolution{};
  };
  Resolution unlabelled = resolve(Job("quota-only"), true);
  EXPECT_EQ(unlabelled.outcome, Outcome::kPending);
  EXPECT_EQ(unlabelled.reason, "QueueRequired");
  EXPECT_NE(unlabelled.message.find(statemachine::kQueueNameLabel), std::string::npos)
      << unlabelled.message;
  api::Job labelled = Job("quota-only");
  labelled.metadata.labels[statemachine::kQueueNameLabel] = "team-queue";
  Resolution queued = resolve(labelled, true);
  ASSERT_EQ(queued.outcome, Outcome::kResolved) << queued.message;
  EXPECT_EQ(queued.queueName, "team-queue");
  Resolution withoutKueue = resolve(labelled, false);
  EXPECT_EQ(withoutKueue.outcome, Outcome::kPending);
  EXPECT_EQ(withoutKueue.reason, "QueueingUnavailable");
}

// Plain HTTP to an engine would carry forwarded Secret values in the clear: refused at
// acceptance with a reason of its own, unless the parameters say insecure: true.
TEST_F(ResolverTest, PlainHttpDockerEndpointRefusedUnlessInsecure) {
  ASSERT_TRUE(registry_
                  .Register(adapters::docker::Descriptor(),
                            std::make_shared<adapters::docker::DockerAdapter>())
                  .ok());
  auto addClass = [&](const std::string& name, const nlohmann::json& spec) {
    api::JobClass c = Class(name, adapters::docker::kControllerName);
    c.spec.parametersRef = api::ParametersRef{api::kGroup, "DockerExecutionParameters", name, ""};
    cache_.AddJobClass(c);
    cache_.AddParameters("DockerExecutionParameters", name,
                         {{"kind", "DockerExecutionParameters"},
                          {"metadata", {{"name", name}, {"uid", name + "-uid"}}},
                          {"spec", spec}});
  };
  addClass("plain-tcp", {{"endpoint", "tcp://127.0.0.1:2375"}});
  addClass("plain-http", {{"endpoint", "http://127.0.0.1:2375"}});
  addClass("http-with-tls",
           {{"endpoint", "http://127.0.0.1:2375"},
            {"tlsSecretRef", {{"namespace", kDefaultControllerNamespace}, {"name", "tls"}}},
            {"insecure", true}});
  addClass("insecure-tcp", {{"endpoint", "tcp://127.0.0.1:2375"}, {"insecure", true}});
  addClass("tls-tcp",
           {{"endpoint", "tcp://127.0.0.1:2376"},
            {"tlsSecretRef", {{"namespace", kDefaultControllerNamespace}, {"name", "tls"}}}});
  addClass("https", {{"endpoint", "https://127.0.0.1:2376"}});

  for (const char* name : {"plain-tcp", "plain-http", "http-with-tls"}) {
    Resolution r = Resolve(Job(name));
    EXPECT_EQ(r.outcome, Outcome::kRejected) << name;
    EXPECT_EQ(r.reason, "InsecureEndpoint") << name << ": " << r.message;
    EXPECT_NE(r.message.find("plain HTTP"), std::string::npos) << r.message;
    // The Job API does not show backend configuration.
    EXPECT_EQ(r.message.find("127.0.0.1"), std::string::npos) << r.message;
  }
  for (const char* name : {"insecure-tcp", "tls-tcp", "https"}) {
    Resolution r = Resolve(Job(name));
    EXPECT_EQ(r.outcome, Outcome::kResolved) << name << ": " << r.reason << ": " << r.message;
  }
}

// Fail-closed (docs/jobclass.md, "What the adapter enforces"): every ask the adapter does not
// enforce refuses the Job at acceptance with NotEnforceable, one ask at a time, and the same
// class resolves once it asks only for what is enforced.
TEST_F(ResolverTest, AskingForWhatTheAdapterDoesNotEnforceIsRefused) {
  AdapterDescriptor weak;  // enforces nothing
  weak.controllerName = "example.com/weak";
  weak.parameters =
      ParametersKind{"example.com", "v1", "WeakParameters", "weakparameters", {"size", "offline"}};
  weak.parametersAsk = [](const nlohmann::json& parameters) {
    Enforcement ask;
    ask.egressDeny = parameters.value("/spec/offline"_json_pointer, false);
    return ask;
  };
  ASSERT_TRUE(registry_.Register(weak, backend_).ok());
  auto params = [&](nlohmann::json spec) {
    cache_.AddParameters("WeakParameters", "w",
                         {{"kind", "WeakParameters"},
                          {"metadata", {{"name", "w"}, {"uid", "w-uid"}}},
                          {"spec", std::move(spec)}});
  };
  api::JobClass c = Class("weak", "example.com/weak");
  c.spec.parametersRef = api::ParametersRef{"example.com", "WeakParameters", "w", ""};
  params({{"size", 1}});
  cache_.AddJobClass(c);
  Resolution plain = Resolve(Job("weak"));
  ASSERT_EQ(plain.outcome, Outcome::kResolved) << plain.reason << ": " << plain.message;

  auto refused = [&](const api::Job& job, const std::string& says) {
    Resolution r = Resolve(job);
    EXPECT_REJECTED(r, "NotEnforceable");
    EXPECT_NE(r.message.find(says), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("example.com/weak"), std::string::npos) << r.message;
  };
  api::JobClass limited = c;
  limited.spec.resources.defaults.limits.memory = api::Quantity::MustParse("256Mi");
  cache_.AddJobClass(limited);
  refused(Job("weak"), "a memory limit (limits.memory 256Mi)");
  limited.spec.resources.defaults.limits = {};
  limited.spec.resources.defaults.limits.cpu = api::Quantity::MustParse("500m");
  cache_.AddJobClass(limited);
  refused(Job("weak"), "a cpu limit (limits.cpu 500m)");
  cache_.AddJobClass(c);

  api::Job pulls = Job("weak");
  pulls.spec.task.imagePullSecrets.push_back({"registry"});
  refused(pulls, "authenticated image pull");

  params({{"size", 1}, {"gpus", 2}});
  refused(Job("weak"), "WeakParameters spec.gpus");
  params({{"offline", true}});
  refused(Job("weak"), "egress deny");
  params({{"offline", false}});
  EXPECT_EQ(Resolve(Job("weak")).outcome, Outcome::kResolved);
}

TEST_F(ResolverTest, JobClassNotFound) {
  Resolution r = Resolve(Job("missing"));
  EXPECT_PENDING(r, "JobClassNotFound");
  EXPECT_NE(r.message.find("missing"), std::string::npos) << r.message;
}

TEST_F(ResolverTest, NoDefaultJobClass) {
  // Classes exist, none is the default; an is-default-class other than "true" does not count.
  api::JobClass notDefault = Class("not-default", adapters::kControllerTest);
  notDefault.metadata.annotations[api::kIsDefaultClassAnnotation] = "false";
  cache_.AddJobClass(notDefault);
  Resolution r = Resolve(Job(""));
  EXPECT_PENDING(r, "NoDefaultJobClass");
}

TEST_F(ResolverTest, AmbiguousDefaultJobClass) {
  cache_.AddJobClass(Class("default-a", adapters::kControllerTest, true));
  cache_.AddJobClass(Class("default-b", adapters::kControllerTest, true));
  Resolution r = Resolve(Job(""));
  EXPECT_PENDING(r, "AmbiguousDefaultJobClass");
  EXPECT_NE(r.message.find("default-a"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("default-b"), std::string::npos) << r.message;
}

TEST_F(ResolverTest, TheOneClusterDefaultIsUsed) {
  cache_.AddJobClass(Class("the-default", adapters::kControllerTest, true));
  Resolution r = Resolve(Job(""));
  ASSERT_EQ(r.outcome, Outcome::kResolved) << r.reason << ": " << r.message;
  EXPECT_EQ(r.jobClass.name, "the-default");
}

TEST_F(ResolverTest, NamespaceDefaultWinsOverClusterDefaults) {
  cache_.AddJobClass(Class("default-a", adapters::kControllerTest, true));
  cache_.AddJobClass(Class("default-b", adapters::kControllerTest, true));
  cache_.AddJobClass(Class("team-class", adapters::kControllerTest));
  cache_.SetNamespaceDefault(kNs, "team-class");
  Resolution r = Resolve(Job(""));
  ASSERT_EQ(r.outcome, Outcome::kResolved) << r.reason << ": " << r.message;
  EXPECT_EQ(r.jobClass.name, "team-class");
  // An explicit class wins over the namespace default.
  Resolution explicitClass = Resolve(Job("test"));
  ASSERT_EQ(explicitClass.outcome, Outcome::kResolved);
  EXPECT_EQ(explicitClass.jobClass.name, "test");
}

TEST_F(ResolverTest, NamespaceDefaultNamingAMissingClassIsJobClassNotFound) {
  cache_.SetNamespaceDefault(kNs, "gone");
  Resolution r = Resolve(Job(""));
  EXPECT_PENDING(r, "JobClassNotFound");
}

TEST_F(ResolverTest, AdapterNotRegistered) {
  cache_.AddJobClass(Class("docker", adapters::docker::kControllerName));
  Resolution r = Resolve(Job("docker"));
  EXPECT_PENDING(r, "AdapterNotRegistered");
  EXPECT_NE(r.message.find(adapters::docker::kControllerName), std::string::npos) << r.message;
}

TEST_F(ResolverTest, ParametersNotFound) {
  api::JobClass c = Class("no-params", adapters::kControllerTest);
  c.spec.parametersRef = api::ParametersRef{api::kGroup, kTestParametersKind, "gone", ""};
  cache_.AddJobClass(c);
  Resolution r = Resolve(Job("no-params"));
  EXPECT_PENDING(r, "ParametersNotFound");
}

// A class naming a parameters kind its adapter does not take waits (the class can be fixed);
// the object is never read as if it were the adapter's own kind.
TEST_F(ResolverTest, ParametersOfAnotherKindAreNotRead) {
  api::JobClass c = Class("wrong-kind", adapters::kControllerTest);
  c.spec.parametersRef = api::ParametersRef{api::kGroup, "DockerExecutionParameters", "p", ""};
  cache_.AddJobClass(c);
  cache_.AddParameters("DockerExecutionParameters", "p",
                       {{"kind", "DockerExecutionParameters"},
                        {"metadata", {{"name", "p"}, {"uid", "u"}}},
                        {"spec", nlohmann::json::object()}});
  Resolution r = Resolve(Job("wrong-kind"));
  EXPECT_PENDING(r, "ParametersNotFound");
  EXPECT_NE(r.message.find("takes " + std::string(kTestParametersKind)), std::string::npos)
      << r.message;
}

TEST_F(ResolverTest, ResourcesOutOfRange) {
  api::JobClass c = Class("small", adapters::kControllerTest);
  c.spec.resources.max.cpu = api::Quantity::MustParse("1");
  cache_.AddJobClass(c);
  api::Job job = Job("small");
  api::ResourceRequirements req;
  req.requests.cpu = api::Quantity::MustParse("2");
  req.limits.cpu = api::Quantity::MustParse("2");
  job.spec.resources = req;
  Resolution r = Resolve(job);
  EXPECT_REJECTED(r, "ResourcesOutOfRange");
}

TEST_F(ResolverTest, SecretForwardingDenied) {
  api::JobClass c = Class("denied", adapters::kControllerTest);
  c.spec.secretEnvForwarding = api::SecretEnvForwarding::kDenied;
  cache_.AddJobClass(c);
  AddSecret(kNs, "tok", {"token"});
  api::Job job = Job("denied");
  job.spec.task.env.push_back(SecretEnv("TOKEN", "tok", "token"));
  Resolution r = Resolve(job);
  EXPECT_REJECTED(r, "SecretForwardingDenied");
  // ConfigMaps are not Secrets: the same class accepts them.
  AddConfigMap(kNs, "cfg", {"value"});
  api::Job withConfig = Job("denied");
  withConfig.spec.task.env.push_back(ConfigMapEnv("CONFIG", "cfg", "value"));
  EXPECT_EQ(Resolve(withConfig).outcome, Outcome::kResolved);
}

TEST_F(ResolverTest, KubernetesClassPassesSecretReferencesWithoutForwarding) {
  api::JobClass c = Class("k8s", kControllerPassing);
  c.spec.secretEnvForwarding = api::SecretEnvForwarding::kDenied;
  cache_.AddJobClass(c);
  AddSecret(kNs, "tok", {"token"});
  api::Job job = Job("k8s");
  job.spec.task.env.push_back(SecretEnv("TOKEN", "tok", "token"));
  Resolution r = Resolve(job);
  EXPECT_EQ(r.outcome, Outcome::kResolved) << r.reason << ": " << r.message;
}

// The Kubernetes path reads no Secret and no ConfigMap: existence comes from the metadata cache,
// a missing key is the kubelet's to report (CreateContainerConfigError).
TEST_F(ResolverTest, KubernetesClassChecksExistenceInTheMetadataCacheAndReadsNothing) {
  cache_.AddJobClass(Class("k8s", kControllerPassing));
  api::Job job = Job("k8s");
  job.spec.task.env.push_back(SecretEnv("TOKEN", "tok", "token"));
  job.spec.task.env.push_back(ConfigMapEnv("CONFIG", "cfg", "value"));
  EXPECT_PENDING(Resolve(job), "SecretNotFound");
  AddSecret(kNs, "tok", {"not-the-key"});
  EXPECT_PENDING(Resolve(job), "ConfigMapNotFound");
  AddConfigMap(kNs, "cfg", {"not-the-key-either"});
  Resolution r = Resolve(job);
  EXPECT_EQ(r.outcome, Outcome::kResolved) << r.reason << ": " << r.message;
  EXPECT_EQ(client_.CountActions("get", "secrets"), 0U);
  EXPECT_EQ(client_.CountActions("get", "configmaps"), 0U);
}

// A forwarding class reads each referenced object once per resolution, however many keys of it
// the Job names; an object the metadata cache does not know is not read at all.
TEST_F(ResolverTest, ForwardingClassReadsEachReferencedObjectOnce) {
  api::Job job = Job("test");
  job.spec.task.env.push_back(SecretEnv("A", "tok", "a"));
  job.spec.task.env.push_back(SecretEnv("B", "tok", "b"));
  job.spec.task.env.push_back(ConfigMapEnv("C", "cfg", "c"));
  EXPECT_PENDING(Resolve(job), "SecretNotFound");
  EXPECT_EQ(client_.CountActions("get", "secrets"), 0U);
  AddSecret(kNs, "tok", {"a", "b"});
  AddConfigMap(kNs, "cfg", {"c"});
  client_.ClearActions();
  Resolution r = Resolve(job);
  EXPECT_EQ(r.outcome, Outcome::kResolved) << r.reason << ": " << r.message;
  EXPECT_EQ(client_.CountActions("get", "secrets"), 1U);
  EXPECT_EQ(client_.CountActions("get", "configmaps"), 1U);
}

// Key names are remembered by the resourceVersion they were read at: a Job resolved again while
// the metadata cache shows the same version costs no GET; a change of the object (a new version)
// is read again, and so is an object the cache still shows while the read says it is gone.
TEST_F(ResolverTest, KeyNamesAreReadAgainOnlyWhenTheObjectChanged) {
  api::Job job = Job("test");
  job.spec.task.env.push_back(SecretEnv("TOKEN", "tok", "token"));
  AddSecret(kNs, "tok", {"other"});
  for (int i = 0; i < 3; ++i) {
    Resolution r = Resolve(job);
    EXPECT_PENDING(r, "KeyNotFound");
  }
  EXPECT_EQ(client_.CountActions("get", "secrets"), 1U);
  AddSecret(kNs, "tok", {"other", "token"});  // a new resourceVersion
  EXPECT_EQ(Resolve(job).outcome, Outcome::kResolved);
  EXPECT_EQ(client_.CountActions("get", "secrets"), 2U);
  // The metadata cache lags: it shows a version the reader has not seen, and the object is gone.
  ASSERT_TRUE(client_.Delete(kSecrets, kNs, "tok", {}).ok());
  cache_.AddSecret(kNs, "tok");
  Resolution gone = Resolve(job);  // (EXPECT_PENDING evaluates its argument three times)
  EXPECT_PENDING(gone, "SecretNotFound");
  EXPECT_EQ(client_.CountActions("get", "secrets"), 3U);
}

TEST_F(ResolverTest, DeniedForwardingRejectsBeforeReadingTheSecret) {
  api::JobClass c = Class("denied-no-read", adapters::kControllerTest);
  c.spec.secretEnvForwarding = api::SecretEnvForwarding::kDenied;
  cache_.AddJobClass(c);
  AddSecret(kNs, "tok", {"token"});
  api::Job job = Job("denied-no-read");
  job.spec.task.env.push_back(SecretEnv("TOKEN", "tok", "token"));
  EXPECT_REJECTED(Resolve(job), "SecretForwardingDenied");
  EXPECT_EQ(client_.CountActions("get", "secrets"), 0U);
}

// A read that fails is an error of the round (retried with the workqueue's backoff), not a
// verdict on the Job; the next round reads again.
TEST_F(ResolverTest, FailedReadIsAnErrorNotAResolution) {
  AddSecret(kNs, "tok", {"token"});
  api::Job job = Job("test");
  job.spec.task.env.push_back(SecretEnv("TOKEN", "tok", "token"));
  client_.FailNext("get", "secrets", Status(StatusCode::kUnavailable, "connection refused"));
  auto failed = ResolveJob(job, cache_, registry_, reader_, kDefaultControllerNamespace);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("Secret team-a/tok"), std::string::npos)
      << failed.status().message();
  EXPECT_EQ(Resolve(job).outcome, Outcome::kResolved);
}

// The metadata cache lags behind the API server: a Secret deleted since it saw it is missing.
TEST_F(ResolverTest, SecretDeletedSinceTheCacheSawItIsNotFound) {
  cache_.AddSecret(kNs, "gone");  // the cache still has it; the API server does not
  api::Job job = Job("test");
  job.spec.task.env.push_back(SecretEnv("TOKEN", "gone", "token"));
  EXPECT_PENDING(Resolve(job), "SecretNotFound");
  api::Job optional = Job("test");
  optional.spec.task.env.push_back(SecretEnv("TOKEN", "gone", "token", true));
  EXPECT_EQ(Resolve(optional).outcome, Outcome::kResolved);
}

// A value that is not base64 is reported by object and key, never with the value.
TEST_F(ResolverTest, ValueThatIsNotBase64IsAnErrorNamingTheKeyOnly) {
  Put(kSecrets, {{"metadata", {{"name", "bad"}, {"namespace", kNs}}},
                 {"data", {{"token", "%%not-base64-s3cret%%"}}}});
  cache_.AddSecret(kNs, "bad");
  api::Job job = Job("test");
  job.spec.task.env.push_back(SecretEnv("TOKEN", "bad", "token"));
  auto r = ResolveJob(job, cache_, registry_, reader_, kDefaultControllerNamespace);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("key token"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("s3cret"), std::string::npos) << r.status().message();
}

TEST_F(ResolverTest, SecretNotFoundThenKeyNotFoundThenResolved) {
  api::Job job = Job("test");
  job.spec.task.env.push_back(SecretEnv("TOKEN", "tok", "token"));
  EXPECT_PENDING(Resolve(job), "SecretNotFound");
  AddSecret(kNs, "tok", {"other"});
  Resolution keyMissing = Resolve(job);
  EXPECT_PENDING(keyMissing, "KeyNotFound");
  EXPECT_NE(keyMissing.message.find("token"), std::string::npos) << keyMissing.message;
  AddSecret(kNs, "tok", {"other", "token"});
  EXPECT_EQ(Resolve(job).outcome, Outcome::kResolved);
}

TEST_F(ResolverTest, SecretOfAnotherNamespaceDoesNotCount) {
  AddSecret("other-ns", "tok", {"token"});
  api::Job job = Job("test");
  job.spec.task.env.push_back(SecretEnv("TOKEN", "tok", "token"));
  EXPECT_PENDING(Resolve(job), "SecretNotFound");
}

TEST_F(ResolverTest, ConfigMapNotFoundThenKeyNotFound) {
  api::Job job = Job("test");
  job.spec.task.env.push_back(ConfigMapEnv("CONFIG", "cfg", "value"));
  EXPECT_PENDING(Resolve(job), "ConfigMapNotFound");
  AddConfigMap(kNs, "cfg", {"something-else"});
  EXPECT_PENDING(Resolve(job), "KeyNotFound");
  AddConfigMap(kNs, "cfg", {"value"});
  EXPECT_EQ(Resolve(job).outcome, Outcome::kResolved);
}

TEST_F(ResolverTest, OptionalReferencesMayBeMissing) {
  api::Job job = Job("test");
  job.spec.task.env.push_back(SecretEnv("A", "no-such-secret", "k", true));
  job.spec.task.env.push_back(ConfigMapEnv("B", "no-such-config", "k", true));
  AddSecret(kNs, "present", {"x"});
  job.spec.task.env.push_back(SecretEnv("C", "present", "missing-key", true));
  AddConfigMap(kNs, "present-cm", {"x"});
  job.spec.task.env.push_back(ConfigMapEnv("D", "present-cm", "missing-key", true));
  Resolution r = Resolve(job);
  EXPECT_EQ(r.outcome, Outcome::kResolved) << r.reason << ": " << r.message;
}

TEST_F(ResolverTest, ImagePullSecrets) {
  api::Job job = Job("test");
  job.spec.task.imagePullSecrets.push_back({"registry"});
  EXPECT_PENDING(Resolve(job), "SecretNotFound");
  AddSecret(kNs, "registry", {"token"}, "Opaque");
  EXPECT_REJECTED(Resolve(job), "ImagePullSecretInvalid");
  // The right type without the key is just as unusable.
  AddSecret(kNs, "registry", {"token"}, "kubernetes.io/dockerconfigjson");
  EXPECT_REJECTED(Resolve(job), "ImagePullSecretInvalid");
  AddSecret(kNs, "registry", {".dockerconfigjson"}, "kubernetes.io/dockerconfigjson");
  EXPECT_EQ(Resolve(job).outcome, Outcome::kResolved);
}

TEST_F(ResolverTest, KubernetesClassLeavesImagePullSecretsToTheKubelet) {
  cache_.AddJobClass(Class("k8s", kControllerPassing));
  api::Job job = Job("k8s");
  job.spec.task.imagePullSecrets.push_back({"not-yet-there"});
  EXPECT_EQ(Resolve(job).outcome, Outcome::kResolved);
}

TEST_F(ResolverTest, BackendRejected) {
  api::Job job = Job("test");
  api::EnvVar reject;
  reject.name = "AYATORI_TEST_REJECT";
  reject.value = "no GPUs here";
  job.spec.task.env.push_back(reject);
  Resolution r = Resolve(job);
  EXPECT_REJECTED(r, "BackendRejected");
  EXPECT_NE(r.message.find("no GPUs here"), std::string::npos) << r.message;
}

// An adapter whose backend cannot enforce what the class asks (Validate's kFailedPrecondition,
// e.g. Docker: an OCI runtime the engine does not have) refuses as NotEnforceable: the default
// Adapter::AcceptanceRefusal says so, the resolver does not read status codes.
TEST_F(ResolverTest, ValidateFailedPreconditionIsNotEnforceable) {
  api::Job job = Job("test");
  api::EnvVar refuse;
  refuse.name = "AYATORI_TEST_NOT_ENFORCEABLE";
  refuse.value = "no such runtime";
  job.spec.task.env.push_back(refuse);
  Resolution r = Resolve(job);
  EXPECT_REJECTED(r, "NotEnforceable");
  EXPECT_NE(r.message.find("no such runtime"), std::string::npos) << r.message;
}

// An adapter that refuses under a reason of its own (Adapter::AcceptanceRefusal): the Job gets
// that reason and message, whatever status code its Validate would answer.
class OwnReasonAdapter final : public Adapter {
 public:
  std::string Name() const override { return "own-reason"; }
  Status Start(std::function<void(const std::string&, const std::string&)>) override {
    return Status::Ok();
  }
  Status Validate(const ExecutionRequest&) override {
    return {StatusCode::kFailedPrecondition, "the status code says NotEnforceable"};
  }
  std::optional<Refusal> AcceptanceRefusal(const ExecutionRequest& request) override {
    return Refusal{"NoGpuHere", "job " + request.job.metadata.name + " asks for a GPU"};
  }
  Observation Ensure(const ExecutionRequest&) override { return {}; }
  Observation Observe(const ExecutionKey&) override { return {}; }
  Observation Cancel(const ExecutionKey&) override { return {}; }
  Status Delete(const ExecutionKey&) override { return Status::Ok(); }
};

TEST_F(ResolverTest, AdapterRefusalKeepsItsOwnReason) {
  AdapterDescriptor own = adapters::TestDescriptor();
  own.controllerName = "example.com/own-reason";
  ASSERT_TRUE(registry_.Register(own, std::make_shared<OwnReasonAdapter>()).ok());
  cache_.AddJobClass(Class("own", own.controllerName));
  Resolution r = Resolve(Job("own"));
  EXPECT_REJECTED(r, "NoGpuHere");
  EXPECT_EQ(r.message, "job job asks for a GPU");
}

TEST_F(ResolverTest, WaitingReasonsComeBeforeValidation) {
  // A Job the backend would reject still waits for its Secret first: nothing is decided for good
  // while something it needs may still appear.
  api::Job job = Job("test");
  api::EnvVar reject;
  reject.name = "AYATORI_TEST_REJECT";
  reject.value = "x";
  job.spec.task.env.push_back(reject);
  job.spec.task.env.push_back(SecretEnv("TOKEN", "later", "token"));
  EXPECT_PENDING(Resolve(job), "SecretNotFound");
}

// WaitTargets names every object whose change can change what ResolveJob answers for a Job: its
// Secrets and ConfigMaps, its class (or, without a class name, the namespace and cluster
// defaults). Each line below is a reference the resolver reads.
TEST(WaitTargetsTest, NamesWhatAWaitingJobWaitsOn) {
  api::Job job = Job("gold");
  job.spec.task.env.push_back(SecretEnv("A", "creds", "a"));
  job.spec.task.env.push_back(SecretEnv("B", "creds", "b"));  // the same Secret once
  job.spec.task.env.push_back(ConfigMapEnv("C", "settings", "c", /*optional=*/true));
  api::EnvVar literal;
  literal.name = "D";
  literal.value = "d";
  job.spec.task.env.push_back(literal);
  job.spec.task.imagePullSecrets.push_back({"pull"});
  EXPECT_EQ(WaitTargets(job),
            (std::vector<std::string>{"JobClass/gold", "Secret/team-a/creds",
                                      "ConfigMap/team-a/settings", "Secret/team-a/pull"}));

  api::Job defaulted = Job("");
  EXPECT_EQ(WaitTargets(defaulted),
            (std::vector<std::string>{"Namespace/team-a", kWaitsOnDefaultJobClass}));
}

TEST(WaitTargetsTest, JobsThatNeedNoResolutionWaitOnNothing) {
  api::Job accepted = Job("gold");
  accepted.spec.task.env.push_back(SecretEnv("A", "creds", "a"));
  accepted.status.conditions.push_back(
      {api::kConditionAccepted, api::ConditionStatus::kTrue, "Valid", "", 1, {}});
  EXPECT_TRUE(WaitTargets(accepted).empty());

  api::Job cancelled = Job("gold");
  cancelled.spec.desiredState = api::DesiredState::kCancelled;
  EXPECT_TRUE(WaitTargets(cancelled).empty());
}

}  // namespace
}  // namespace ayatori::controller
