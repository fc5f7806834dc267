// kubeconfigs as kubectl reads them, against the real kube-apiserver of the `apiserver` fixture:
// an exec credential plugin (a script this test writes) whose token expires, tls-server-name and
// proxy-url through real proxies (HTTP CONNECT, over TLS, SOCKS5: test/kube/connect_proxy.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "kube/config.h"
#include "kube/resource.h"
#include "kube/rest_client.h"
#include "test/kube/integration_util.h"
#include "test/support/controller_process.h"
#include "test/support/process.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::kube {
namespace {

namespace fs = std::filesystem;
using ::ayatori::testing::TestenvVar;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class KubeconfigIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ayatori-kubeconfig-it-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content, bool executable = false) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << content;
    if (executable) chmod(path.c_str(), 0755);
    return path;
  }

  // A kubeconfig for the test apiserver with `clusterExtra` and `user` lines (6-space indent);
  // `server` and the certificate-authority file `ca` replace the test apiserver's when not "".
  std::string Kubeconfig(const std::string& clusterExtra, const std::string& user,
                         const std::string& server = "", const std::string& ca = "") {
    return Write(
        "config",
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n"
        "- name: c\n  cluster:\n    server: " +
            (server.empty() ? TestenvVar("TESTENV_API") : server) +
            "\n    certificate-authority: " + (ca.empty() ? TestenvVar("TESTENV_CA") : ca) + "\n" +
            clusterExtra + "users:\n- name: alice\n  user:\n" + user +
            "contexts:\n- name: c\n  context: {cluster: c, user: alice}\n");
  }

  // An exec plugin that counts its runs in `count` and answers the admin token, valid for
  // `validSeconds` (0: no expiry).
  std::string TokenPlugin(const std::string& count, int validSeconds) {
    std::string expiry = validSeconds > 0
                             ? ",\"expirationTimestamp\":\"$(date -u -d @$(( $(date +%s) + " +
                                   std::to_string(validSeconds) + " )) +%Y-%m-%dT%H:%M:%SZ)\""
                             : "";
    return Write("plugin.sh",
                 "#!/bin/sh\necho run >> " + count +
                     "\ncat <<JSON\n{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                     "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"" +
                     TestenvVar("TESTENV_TOKEN") + "\"" + expiry + "}}\nJSON\n",
                 /*executable=*/true);
  }

  static int Runs(const std::string& count) {
    std::ifstream in(count);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }

  static std::string ExecUser(const std::string& plugin) {
    return "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: " +
           plugin + "\n      interactiveMode: Never\n";
  }

  std::string dir_;
  const ResourceRef namespaces_{"", "v1", "namespaces", false};
};

TEST_F(KubeconfigIntegrationTest, ExecPluginTokenIsRenewedWhenItExpires) {
  const std::string count = dir_ + "/count";
  auto cfg = LoadKubeconfigFile(Kubeconfig("", ExecUser(TokenPlugin(count, 2))), {});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(Runs(count), 0);  // not run by loading
  auto client = testing::Client(*cfg);
  ASSERT_TRUE(client->Get(namespaces_, "", "default").ok());
  ASSERT_TRUE(client->Get(namespaces_, "", "kube-system").ok());
  EXPECT_EQ(Runs(count), 1);  // cached while valid
  // Once the expiry passed, the next request runs the plugin again. Polled with a deadline: the
  // first request after the expiry must bring the count to 2.
  const auto firstRun = std::chrono::system_clock::now();
  EXPECT_TRUE(ayatori::testing::Eventually(
      [&] {
        if (!client->Get(namespaces_, "", "default").ok()) return false;
        return Runs(count) == 2;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(200)));
  EXPECT_GE(std::chrono::system_clock::now() - firstRun, std::chrono::seconds(1));
}

TEST_F(KubeconfigIntegrationTest, RefusedExecTokenIsAskedAgainOnce) {
  // The plugin answers a wrong token first, then the right one: the client retries after 401.
  const std::string count = dir_ + "/count";
  std::string plugin = Write(
      "plugin.sh",
      "#!/bin/sh\necho run >> " + count + "\nif [ $(wc -l < " + count +
          ") -eq 1 ]; then t=wrong-token; else t=" + TestenvVar("TESTENV_TOKEN") +
          "; fi\necho \"{\\\"apiVersion\\\":\\\"client.authentication.k8s.io/v1\\\","
          "\\\"kind\\\":\\\"ExecCredential\\\",\\\"status\\\":{\\\"token\\\":\\\"$t\\\"}}\"\n",
      true);
  auto cfg = LoadKubeconfigFile(Kubeconfig("", ExecUser(plugin)), {});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto client = testing::Client(*cfg);
  auto got = client->Get(namespaces_, "", "default");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(Runs(count), 2);
}

TEST_F(KubeconfigIntegrationTest, FailingPluginNamesUserAndCommandWithoutTheToken) {
  std::string plugin = Write("plugin.sh",
                             "#!/bin/sh\necho " + TestenvVar("TESTENV_TOKEN") +
                                 "\necho 'token expired: run the login command' >&2\nexit 1\n",
                             true);
  auto cfg = LoadKubeconfigFile(Kubeconfig("", ExecUser(plugin)), {});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto got = testing::Client(*cfg)->Get(namespaces_, "", "default");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr("user \"alice\""), HasSubstr(plugin), HasSubstr("token expired"),
                    Not(HasSubstr(TestenvVar("TESTENV_TOKEN")))));
}

