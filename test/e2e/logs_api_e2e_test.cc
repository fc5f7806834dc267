// The Job log API end to end (docs/kubectl-ayatori.md, "Logs"): the real controller serves it
// from a network namespace this test makes (kube-apiserver refuses loopback Endpoints), the real
// kube-apiserver of the "apiserver" fixture proxies to it through an APIService (the fixture runs
// it with --requestheader-client-ca-file, --proxy-client-cert-file and
// --enable-aggregator-routing), and the output comes from a container of the "dockerd" fixture.
// Users read logs with `kubectl get --raw` (impersonated by the fixture's admin) and with
// `kubectl ayatori logs` (the fixture's certificate user); RBAC decides who may.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "test/e2e/controller_e2e.h"
#include "test/support/netns.h"
#include "test/support/testenv.h"

namespace ayatori::e2e {
namespace {

using testing::ProcessResult;
using testing::RunProcess;
using testing::TestenvVar;

constexpr const char* kBusybox = "ayatori.local/busybox:1";
constexpr const char* kClass = "e2e-logs-docker";
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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Base64(const std::string& data) {
  ProcessResult r = RunProcess({"base64", "-w0"}, data);
  return r.out;
}

std::string Dirname(const std::string& path) { return path.substr(0, path.rfind('/')); }

json Task(const std::string& script) {
  return {{"image", kBusybox}, {"command", json::array({"/bin/sh", "-c", script})}};
}

class LogsApiE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    host_ = FixtureDockerHost();
    ASSERT_TRUE(InstallCrds());
    ASSERT_TRUE(ApplyDockerClass(kClass, {{"endpoint", host_},
                                          {"pullPolicy", "IfNotPresent"},
                                          {"networkMode", "none"},
                                          {"stopGracePeriodSeconds", 1}}));
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
    ASSERT_NO_FATAL_FAILURE(StartControllerAndNamespace(
        "e2e-logs", {"--docker-endpoint=" + host_,
                     "--logs-api-bind=" + netns_->innerAddress() + ":" + std::to_string(kPort),
                     "--logs-api-tls-cert-file=" + dir_ + "/tls.crt",
                     "--logs-api-tls-key-file=" + dir_ + "/tls.key"}));
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

