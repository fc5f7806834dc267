// How every benchmark program reaches the API server: its kubeconfig and one client per role,
// with the limits the run sets (the benchmarks compare clients at equal QPS and burst).
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "kube/config.h"
#include "kube/rest_client.h"

namespace ayatori::bench {

// The kubeconfig at `path` (what --kubeconfig names; "" searches as kubectl does: $KUBECONFIG,
// then ~/.kube/config); on failure prints "<program>: <why>" on stderr and returns nullopt, and
// the program exits with status 2.
inline std::optional<kube::RestConfig> LoadKubeconfigOrReport(const std::string& program,
                                                              const std::string& path) {
  kube::ConfigLoadOptions options;
  options.kubeconfigPath = path;
  auto config = kube::LoadConfig(options);
  if (!config.ok()) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), config.status().ToString().c_str());
    return std::nullopt;
  }
  return *std::move(config);
}

// A client that names itself `userAgent` in the API server's logs and audit, at qps/burst.
inline std::unique_ptr<kube::RestClient> NewClient(const kube::RestConfig& config, double qps,
                                                   int burst, const std::string& userAgent) {
  kube::RestClientOptions options;
  options.qps = qps;
  options.burst = burst;
  options.userAgent = userAgent;
  return kube::RestClient::New(config, options);
}

}  // namespace ayatori::bench