TEST_F(KubeconfigIntegrationTest, TlsServerNameIsWhatTheCertificateIsCheckedAgainst) {
  // The test apiserver's certificate names 127.0.0.1 and localhost (hack/testenv/testenv.sh).
  const std::string user = "    token: " + TestenvVar("TESTENV_TOKEN") + "\n";
  auto good = LoadKubeconfigFile(Kubeconfig("    tls-server-name: localhost\n", user), {});
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  auto got = testing::Client(*good)->Get(namespaces_, "", "default");
  EXPECT_TRUE(got.ok()) << got.status().ToString();

  auto bad =
      LoadKubeconfigFile(Kubeconfig("    tls-server-name: not-the-apiserver.test\n", user), {});
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  got = testing::Client(*bad)->Get(namespaces_, "", "default");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("not-the-apiserver.test"));
}

// The proxies of proxy-url (test/kube/connect_proxy.py): HTTP CONNECT, the same inside TLS
// (https://) and SOCKS5. Each logs "CONNECT host:port" for every tunnel it opens.
class ProxyUrlIntegrationTest : public KubeconfigIntegrationTest {
 protected:
  void TearDown() override {
    proxy_.Kill();
    KubeconfigIntegrationTest::TearDown();
  }

  // Starts connect_proxy.py with `args`; its port.
  std::string StartProxy(const std::vector<std::string>& args) {
    std::vector<std::string> argv{
        "/usr/bin/env", "python3",
        ayatori::testing::RequiredEnv("AYATORI_SOURCE_DIR") + "/test/kube/connect_proxy.py"};
    argv.insert(argv.end(), args.begin(), args.end());
    EXPECT_TRUE(proxy_.Spawn(argv, dir_ + "/proxy.log").ok());
    std::smatch m;
    std::string out;
    EXPECT_TRUE(ayatori::testing::Eventually(
        [&] {
          out = proxy_.Log();
          return std::regex_search(out, m, std::regex("listening ([0-9]+)"));
        },
        std::chrono::seconds(30)))
        << out;
    return m.empty() ? "0" : m[1].str();
  }

  // A kubeconfig with the admin token, the proxy-url `proxy`, the server `server` ("" for the
  // test apiserver's URL) and the certificate-authority file `ca` ("" for the test apiserver's).
  RestConfig ProxiedConfig(const std::string& proxy, const std::string& server = "",
                           const std::string& ca = "") {
    auto cfg = LoadKubeconfigFile(
        Kubeconfig("    proxy-url: " + proxy + "\n",
                   "    token: " + TestenvVar("TESTENV_TOKEN") + "\n", server, ca),
        {});
    EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
    return cfg.ok() ? *cfg : RestConfig{};
  }

  bool ProxyOpened(const std::string& hostPort) {
    return ayatori::testing::Eventually(
        [&] { return proxy_.Log().find("CONNECT " + hostPort + "\n") != std::string::npos; },
        std::chrono::seconds(10));
  }

