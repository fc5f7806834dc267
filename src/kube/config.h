// Where and how to reach the API server: kubeconfig files (current or named context) and the
// in-cluster ServiceAccount, loaded in client-go's order. Every error message names the file and
// the field at fault, e.g.
//   kubeconfig /home/u/.kube/config: users["admin"].user.client-key-data: not valid base64
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ayatori/status.h"
#include "kube/exec_credential.h"

namespace ayatori::kube {

// Connection and credentials for one API server. Holds secrets (token, key): never log it whole;
// Describe() prints the safe parts.
struct RestConfig {
  std::string server;         // https://host:port (no trailing slash)
  std::string caPem;          // trusted CAs in PEM; empty = the system trust store
  std::string clientCertPem;  // client certificate (chain) in PEM
  std::string clientKeyPem;   // its private key in PEM (secret)
  std::string bearerToken;    // secret
  // Read before each request and re-read when it changes (rotated ServiceAccount tokens); wins
  // over bearerToken.
  std::string bearerTokenFile;
  bool insecureSkipTlsVerify = false;  // only when ConfigLoadOptions allowed it
  // Verify the server's certificate against this name instead of the server URL's host.
  std::string tlsServerName;
  std::string
      proxyUrl;  // http://, https://, socks5:// or socks5h:// proxy for every request; "" = none
  // An exec credential plugin asked for the token (or client certificate) before each request;
  // shared by every copy of this config so that all its clients share one cached credential.
  std::shared_ptr<ExecCredentialProvider> exec;
  std::string namespace_;  // the context's namespace, or the in-cluster pod namespace; may be ""
  std::string source;      // "kubeconfig <path> context <name>" or "in-cluster ServiceAccount"

  // server, source and which credentials are present (never their values).
  std::string Describe() const;
};

struct ConfigLoadOptions {
  std::string kubeconfigPath;  // explicit path (a --kubeconfig flag); "" = search
  std::string context;         // "" = the kubeconfig's current-context
  // insecure-skip-tls-verify: true disables server certificate checks; refused unless allowed.
  bool allowInsecureSkipTlsVerify = false;
  std::string serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// Loads one kubeconfig file.
StatusOr<RestConfig> LoadKubeconfigFile(const std::string& path, const ConfigLoadOptions& options);

// The text of one kubeconfig file, as LoadKubeconfigFile reads it from `path`: errors name
// `path`, and file references in it (certificate-authority, client-key, tokenFile, ...) are read
// relative to its folder.
StatusOr<RestConfig> ParseKubeconfig(const std::string& text, const std::string& path,
                                     const ConfigLoadOptions& options);

// Loads and merges several kubeconfig files like client-go does for $KUBECONFIG: files that do
// not exist are skipped; for current-context and each named cluster, user and context the first
// file that sets it wins; relative paths are resolved against the file that holds them.
StatusOr<RestConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths,
                                         const ConfigLoadOptions& options);

// In-cluster: KUBERNETES_SERVICE_HOST/PORT, and token, ca.crt, namespace from serviceAccountDir.
// The token file is re-read by the client whenever it changes.
StatusOr<RestConfig> LoadInClusterConfig(const ConfigLoadOptions& options);

// client-go's order: options.kubeconfigPath, then $KUBECONFIG (a ':'-separated list), then
// ~/.kube/config, then in-cluster.
StatusOr<RestConfig> LoadConfig(const ConfigLoadOptions& options);

}  // namespace ayatori::kube