    // Who may read logs in the test's namespace: get on jobs/log of the log API group.
    ASSERT_TRUE(
        Apply({{"apiVersion", "rbac.authorization.k8s.io/v1"},
               {"kind", "Role"},
               {"metadata", {{"name", "job-log-reader"}, {"namespace", ns_}}},
               {"rules",
                {{{"apiGroups", {kLogGroup}}, {"resources", {"jobs/log"}}, {"verbs", {"get"}}},
                 // kubectl ayatori logs reads the Job first.
                 {{"apiGroups", {"execution.ayatori.ddupan.top"}},
                  {"resources", {"jobs"}},
                  {"verbs", {"get"}}}}}}));
    ASSERT_TRUE(Apply(
        {{"apiVersion", "rbac.authorization.k8s.io/v1"},
         {"kind", "RoleBinding"},
         {"metadata", {{"name", "job-log-reader"}, {"namespace", ns_}}},
         {"roleRef",
          {{"apiGroup", "rbac.authorization.k8s.io"},
           {"kind", "Role"},
           {"name", "job-log-reader"}}},
         {"subjects",
          {{{"kind", "User"}, {"name", kReader}, {"apiGroup", "rbac.authorization.k8s.io"}},
           {{"kind", "User"}, {"name", kCertUser}, {"apiGroup", "rbac.authorization.k8s.io"}}}}}));
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
           {"caBundle", Base64(ReadFile(dir_ + "/ca.crt"))},
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
    const std::string pki = Dirname(TestenvVar("TESTENV_FRONT_PROXY_CA"));
    if (cert == "front-proxy") {
      argv.insert(argv.end(), {"--cert", pki + "/front-proxy-client.crt", "--key",
                               pki + "/front-proxy-client.key"});
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
    const std::string path = dir_ + "/user.kubeconfig";
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

TEST_F(LogsApiE2ETest, AnAllowedUserReadsADockerJobsOutputAndOthersAreRefused) {
  ASSERT_FALSE(CreateJob("hello", kClass, Task("echo one; echo two >&2; echo three")).empty());
  json job = WaitForFinished(ns_, "hello");
  ASSERT_EQ(ConditionSummary(job, "Succeeded"), "True/Completed") << Describe(job);

  ProcessResult r = RawAs(kReader, LogPath("hello"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "one\ntwo\nthree\n");
  r = RawAs(kReader, LogPath("hello", "?tailLines=1"));
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "three\n");

  // The plugin, as the certificate user.
  r = Plugin({"logs", "-n", ns_, "hello"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "one\ntwo\nthree\n");
  r = Plugin({"logs", "-n", ns_, "hello", "--tail", "2"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "two\nthree\n");

  // Without the RoleBinding: 403 (kube-apiserver's RBAC, then this server's review).
  r = RawAs(kStranger, LogPath("hello"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("Forbidden"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("three"), std::string::npos);

  // Straight to the server: only the front proxy's certificate makes the headers count.
  r = Direct(LogPath("hello"), "", {"X-Remote-User: " + std::string(kReader)});
  EXPECT_NE(r.out.find("\"code\":401"), std::string::npos) << r.out << r.err;
  EXPECT_TRUE(r.out.ends_with("\n401")) << r.out;
  r = Direct(LogPath("hello"), "admin", {"X-Remote-User: " + std::string(kReader)});
  EXPECT_TRUE(r.out.ends_with("\n401")) << r.out << r.err;
  // The proxy's certificate naming a user without the rule: this server's SubjectAccessReview.
  r = Direct(LogPath("hello"), "front-proxy", {"X-Remote-User: " + std::string(kStranger)});
  EXPECT_TRUE(r.out.ends_with("\n403")) << r.out << r.err;
  EXPECT_NE(r.out.find("cannot get resource \\\"jobs/log\\\""), std::string::npos) << r.out;
  r = Direct(LogPath("hello"), "front-proxy", {"X-Remote-User: " + std::string(kReader)});
  EXPECT_EQ(r.out, "one\ntwo\nthree\n\n200") << r.err;
}

TEST_F(LogsApiE2ETest, FollowStreamsLinesAsPrintedAndEndsWithTheJob) {
  std::string uid =
      CreateJob("follow", kClass,
                Task("echo first; while [ ! -e /tmp/go ]; do sleep 0.1; done; echo second"));
  ASSERT_FALSE(uid.empty());
  WaitForJob(
      ns_, "follow", [](const json& j) { return j.contains("/status/startTime"_json_pointer); },
      60s, "a startTime");
  const std::string out = RunPath("LogsApiE2ETest.follow.out");
  std::remove(out.c_str());
  testing::ControllerProcess follower;  // any child with its output in a file
  Status s =
      follower.Spawn({testing::Kubectl(), "--kubeconfig=" + TestenvVar("KUBECONFIG"), "get",
                      "--raw", LogPath("follow", "?follow=true"), "--as=" + std::string(kReader)},
                     out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(
      testing::Eventually([&] { return ReadFile(out).find("first\n") != std::string::npos; }, 30s))
      << ReadFile(out);
  // Still open, nothing more: the task is waiting for /tmp/go.
  EXPECT_TRUE(testing::HoldsFor(
      [&] { return follower.Running() && ReadFile(out).find("second") == std::string::npos; }, 1s))
      << ReadFile(out);
  ProcessResult r = Docker(host_, {"exec", OnlyContainer(uid), "touch", "/tmp/go"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(
      testing::Eventually([&] { return ReadFile(out).find("second\n") != std::string::npos; }, 30s))
      << ReadFile(out);
  // The stream ends with the execution: kubectl exits 0 by itself.
  ASSERT_TRUE(follower.Wait(30s)) << ReadFile(out);
  EXPECT_TRUE(WIFEXITED(follower.exitStatus()) && WEXITSTATUS(follower.exitStatus()) == 0)
      << follower.exitStatus() << " " << ReadFile(out);
  EXPECT_EQ(ReadFile(out), "first\nsecond\n");
}

TEST_F(LogsApiE2ETest, AGoneContainerOrNoExecutionIsAClearError) {
  std::string uid = CreateJob("gone", kClass, Task("echo bye"));
  ASSERT_FALSE(uid.empty());
  WaitForFinished(ns_, "gone");
  ProcessResult r = Docker(host_, {"rm", "-f", OnlyContainer(uid)});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = RawAs(kReader, LogPath("gone"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("the execution of job \"gone\" is gone"), std::string::npos) << r.err;
  r = Plugin({"logs", "-n", ns_, "gone"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("is gone"), std::string::npos) << r.err;

  // A Job whose class does not exist is never started.
  ASSERT_FALSE(CreateJob("waiting", "e2e-logs-no-such-class", Task("echo never")).empty());
  r = RawAs(kReader, LogPath("waiting"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("has no execution yet"), std::string::npos) << r.err;
  // And a Job that does not exist.
  r = RawAs(kReader, LogPath("nonexistent"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ayatori::e2e
