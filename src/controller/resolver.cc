#include "controller/resolver.h"

#include <algorithm>

#include "api/resources.h"
#include "controller/backend_snapshot.h"

namespace ayatori::controller {

using statemachine::Resolution;

// The reasons Validate's refusals have always had (docs/api.md): the adapter interface names
// them itself (src/adapters/adapter.h, which src/adapters/registry.h includes).
static_assert(std::string_view(Refusal::kNotEnforceable) == adapters::kReasonNotEnforceable);

std::string ChooseJobClassName(const api::Job& job, const ClusterCache& cache,
                               Resolution* failure) {
  if (!job.spec.jobClassName.empty()) return job.spec.jobClassName;
  std::string nsDefault = cache.NamespaceDefaultJobClass(job.metadata.namespace_);
  if (!nsDefault.empty()) return nsDefault;
  std::vector<std::string> defaults;
  for (const auto& c : cache.ListJobClasses()) {
    auto it = c->metadata.annotations.find(api::kIsDefaultClassAnnotation);
    if (it != c->metadata.annotations.end() && it->second == "true") {
      defaults.push_back(c->metadata.name);
    }
  }
  if (defaults.size() == 1) return defaults.front();
  if (defaults.empty()) {
    *failure = Resolution::Pending(
        "NoDefaultJobClass", "spec.jobClassName is empty, namespace " + job.metadata.namespace_ +
                                 " has no annotation " + api::kDefaultClassAnnotation +
                                 " and no JobClass is annotated " + api::kIsDefaultClassAnnotation +
                                 "=true");
  } else {
    std::string names;
    for (const auto& n : defaults) names += (names.empty() ? "" : ", ") + n;
    *failure =
        Resolution::Pending("AmbiguousDefaultJobClass",
                            "spec.jobClassName is empty and " + std::to_string(defaults.size()) +
                                " JobClasses are marked default (" + names +
                                "); set spec.jobClassName or keep one default");
  }
  return "";
}

namespace {

// Checks one env reference: existence in the metadata cache; when `reader` is set (the values
// will be forwarded), the key too, from the object's key names. A pending resolution when it
// cannot be satisfied yet; an error when the read failed.
StatusOr<std::optional<Resolution>> CheckReference(const ClusterCache& cache,
                                                   ReferenceReader* reader, const std::string& ns,
                                                   const std::string& envName,
                                                   const api::KeySelector& ref,
                                                   ReferenceKind kind) {
  const bool secret = kind == ReferenceKind::kSecret;
  const std::string what = std::string(ReferenceKindName(kind)) + " " + ns + "/" + ref.name;
  auto missing = [&] {
    return Resolution::Pending(
        secret ? "SecretNotFound" : "ConfigMapNotFound",
        "env " + envName + ": " + what + " does not exist; the Job starts once it is created");
  };
  auto exists = secret ? cache.GetSecret(ns, ref.name) : cache.GetConfigMap(ns, ref.name);
  if (!exists) {
    if (ref.optional) return std::optional<Resolution>();
    return std::optional<Resolution>(missing());
  }
  if (reader == nullptr) return std::optional<Resolution>();
  auto keys = reader->ReadKeys(kind, ns, ref.name, exists->resourceVersion);
  if (!keys.ok()) return keys.status();
  if (*keys == nullptr) {  // deleted since the cache saw it
    if (ref.optional) return std::optional<Resolution>();
    return std::optional<Resolution>(missing());
  }
  if (!(*keys)->names.contains(ref.key) && !ref.optional) {
    return std::optional<Resolution>(
        Resolution::Pending("KeyNotFound", "env " + envName + ": " + what + " has no key \"" +
                                               ref.key + "\"; the Job starts once it is added"));
  }
  return std::optional<Resolution>();
}

}  // namespace

std::string WaitTarget(std::string_view kind, std::string_view objectKey) {
  std::string out;
  out.reserve(kind.size() + 1 + objectKey.size());
  out.append(kind).append("/").append(objectKey);
  return out;
}

std::vector<std::string> WaitTargets(const api::Job& job) {
  std::vector<std::string> out;
  if (!statemachine::NeedsResolution(job)) return out;
  const std::string& ns = job.metadata.namespace_;
  auto add = [&](std::string_view kind, const std::string& name) {
    std::string target = WaitTarget(kind, ns + "/" + name);
    if (std::find(out.begin(), out.end(), target) == out.end()) out.push_back(std::move(target));
  };
  if (job.spec.jobClassName.empty()) {
    out.push_back(WaitTarget("Namespace", ns));
    out.emplace_back(kWaitsOnDefaultJobClass);
  } else {
    out.push_back(WaitTarget("JobClass", job.spec.jobClassName));
  }
  for (const auto& env : job.spec.task.env) {
    if (!env.valueFrom) continue;
    if (env.valueFrom->secretKeyRef) add("Secret", env.valueFrom->secretKeyRef->name);
    if (env.valueFrom->configMapKeyRef) add("ConfigMap", env.valueFrom->configMapKeyRef->name);
  }
  for (const auto& pull : job.spec.task.imagePullSecrets) add("Secret", pull.name);
  return out;
}

namespace {

// What ResolveJob has found so far, one step after another: the class, its adapter, the
// parameters and the effective resources. Each step returns the Resolution that ends it early (a
// wait or a refusal), or nothing to go on.
struct Resolving {
  Resolving(const api::Job& j, const ClusterCache& c) : job(j), cache(c) {}

