// Reading the TLS material of a tlsSecretRef Secret (adapters/docker/tls_secret.h): both sets of
// key names, the CA required, certificate and key together, and messages that name keys but
// never quote a value.
#include "adapters/docker/tls_secret.h"

#include <gtest/gtest.h>

#include "adapters/docker/docker_adapter.h"
#include "base/base64.h"

namespace ayatori::adapters::docker {
namespace {

using nlohmann::json;

const std::string kCa = "-----BEGIN CERTIFICATE-----\nCA-SENTINEL\n-----END CERTIFICATE-----\n";
const std::string kCert = "-----BEGIN CERTIFICATE-----\nCERT-SENTINEL\n-----END CERTIFICATE-----\n";
const std::string kKey = "-----BEGIN PRIVATE KEY-----\nKEY-SENTINEL\n-----END PRIVATE KEY-----\n";

std::string B64(const std::string& s) { return base::Base64Encode(s); }

TEST(TlsSecretTest, DockerKeyNames) {
  auto m = TlsMaterialFromSecretData(
      {{"ca.pem", B64(kCa)}, {"cert.pem", B64(kCert)}, {"key.pem", B64(kKey)}}, "ns/tls");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->caPem, kCa);
  EXPECT_EQ(m->certPem.reveal(), kCert);
  EXPECT_EQ(m->keyPem.reveal(), kKey);
}

TEST(TlsSecretTest, KubernetesTlsKeyNames) {
  auto m = TlsMaterialFromSecretData(
      {{"ca.crt", B64(kCa)}, {"tls.crt", B64(kCert)}, {"tls.key", B64(kKey)}}, "ns/tls");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->caPem, kCa);
  EXPECT_EQ(m->certPem.reveal(), kCert);
  EXPECT_EQ(m->keyPem.reveal(), kKey);
}

TEST(TlsSecretTest, CaOnlyVerifiesTheEngineWithoutAClientCertificate) {
  auto m = TlsMaterialFromSecretData({{"ca.crt", B64(kCa)}}, "ns/tls");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->caPem, kCa);
  EXPECT_TRUE(m->certPem.reveal().empty());
  EXPECT_FALSE(m->empty());
}

TEST(TlsSecretTest, RefusalsNameKeysNeverValues) {
  struct Case {
    json data;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {json(), "has no data"},
      {json::object(), "has no key ca.crt"},
      // Without a CA the engine's certificate could not be verified: refused, not skipped.
      {{{"cert.pem", B64(kCert)}, {"key.pem", B64(kKey)}}, "has no key ca.pem"},
      {{{"ca.pem", B64(kCa)}, {"cert.pem", B64(kCert)}}, "must have both cert.pem and key.pem"},
      {{{"ca.crt", B64(kCa)}, {"tls.key", B64(kKey)}}, "must have both tls.crt and tls.key"},
      {{{"ca.pem", B64(kCa)}, {"cert.pem", B64(kCert)}, {"key.pem", "%%KEY-SENTINEL%%"}},
       "not base64: key.pem"},
  };
  for (const auto& c : cases) {
    auto m = TlsMaterialFromSecretData(c.data, "ayatori-system/engine-tls");
    ASSERT_FALSE(m.ok()) << c.data.dump();
    EXPECT_EQ(m.status().code(), StatusCode::kFailedPrecondition);
    const std::string& msg = m.status().message();
    EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
    EXPECT_NE(msg.find("ayatori-system/engine-tls"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("SENTINEL"), std::string::npos) << msg;
  }
}

// A Secret with both sets uses Docker's names only: the two are never mixed.
TEST(TlsSecretTest, DockerNamesWinOverKubernetesNames) {
  auto m = TlsMaterialFromSecretData({{"ca.pem", B64(kCa)},
                                      {"tls.crt", B64("other")},
                                      {"tls.key", B64("other")},
                                      {"ca.crt", B64("other")}},
                                     "ns/tls");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->caPem, kCa);
  EXPECT_TRUE(m->certPem.reveal().empty());
}

// Issue 26: the adapter checks the controller's namespace at every call too (parameters edited
// after acceptance): a tlsSecretRef elsewhere is never read and no engine is contacted, unless the
// parameters allow it.
TEST(TlsSecretNamespaceTest, ATlsSecretOutsideTheSecretNamespaceIsNeverRead) {
  int reads = 0;
  DockerAdapterOptions options;
  options.secretNamespace = "ayatori-system";
  options.tlsSource = [&reads](const api::SecretKeyReference&) -> StatusOr<TlsMaterial> {
    ++reads;
    return Status(StatusCode::kUnavailable, "no such Secret in this test");
  };
  DockerAdapter adapter(options);
  ExecutionRequest r;
  r.job.metadata.name = "j";
  r.job.metadata.namespace_ = "team-a";
  r.job.metadata.uid = "6d1f0e3a-0000-4000-8000-000000000001";
  r.job.spec.task.image = "busybox";
  r.parameters = {{"kind", "DockerExecutionParameters"},
                  {"spec",
                   {{"endpoint", "tcp://127.0.0.1:1"},
                    {"tlsSecretRef", {{"namespace", "team-a"}, {"name", "engine-tls"}}}}}};
  Observation o = adapter.Ensure(r);
  EXPECT_EQ(o.phase, ExecutionPhase::kFailed);
  EXPECT_NE(o.message.find("spec.tlsSecretRef names Secret \"team-a/engine-tls\", outside the "
                           "controller's namespace ayatori-system"),
            std::string::npos)
      << o.message;
  EXPECT_EQ(reads, 0);
  // Allowed: the Secret is read (and, absent here, the Job waits for it).
  r.parameters["spec"]["allowCrossNamespaceSecretRefs"] = true;
  o = adapter.Ensure(r);
  EXPECT_EQ(reads, 1) << o.message;
  EXPECT_EQ(o.message.find("outside the controller's namespace"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace ayatori::adapters::docker
