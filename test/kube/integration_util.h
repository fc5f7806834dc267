// Helpers for integration tests against the real kube-apiserver of the `apiserver` fixture.
#pragma once

#include <memory>
#include <string>

#include "kube/config.h"
#include "kube/rest_client.h"

namespace ayatori::kube::testing {

// The admin kubeconfig of the test control plane (client certificate, system:masters).
RestConfig AdminConfig();
// TESTENV_API + TESTENV_CA with a bearer token (admin by default).
RestConfig TokenConfig(const std::string& token);
// TESTENV_API + TESTENV_CA with a client certificate and key read from files.
RestConfig CertConfig(const std::string& certFile, const std::string& keyFile);

// A client with generous limits (tests are not about pacing).
std::unique_ptr<RestClient> Client(const RestConfig& config);

// Creates a fresh namespace `<prefix>-<unique>` and returns its name (fails the test if not).
std::string NewNamespace(RestClient& client, const std::string& prefix);

// Compacts etcd at its current revision (through TESTENV_ETCD's HTTP/JSON gateway) and returns
// that revision; every older resourceVersion is then too old for an uncached list or watch.
int64_t CompactEtcd();

std::string ReadFileOrFail(const std::string& path);

}  // namespace ayatori::kube::testing
