#include "test/integration/crd_kubectl.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>

#include "test/support/testenv.h"

namespace ayatori::testing {

ProcessResult RunKubectl(const std::vector<std::string>& args, const std::string& input,
                         User user) {
  std::vector<std::string> argv{Kubectl()};
  switch (user) {
    case User::kAdmin:
      argv.insert(argv.end(), {"--kubeconfig", TestenvVar("KUBECONFIG")});
      break;
    case User::kCertUser:
      // An empty kubeconfig, so nothing of the admin's credentials can leak into the request.
      argv.insert(argv.end(), {"--kubeconfig", "/dev/null", "--server", TestenvVar("TESTENV_API"),
                               "--certificate-authority", TestenvVar("TESTENV_CA"),
                               "--client-certificate", TestenvVar("TESTENV_USER_CERT"),
                               "--client-key", TestenvVar("TESTENV_USER_KEY")});
      break;
    case User::kTokenUser:
      argv.insert(argv.end(), {"--kubeconfig", "/dev/null", "--server", TestenvVar("TESTENV_API"),
                               "--certificate-authority", TestenvVar("TESTENV_CA"), "--token",
                               TestenvVar("TESTENV_USER_TOKEN")});
      break;
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, input);
}

std::string SourcePath(const std::string& relative) {
  return RequiredEnv("AYATORI_SOURCE_DIR") + "/" + relative;
}

bool InstallCrds() {
  static bool installed = false;
  if (installed) return true;
  auto r = RunKubectl({"apply", "-k", SourcePath("config/crd")});
  if (r.exitCode != 0) {
    ADD_FAILURE() << "kubectl apply -k config/crd failed: " << r.err;
    return false;
  }
  r = RunKubectl(
      {"wait", "--for", "condition=established", "--timeout=60s", "-f", SourcePath("config/crd")});
  if (r.exitCode != 0) {
    ADD_FAILURE() << "the CRDs of config/crd did not become Established: " << r.out << r.err;
    return false;
  }
  installed = true;
  return true;
}

std::string GetJsonPath(const std::string& resource, const std::string& ns, const std::string& name,
                        const std::string& jsonPath) {
  std::vector<std::string> args{"get", resource, name, "-o", "jsonpath=" + jsonPath};
  if (!ns.empty()) args.insert(args.end(), {"-n", ns});
  auto r = RunKubectl(args);
  EXPECT_EQ(r.exitCode, 0) << "kubectl get " << resource << " " << name << ": " << r.err;
  return r.out;
}

std::string UniqueName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

}  // namespace ayatori::testing