  // A request through `cfg` succeeds and went through the proxy (its log names `hostPort`);
  // once the proxy is gone, requests fail: they do not bypass it.
  void ExpectProxiedOnly(const RestConfig& cfg, const std::string& hostPort) {
    auto got = testing::Client(cfg)->Get(namespaces_, "", "default");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(ProxyOpened(hostPort)) << proxy_.Log();
    proxy_.Kill();
    auto after = testing::Client(cfg)->Get(namespaces_, "", "default");
    EXPECT_FALSE(after.ok());
  }

  // A self-signed certificate (its own CA) for 127.0.0.1, made with openssl(1): "cert", "key".
  void MakeProxyCertificate() {
    auto r = ayatori::testing::RunProcess({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                           "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                                           "-subj", "/CN=ayatori test proxy", "-addext",
                                           "subjectAltName=IP:127.0.0.1", "-keyout",
                                           dir_ + "/proxy.key", "-out", dir_ + "/proxy.crt"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  static std::string ApiHostPort() {
    return TestenvVar("TESTENV_API").substr(std::string("https://").size());
  }

  ayatori::testing::ControllerProcess proxy_;
};

TEST_F(ProxyUrlIntegrationTest, HttpProxyCarriesEveryRequest) {
  const std::string port = StartProxy({});
  ExpectProxiedOnly(ProxiedConfig("http://127.0.0.1:" + port), ApiHostPort());
}

// An https:// proxy is verified as kubectl verifies it: with the cluster's certificate-authority
// (here a bundle of the apiserver's CA and the proxy's certificate).
TEST_F(ProxyUrlIntegrationTest, HttpsProxyIsVerifiedWithTheClustersCertificateAuthority) {
  ASSERT_NO_FATAL_FAILURE(MakeProxyCertificate());
  std::ifstream apiCa(TestenvVar("TESTENV_CA"));
  std::ifstream proxyCa(dir_ + "/proxy.crt");
  std::stringstream bundle;
  bundle << apiCa.rdbuf() << proxyCa.rdbuf();
  const std::string ca = Write("bundle.crt", bundle.str());
  const std::string port = StartProxy({"--tls", dir_ + "/proxy.crt", dir_ + "/proxy.key"});
  ExpectProxiedOnly(ProxiedConfig("https://127.0.0.1:" + port, "", ca), ApiHostPort());
}

// Hostile: a TLS proxy whose certificate the kubeconfig does not trust (one that intercepts the
// route to the real proxy) gets no tunnel request, so it never learns the token; the request fails.
TEST_F(ProxyUrlIntegrationTest, HttpsProxyWithAnUntrustedCertificateIsRefused) {
  ASSERT_NO_FATAL_FAILURE(MakeProxyCertificate());
  const std::string port = StartProxy({"--tls", dir_ + "/proxy.crt", dir_ + "/proxy.key"});
  auto got =
      testing::Client(ProxiedConfig("https://127.0.0.1:" + port))->Get(namespaces_, "", "default");
  ASSERT_FALSE(got.ok());
  // The proxy saw the handshake fail (the client refused its certificate), and no CONNECT.
  EXPECT_TRUE(ayatori::testing::Eventually(
      [&] { return proxy_.Log().find("refused: ") != std::string::npos; },
      std::chrono::seconds(10)))
      << proxy_.Log();
  EXPECT_THAT(proxy_.Log(), Not(HasSubstr("CONNECT")));
}

// socks5:// resolves the server's name on the client (the proxy gets an address); socks5h://
// hands the name to the proxy, which resolves it: the server here is https://localhost:PORT
// (the test apiserver's certificate names localhost too).
TEST_F(ProxyUrlIntegrationTest, Socks5ProxyCarriesEveryRequest) {
  const std::string port = StartProxy({"--socks5"});
  ExpectProxiedOnly(ProxiedConfig("socks5://127.0.0.1:" + port), ApiHostPort());
}

TEST_F(ProxyUrlIntegrationTest, Socks5hProxyResolvesTheServersName) {
  const std::string port = StartProxy({"--socks5"});
  const std::string apiPort = ApiHostPort().substr(ApiHostPort().rfind(':') + 1);
  ExpectProxiedOnly(ProxiedConfig("socks5h://127.0.0.1:" + port, "https://localhost:" + apiPort),
                    "localhost:" + apiPort);
}

}  // namespace
}  // namespace ayatori::kube
