// Authentication of requests that kube-apiserver's aggregator proxies to the log API: the
// "request header" scheme every extension apiserver uses (metrics-server, KubeVirt's
// subresources.kubevirt.io). The aggregator connects with its proxy client certificate, signed
// by the request-header client CA, and names the user it authenticated in headers
// (X-Remote-User, X-Remote-Group, X-Remote-Extra-<key>). Those headers are believed only on a
// connection whose client certificate that CA verified and whose common name is allowed; any
// other request is unauthenticated (401). docs/kubectl-ayatori.md, "Logs", says how it is set up.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ayatori/status.h"

namespace ayatori::logapi {

struct RequestHeaderConfig {
  std::string clientCaPem;                // the CA that signs the front proxy's certificate
  std::vector<std::string> allowedNames;  // common names allowed; empty: any the CA signed
  std::vector<std::string> usernameHeaders{"X-Remote-User"};
  std::vector<std::string> groupHeaders{"X-Remote-Group"};
  std::vector<std::string> extraHeaderPrefixes{"X-Remote-Extra-"};
};

// The namespace and name of the ConfigMap kube-apiserver publishes its request-header settings
// in, for extension apiservers to read (the extension-apiserver-authentication-reader Role
// grants it).
inline constexpr const char* kAuthenticationConfigMapNamespace = "kube-system";
inline constexpr const char* kAuthenticationConfigMapName = "extension-apiserver-authentication";

// The request-header settings in that ConfigMap (data keys requestheader-client-ca-file: PEM;
// requestheader-allowed-names, -username-headers, -group-headers, -extra-headers-prefix: JSON
// arrays of strings). kFailedPrecondition when it has no request-header CA: kube-apiserver runs
// without --requestheader-client-ca-file, so it cannot proxy to an aggregated API.
StatusOr<RequestHeaderConfig> RequestHeaderConfigFromConfigMap(const nlohmann::json& configMap);

struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;  // keys lower-cased, unescaped
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// The user the front proxy names. `verifiedCommonName`: the common name of the client
// certificate the request-header CA verified on this connection, nullopt when the connection
// had none (no certificate, or one the CA did not sign). kUnauthorized, with a message that
// never repeats header values, when the certificate is missing or not allowed or no username
// header is set. Header names compare case-insensitively; each group header value is one group.
StatusOr<UserInfo> AuthenticateFrontProxy(const RequestHeaderConfig& config,
                                          const std::optional<std::string>& verifiedCommonName,
                                          const Headers& headers);

}  // namespace ayatori::logapi
