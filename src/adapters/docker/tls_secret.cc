#include "adapters/docker/tls_secret.h"

#include <memory>

#include "adapters/common/secret_reader.h"
#include "adapters/docker/json_get.h"
#include "base/base64.h"

namespace ayatori::adapters::docker {

namespace {

using nlohmann::json;

// The decoded value of `key`, nullopt when it is absent or empty; `bad` collects keys that are
// present but not base64.
std::optional<std::string> Value(const json& data, const char* key, std::string& bad) {
  std::string encoded = GetString(data, key);
  if (encoded.empty()) return std::nullopt;
  auto decoded = base::Base64Decode(encoded);
  if (!decoded.ok() || decoded->empty()) {
    bad += (bad.empty() ? "" : ", ") + std::string(key);
    return std::nullopt;
  }
  return std::move(*decoded);
}

bool HasAny(const json& data, const TlsSecretKeys& keys) {
  return !GetString(data, keys.ca).empty() || !GetString(data, keys.cert).empty() ||
         !GetString(data, keys.key).empty();
}

}  // namespace

StatusOr<TlsMaterial> TlsMaterialFromSecretData(const json& data, const std::string& secretName) {
  auto refuse = [&](const std::string& why) {
    return Status(StatusCode::kFailedPrecondition,
                  "docker engine TLS: Secret " + secretName + " " + why +
                      " (expected keys ca.pem, cert.pem, key.pem or ca.crt, tls.crt, tls.key)");
  };
  if (!data.is_object()) return refuse("has no data");
  // Docker's names win when both sets are present; the two are never mixed.
  const TlsSecretKeys& keys = HasAny(data, kDockerTlsKeys) ? kDockerTlsKeys : kKubernetesTlsKeys;
  std::string bad;
  auto ca = Value(data, keys.ca, bad);
  auto cert = Value(data, keys.cert, bad);
  auto key = Value(data, keys.key, bad);
  if (!bad.empty()) return refuse("has keys that are not base64: " + bad);
  if (!ca) return refuse("has no key " + std::string(keys.ca) + " (the CA of the engine)");
  if (cert.has_value() != key.has_value()) {
    return refuse("must have both " + std::string(keys.cert) + " and " + keys.key + " or neither");
  }
  TlsMaterial out;
  out.caPem = std::move(*ca);
  if (cert) {
    out.certPem = SensitiveString(std::move(*cert));
    out.keyPem = SensitiveString(std::move(*key));
  }
  return out;
}

TlsSource SecretTlsSource(KubeClient& client, std::chrono::seconds ttl) {
  auto reader = std::make_shared<CachedSecretReader<TlsMaterial>>(client, ttl);
  return [reader](const api::SecretKeyReference& ref) -> StatusOr<TlsMaterial> {
    const std::string name = ref.namespace_ + "/" + ref.name;
    return reader->Read(
        ref.namespace_, ref.name, name,
        [&name](const json& secret) {
          const json* data = GetObject(secret, "data");
          return TlsMaterialFromSecretData(data != nullptr ? *data : json(), name);
        },
        [&name](const Status& getError) {
          return Status(getError.code() == StatusCode::kNotFound ? StatusCode::kFailedPrecondition
                                                                 : getError.code(),
                        "docker engine TLS: reading Secret " + name + ": " + getError.message());
        });
  };
}

}  // namespace ayatori::adapters::docker
