// Docker over TCP with mutual TLS, configured from a Secret (docs/jobclass.md § Docker over TCP):
// a dockerd of its own (hack/dockerd.sh with AYATORI_DOCKERD_TLS=1) serves tcp://127.0.0.1:<port>
// with --tlsverify; the controller runs without --docker-endpoint, so the JobClass's
// DockerExecutionParameters name that endpoint and a tlsSecretRef in the controller's namespace.
//
//   right CA, client certificate and key  -> the Job succeeds, with a Secret env value forwarded
//   a CA that did not sign the engine's   -> the Job stays unfinished and says why (the engine's
//     certificate                           certificate is not trusted), no container is created;
//                                           once the Secret is fixed it runs and succeeds
//   tcp:// without TLS                    -> the CRD refuses the parameters; with insecure: true
//                                           the Job is accepted, waits (the port speaks HTTPS),
//                                           and runs once tlsSecretRef is added
// (The controller's own refusal, Accepted=False/InsecureEndpoint:
// test/controller/resolver_test.cc.)
//
// No key material and no Secret value appear in the Jobs' status, the Events or the controller's
// log; the endpoint appears in neither the status nor the Events.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "base/base64.h"
#include "test/adapters/docker/e2e_support.h"
#include "test/e2e/controller_e2e.h"
#include "test/support/process.h"
#include "test/support/testenv.h"

namespace ayatori::e2e {
namespace {

using adapters::docker::e2e::RunHackScript;

constexpr const char* kBusybox = "ayatori.local/busybox:1";
constexpr const char* kControllerNamespace = "ayatori-system";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The base64 body of a PEM block (what would leak if the PEM were printed), without its header.
std::string PemBody(const std::string& pem) {
  std::istringstream lines(pem);
  std::string line;
  std::string out;
  while (std::getline(lines, line)) {
    if (!line.starts_with("-----")) out += line;
  }
  return out.substr(0, 40);
}

class DockerTlsE2ETest : public ControllerTest {
 protected:
  void SetUp() override {
    dir_ = testing::RequiredEnv("AYATORI_DOCKERD_TLS_DIR");
    ASSERT_FALSE(dir_.empty());
    env_ = {"AYATORI_DOCKERD_DIR=" + dir_, "AYATORI_DOCKERD_TLS=1"};
    ASSERT_TRUE(RunHackScript("dockerd.sh", {"up"}, env_));
    auto vars = adapters::docker::e2e::ReadEnvFile(dir_ + "/env.sh");
    tcp_ = vars["AYATORI_DOCKER_TLS_HOST"];
    certs_ = vars["AYATORI_DOCKER_CERT_PATH"];
    ASSERT_TRUE(tcp_.starts_with("tcp://127.0.0.1:")) << "dockerd.sh wrote no TLS endpoint";
    unixHost_ = adapters::docker::e2e::DockerHostOf(dir_);
    ASSERT_TRUE(InstallCrds());
    ASSERT_NO_FATAL_FAILURE(StartControllerAndNamespace("e2e-tls", {}));
  }

  void TearDown() override {
    ControllerTest::TearDown();
    for (const auto& name : secrets_)
      Kubectl({"delete", "secret", "-n", kControllerNamespace, name});
    RunHackScript("dockerd.sh", {"down"}, env_);
  }

