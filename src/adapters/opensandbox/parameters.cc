#include "adapters/opensandbox/parameters.h"

#include <utility>

#include "api/json.h"  // to_json of the api types the spec embeds

namespace ayatori::adapters::opensandbox {

using json = nlohmann::json;

api::Decoded Decode(const json& j, OpenSandboxExecutionParameters& out) {
  return api::DecodeParameters(j, kParametersKind, out, [&out](const json& spec) {
    return api::ObjectDecoder(spec)("endpoint", out.endpoint)("apiKeySecretRef",
                                                              out.apiKeySecretRef)(
               "sandboxTimeoutSeconds", out.sandboxTimeoutSeconds)("sandboxTimeoutMarginSeconds",
                                                                   out.sandboxTimeoutMarginSeconds)(
               "pollIntervalSeconds", out.pollIntervalSeconds)(
               "useServerProxy", out.useServerProxy)("extraMetadata", out.extraMetadata)(
               "insecure", out.insecure)("caBundle", out.caBundle)("securityProfile",
                                                                   out.securityProfile)
        .Done();
  });
}

void to_json(json& j, const OpenSandboxExecutionParameters& v) {
  json spec = json::object();
  spec["endpoint"] = v.endpoint;
  api::PutOptional(spec, "apiKeySecretRef", v.apiKeySecretRef);
  spec["sandboxTimeoutSeconds"] = v.sandboxTimeoutSeconds;
  spec["sandboxTimeoutMarginSeconds"] = v.sandboxTimeoutMarginSeconds;
  spec["pollIntervalSeconds"] = v.pollIntervalSeconds;
  spec["useServerProxy"] = v.useServerProxy;
  api::PutNonEmpty(spec, "extraMetadata", v.extraMetadata);
  spec["insecure"] = v.insecure;
  api::PutString(spec, "caBundle", v.caBundle);
  spec["securityProfile"] = v.securityProfile;
  j = api::ParametersToJson(kParametersKind, v.metadata, std::move(spec));
}

void from_json(const json& j, OpenSandboxExecutionParameters& v) {
  api::DecodeOrThrow(j, v, kParametersKind);
}

json ToJson(const OpenSandboxExecutionParameters& params) { return params; }

StatusOr<OpenSandboxExecutionParameters> OpenSandboxExecutionParametersFromJson(const json& j) {
  return api::DecodeValue<OpenSandboxExecutionParameters>(j, kParametersKind);
}

}  // namespace ayatori::adapters::opensandbox
