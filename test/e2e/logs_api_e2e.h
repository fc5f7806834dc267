// The Job log API end to end (docs/kubectl-ayatori.md, "Logs"): the real controller serves it
// from a network namespace this test makes (kube-apiserver refuses loopback Endpoints), the real
// kube-apiserver of the test's control plane fixture proxies to it through an APIService
// (hack/testenv/testenv.sh runs it with --requestheader-client-ca-file, --proxy-client-cert-file
// and --enable-aggregator-routing), and the output comes from the backend of the subclass.
// Users read logs with `kubectl get --raw` (impersonated by the fixture's admin) and with
// `kubectl ayatori logs` (the fixture's certificate user); RBAC decides who may.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/base64.h"
#include "test/e2e/controller_e2e.h"
#include "test/support/netns.h"
#include "test/support/testenv.h"

namespace ayatori::e2e::logs {

using testing::CertificateFiles;
using testing::ProcessResult;
using testing::RunProcess;
using testing::TestenvVar;

constexpr const char* kBusybox = "ayatori.local/busybox:1";
constexpr const char* kLogGroup = "logs.execution.ayatori.ddupan.top";
constexpr const char* kApiService = "v1alpha1.logs.execution.ayatori.ddupan.top";
constexpr const char* kService = "ayatori-logs-api";
constexpr const char* kSystemNamespace = "ayatori-system";
constexpr const char* kServerName = "ayatori-logs-api.ayatori-system.svc";
constexpr int kPort = 8443;
// Users of the test: one with the RoleBinding (impersonated), one without.
constexpr const char* kReader = "e2e-log-reader";
constexpr const char* kStranger = "e2e-log-stranger";
// The fixture's certificate user, bound like kReader, for the plugin.
constexpr const char* kCertUser = "testenv-user";

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline json Task(const std::string& script) {
  return {{"image", kBusybox}, {"command", json::array({"/bin/sh", "-c", script})}};
}

// The log API served by a controller in a test network namespace, registered with the
// fixture's kube-apiserver; SetUpBackend makes the JobClass of the backend under test.
class LogsApiE2ETest : public ControllerTest {
 protected:
  // Applies the backend's JobClass and adds the controller flags it needs.
  virtual void SetUpBackend(std::vector<std::string>* flags) = 0;

  void SetUp() override {
    ASSERT_TRUE(InstallCrds());
    std::vector<std::string> flags;
    ASSERT_NO_FATAL_FAILURE(SetUpBackend(&flags));
    auto netns = testing::TestNetns::Create("logs");
    ASSERT_TRUE(netns.ok()) << netns.status().ToString();
    netns_ = std::move(*netns);
    const std::string api = TestenvVar("TESTENV_API");
    const int apiPort = std::stoi(api.substr(api.rfind(':') + 1));
    Status fwd = netns_->ForwardLoopbackPort(apiPort);
    ASSERT_TRUE(fwd.ok()) << fwd.ToString();
    ASSERT_NO_FATAL_FAILURE(MakeServingCertificate());
    ASSERT_NO_FATAL_FAILURE(RegisterApiService());

    launcher_ = netns_->ExecPrefix();
    flags.insert(flags.end(),
                 {"--logs-api-bind=" + netns_->innerAddress() + ":" + std::to_string(kPort),
                  "--logs-api-tls-cert-file=" + dir_ + "/tls.crt",
                  "--logs-api-tls-key-file=" + dir_ + "/tls.key"});
    ASSERT_NO_FATAL_FAILURE(StartControllerAndNamespace("e2e-logs", flags));
    // The aggregator checks the APIService's discovery document through the Service's endpoint.
    bool available = testing::Eventually(
        [] {
          ProcessResult r =
              Kubectl({"get", "apiservice", kApiService, "-o",
                       "jsonpath={.status.conditions[?(@.type==\"Available\")].status}"});
          return r.out == "True";
        },
        60s, 500ms);
    ASSERT_TRUE(available) << Kubectl({"get", "apiservice", kApiService, "-o", "yaml"}).out;

    // Who may read logs in the test's namespace.
    AllowLogReading(ns_, {kReader, kCertUser});
  }

