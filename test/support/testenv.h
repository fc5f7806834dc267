// Access to the real services the CTest fixtures started (test/CMakeLists.txt): the test control
// plane's env.sh (KUBECONFIG, TESTENV_API, TESTENV_CA, tokens, certs) and the project's dockerd.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace ayatori::testing {

// Variables of $TESTENV_DIR/env.sh. Fails the calling test (ADD_FAILURE + empty map) with a
// message naming the file when the control plane is not running.
std::map<std::string, std::string> TestenvVars();

// One variable of TestenvVars(), empty if absent (the failure is already recorded).
std::string TestenvVar(const std::string& name);

// The front proxy's client certificate and key (the identity kube-apiserver presents to an
// aggregated API), in the PKI directory of TESTENV_FRONT_PROXY_CA; empty paths when it is absent.
struct CertificateFiles {
  std::string cert, key;
};
CertificateFiles FrontProxyClientCertificate();

// Path of kubectl built with the control plane ($TESTENV_BIN/kubectl).
std::string Kubectl();

// A fresh namespace name unique to this test run, created with kubectl.
std::string CreateTestNamespace(const std::string& prefix);

// The kube-apiserver's own count of the requests it served (apiserver_request_total of its
// /metrics, read with kubectl get --raw as the fixture's admin), summed over codes and scopes, for
// one resource of the core group ("secrets") and one verb as the metric spells it ("GET", "LIST",
// "WATCH", "POST"), subresources excluded. The count covers every client of the control plane.
// nullopt, with a test failure, when /metrics cannot be read.
std::optional<double> ApiserverRequestCount(const std::string& resource, const std::string& verb);
// The same sum over a /metrics text (Prometheus exposition format).
double SumApiserverRequests(const std::string& metrics, const std::string& resource,
                            const std::string& verb);

// An environment variable the test harness must set; fails the test if it is missing.
std::string RequiredEnv(const char* name);

}  // namespace ayatori::testing
