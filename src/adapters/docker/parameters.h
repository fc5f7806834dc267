// DockerExecutionParameters (cluster-scoped, the parameters kind of controllerName .../docker):
// its typed model and JSON codec, with the rules of api/json.h (unknown fields ignored, null =
// absent, errors with the path of the value). Its CRD is
// config/crd/execution.ayatori.ddupan.top_dockerexecutionparameters.yaml.
//
//   spec.endpoint                    T (absent = unix:///var/run/docker.sock)
//   spec.tlsSecretRef                {namespace, name, key}
//   spec.insecure                    bool (absent = false; written only when true)
//   spec.networkMode                 T (absent = none)
//   spec.runtime                     T
//   spec.pullPolicy                  "IfNotPresent" | "Always" | "Never" (absent = IfNotPresent)
//   spec.extraLabels                 {T: T}
//   spec.stopGracePeriodSeconds      int64 (absent = 10)
//   spec.allowHostNetwork            bool (absent = false; networkMode host needs it true)
//   spec.init                        bool (absent = true: an init process reaps and forwards)
//   spec.securityProfile             SecurityProfile (absent = the restricted defaults below;
//                                    docs/security.md)
// Fields that have a default are always written.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "adapters/common/security_profile.h"
#include "api/json_codec.h"
#include "api/types.h"
#include "ayatori/status.h"

namespace ayatori::adapters::docker {

inline constexpr const char* kParametersKind = "DockerExecutionParameters";

enum class PullPolicy { kIfNotPresent, kAlways, kNever };
// The profile of a Docker task when the parameters leave a field out: the restricted one
// (RestrictedSecurityProfile) with 256 processes, 1024 open files and 10 MiB of output kept.
// Docker enforces every field of the profile.
SecurityProfile DockerDefaultSecurityProfile();

struct DockerExecutionParameters {
  api::ObjectMeta metadata;
  std::string endpoint = "unix:///var/run/docker.sock";  // or tcp://host:port
  // Secret with the CA that signed the engine's certificate and the client certificate and key
  // (ca.pem, cert.pem, key.pem or ca.crt, tls.crt, tls.key; docs/jobclass.md); its key is unused.
  std::optional<api::SecretKeyReference> tlsSecretRef;
  // tcp:// without tlsSecretRef and http:// are plain HTTP, which carries forwarded Secret values
  // in the clear: refused at acceptance unless this is true.
  bool insecure = false;
  std::string networkMode = "none";  // none | host
  std::string runtime;               // e.g. runc, runsc; empty = engine default
  PullPolicy pullPolicy = PullPolicy::kIfNotPresent;
  std::map<std::string, std::string> extraLabels;
  int64_t stopGracePeriodSeconds = 10;
  // networkMode host shares the engine host's network (no egress control): only on purpose.
  bool allowHostNetwork = false;
  bool init = true;  // docker run --init: PID 1 reaps zombies and forwards signals
  SecurityProfile securityProfile = DockerDefaultSecurityProfile();
  bool operator==(const DockerExecutionParameters&) const = default;
};

// The whole object, with apiVersion and kind.
nlohmann::json ToJson(const DockerExecutionParameters& params);
// kInvalidArgument naming the object and the path of a wrong value; a present kind or apiVersion
// that does not match is an error too.
StatusOr<DockerExecutionParameters> DockerExecutionParametersFromJson(const nlohmann::json& j);

// Codec hooks (api/json_codec.h; nlohmann's ADL hooks throw json::type_error on bad input).
api::Decoded Decode(const nlohmann::json& j, PullPolicy& out);
api::Decoded Decode(const nlohmann::json& j, DockerExecutionParameters& out);
void to_json(nlohmann::json& j, PullPolicy v);
void from_json(const nlohmann::json& j, PullPolicy& v);
void to_json(nlohmann::json& j, const DockerExecutionParameters& v);
void from_json(const nlohmann::json& j, DockerExecutionParameters& v);

}  // namespace ayatori::adapters::docker