  // A Role in `ns` with get on jobs/log of the log API group, bound to `users`.
  void AllowLogReading(const std::string& ns, const std::vector<std::string>& users) {
    ASSERT_TRUE(
        Apply({{"apiVersion", "rbac.authorization.k8s.io/v1"},
               {"kind", "Role"},
               {"metadata", {{"name", "job-log-reader"}, {"namespace", ns}}},
               {"rules",
                {{{"apiGroups", {kLogGroup}}, {"resources", {"jobs/log"}}, {"verbs", {"get"}}},
                 // kubectl ayatori logs reads the Job first.
                 {{"apiGroups", {"execution.ayatori.ddupan.top"}},
                  {"resources", {"jobs"}},
                  {"verbs", {"get"}}}}}}));
    json subjects = json::array();
    for (const auto& user : users) {
      subjects.push_back(
          {{"kind", "User"}, {"name", user}, {"apiGroup", "rbac.authorization.k8s.io"}});
    }
    ASSERT_TRUE(Apply({{"apiVersion", "rbac.authorization.k8s.io/v1"},
                       {"kind", "RoleBinding"},
                       {"metadata", {{"name", "job-log-reader"}, {"namespace", ns}}},
                       {"roleRef",
                        {{"apiGroup", "rbac.authorization.k8s.io"},
                         {"kind", "Role"},
                         {"name", "job-log-reader"}}},
                       {"subjects", subjects}}));
  }

  void TearDown() override {
    ControllerTest::TearDown();
    // An APIService without a server would break discovery for every later kubectl.
    Kubectl({"delete", "apiservice", kApiService, "--ignore-not-found"});
    Kubectl(
        {"delete", "service,endpoints", kService, "-n", kSystemNamespace, "--ignore-not-found"});
    Kubectl({"delete", "endpointslice", std::string(kService) + "-e2e", "-n", kSystemNamespace,
             "--ignore-not-found"});
    netns_.reset();  // after the controller that ran in it is gone
  }

  // A CA and a serving certificate for the Service's DNS name, in the test's own directory.
  void MakeServingCertificate() {
    dir_ = RunPath("logs-api-pki");
    RunProcess({"mkdir", "-p", dir_});
    const std::string ext = dir_ + "/tls.ext";
    std::ofstream(ext) << "subjectAltName=DNS:" << kServerName << "\nextendedKeyUsage=serverAuth\n";
    for (const auto& argv : std::vector<std::vector<std::string>>{
             {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
              "-nodes", "-days", "2", "-subj", "/CN=e2e-logs-api-ca", "-keyout", dir_ + "/ca.key",
              "-out", dir_ + "/ca.crt"},
             {"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
              "-subj", "/CN=ayatori-logs-api", "-keyout", dir_ + "/tls.key", "-out",
              dir_ + "/tls.csr"},
             {"openssl", "x509", "-req", "-in", dir_ + "/tls.csr", "-CA", dir_ + "/ca.crt",
              "-CAkey", dir_ + "/ca.key", "-CAcreateserial", "-days", "2", "-extfile", ext, "-out",
              dir_ + "/tls.crt"},
         }) {
      ProcessResult r = RunProcess(argv);
      ASSERT_EQ(r.exitCode, 0) << argv[1] << ": " << r.err;
    }
  }

