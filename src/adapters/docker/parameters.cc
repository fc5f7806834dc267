#include "adapters/docker/parameters.h"

#include <utility>

#include "api/json.h"  // to_json of the api types the spec embeds

namespace ayatori::adapters::docker {
namespace {

using json = nlohmann::json;
using api::Decoded;

constexpr api::EnumName<PullPolicy> kPullPolicyNames[] = {
    {"IfNotPresent", PullPolicy::kIfNotPresent},
    {"Always", PullPolicy::kAlways},
    {"Never", PullPolicy::kNever},
};

}  // namespace

Decoded Decode(const json& j, PullPolicy& out) { return api::DecodeEnum(j, kPullPolicyNames, out); }

SecurityProfile DockerDefaultSecurityProfile() {
  SecurityProfile p = RestrictedSecurityProfile();
  p.pidsLimit = 256;
  p.openFilesLimit = 1024;
  p.logMaxBytes = 10 * kMiB;
  return p;
}

Decoded Decode(const json& j, DockerExecutionParameters& out) {
  return api::DecodeParameters(j, kParametersKind, out, [&out](const json& spec) {
    return api::ObjectDecoder(spec)("endpoint", out.endpoint)("tlsSecretRef", out.tlsSecretRef)(
               "insecure", out.insecure)("networkMode", out.networkMode)("runtime", out.runtime)(
               "pullPolicy", out.pullPolicy)("extraLabels", out.extraLabels)(
               "stopGracePeriodSeconds", out.stopGracePeriodSeconds)(
               "allowHostNetwork", out.allowHostNetwork)("init", out.init)("securityProfile",
                                                                           out.securityProfile)
        .Done();
  });
}

void to_json(json& j, PullPolicy v) { j = api::EnumToString(kPullPolicyNames, v); }
void from_json(const json& j, PullPolicy& v) { api::DecodeOrThrow(j, v, "PullPolicy"); }

void to_json(json& j, const DockerExecutionParameters& v) {
  json spec = json::object();
  spec["endpoint"] = v.endpoint;
  api::PutOptional(spec, "tlsSecretRef", v.tlsSecretRef);
  api::PutTrue(spec, "insecure", v.insecure);
  spec["networkMode"] = v.networkMode;
  api::PutString(spec, "runtime", v.runtime);
  spec["pullPolicy"] = v.pullPolicy;
  api::PutNonEmpty(spec, "extraLabels", v.extraLabels);
  spec["stopGracePeriodSeconds"] = v.stopGracePeriodSeconds;
  api::PutTrue(spec, "allowHostNetwork", v.allowHostNetwork);
  spec["init"] = v.init;
  spec["securityProfile"] = v.securityProfile;
  j = api::ParametersToJson(kParametersKind, v.metadata, std::move(spec));
}

void from_json(const json& j, DockerExecutionParameters& v) {
  api::DecodeOrThrow(j, v, kParametersKind);
}

json ToJson(const DockerExecutionParameters& params) { return params; }

StatusOr<DockerExecutionParameters> DockerExecutionParametersFromJson(const json& j) {
  return api::DecodeValue<DockerExecutionParameters>(j, kParametersKind);
}

}  // namespace ayatori::adapters::docker
