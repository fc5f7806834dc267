#include "adapters/common/security_profile.h"

namespace ayatori::adapters {

namespace {

using nlohmann::json;

constexpr api::EnumName<SeccompProfile> kSeccompProfileNames[] = {
    {"RuntimeDefault", SeccompProfile::kRuntimeDefault},
    {"Unconfined", SeccompProfile::kUnconfined},
};

template <class T>
void Fill(std::optional<T>& field, const std::optional<T>& fallback) {
  if (!field) field = fallback;
}

}  // namespace

SecurityProfile RestrictedSecurityProfile() {
  SecurityProfile p;
  p.allowPrivilegeEscalation = false;
  p.seccompProfile = SeccompProfile::kRuntimeDefault;
  p.readOnlyRootFilesystem = true;
  p.tmpSizeMiB = 64;
  return p;
}

SecurityProfile WithDefaults(SecurityProfile profile, const SecurityProfile& defaults) {
  Fill(profile.allowPrivilegeEscalation, defaults.allowPrivilegeEscalation);
  Fill(profile.seccompProfile, defaults.seccompProfile);
  Fill(profile.pidsLimit, defaults.pidsLimit);
  Fill(profile.readOnlyRootFilesystem, defaults.readOnlyRootFilesystem);
  Fill(profile.tmpSizeMiB, defaults.tmpSizeMiB);
  Fill(profile.openFilesLimit, defaults.openFilesLimit);
  Fill(profile.logMaxBytes, defaults.logMaxBytes);
  return profile;
}

Status ValidateIds(const SecurityProfile& profile, const std::string& where) {
  constexpr int64_t kMaxId = 2147483647;
  if (profile.runAsUser < 0 || profile.runAsUser > kMaxId) {
    return Status(StatusCode::kInvalidArgument, where + "runAsUser must be 0-2147483647");
  }
  if (profile.runAsGroup < 0 || profile.runAsGroup > kMaxId) {
    return Status(StatusCode::kInvalidArgument, where + "runAsGroup must be 0-2147483647");
  }
  if (profile.runAsUser == 0 && !profile.runAsRoot) {
    return Status(StatusCode::kInvalidArgument,
                  where +
                      "runAsUser is 0 (root) but runAsRoot is not true: running as root must be "
                      "asked for explicitly with runAsRoot: true");
  }
  return Status::Ok();
}

bool IsCapabilityName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

api::Decoded Decode(const json& j, SeccompProfile& out) {
  return api::DecodeEnum(j, kSeccompProfileNames, out);
}

api::Decoded Decode(const json& j, SecurityProfile& out) {
  return api::ObjectDecoder(j)("runAsUser", out.runAsUser)("runAsGroup", out.runAsGroup)(
             "runAsRoot", out.runAsRoot)("addCapabilities", out.addCapabilities)(
             "allowPrivilegeEscalation", out.allowPrivilegeEscalation)(
             "seccompProfile", out.seccompProfile)("pidsLimit", out.pidsLimit)(
             "readOnlyRootFilesystem", out.readOnlyRootFilesystem)("tmpSizeMiB", out.tmpSizeMiB)(
             "openFilesLimit", out.openFilesLimit)("logMaxBytes", out.logMaxBytes)
      .Done();
}

void to_json(json& j, SeccompProfile v) { j = api::EnumToString(kSeccompProfileNames, v); }

void to_json(json& j, const SecurityProfile& v) {
  j = json::object();
  j["runAsUser"] = v.runAsUser;
  j["runAsGroup"] = v.runAsGroup;
  j["runAsRoot"] = v.runAsRoot;
  api::PutNonEmpty(j, "addCapabilities", v.addCapabilities);
  api::PutOptional(j, "allowPrivilegeEscalation", v.allowPrivilegeEscalation);
  api::PutOptional(j, "seccompProfile", v.seccompProfile);
  api::PutOptional(j, "pidsLimit", v.pidsLimit);
  api::PutOptional(j, "readOnlyRootFilesystem", v.readOnlyRootFilesystem);
  api::PutOptional(j, "tmpSizeMiB", v.tmpSizeMiB);
  api::PutOptional(j, "openFilesLimit", v.openFilesLimit);
  api::PutOptional(j, "logMaxBytes", v.logMaxBytes);
}

}  // namespace ayatori::adapters