  // The Service (no selector), its endpoint in the namespace, and the APIService.
  void RegisterApiService() {
    const std::string ip = netns_->innerAddress();
    ASSERT_TRUE(Apply(
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kSystemNamespace}}}}));
    ASSERT_TRUE(Apply(
        {{"apiVersion", "v1"},
         {"kind", "Service"},
         {"metadata", {{"name", kService}, {"namespace", kSystemNamespace}}},
         {"spec", {{"ports", {{{"name", "https"}, {"port", 443}, {"targetPort", kPort}}}}}}}));
    ASSERT_TRUE(Apply(
        {{"apiVersion", "v1"},
         {"kind", "Endpoints"},
         {"metadata", {{"name", kService}, {"namespace", kSystemNamespace}}},
         {"subsets",
          {{{"addresses", {{{"ip", ip}}}}, {"ports", {{{"name", "https"}, {"port", kPort}}}}}}}}));
    ASSERT_TRUE(Apply({{"apiVersion", "discovery.k8s.io/v1"},
                       {"kind", "EndpointSlice"},
                       {"metadata",
                        {{"name", std::string(kService) + "-e2e"},
                         {"namespace", kSystemNamespace},
                         {"labels", {{"kubernetes.io/service-name", kService}}}}},
                       {"addressType", "IPv4"},
                       {"endpoints", {{{"addresses", {ip}}, {"conditions", {{"ready", true}}}}}},
                       {"ports", {{{"name", "https"}, {"port", kPort}, {"protocol", "TCP"}}}}}));
    ASSERT_TRUE(Apply(
        {{"apiVersion", "apiregistration.k8s.io/v1"},
         {"kind", "APIService"},
         {"metadata", {{"name", kApiService}}},
         {"spec",
          {{"group", kLogGroup},
           {"version", "v1alpha1"},
           {"groupPriorityMinimum", 1000},
           {"versionPriority", 15},
           {"caBundle", base::Base64Encode(ReadFile(dir_ + "/ca.crt"))},
           {"service", {{"namespace", kSystemNamespace}, {"name", kService}, {"port", 443}}}}}}));
  }

  std::string LogPath(const std::string& job, const std::string& query = "") {
    return std::string("/apis/") + kLogGroup + "/v1alpha1/namespaces/" + ns_ + "/jobs/" + job +
           "/log" + query;
  }

  // kubectl get --raw as `user` (impersonated by the fixture's admin).
  ProcessResult RawAs(const std::string& user, const std::string& path) {
    return Kubectl({"get", "--raw", path, "--as=" + user});
  }

  // A request straight to the server in the namespace, not through kube-apiserver. `cert`:
  // "" (none), "front-proxy" (the apiserver's proxy client certificate) or "admin" (a client
  // certificate of the cluster CA). Returns the body and, on the last line, the HTTP code.
  ProcessResult Direct(const std::string& path, const std::string& cert,
                       const std::vector<std::string>& headers = {}) {
    std::vector<std::string> argv = {
        "curl",
        "-sS",
        "--max-time",
        "30",
        "--cacert",
        dir_ + "/ca.crt",
        "--resolve",
        std::string(kServerName) + ":" + std::to_string(kPort) + ":" + netns_->innerAddress(),
        "-w",
        "\n%{http_code}"};
    if (cert == "front-proxy") {
      const CertificateFiles proxy = testing::FrontProxyClientCertificate();
      argv.insert(argv.end(), {"--cert", proxy.cert, "--key", proxy.key});
    } else if (cert == "admin") {
      argv.insert(argv.end(),
                  {"--cert", TestenvVar("TESTENV_CERT"), "--key", TestenvVar("TESTENV_KEY")});
    }
    for (const auto& h : headers) argv.insert(argv.end(), {"-H", h});
    argv.push_back("https://" + std::string(kServerName) + ":" + std::to_string(kPort) + path);
    return RunProcess(argv);
  }

  // A kubeconfig of the fixture's certificate user (no access to Docker or the admin's rights).
  std::string UserKubeconfig() {
    std::string path = dir_ + "/user.kubeconfig";
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                        << "clusters: [{name: c, cluster: {server: '" << TestenvVar("TESTENV_API")
                        << "', certificate-authority: '" << TestenvVar("TESTENV_CA") << "'}}]\n"
                        << "users: [{name: u, user: {client-certificate: '"
                        << TestenvVar("TESTENV_USER_CERT") << "', client-key: '"
                        << TestenvVar("TESTENV_USER_KEY") << "'}}]\n"
                        << "contexts: [{name: c, context: {cluster: c, user: u}}]\n";
    return path;
  }

  ProcessResult Plugin(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {
        testing::RequiredEnv("AYATORI_BINARY_DIR") + "/cmd/kubectl-ayatori/kubectl-ayatori",
        "--kubeconfig=" + UserKubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv);
  }

  std::string OnlyContainer(const std::string& uid) {
    auto ids = ContainersOf(host_, uid);
    EXPECT_EQ(ids.size(), 1u) << "containers of Job UID " << uid;
    return ids.empty() ? "" : ids[0];
  }

  std::string host_;
  std::string dir_;
  std::unique_ptr<testing::TestNetns> netns_;
};

// The log API for Jobs of a Docker JobClass (kDockerClass) on the "dockerd" fixture's engine.
inline constexpr const char* kDockerClass = "e2e-logs-docker";
class DockerLogsApiE2ETest : public LogsApiE2ETest {
 protected:
  void SetUpBackend(std::vector<std::string>* flags) override {
    host_ = FixtureDockerHost();
    ASSERT_TRUE(ApplyDockerClass(kDockerClass, {{"endpoint", host_},
                                                {"pullPolicy", "IfNotPresent"},
                                                {"networkMode", "none"},
                                                {"stopGracePeriodSeconds", 1}}));
    flags->push_back("--docker-endpoint=" + host_);
  }
};

}  // namespace ayatori::e2e::logs