  // A Secret in the controller's namespace with `files` (key -> PEM text).
  void ApplySecret(const std::string& name, const std::map<std::string, std::string>& files) {
    json data = json::object();
    for (const auto& [key, pem] : files) data[key] = base::Base64Encode(pem);
    ASSERT_TRUE(Apply({{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata", {{"name", name}, {"namespace", kControllerNamespace}}},
                       {"data", data}}));
    secrets_.push_back(name);
  }

  // A CA of this test that signed nothing the engine has, made with the openssl CLI.
  std::string OtherCa() {
    const std::string key = RunPath("tls-other-ca-key.pem");
    const std::string cert = RunPath("tls-other-ca.pem");
    auto r = testing::RunProcess({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                  "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                                  "/CN=not-the-engines-ca", "-keyout", key, "-out", cert});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return ReadFile(cert);
  }

  // Where a test Job's output goes: the fixture's engine, over the unix socket (the same dockerd).
  std::vector<std::string> ContainersOfJob(const std::string& uid) {
    return ContainersOf(unixHost_, uid);
  }

  // Nothing secret in what a user or an operator sees: the Job, the namespace's Events and the
  // controller's log hold no key material, no CA, no Secret value and no endpoint.
  void ExpectNothingLeaked(const json& job, const std::vector<std::string>& secrets) {
    const std::string status = job.value("status", json::object()).dump();
    const std::string events = EventsJson(ns_);
    const std::string log = ReadFile(controller_.logPath());
    for (const auto& s : secrets) {
      EXPECT_EQ(status.find(s), std::string::npos) << "status leaks " << s;
      EXPECT_EQ(events.find(s), std::string::npos) << "Events leak " << s;
      EXPECT_EQ(log.find(s), std::string::npos) << "controller log leaks " << s;
    }
    EXPECT_EQ(status.find(tcp_.substr(6)), std::string::npos) << "status shows the endpoint";
    EXPECT_EQ(events.find(tcp_.substr(6)), std::string::npos) << "Events show the endpoint";
  }

  std::string dir_, tcp_, certs_, unixHost_;
  std::vector<std::string> env_;
  std::vector<std::string> secrets_;
};

TEST_F(DockerTlsE2ETest, RightCertificatesRunTheJobAndAWrongCaSaysWhy) {
  const std::string ca = ReadFile(certs_ + "/ca.pem");
  const std::string cert = ReadFile(certs_ + "/cert.pem");
  const std::string key = ReadFile(certs_ + "/key.pem");
  ASSERT_NO_FATAL_FAILURE(
      ApplySecret("e2e-docker-tls", {{"ca.pem", ca}, {"cert.pem", cert}, {"key.pem", key}}));
  ASSERT_TRUE(ApplyDockerClass(
      "e2e-docker-tls",
      {{"endpoint", tcp_},
       {"tlsSecretRef", {{"namespace", kControllerNamespace}, {"name", "e2e-docker-tls"}}}}));

  // A Secret value forwarded in the create request: it crosses TCP only encrypted.
  const std::string token = "tls-token-" + RandomToken();
  ASSERT_TRUE(Apply({{"apiVersion", "v1"},
                     {"kind", "Secret"},
                     {"metadata", {{"name", "job-token"}, {"namespace", ns_}}},
                     {"stringData", {{"token", token}}}}));
  const std::string uid = CreateJob(
      "over-tls", "e2e-docker-tls",
      {{"image", kBusybox},
       {"command", {"/bin/sh", "-c", "test \"$TOKEN\" = " + token + " && echo tls-ok"}},
       {"env",
        {{{"name", "TOKEN"},
          {"valueFrom", {{"secretKeyRef", {{"name", "job-token"}, {"key", "token"}}}}}}}}});
  json done = WaitForFinished(ns_, "over-tls", 120s);
  EXPECT_EQ(ConditionSummary(done, "Succeeded"), "True/Completed") << Describe(done);
  auto ids = ContainersOfJob(uid);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ContainerLogs(unixHost_, ids[0]), "tls-ok\n");
  ExpectNothingLeaked(done, {PemBody(key), PemBody(cert), PemBody(ca), token});

  // The same client certificate, but a CA that did not sign the engine's certificate.
  const std::string otherCa = OtherCa();
  ASSERT_NO_FATAL_FAILURE(ApplySecret("e2e-docker-tls-wrong-ca",
                                      {{"ca.crt", otherCa}, {"tls.crt", cert}, {"tls.key", key}}));
  ASSERT_TRUE(ApplyDockerClass(
      "e2e-docker-tls-wrong-ca",
      {{"endpoint", tcp_},
       {"tlsSecretRef",
        {{"namespace", kControllerNamespace}, {"name", "e2e-docker-tls-wrong-ca"}}}}));
  const std::string wrongUid =
      CreateJob("wrong-ca", "e2e-docker-tls-wrong-ca",
                {{"image", kBusybox}, {"command", {"/bin/echo", "never"}}});
  json waiting = WaitForJob(
      ns_, "wrong-ca",
      [](const json& j) {
        const json* s = FindCondition(j, "Succeeded");
        return s != nullptr && s->value("message", "").find("certificate") != std::string::npos;
      },
      60s, "a Succeeded message about the engine's certificate");
  const json* s = FindCondition(waiting, "Succeeded");
  ASSERT_NE(s, nullptr) << Describe(waiting);
  EXPECT_EQ(s->value("status", ""), "Unknown") << Describe(waiting);
  EXPECT_NE(s->value("message", "").find("not trusted by the configured CA"), std::string::npos)
      << Describe(waiting);
  EXPECT_FALSE(waiting.contains("/status/completionTime"_json_pointer)) << Describe(waiting);
  EXPECT_TRUE(ContainersOfJob(wrongUid).empty());
  ExpectNothingLeaked(waiting, {PemBody(key), PemBody(cert), PemBody(otherCa)});

  // The administrator fixes the Secret: the Job goes on (the material is re-read within 30 s).
  ASSERT_NO_FATAL_FAILURE(ApplySecret("e2e-docker-tls-wrong-ca",
                                      {{"ca.crt", ca}, {"tls.crt", cert}, {"tls.key", key}}));
  json fixed = WaitForFinished(ns_, "wrong-ca", 180s);
  EXPECT_EQ(ConditionSummary(fixed, "Succeeded"), "True/Completed") << Describe(fixed);
  EXPECT_EQ(ContainersOfJob(wrongUid).size(), 1u);
}

// Plain HTTP is refused where it is configured (the CRD's rule); an administrator who sets
// insecure: true has chosen it, and the controller accepts the Job. (The controller's own refusal,
// Accepted=False/InsecureEndpoint, covers parameters the CRD rule never saw and an endpoint
// overridden by --docker-endpoint: test/controller/resolver_test.cc.)
TEST_F(DockerTlsE2ETest, PlainTcpEndpointOnlyWithInsecure) {
  auto r =
      Kubectl({"apply", "-f", "-"}, json({{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                                          {"kind", "DockerExecutionParameters"},
                                          {"metadata", {{"name", "e2e-docker-plain"}}},
                                          {"spec", {{"endpoint", tcp_}}}})
                                        .dump());
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("plain HTTP"), std::string::npos) << r.err;

  ASSERT_TRUE(ApplyDockerClass("e2e-docker-plain", {{"endpoint", tcp_}, {"insecure", true}}));
  CreateJob("plain", "e2e-docker-plain", {{"image", kBusybox}, {"command", {"/bin/true"}}});
  json accepted = WaitForJob(
      ns_, "plain", [](const json& j) { return ConditionSummary(j, "Accepted") == "True/Valid"; },
      60s, "Accepted=True/Valid");
  // The engine demands TLS on that port: plain HTTP gets nowhere, and the Job waits saying so.
  json waiting = WaitForJob(
      ns_, "plain",
      [](const json& j) {
        const json* s = FindCondition(j, "Succeeded");
        return s != nullptr && s->value("reason", "") == "ResultUnknown";
      },
      60s, "Succeeded=Unknown/ResultUnknown");
  EXPECT_NE(Describe(waiting).find("HTTPS"), std::string::npos) << Describe(waiting);
  EXPECT_FALSE(waiting.contains("/status/completionTime"_json_pointer)) << Describe(waiting);

  // TLS configured on the same parameters (the endpoint is pinned; tlsSecretRef is read at each
  // call): the Job runs over TLS.
  const std::string ca = ReadFile(certs_ + "/ca.pem");
  ASSERT_NO_FATAL_FAILURE(
      ApplySecret("e2e-docker-plain-tls", {{"ca.pem", ca},
                                           {"cert.pem", ReadFile(certs_ + "/cert.pem")},
                                           {"key.pem", ReadFile(certs_ + "/key.pem")}}));
  ASSERT_TRUE(ApplyDockerClass(
      "e2e-docker-plain",
      {{"endpoint", tcp_},
       {"insecure", true},
       {"tlsSecretRef", {{"namespace", kControllerNamespace}, {"name", "e2e-docker-plain-tls"}}}}));
  json done = WaitForFinished(ns_, "plain", 180s);
  EXPECT_EQ(ConditionSummary(done, "Succeeded"), "True/Completed") << Describe(done);
}

}  // namespace
}  // namespace ayatori::e2e
