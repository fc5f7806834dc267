// The adapters this controller serves, each with the descriptor it describes itself by
// (AdapterDescriptor in src/adapters/adapter.h), keyed by the JobClass controllerName.
// The controller builds its parameters informers, env handling and the enforcement check from
// what is registered here; adding a backend is its folder under src/adapters/, its entry in the
// list of shipped backends (src/adapters/shipped_backends.cc), its parameters CRD and
// `make generate` (docs/development.md "Adding a backend"; test/adapters/manifests_test.cc checks
// the manifests against the descriptors).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "api/types.h"
#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::adapters {

struct RegisteredAdapter {
  AdapterDescriptor descriptor;
  std::shared_ptr<Adapter> adapter;
};

class AdapterRegistry {
 public:
  // kInvalidArgument for a null adapter, an empty controllerName, an incomplete parameters kind
  // (group, version, kind and resource are all needed for its informer); kAlreadyExists when
  // the controllerName or the parameters kind is already registered.
  Status Register(AdapterDescriptor descriptor, std::shared_ptr<Adapter> adapter);
  // nullptr when no adapter serves that controllerName.
  std::shared_ptr<Adapter> Find(const std::string& controllerName) const;
  const AdapterDescriptor* FindDescriptor(const std::string& controllerName) const;
  // The descriptor whose parameters are of that group and kind; nullptr if none.
  const AdapterDescriptor* FindByParametersKind(const std::string& group,
                                                const std::string& kind) const;
  // In registration order.
  const std::vector<RegisteredAdapter>& All() const { return adapters_; }
  // "a, b, c" of the controllerNames served, or "none".
  std::string ControllerNames() const;

 private:
  std::vector<RegisteredAdapter> adapters_;
};

// The stable reason of a Job refused because its class asks for something the adapter does not
// enforce (docs/api.md, docs/jobclass.md).
inline constexpr const char* kReasonNotEnforceable = "NotEnforceable";

// Accepted=False reason of a Job without spec.task.command for a backend that cannot run the
// image's entrypoint (AdapterDescriptor::runsImageEntrypoint).
inline constexpr const char* kReasonCommandRequired = "CommandRequired";

// Fail-closed check at acceptance (the containerbackend reference's rule): what the Job and its
// class ask for, set against what `descriptor` says its adapter enforces. Asks are: the effective
// limits.memory and limits.cpu, the Job's imagePullSecrets, every spec field the parameters
// object sets (each must be one of ParametersKind::fields), and what descriptor.parametersAsk
// reads from the parameters (egress deny, isolation). nullopt when everything asked is enforced;
// else a message naming the first ask that is not, e.g. `JobClass "sb" asks for a cpu limit
// (limits.cpu 1), which the adapter for execution.ayatori.ddupan.top/x does not enforce`.
// `className` is for the message only. Pure.
std::optional<std::string> RequirementsNotEnforced(const AdapterDescriptor& descriptor,
                                                   const std::string& className,
                                                   const nlohmann::json& parameters,
                                                   const api::ResourceRequirements& resources,
                                                   const api::Job& job);

// The one acceptance check of what a Job and its class ask of the adapter, in this order:
// RequirementsNotEnforced (reason NotEnforceable), a Job without a command for a backend that
// cannot run the image's entrypoint (kReasonCommandRequired), then the descriptor's own refusal
// of the parameters object (AdapterDescriptor::refuseParameters, e.g. InsecureEndpoint). nullopt
// when nothing refuses the Job. Pure.
std::optional<Refusal> RefusedAtAcceptance(const AdapterDescriptor& descriptor,
                                           const std::string& className,
                                           const nlohmann::json& parameters,
                                           const api::ResourceRequirements& resources,
                                           const api::Job& job);

// Accepted=False reason of a Job whose class's parameters name a Secret outside the controller's
// namespace without allowing it (SecretNamespaceRefusal).
inline constexpr const char* kReasonSecretNamespaceNotAllowed = "SecretNamespaceNotAllowed";
// The spec field of every parameters kind by which a cluster administrator allows Secret
// references outside the controller's namespace (docs/jobclass.md § Secrets of the parameters).
inline constexpr const char* kAllowCrossNamespaceSecretRefs = "allowCrossNamespaceSecretRefs";
// spec.queueing of every parameters kind: what the controller's Workloads ask of Kueue
// (controller/workloads.h, QueueNodeSelector), nothing a backend enforces.
inline constexpr const char* kQueueingParameters = "queueing";

// Parameters may name Secrets only in the controller's namespace (issue 26): a field of the
// parameters' spec whose name ends in "SecretRef" (tlsSecretRef, apiKeySecretRef, ...) and whose
// `namespace` is not `controllerNamespace` refuses the Job (kReasonSecretNamespaceNotAllowed,
// the message naming the field, the Secret and the way to allow it), unless the spec says
// allowCrossNamespaceSecretRefs: true. The CRDs require the namespace; a CEL rule cannot know the
// controller's namespace (the --namespace flag), so the controller checks it at acceptance.
// nullopt when nothing is refused. `className` is for the message only (empty: not named). The
// Docker and OpenSandbox adapters check it again at each call (their secretNamespace option), so
// parameters edited after acceptance cannot move a running Job's credentials elsewhere. Pure.
std::optional<Refusal> SecretNamespaceRefusal(const std::string& className,
                                              const nlohmann::json& parameters,
                                              const std::string& controllerNamespace);

// The API resource of a parameters kind (cluster-scoped, like every parameters kind).
ResourceRef ParametersResource(const ParametersKind& kind);

// `parameters` (a parameters object as JSON) with descriptor.specOverrides laid over its spec.
nlohmann::json WithSpecOverrides(const AdapterDescriptor& descriptor, nlohmann::json parameters);

}  // namespace ayatori::adapters
