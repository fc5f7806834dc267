#include "controller/resolver.h"

#include <algorithm>

#include "api/resources.h"
#include "controller/backend_snapshot.h"

namespace ayatori::controller {

using statemachine::Resolution;

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

StatusOr<Resolution> ResolveJob(const api::Job& job, const ClusterCache& cache,
                                const adapters::AdapterRegistry& registry, ReferenceReader& reader,
                                const std::string& controllerNamespace) {
  Resolution failure;
  std::string className = ChooseJobClassName(job, cache, &failure);
  if (className.empty()) return failure;

  auto cls = cache.GetJobClass(className);
  if (!cls) {
    return Resolution::Pending(
        "JobClassNotFound", "JobClass \"" + className + "\" does not exist; the Job waits for it");
  }
  const std::string& controllerName = cls->spec.controllerName;
  auto adapter = registry.Find(controllerName);
  const AdapterDescriptor* descriptor = registry.FindDescriptor(controllerName);
  if (!adapter || descriptor == nullptr) {
    return Resolution::Pending(
        "AdapterNotRegistered",
        "JobClass \"" + className + "\" names controllerName \"" + controllerName +
            "\", which this controller does not serve (it serves: " + registry.ControllerNames() +
            ")");
  }

  api::ResolvedJobClass resolved{cls->metadata.name, cls->metadata.uid, controllerName, {}, {}};
  // Pinned with the class: the TTL policy an accepted Job lives under (statemachine
  // EffectiveTtlSeconds) does not change when the class is edited later.
  resolved.ttlSecondsAfterFinished = cls->spec.ttlSecondsAfterFinished;
  if (cls->spec.startTimeoutSeconds && *cls->spec.startTimeoutSeconds > 0) {
    resolved.startTimeoutSeconds = cls->spec.startTimeoutSeconds;
  }
  nlohmann::json parameters = nlohmann::json::object();
  if (cls->spec.parametersRef) {
    const auto& ref = *cls->spec.parametersRef;
    const auto& takes = descriptor->parameters;
    const std::string& group = ref.group.empty() ? std::string(api::kGroup) : ref.group;
    if (!takes || takes->kind != ref.kind || takes->group != group) {
      // The CRD refuses such classes for Ayatori's own controllers; this covers the others. The
      // class may be corrected, so the Job waits.
      return Resolution::Pending(
          "ParametersNotFound",
          "JobClass \"" + className + "\" refers to " + ref.kind + "." + group + " \"" + ref.name +
              "\", but the adapter for " + controllerName + " takes " +
              (takes ? takes->kind + "." + takes->group : std::string("no parameters")));
    }
    auto params = cache.GetParameters(ref.kind, ref.name);
    if (!params) {
      return Resolution::Pending("ParametersNotFound", "JobClass \"" + className + "\" refers to " +
                                                           ref.kind + " \"" + ref.name +
                                                           "\", which does not exist");
    }
    parameters = *params;
    api::ParametersRef withUid = ref;
    withUid.uid = parameters.value("/metadata/uid"_json_pointer, std::string());
    resolved.parametersRef = withUid;
  }

  auto resources = api::ResolveResources(job.spec.resources, cls->spec.resources);
  if (!resources.ok()) {
    return Resolution::Rejected("ResourcesOutOfRange", resources.status().message());
  }

  if (auto refused =
          adapters::RefusedAtAcceptance(*descriptor, className, parameters, *resources, job)) {
    return Resolution::Rejected(refused->reason, refused->message);
  }
  if (auto refused = adapters::SecretNamespaceRefusal(className, parameters, controllerNamespace)) {
    return Resolution::Rejected(refused->reason, refused->message);
  }

  const std::string& ns = job.metadata.namespace_;
  // A backend that resolves the references itself (descriptor resolvesEnvReferences, e.g. a
  // kubelet on its node) gets them unread: only their existence is checked, in the metadata
  // cache (spec: the controller does not read them; a missing key is the kubelet's to find, and
  // the Job then waits as Scheduling with CreateContainerConfigError, docs/api.md). Other adapters
  // get the values from the controller: each object is read once here to check its keys, and again
  // when the request is built.
  const bool passesReferences = descriptor->resolvesEnvReferences;
  ReferenceReader* keyReader = passesReferences ? nullptr : &reader;
  for (const auto& env : job.spec.task.env) {
    if (!env.valueFrom) continue;
    if (env.valueFrom->secretKeyRef) {
      if (!passesReferences &&
          cls->spec.secretEnvForwarding != api::SecretEnvForwarding::kAllowed) {
        return Resolution::Rejected("SecretForwardingDenied",
                                    "env " + env.name + " refers to Secret " +
                                        env.valueFrom->secretKeyRef->name + ", but JobClass \"" +
                                        className +
                                        "\" does not allow forwarding Secret values to its backend "
                                        "(spec.secretEnvForwarding: Denied)");
      }
      auto r = CheckReference(cache, keyReader, ns, env.name, *env.valueFrom->secretKeyRef,
                              ReferenceKind::kSecret);
      if (!r.ok()) return r.status();
      if (*r) return **r;
    }
    if (env.valueFrom->configMapKeyRef) {
      auto r = CheckReference(cache, keyReader, ns, env.name, *env.valueFrom->configMapKeyRef,
                              ReferenceKind::kConfigMap);
      if (!r.ok()) return r.status();
      if (*r) return **r;
    }
  }
  if (!passesReferences) {
    for (const auto& pull : job.spec.task.imagePullSecrets) {
      const std::string what = "imagePullSecrets: Secret " + ns + "/" + pull.name;
      std::shared_ptr<const ReferencedKeys> secret;
      if (auto exists = cache.GetSecret(ns, pull.name)) {
        auto read = reader.ReadKeys(ReferenceKind::kSecret, ns, pull.name, exists->resourceVersion);
        if (!read.ok()) return read.status();
        secret = *read;
      }
      if (secret == nullptr) return Resolution::Pending("SecretNotFound", what + " does not exist");
      if (secret->type != "kubernetes.io/dockerconfigjson" ||
          !secret->names.contains(".dockerconfigjson")) {
        return Resolution::Rejected("ImagePullSecretInvalid",
                                    what + " is not of type kubernetes.io/dockerconfigjson");
      }
    }
  }

  ExecutionRequest request;
  request.job = job;
  request.jobClass = resolved;
  request.parameters = parameters;
  request.resources = *resources;
  if (Status s = adapter->Validate(request); !s.ok()) {
    // kFailedPrecondition: the backend cannot enforce what the class asks (Adapter::Validate).
    return Resolution::Rejected(s.code() == StatusCode::kFailedPrecondition
                                    ? adapters::kReasonNotEnforceable
                                    : "BackendRejected",
                                s.message());
  }
  // Written with the class, once: from now on the Job talks to this backend, whatever becomes of
  // the parameters object (JobReconciler::ParametersFor). The status names the snapshot only;
  // the reconciler stores the values before it writes the status (backend_snapshot.h).
  BackendSnapshot snapshot{controllerName, adapter->PinnedParameters(parameters)};
  resolved.backendSnapshot = BackendSnapshotName(snapshot);
  Resolution resolution = Resolution::Resolved(resolved, *resources, adapter->Name());
  resolution.pinnedParameters = std::move(snapshot.pinned);
  return resolution;
}

}  // namespace ayatori::controller
