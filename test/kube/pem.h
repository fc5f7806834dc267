// Self-signed certificates generated in memory for kubeconfig tests.
#pragma once

#include <string>

namespace ayatori::kube::testing {

struct PemPair {
  std::string cert;
  std::string key;
};

// A fresh P-256 key and a self-signed certificate for `cn`.
PemPair MakeSelfSigned(const std::string& cn);

}  // namespace ayatori::kube::testing
