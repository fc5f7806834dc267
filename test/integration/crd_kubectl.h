// kubectl against the test control plane, as the cluster admin or as one of the two unprivileged
// users the control plane knows (both in group testenv-users), for the tests of config/.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "test/support/process.h"

namespace ayatori::testing {

enum class User {
  kAdmin,      // system:masters, from the kubeconfig
  kCertUser,   // testenv-user (client certificate), group testenv-users
  kTokenUser,  // token-user (bearer token), group testenv-users
};

// Runs kubectl with `args` as `user`, `input` on stdin.
ProcessResult RunKubectl(const std::vector<std::string>& args, const std::string& input = "",
                         User user = User::kAdmin);

// Path of a file or directory of the source tree, e.g. SourcePath("config/crd").
std::string SourcePath(const std::string& relative);

// Applies config/crd once per process and waits until every CRD is Established. Records a test
// failure (and returns false) if that is impossible.
bool InstallCrds();

// `kubectl get <resource> <name> [-n ns] -o jsonpath=<path>`; the failure is recorded in the test.
std::string GetJsonPath(const std::string& resource, const std::string& ns, const std::string& name,
                        const std::string& jsonPath);

// How often a test polls the apiserver through kubectl (Eventually of test/support/wait.h) for
// state it applies asynchronously (admission policies, RBAC caches): each kubectl run costs a
// process start and a TLS handshake, so not faster than this.
inline constexpr std::chrono::milliseconds kKubectlPoll{200};

// A name no other test of this process uses, for cluster-scoped objects.
std::string UniqueName(const std::string& prefix);

}  // namespace ayatori::testing
