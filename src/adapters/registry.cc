#include "adapters/registry.h"

#include <algorithm>
#include <utility>

namespace ayatori::adapters {

Status AdapterRegistry::Register(AdapterDescriptor descriptor, std::shared_ptr<Adapter> adapter) {
  if (adapter == nullptr) {
    return {StatusCode::kInvalidArgument,
            "no adapter given for controllerName \"" + descriptor.controllerName + "\""};
  }
  if (descriptor.controllerName.empty()) {
    return {StatusCode::kInvalidArgument, "an adapter descriptor needs a controllerName"};
  }
  if (FindDescriptor(descriptor.controllerName) != nullptr) {
    return {StatusCode::kAlreadyExists,
            "controllerName \"" + descriptor.controllerName + "\" is already registered"};
  }
  if (const auto& p = descriptor.parameters) {
    if (p->group.empty() || p->version.empty() || p->kind.empty() || p->resource.empty()) {
      return {StatusCode::kInvalidArgument, "the parameters kind of controllerName \"" +
                                                descriptor.controllerName +
                                                "\" needs a group, version, kind and resource"};
    }
    if (FindByParametersKind(p->group, p->kind) != nullptr) {
      return {StatusCode::kAlreadyExists,
              "parameters kind " + p->kind + "." + p->group + " is already registered"};
    }
  }
  adapters_.push_back({std::move(descriptor), std::move(adapter)});
  return Status::Ok();
}

std::shared_ptr<Adapter> AdapterRegistry::Find(const std::string& controllerName) const {
  for (const auto& a : adapters_) {
    if (a.descriptor.controllerName == controllerName) return a.adapter;
  }
  return nullptr;
}

const AdapterDescriptor* AdapterRegistry::FindDescriptor(const std::string& controllerName) const {
  for (const auto& a : adapters_) {
    if (a.descriptor.controllerName == controllerName) return &a.descriptor;
  }
  return nullptr;
}

const AdapterDescriptor* AdapterRegistry::FindByParametersKind(const std::string& group,
                                                               const std::string& kind) const {
  for (const auto& a : adapters_) {
    const auto& p = a.descriptor.parameters;
    if (p && p->group == group && p->kind == kind) return &a.descriptor;
  }
  return nullptr;
}

std::string AdapterRegistry::ControllerNames() const {
  std::string out;
  for (const auto& a : adapters_) out += (out.empty() ? "" : ", ") + a.descriptor.controllerName;
  return out.empty() ? "none" : out;
}

namespace {

std::string NotEnforced(const std::string& className, const std::string& ask,
                        const AdapterDescriptor& descriptor) {
  return "JobClass \"" + className + "\" asks for " + ask + ", which the adapter for " +
         descriptor.controllerName + " does not enforce";
}

}  // namespace

std::optional<std::string> RequirementsNotEnforced(const AdapterDescriptor& descriptor,
                                                   const std::string& className,
                                                   const nlohmann::json& parameters,
                                                   const api::ResourceRequirements& resources,
                                                   const api::Job& job) {
  const Enforcement& can = descriptor.enforces;
  if (resources.limits.memory && !can.memoryLimit) {
    return NotEnforced(className,
                       "a memory limit (limits.memory " + resources.limits.memory->str() + ")",
                       descriptor);
  }
  if (resources.limits.cpu && !can.cpuLimit) {
    return NotEnforced(className, "a cpu limit (limits.cpu " + resources.limits.cpu->str() + ")",
                       descriptor);
  }
  if (!job.spec.task.imagePullSecrets.empty() && !can.imagePullAuth) {
    return "the Job's imagePullSecrets ask for an authenticated image pull, which the adapter "
           "for " +
           descriptor.controllerName + " (JobClass \"" + className + "\") does not enforce";
  }
  const nlohmann::json* spec = nullptr;
  if (parameters.is_object()) {
    auto it = parameters.find("spec");
    if (it != parameters.end() && it->is_object()) spec = &*it;
  }
  if (spec != nullptr && descriptor.parameters) {
    const auto& fields = descriptor.parameters->fields;
    for (const auto& [field, value] : spec->items()) {
      // The allowance and the queueing are the controller's, not something a backend enforces.
      if (field == kAllowCrossNamespaceSecretRefs || field == kQueueingParameters) continue;
      if (std::find(fields.begin(), fields.end(), field) == fields.end()) {
        return NotEnforced(
            className, descriptor.parameters->kind + " spec." + field + " (its parameters set it)",
            descriptor);
      }
    }
  }
  if (descriptor.parametersAsk) {
    const Enforcement asked = descriptor.parametersAsk(parameters);
    if (asked.egressDeny && !can.egressDeny) {
      return NotEnforced(className, "egress deny (its parameters ask for no network)", descriptor);
    }
    if (asked.isolation && !can.isolation) {
      return NotEnforced(className, "an isolation boundary (its parameters ask for one)",
                         descriptor);
    }
  }
  return std::nullopt;
}

std::optional<Refusal> RefusedAtAcceptance(const AdapterDescriptor& descriptor,
                                           const std::string& className,
                                           const nlohmann::json& parameters,
                                           const api::ResourceRequirements& resources,
                                           const api::Job& job) {
  if (auto missing = RequirementsNotEnforced(descriptor, className, parameters, resources, job)) {
    return Refusal{kReasonNotEnforceable, std::move(*missing)};
  }
  if (!descriptor.runsImageEntrypoint && job.spec.task.command.empty()) {
    return Refusal{kReasonCommandRequired,
                   "JobClass \"" + className + "\" runs the task as a command line (" +
                       descriptor.controllerName +
                       "), not through the image's entrypoint, which it cannot read: set "
                       "spec.task.command (e.g. [\"/bin/sh\", \"-c\"] or the program the image "
                       "would run); spec.task.args alone is never taken as the program"};
  }
  if (descriptor.refuseParameters) return descriptor.refuseParameters(parameters);
  return std::nullopt;
}

std::optional<Refusal> SecretNamespaceRefusal(const std::string& className,
                                              const nlohmann::json& parameters,
                                              const std::string& controllerNamespace) {
  if (!parameters.is_object()) return std::nullopt;
  auto spec = parameters.find("spec");
  if (spec == parameters.end() || !spec->is_object()) return std::nullopt;
  auto allow = spec->find(kAllowCrossNamespaceSecretRefs);
  if (allow != spec->end() && allow->is_boolean() && allow->get<bool>()) return std::nullopt;
  constexpr std::string_view kSuffix = "SecretRef";
  for (const auto& [field, ref] : spec->items()) {
    if (!field.ends_with(kSuffix) || !ref.is_object()) continue;
    auto ns = ref.find("namespace");
    const std::string secretNamespace =
        ns != ref.end() && ns->is_string() ? ns->get<std::string>() : std::string();
    if (secretNamespace == controllerNamespace) continue;
    auto name = ref.find("name");
    const std::string secret =
        name != ref.end() && name->is_string() ? name->get<std::string>() : std::string();
    const std::string kind = parameters.value("kind", std::string("parameters"));
    const std::string prefix = className.empty() ? "the " : "JobClass \"" + className + "\": its ";
    return Refusal{kReasonSecretNamespaceNotAllowed,
                   prefix + kind + " spec." + field + " names Secret \"" + secretNamespace + "/" +
                       secret + "\", outside the controller's namespace " + controllerNamespace +
                       ": move the Secret to " + controllerNamespace +
                       ", or let a cluster administrator set spec." +
                       kAllowCrossNamespaceSecretRefs + ": true in the parameters"};
  }
  return std::nullopt;
}

ResourceRef ParametersResource(const ParametersKind& kind) {
  return ResourceRef{kind.group, kind.version, kind.resource, false};
}

nlohmann::json WithSpecOverrides(const AdapterDescriptor& descriptor, nlohmann::json parameters) {
  if (descriptor.specOverrides.empty() || !parameters.is_object()) return parameters;
  nlohmann::json& spec = parameters["spec"];
  if (!spec.is_object()) spec = nlohmann::json::object();
  for (const auto& [field, value] : descriptor.specOverrides) spec[field] = value;
  return parameters;
}

}  // namespace ayatori::adapters