  const api::Job& job;
  const ClusterCache& cache;
  std::string className;
  std::shared_ptr<const api::JobClass> cls;
  std::shared_ptr<Adapter> adapter;
  const AdapterDescriptor* descriptor = nullptr;
  api::ResolvedJobClass resolved;
  nlohmann::json parameters = nlohmann::json::object();
  api::ResourceRequirements resources;
  std::string queueName;  // the LocalQueue, label or class default (Resolution::queueName)
};

// Pinned with the class: the TTL policy an accepted Job lives under (statemachine
// EffectiveTtlSeconds) and its start timeout do not change when the class is edited later.
void PinClassPolicies(const api::JobClass& cls, api::ResolvedJobClass& resolved) {
  resolved.ttlSecondsAfterFinished = cls.spec.ttlSecondsAfterFinished;
  if (cls.spec.startTimeoutSeconds && *cls.spec.startTimeoutSeconds > 0) {
    resolved.startTimeoutSeconds = cls.spec.startTimeoutSeconds;
  }
}

// The JobClass and the adapter that serves its controllerName.
std::optional<Resolution> ResolveClass(Resolving& r, const adapters::AdapterRegistry& registry) {
  Resolution failure;
  r.className = ChooseJobClassName(r.job, r.cache, &failure);
  if (r.className.empty()) return failure;
  r.cls = r.cache.GetJobClass(r.className);
  if (!r.cls) {
    return Resolution::Pending("JobClassNotFound", "JobClass \"" + r.className +
                                                       "\" does not exist; the Job waits for it");
  }
  const std::string& controllerName = r.cls->spec.controllerName;
  r.adapter = registry.Find(controllerName);
  r.descriptor = registry.FindDescriptor(controllerName);
  if (!r.adapter || r.descriptor == nullptr) {
    return Resolution::Pending(
        "AdapterNotRegistered",
        "JobClass \"" + r.className + "\" names controllerName \"" + controllerName +
            "\", which this controller does not serve (it serves: " + registry.ControllerNames() +
            ")");
  }
  r.resolved = {r.cls->metadata.name, r.cls->metadata.uid, controllerName, {}, {}};
  PinClassPolicies(*r.cls, r.resolved);
  return std::nullopt;
}

// The LocalQueue of the Job: its label, else the class's default. A class that requires queueing
// keeps a Job without one waiting (the label may be added), and every Job while this controller
// does not queue (queueing: on the controller, not on the Job).
std::optional<Resolution> ResolveQueue(Resolving& r, bool kueue) {
  auto label = r.job.metadata.labels.find(statemachine::kQueueNameLabel);
  const auto& policy = r.cls->spec.queueing;
  if (label != r.job.metadata.labels.end() && !label->second.empty()) {
    r.queueName = label->second;
  } else if (policy) {
    r.queueName = policy->defaultLocalQueue;
  }
  if (!policy || !policy->required) return std::nullopt;
  if (!kueue) {
    return Resolution::Pending("QueueingUnavailable",
                               "JobClass \"" + r.className +
                                   "\" requires queueing through Kueue (spec.queueing.required), "
                                   "and this controller does not queue (--kueue is off)");
  }
  if (r.queueName.empty()) {
    return Resolution::Pending("QueueRequired",
                               "JobClass \"" + r.className +
                                   "\" requires queueing (spec.queueing.required): label the Job " +
                                   statemachine::kQueueNameLabel + "=<LocalQueue>");
  }
  return std::nullopt;
}

// The parameters object the class names, if it names one the adapter takes.
std::optional<Resolution> ResolveParameters(Resolving& r) {
  if (!r.cls->spec.parametersRef) return std::nullopt;
  const auto& ref = *r.cls->spec.parametersRef;
  const auto& takes = r.descriptor->parameters;
  const std::string& group = ref.group.empty() ? std::string(api::kGroup) : ref.group;
  if (!takes || takes->kind != ref.kind || takes->group != group) {
    // The CRD refuses such classes for Ayatori's own controllers; this covers the others. The
    // class may be corrected, so the Job waits.
    return Resolution::Pending(
        "ParametersNotFound",
        "JobClass \"" + r.className + "\" refers to " + ref.kind + "." + group + " \"" + ref.name +
            "\", but the adapter for " + r.resolved.controllerName + " takes " +
            (takes ? takes->kind + "." + takes->group : std::string("no parameters")));
  }
  auto params = r.cache.GetParameters(ref.kind, ref.name);
  if (!params) {
    return Resolution::Pending("ParametersNotFound", "JobClass \"" + r.className + "\" refers to " +
                                                         ref.kind + " \"" + ref.name +
                                                         "\", which does not exist");
  }
  r.parameters = *params;
  api::ParametersRef withUid = ref;
  withUid.uid = r.parameters.value("/metadata/uid"_json_pointer, std::string());
  r.resolved.parametersRef = withUid;
  return std::nullopt;
}

// The Job's resources within the class's defaults and limits.
std::optional<Resolution> ResolveJobResources(Resolving& r) {
  auto resources = api::ResolveResources(r.job.spec.resources, r.cls->spec.resources);
  if (!resources.ok()) {
    return Resolution::Rejected("ResourcesOutOfRange", resources.status().message());
  }
  r.resources = std::move(*resources);
  return std::nullopt;
}

// The refusals that need no reference read: what the backend cannot enforce or run, and Secrets
// of the parameters outside the controller's namespace.
std::optional<Resolution> RefusedByPolicy(const Resolving& r,
                                          const std::string& controllerNamespace) {
  if (auto refused = adapters::RefusedAtAcceptance(*r.descriptor, r.className, r.parameters,
                                                   r.resources, r.job)) {
    return Resolution::Rejected(refused->reason, refused->message);
  }
  if (auto refused =
          adapters::SecretNamespaceRefusal(r.className, r.parameters, controllerNamespace)) {
    return Resolution::Rejected(refused->reason, refused->message);
  }
  return std::nullopt;
}

// A backend that resolves the references itself (descriptor resolvesEnvReferences, e.g. a
// kubelet on its node) gets them unread: only their existence is checked, in the metadata cache
// (spec: the controller does not read them; a missing key is the kubelet's to find, and the Job
// then waits as Scheduling with CreateContainerConfigError, docs/api.md). Other adapters get the
// values from the controller: each object is read once here to check its keys, and again when the
// request is built.
StatusOr<std::optional<Resolution>> CheckEnvReferences(const Resolving& r,
                                                       ReferenceReader& reader) {
  const std::string& ns = r.job.metadata.namespace_;
  const bool passesReferences = r.descriptor->resolvesEnvReferences;
  ReferenceReader* keyReader = passesReferences ? nullptr : &reader;
  for (const auto& env : r.job.spec.task.env) {
    if (!env.valueFrom) continue;
    if (env.valueFrom->secretKeyRef) {
      if (!passesReferences &&
          r.cls->spec.secretEnvForwarding != api::SecretEnvForwarding::kAllowed) {
        return std::optional<Resolution>(Resolution::Rejected(
            "SecretForwardingDenied",
            "env " + env.name + " refers to Secret " + env.valueFrom->secretKeyRef->name +
                ", but JobClass \"" + r.className +
                "\" does not allow forwarding Secret values to its backend "
                "(spec.secretEnvForwarding: Denied)"));
      }
      auto checked = CheckReference(r.cache, keyReader, ns, env.name, *env.valueFrom->secretKeyRef,
                                    ReferenceKind::kSecret);
      if (!checked.ok() || *checked) return checked;
    }
    if (env.valueFrom->configMapKeyRef) {
      auto checked = CheckReference(r.cache, keyReader, ns, env.name,
                                    *env.valueFrom->configMapKeyRef, ReferenceKind::kConfigMap);
      if (!checked.ok() || *checked) return checked;
    }
  }
  return std::optional<Resolution>();
}

// Each imagePullSecret exists and holds a registry config, for a backend the controller hands the
// credentials to (the kubelet reads its own).
StatusOr<std::optional<Resolution>> CheckPullSecrets(const Resolving& r, ReferenceReader& reader) {
  if (r.descriptor->resolvesEnvReferences) return std::optional<Resolution>();
  const std::string& ns = r.job.metadata.namespace_;
  for (const auto& pull : r.job.spec.task.imagePullSecrets) {
    const std::string what = "imagePullSecrets: Secret " + ns + "/" + pull.name;
    std::shared_ptr<const ReferencedKeys> secret;
    if (auto exists = r.cache.GetSecret(ns, pull.name)) {
      auto read = reader.ReadKeys(ReferenceKind::kSecret, ns, pull.name, exists->resourceVersion);
      if (!read.ok()) return read.status();
      secret = *read;
    }
    if (secret == nullptr) {
      return std::optional<Resolution>(
          Resolution::Pending("SecretNotFound", what + " does not exist"));
    }
    if (secret->type != "kubernetes.io/dockerconfigjson" ||
        !secret->names.contains(".dockerconfigjson")) {
      return std::optional<Resolution>(Resolution::Rejected(
          "ImagePullSecretInvalid", what + " is not of type kubernetes.io/dockerconfigjson"));
    }
  }
  return std::optional<Resolution>();
}

// The adapter's own word on the request, under the reason it gives (Adapter::AcceptanceRefusal).
std::optional<Resolution> RefusedByAdapter(const Resolving& r) {
  ExecutionRequest request;
  request.job = r.job;
  request.jobClass = r.resolved;
  request.parameters = r.parameters;
  request.resources = r.resources;
  auto refused = r.adapter->AcceptanceRefusal(request);
  if (!refused) return std::nullopt;
  return Resolution::Rejected(refused->reason, refused->message);
}

// Written with the class, once: from now on the Job talks to this backend, whatever becomes of
// the parameters object (JobReconciler::ParametersFor). The status names the snapshot only; the
// reconciler stores the values before it writes the status (backend_snapshot.h).
Resolution Resolved(Resolving& r) {
  BackendSnapshot snapshot{r.resolved.controllerName, r.adapter->PinnedParameters(r.parameters)};
  r.resolved.backendSnapshot = BackendSnapshotName(snapshot);
  Resolution resolution = Resolution::Resolved(r.resolved, r.resources, r.adapter->Name());
  resolution.pinnedParameters = std::move(snapshot.pinned);
  resolution.queueName = std::move(r.queueName);
  return resolution;
}

}  // namespace

StatusOr<Resolution> ResolveJob(const api::Job& job, const ClusterCache& cache,
                                const adapters::AdapterRegistry& registry, ReferenceReader& reader,
                                const std::string& controllerNamespace, bool kueue) {
  Resolving r{job, cache};
  if (auto ended = ResolveClass(r, registry)) return *ended;
  if (auto ended = ResolveQueue(r, kueue)) return *ended;
  if (auto ended = ResolveParameters(r)) return *ended;
  if (auto ended = ResolveJobResources(r)) return *ended;
  if (auto ended = RefusedByPolicy(r, controllerNamespace)) return *ended;
  for (auto check : {CheckEnvReferences, CheckPullSecrets}) {
    auto ended = check(r, reader);
    if (!ended.ok()) return ended.status();
    if (*ended) return **ended;
  }
  if (auto ended = RefusedByAdapter(r)) return *ended;
  return Resolved(r);
}

}  // namespace ayatori::controller
