// The securityProfile of every backend's parameters kind (docs/security.md): one type, one JSON
// codec. Each backend says which fields it enforces and what a field left out means there
// (its defaults, WithDefaults); a field it cannot enforce is refused at acceptance as
// NotEnforceable (the backend's descriptor.cc), never dropped. So every field but the task's ids
// is optional here: absent means "the backend's default", and a backend whose defaults leave a
// field out does not write it back (ToJson of OpenSandbox parameters names only the ids).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/json_codec.h"
#include "ayatori/status.h"

namespace ayatori::adapters {

enum class SeccompProfile { kRuntimeDefault, kUnconfined };

inline constexpr int64_t kMiB = int64_t{1024} * 1024;

struct SecurityProfile {
  int64_t runAsUser = 65534;                     // uid of the task's process; 0 only with runAsRoot
  int64_t runAsGroup = 65534;                    // its gid
  bool runAsRoot = false;                        // running as uid 0 must be said explicitly
  std::vector<std::string> addCapabilities;      // all others are dropped
  std::optional<bool> allowPrivilegeEscalation;  // false = no-new-privileges
  std::optional<SeccompProfile> seccompProfile;
  std::optional<int64_t> pidsLimit;            // processes and threads of the task
  std::optional<bool> readOnlyRootFilesystem;  // writable: /tmp and the working directory
  std::optional<int64_t> tmpSizeMiB;           // size of each tmpfs (counts against memory)
  std::optional<int64_t> openFilesLimit;       // RLIMIT_NOFILE, soft and hard
  std::optional<int64_t> logMaxBytes;          // the backend keeps at most this much output
  bool operator==(const SecurityProfile&) const = default;
};

// The restricted profile (docs/security.md) that the Docker and Kubernetes backends start from:
// no privilege escalation, the runtime's default seccomp filter, a read-only root with a 64 MiB
// /tmp. Per-node limits (pidsLimit, openFilesLimit, logMaxBytes) are left out.
SecurityProfile RestrictedSecurityProfile();

// `profile` with each optional field it leaves out taken from `defaults`.
SecurityProfile WithDefaults(SecurityProfile profile, const SecurityProfile& defaults);

// kInvalidArgument naming `where` (e.g. "DockerExecutionParameters securityProfile.") when the
// ids are out of range or uid 0 is asked for without runAsRoot: true.
Status ValidateIds(const SecurityProfile& profile, const std::string& where);

// A capability name as Linux spells it without CAP_: upper case letters, digits and '_'.
bool IsCapabilityName(std::string_view name);

// Codec hooks (api/json_codec.h): unknown fields ignored, null = absent; to_json writes the ids
// always, addCapabilities when not empty and the optional fields when present.
api::Decoded Decode(const nlohmann::json& j, SeccompProfile& out);
api::Decoded Decode(const nlohmann::json& j, SecurityProfile& out);
void to_json(nlohmann::json& j, SeccompProfile v);
void to_json(nlohmann::json& j, const SecurityProfile& v);

}  // namespace ayatori::adapters
