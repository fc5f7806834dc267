// OpenSandboxExecutionParameters (cluster-scoped, the parameters kind of controllerName
// .../opensandbox): its typed model and JSON codec, with the rules of api/json.h (unknown fields
// ignored, null = absent, errors with the path of the value). Its CRD is
// config/crd/execution.ayatori.ddupan.top_opensandboxexecutionparameters.yaml.
//
//   spec.endpoint                    T
//   spec.apiKeySecretRef             {namespace, name, key}
//   spec.sandboxTimeoutSeconds       int64 (absent = 0: manual cleanup)
//   spec.sandboxTimeoutMarginSeconds int64 (absent = 300)
//   spec.pollIntervalSeconds         int64 (absent = 2)
//   spec.useServerProxy              bool (absent = false)
//   spec.extraMetadata               {T: T}
//   spec.insecure                    bool (absent = false: an http:// endpoint is refused)
//   spec.caBundle                    T (PEM; absent = the system's trusted CAs)
//   spec.securityProfile             {runAsUser, runAsGroup: int64 (65534), runAsRoot: bool
//                                    (false)}: the task's ids, given to execd per command
// Fields that have a default are always written.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "adapters/common/security_profile.h"
#include "api/json_codec.h"
#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::adapters::opensandbox {

inline constexpr const char* kParametersKind = "OpenSandboxExecutionParameters";

struct OpenSandboxExecutionParameters {
  api::ObjectMeta metadata;
  std::string endpoint;  // lifecycle API base URL, e.g. http://127.0.0.1:8080/v1
  std::optional<api::SecretKeyReference> apiKeySecretRef;
  // Server-side timeout of a sandbox whose Job has no activeDeadlineSeconds; 0 = manual cleanup.
  int64_t sandboxTimeoutSeconds = 0;
  // With activeDeadlineSeconds, the sandbox timeout is the deadline plus this margin, so the
  // controller's deadline (and its cancel) comes first and the server's timeout is the safety net.
  int64_t sandboxTimeoutMarginSeconds = 300;
  int64_t pollIntervalSeconds = 2;
  bool useServerProxy = false;  // reach execd through the server's proxy route
  std::map<std::string, std::string> extraMetadata;
  // Plain HTTP to the server (http://) is refused at acceptance (InsecureEndpoint) and at every
  // call unless this says so: the create request carries the task's env, forwarded Secrets too.
  bool insecure = false;
  // PEM CA certificates that alone are trusted for an https:// endpoint (empty: the system's).
  std::string caBundle;
  // The shared profile (adapters/common/security_profile.h), of which OpenSandbox carries the ids:
  // execd runs each command as a given uid/gid. The rest of the profile is the server's
  // configuration; a parameters object that sets it is refused (NotEnforceable, descriptor.cc).
  SecurityProfile securityProfile;
  bool operator==(const OpenSandboxExecutionParameters&) const = default;
};

// The whole object, with apiVersion and kind.
nlohmann::json ToJson(const OpenSandboxExecutionParameters& params);
// kInvalidArgument naming the object and the path of a wrong value; a present kind or apiVersion
// that does not match is an error too.
StatusOr<OpenSandboxExecutionParameters> OpenSandboxExecutionParametersFromJson(
    const nlohmann::json& j);

// Codec hooks (api/json_codec.h; nlohmann's ADL hooks throw json::type_error on bad input).
api::Decoded Decode(const nlohmann::json& j, OpenSandboxExecutionParameters& out);
void to_json(nlohmann::json& j, const OpenSandboxExecutionParameters& v);
void from_json(const nlohmann::json& j, OpenSandboxExecutionParameters& v);

}  // namespace ayatori::adapters::opensandbox
