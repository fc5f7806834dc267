// The client TLS material of a tcp:// Docker engine, read from the Secret that
// DockerExecutionParameters' tlsSecretRef names (docs/jobclass.md § Docker over TCP). The PEM
// text stays in memory (SensitiveString) and goes to libcurl as blobs: no key touches the disk,
// and no message here quotes a value.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>

#include "adapters/docker/engine.h"
#include "api/types.h"
#include "ayatori/kube_client.h"

namespace ayatori::adapters::docker {

// Key names accepted in the Secret: Docker's (ca.pem, cert.pem, key.pem, as `docker --tlsverify`
// reads them from DOCKER_CERT_PATH) or those of a kubernetes.io/tls Secret plus ca.crt.
// ca is required (the engine's certificate is always verified); cert and key come together.
struct TlsSecretKeys {
  const char* ca;
  const char* cert;
  const char* key;
};
inline constexpr TlsSecretKeys kDockerTlsKeys{"ca.pem", "cert.pem", "key.pem"};
inline constexpr TlsSecretKeys kKubernetesTlsKeys{"ca.crt", "tls.crt", "tls.key"};

// The material in a Secret's base64 `data` (Secret `ns/name` only names it in messages).
// kFailedPrecondition with a message naming the missing or undecodable keys, never a value.
StatusOr<TlsMaterial> TlsMaterialFromSecretData(const nlohmann::json& data,
                                                const std::string& secretName);

// Reads the material of a tlsSecretRef.
using TlsSource = std::function<StatusOr<TlsMaterial>(const api::SecretKeyReference&)>;

// A TlsSource that GETs the Secret through `client` and keeps each for `ttl`, so a rotated
// certificate is picked up without a GET per engine call.
TlsSource SecretTlsSource(KubeClient& client, std::chrono::seconds ttl = std::chrono::seconds(30));

}  // namespace ayatori::adapters::docker
