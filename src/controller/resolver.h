// Resolving a Job before it is accepted (docs/design.md § Decisions): which JobClass (explicit
// name, namespace default, cluster default), which adapter and parameters, the effective resources,
// and whether every Secret/ConfigMap reference can be satisfied (docs/api.md § Secret and
// ConfigMap references). Reads the cache; for a Job whose adapter must forward values
// (resolvesEnvReferences false in its descriptor) and whose class allows it, it also GETs each
// referenced object that exists, to check its keys (and a pull secret's type), unless the reader
// already read it at the version the metadata cache shows (ReferenceReader::ReadKeys). The
// references of a Job whose backend resolves them itself are checked for existence only, in the
// metadata cache: the controller reads no Secret for it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "adapters/registry.h"
#include "controller/cluster_cache.h"
#include "controller/reference_reader.h"
#include "statemachine/statemachine.h"

namespace ayatori::controller {

// The JobClass name a Job would use: spec.jobClassName, else the namespace default, else the one
// cluster default. On failure returns a kPending resolution in `failure`.
std::string ChooseJobClassName(const api::Job& job, const ClusterCache& cache,
                               statemachine::Resolution* failure);

// What a Job that is not accepted yet waits on: the objects whose change may change the outcome
// of ResolveJob for it. The Job informer indexes waiting Jobs by these values, so that a change to
// one object requeues only the Jobs that wait on it. Values:
//   Secret/<ns>/<name>     env secretKeyRef, imagePullSecrets
//   ConfigMap/<ns>/<name>  env configMapKeyRef
//   JobClass/<name>        spec.jobClassName (and, through the class, its parameters)
//   Namespace/<ns>         empty spec.jobClassName: the namespace's default-class annotation
//   DefaultJobClass        empty spec.jobClassName: the JobClasses annotated as cluster default
// Empty for a Job that does not need resolution (statemachine::NeedsResolution).
std::vector<std::string> WaitTargets(const api::Job& job);
// A WaitTargets value: kind "Secret", "ConfigMap", "JobClass" or "Namespace" and the object's
// informer key ("<ns>/<name>", or the name of a cluster-scoped object).
std::string WaitTarget(std::string_view kind, std::string_view objectKey);
inline constexpr const char* kWaitsOnDefaultJobClass = "DefaultJobClass";

// An error only when a targeted read failed (API unreachable, forbidden): the round is retried
// with backoff and the Job's status says nothing new.
// `controllerNamespace`: the only namespace whose Secrets a class's parameters may name, unless
// they allow others (adapters::SecretNamespaceRefusal). `kueue`: the controller queues through
// Kueue (ReconcilerOptions::kueue), which a class's spec.queueing.required asks for.
StatusOr<statemachine::Resolution> ResolveJob(const api::Job& job, const ClusterCache& cache,
                                              const adapters::AdapterRegistry& registry,
                                              ReferenceReader& reader,
                                              const std::string& controllerNamespace,
                                              bool kueue = false);

}  // namespace ayatori::controller
