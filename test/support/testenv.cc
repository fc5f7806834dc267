#include "test/support/testenv.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>

#include "test/support/process.h"

namespace ayatori::testing {

std::string RequiredEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    ADD_FAILURE() << "environment variable " << name
                  << " is not set; run this test through ctest (see README)";
    return "";
  }
  return v;
}

std::map<std::string, std::string> TestenvVars() {
  std::map<std::string, std::string> vars;
  std::string dir = RequiredEnv("TESTENV_DIR");
  if (dir.empty()) return vars;
  std::string path = dir + "/env.sh";
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "the test control plane is not running: " << path
                  << " does not exist (the testenv_api_up fixture starts it)";
    return vars;
  }
  std::string line;
  while (std::getline(in, line)) {
    const std::string prefix = "export ";
    if (line.rfind(prefix, 0) != 0) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    vars[line.substr(prefix.size(), eq - prefix.size())] = line.substr(eq + 1);
  }
  return vars;
}

std::string TestenvVar(const std::string& name) {
  auto vars = TestenvVars();
  auto it = vars.find(name);
  if (it == vars.end()) {
    ADD_FAILURE() << "env.sh of the test control plane has no " << name;
    return "";
  }
  return it->second;
}

CertificateFiles FrontProxyClientCertificate() {
  const std::string ca = TestenvVar("TESTENV_FRONT_PROXY_CA");
  if (ca.empty()) return {};
  const std::string pki = ca.substr(0, ca.rfind('/'));
  return {pki + "/front-proxy-client.crt", pki + "/front-proxy-client.key"};
}

std::string Kubectl() {
  std::string bin = TestenvVar("TESTENV_BIN");
  return bin.empty() ? "kubectl" : bin + "/kubectl";
}

std::string CreateTestNamespace(const std::string& prefix) {
  static std::atomic<int> counter{0};
  std::random_device rd;
  std::string name = prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++) +
                     "-" + std::to_string(rd() % 100000);
  auto r = RunProcess(
      {Kubectl(), "--kubeconfig", TestenvVar("KUBECONFIG"), "create", "namespace", name});
  EXPECT_EQ(r.exitCode, 0) << "kubectl create namespace " << name << ": " << r.err;
  return name;
}

double SumApiserverRequests(const std::string& metrics, const std::string& resource,
                            const std::string& verb) {
  const std::string prefix = "apiserver_request_total{";
  double total = 0;
  size_t pos = 0;
  while (pos < metrics.size()) {
    size_t end = metrics.find('\n', pos);
    if (end == std::string::npos) end = metrics.size();
    const std::string line = metrics.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind(prefix, 0) != 0) continue;
    size_t close = line.find('}');
    if (close == std::string::npos) continue;
    // Labels: key="value" pairs separated by commas; the values of this metric hold no quotes.
    std::map<std::string, std::string> labels;
    const std::string set = line.substr(prefix.size(), close - prefix.size());
    size_t at = 0;
    while (at < set.size()) {
      size_t eq = set.find("=\"", at);
      if (eq == std::string::npos) break;
      size_t quote = set.find('"', eq + 2);
      if (quote == std::string::npos) break;
      labels[set.substr(at, eq - at)] = set.substr(eq + 2, quote - eq - 2);
      at = quote + 1;
      if (at < set.size() && set[at] == ',') ++at;
    }
    if (labels["group"] != "" || labels["resource"] != resource || labels["verb"] != verb ||
        labels["subresource"] != "") {
      continue;
    }
    total += std::strtod(line.c_str() + close + 1, nullptr);
  }
  return total;
}

std::optional<double> ApiserverRequestCount(const std::string& resource, const std::string& verb) {
  auto r =
      RunProcess({Kubectl(), "--kubeconfig", TestenvVar("KUBECONFIG"), "get", "--raw", "/metrics"});
  if (r.exitCode != 0 || r.out.find("apiserver_request_total") == std::string::npos) {
    ADD_FAILURE() << "cannot read the API server's /metrics: " << r.err;
    return std::nullopt;
  }
  return SumApiserverRequests(r.out, resource, verb);
}

}  // namespace ayatori::testing
