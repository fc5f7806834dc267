#include "adapters/common/secret_reader.h"

#include "ayatori/json_get.h"
#include "kube/resource.h"

namespace ayatori::adapters {

StatusOr<nlohmann::json> GetSecret(KubeClient& client, const std::string& ns,
                                   const std::string& name) {
  return client.Get(kube::SecretsResource(), ns, name);
}

const nlohmann::json& SecretData(const nlohmann::json& secret) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* data = GetObject(secret, "data");
  return data != nullptr ? *data : kEmpty;
}

}  // namespace ayatori::adapters
