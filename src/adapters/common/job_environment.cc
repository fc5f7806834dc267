#include "adapters/common/job_environment.h"

#include <map>
#include <set>
#include <string>

namespace ayatori::adapters {

StatusOr<std::vector<ResolvedEnvVar>> JobEnvironment(const ExecutionRequest& request) {
  // The spec's order, each value resolved by the controller (or the spec's literal), then
  // anything else the controller resolved, then the Job identity (which a user cannot override).
  const auto& meta = request.job.metadata;
  const std::set<std::string> reserved = {kEnvJobNamespace, kEnvJobName, kEnvJobUid};
  std::map<std::string, const SensitiveString*> resolved;
  for (const auto& e : request.resolvedEnv) resolved[e.name] = &e.value;
  std::vector<ResolvedEnvVar> env;
  std::set<std::string> seen;
  for (const auto& e : request.job.spec.task.env) {
    if (reserved.count(e.name) > 0 || !seen.insert(e.name).second) continue;
    if (auto it = resolved.find(e.name); it != resolved.end()) {
      env.push_back({e.name, *it->second});
    } else if (e.value) {
      env.push_back({e.name, SensitiveString(*e.value)});
    } else {
      return Status(
          StatusCode::kFailedPrecondition,
          "env " + e.name + " references a Secret or ConfigMap whose value was not resolved");
    }
  }
  for (const auto& e : request.resolvedEnv) {
    if (reserved.count(e.name) > 0 || !seen.insert(e.name).second) continue;
    env.push_back(e);
  }
  env.push_back({kEnvJobNamespace, SensitiveString(meta.namespace_)});
  env.push_back({kEnvJobName, SensitiveString(meta.name)});
  env.push_back({kEnvJobUid, SensitiveString(meta.uid)});
  return env;
}

}  // namespace ayatori::adapters
