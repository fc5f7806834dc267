#include "kube/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "base/base64.h"
#include "test/kube/pem.h"

namespace ayatori::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ayatori-kubeconfig-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << content;
    return path;
  }

  // A kubeconfig with one context `ctx` -> cluster `c` + user `u`, with `cluster` and `user`
  // lines spliced in (each already indented by 4 spaces).
  std::string Config(const std::string& cluster, const std::string& user,
                     const std::string& current = "ctx") {
    return "apiVersion: v1\nkind: Config\n" +
           (current.empty() ? std::string() : "current-context: " + current + "\n") +
           "clusters:\n- name: c\n  cluster:\n" + cluster + "users:\n- name: u\n  user:\n" + user +
           "contexts:\n- name: ctx\n  context:\n    cluster: c\n    user: u\n    namespace: ns1\n"
           "- name: other\n  context:\n    cluster: c\n    user: u\n";
  }

  static std::string Server() { return "    server: https://127.0.0.1:6443\n"; }
  std::string CaData() const {
    return "    certificate-authority-data: " + base::Base64Encode(ca_.cert) + "\n";
  }
  std::string CertData() const {
    return "    client-certificate-data: " + base::Base64Encode(client_.cert) + "\n" +
           "    client-key-data: " + base::Base64Encode(client_.key) + "\n";
  }

  std::string dir_;
  testing::PemPair ca_ = testing::MakeSelfSigned("test-ca");
  testing::PemPair client_ = testing::MakeSelfSigned("test-client");
};

TEST_F(KubeconfigTest, LoadsServerCaClientCertAndNamespaceOfTheCurrentContext) {
  std::string path = Write("config", Config(Server() + CaData(), CertData()));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->caPem, ca_.cert);
  EXPECT_EQ(cfg->clientCertPem, client_.cert);
  EXPECT_EQ(cfg->clientKeyPem, client_.key);
  EXPECT_EQ(cfg->namespace_, "ns1");
  EXPECT_FALSE(cfg->insecureSkipTlsVerify);
  EXPECT_THAT(cfg->source, AllOf(HasSubstr(path), HasSubstr("ctx")));
  // Describe() never shows key material.
  EXPECT_THAT(cfg->Describe(), HasSubstr("client certificate"));
  EXPECT_EQ(cfg->Describe().find("PRIVATE"), std::string::npos);
}

TEST_F(KubeconfigTest, LoadsANamedContextAndResolvesRelativeFilesAgainstTheKubeconfig) {
  Write("sub/ca.crt", ca_.cert);
  Write("sub/token", "s3cret-token\n");
  std::string path = Write("sub/config", Config(Server() + "    certificate-authority: ca.crt\n",
                                                "    tokenFile: token\n"));
  ConfigLoadOptions opts;
  opts.context = "other";
  auto cfg = LoadKubeconfigFile(path, opts);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->caPem, ca_.cert);
  EXPECT_EQ(cfg->bearerTokenFile, dir_ + "/sub/token");
  EXPECT_EQ(cfg->namespace_, "");  // context "other" has none
  EXPECT_THAT(cfg->source, HasSubstr("other"));
}

TEST_F(KubeconfigTest, ParsesTextLikeTheFileItCameFrom) {
  Write("sub/ca.crt", ca_.cert);
  const std::string text = Config(Server() + "    certificate-authority: ca.crt\n", CertData());
  const std::string path = dir_ + "/sub/config";  // never written: only names the text
  auto parsed = ParseKubeconfig(text, path, {});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->caPem, ca_.cert);  // relative to the folder of `path`
  EXPECT_EQ(parsed->clientKeyPem, client_.key);
  EXPECT_THAT(parsed->source, HasSubstr(path));

  auto loaded = LoadKubeconfigFile(Write("sub/config", text), {});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(parsed->server, loaded->server);
  EXPECT_EQ(parsed->caPem, loaded->caPem);
  EXPECT_EQ(parsed->clientCertPem, loaded->clientCertPem);
  EXPECT_EQ(parsed->namespace_, loaded->namespace_);
  EXPECT_EQ(parsed->source, loaded->source);

  auto bad = ParseKubeconfig("clusters: [\n", path, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), AllOf(HasSubstr(path), HasSubstr("invalid YAML at line")));
}

TEST_F(KubeconfigTest, LoadsABearerToken) {
  std::string path = Write("config", Config(Server() + CaData(), "    token: abc.def\n"));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->bearerToken, "abc.def");
  EXPECT_EQ(cfg->Describe().find("abc.def"), std::string::npos);
}

TEST_F(KubeconfigTest, MissingFileIsNamed) {
  auto cfg = LoadKubeconfigFile(dir_ + "/nope", {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(cfg.status().message(),
              AllOf(HasSubstr(dir_ + "/nope"), HasSubstr("does not exist")));
}

TEST_F(KubeconfigTest, BadYamlNamesFileAndLine) {
  std::string path = Write("config", "apiVersion: v1\nclusters: [\n  - {name: c\n");
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), AllOf(HasSubstr(path), HasSubstr("invalid YAML at line")));
}

TEST_F(KubeconfigTest, WrongShapeNamesTheField) {
  std::string path = Write("config", "kind: Config\nclusters: {c: 1}\n");
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(),
              AllOf(HasSubstr(path), HasSubstr("clusters: must be a list")));
}

TEST_F(KubeconfigTest, NoCurrentContextNamesTheField) {
  std::string path = Write("config", Config(Server(), "", /*current=*/""));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), AllOf(HasSubstr(path), HasSubstr("current-context")));
}

TEST_F(KubeconfigTest, UnknownContextIsNamedWithTheKnownOnes) {
  std::string path = Write("config", Config(Server(), ""));
  ConfigLoadOptions opts;
  opts.context = "staging";
  auto cfg = LoadKubeconfigFile(path, opts);
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), AllOf(HasSubstr(path), HasSubstr("context"),
                                            HasSubstr("\"staging\""), HasSubstr("ctx, other")));
}

TEST_F(KubeconfigTest, CurrentContextNamingAMissingContextIsAnError) {
  std::string path = Write("config", Config(Server(), "", "gone"));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(),
              AllOf(HasSubstr(path), HasSubstr("current-context"), HasSubstr("\"gone\"")));
}

TEST_F(KubeconfigTest, ClusterWithoutServerNamesTheField) {
  std::string path = Write("config", Config(CaData(), ""));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(
      cfg.status().message(),
      AllOf(HasSubstr(path), HasSubstr("clusters[\"c\"].cluster.server"), HasSubstr("missing")));
}

TEST_F(KubeconfigTest, UnreadableCaFileNamesTheFieldAndTheFile) {
  std::string path =
      Write("config", Config(Server() + "    certificate-authority: /nonexistent/ca.crt\n", ""));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(),
              AllOf(HasSubstr(path), HasSubstr("clusters[\"c\"].cluster.certificate-authority"),
                    HasSubstr("/nonexistent/ca.crt")));
}

TEST_F(KubeconfigTest, BadBase64InCertificateAuthorityDataNamesTheField) {
  std::string path =
      Write("config", Config(Server() + "    certificate-authority-data: not*base64!\n", ""));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(),
              AllOf(HasSubstr(path), HasSubstr("certificate-authority-data"),
                    HasSubstr("not valid base64")));
}

TEST_F(KubeconfigTest, CertificateAuthorityThatIsNotPemIsRejected) {
  std::string path = Write(
      "config",
      Config(Server() + "    certificate-authority-data: " + base::Base64Encode("hello") + "\n",
             ""));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(),
              AllOf(HasSubstr(path), HasSubstr("certificate-authority-data"),
                    HasSubstr("no PEM certificate")));
}

TEST_F(KubeconfigTest, InsecureSkipTlsVerifyIsRefusedUnlessAllowed) {
  std::string path = Write("config", Config(Server() + "    insecure-skip-tls-verify: true\n", ""));
  auto refused = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              AllOf(HasSubstr(path), HasSubstr("clusters[\"c\"].cluster.insecure-skip-tls-verify"),
                    HasSubstr("refused")));
  ConfigLoadOptions allow;
  allow.allowInsecureSkipTlsVerify = true;
  auto allowed = LoadKubeconfigFile(path, allow);
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  EXPECT_TRUE(allowed->insecureSkipTlsVerify);
}

TEST_F(KubeconfigTest, ClientKeyThatDoesNotMatchTheCertificateNamesTheKeyField) {
  auto other = testing::MakeSelfSigned("other");
  std::string user = "    client-certificate-data: " + base::Base64Encode(client_.cert) + "\n" +
                     "    client-key-data: " + base::Base64Encode(other.key) + "\n";
  std::string path = Write("config", Config(Server(), user));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(),
              AllOf(HasSubstr(path), HasSubstr("users[\"u\"].user.client-key-data"),
                    HasSubstr("does not match")));
}

TEST_F(KubeconfigTest, ClientCertificateWithoutKeyNamesTheMissingField) {
  std::string user = "    client-certificate-data: " + base::Base64Encode(client_.cert) + "\n";
  std::string path = Write("config", Config(Server(), user));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(),
              AllOf(HasSubstr(path), HasSubstr("client-key"), HasSubstr("missing")));
}

TEST_F(KubeconfigTest, ExecPluginIsReadWithArgsEnvAndClusterInfo) {
  std::string user =
      "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
      "      command: ./bin/get-token\n      args: [--cluster, \"a b\"]\n"
      "      env:\n      - {name: REGION, value: eu-1}\n"
      "      installHint: install get-token\n      provideClusterInfo: true\n"
      "      interactiveMode: Never\n";
  std::string path =
      Write("config", Config(Server() + CaData() + "    tls-server-name: api.local\n", user));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_NE(cfg->exec, nullptr);
  const ExecConfig& e = cfg->exec->config();
  EXPECT_EQ(e.command, dir_ + "/bin/get-token");  // relative to the kubeconfig's folder
  EXPECT_EQ(e.args, (std::vector<std::string>{"--cluster", "a b"}));
  ASSERT_EQ(e.env.size(), 1U);
  EXPECT_EQ(e.env[0], (std::pair<std::string, std::string>{"REGION", "eu-1"}));
  EXPECT_EQ(e.installHint, "install get-token");
  EXPECT_TRUE(e.provideClusterInfo);
  EXPECT_EQ(e.interactiveMode, ExecInteractiveMode::kNever);
  EXPECT_EQ(e.user, "u");
  EXPECT_EQ(e.server, "https://127.0.0.1:6443");
  EXPECT_EQ(e.caPem, ca_.cert);
  EXPECT_EQ(e.tlsServerName, "api.local");
  EXPECT_THAT(cfg->Describe(), HasSubstr("exec plugin " + dir_ + "/bin/get-token"));
}

TEST_F(KubeconfigTest, ExecV1beta1DefaultsToIfAvailableAndLooksTheCommandUpInPath) {
  std::string path =
      Write("config", Config(Server(),
                             "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
                             "      command: aws\n"));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->exec->config().command, "aws");
  EXPECT_EQ(cfg->exec->config().interactiveMode, ExecInteractiveMode::kIfAvailable);
}

TEST_F(KubeconfigTest, BadExecFieldsNameTheField) {
  struct Case {
    std::string exec, field, problem;
  };
  const std::vector<Case> cases = {
      {"      command: aws\n", "exec.apiVersion", "is not client.authentication.k8s.io/v1"},
      {"      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: aws\n",
       "exec.apiVersion", "v1alpha1"},
      {"      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n",
       "exec.interactiveMode", "v1 requires it"},
      {"      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n",
       "exec.command", "missing"},
      {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
       "      interactiveMode: Sometimes\n",
       "exec.interactiveMode", "\"Sometimes\""},
      {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
       "      args: --x\n",
       "exec.args", "list"},
      {"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
       "      env: [{value: x}]\n",
       "exec.env[0].name", "non-empty"},
  };
  for (const auto& c : cases) {
    std::string path = Write("config", Config(Server(), "    exec:\n" + c.exec));
    auto cfg = LoadKubeconfigFile(path, {});
    ASSERT_FALSE(cfg.ok()) << c.exec;
    EXPECT_THAT(
        cfg.status().message(),
        AllOf(HasSubstr(path), HasSubstr("users[\"u\"].user." + c.field), HasSubstr(c.problem)))
        << c.exec;
  }
}

TEST_F(KubeconfigTest, AuthProviderUsersAreToldTheirExecReplacement) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gcp", "gke-gcloud-auth-plugin"},
      {"azure", "kubelogin"},
      {"oidc", "oidc-login"},
      {"acme", "exec credential plugin"}};
  for (const auto& [name, replacement] : cases) {
    std::string path =
        Write("config", Config(Server(), "    auth-provider:\n      name: " + name +
                                             "\n      config: {access-token: SECRET-XYZ}\n"));
    auto cfg = LoadKubeconfigFile(path, {});
    ASSERT_FALSE(cfg.ok()) << name;
    EXPECT_THAT(cfg.status().message(),
                AllOf(HasSubstr("users[\"u\"].user.auth-provider"), HasSubstr("user \"u\""),
                      HasSubstr("\"" + name + "\""), HasSubstr(replacement)));
    EXPECT_THAT(cfg.status().message(), ::testing::Not(HasSubstr("SECRET-XYZ")));
  }
}

TEST_F(KubeconfigTest, ProxyUrlAndTlsServerNameAreRead) {
  std::string path =
      Write("config", Config(Server() + "    proxy-url: http://user:pw@127.0.0.1:3128\n"
                                        "    tls-server-name: localhost\n",
                             "    token: t\n"));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->proxyUrl, "http://user:pw@127.0.0.1:3128");
  EXPECT_EQ(cfg->tlsServerName, "localhost");
  EXPECT_THAT(cfg->Describe(), AllOf(HasSubstr("TLS server name localhost"),
                                     HasSubstr("proxy http://***@127.0.0.1:3128")));
  EXPECT_THAT(cfg->Describe(), ::testing::Not(HasSubstr("pw")));
}

TEST_F(KubeconfigTest, BadProxyUrlOrTlsServerNameNamesTheField) {
  for (const auto& [line, field] : std::vector<std::pair<std::string, std::string>>{
           {"    proxy-url: ftp://127.0.0.1:21\n", "proxy-url"},
           {"    proxy-url: 127.0.0.1:3128\n", "proxy-url"},
           {"    tls-server-name: host:443\n", "tls-server-name"}}) {
    std::string path = Write("config", Config(Server() + line, "    token: t\n"));
    auto cfg = LoadKubeconfigFile(path, {});
    ASSERT_FALSE(cfg.ok()) << line;
    EXPECT_THAT(cfg.status().message(), HasSubstr("clusters[\"c\"].cluster." + field)) << line;
    if (field == "proxy-url") {
      EXPECT_THAT(cfg.status().message(), HasSubstr("http://, https://, socks5:// or socks5h://"));
    }
  }
}

TEST_F(KubeconfigTest, UnreadableTokenFileNamesTheField) {
  std::string path = Write("config", Config(Server(), "    tokenFile: /nonexistent/token\n"));
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(),
              AllOf(HasSubstr(path), HasSubstr("users[\"u\"].user.tokenFile"),
                    HasSubstr("/nonexistent/token")));
}

TEST_F(KubeconfigTest, ContextNamingAnUnknownUserOrClusterIsAnError) {
  std::string path =
      Write("config", "current-context: x\nclusters:\n- name: c\n  cluster:\n" + Server() +
                          "contexts:\n- name: x\n  context:\n    cluster: c\n    user: ghost\n");
  auto cfg = LoadKubeconfigFile(path, {});
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(
      cfg.status().message(),
      AllOf(HasSubstr(path), HasSubstr("contexts[\"x\"].context.user"), HasSubstr("\"ghost\"")));
}

TEST_F(KubeconfigTest, MergesFilesFirstValueWinsAndSkipsMissingOnes) {
  Write("a/ca.crt", ca_.cert);
  std::string a = Write("a/config", "current-context: ctx\nclusters:\n- name: c\n  cluster:\n" +
                                        Server() + "    certificate-authority: ca.crt\n");
  std::string b = Write("b/config",
                        "current-context: ignored\nclusters:\n- name: c\n  cluster:\n"
                        "    server: https://10.0.0.1\n" +
                            std::string("users:\n- name: u\n  user:\n    token: t\n") +
                            "contexts:\n- name: ctx\n  context: {cluster: c, user: u}\n");
  auto cfg = LoadKubeconfigFiles({dir_ + "/missing", a, b}, {});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->caPem, ca_.cert);  // relative to a/, the file that defined it
  EXPECT_EQ(cfg->bearerToken, "t");
}

// Sets environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

TEST_F(KubeconfigTest, LoadingOrderIsExplicitPathThenKubeconfigEnvThenHomeThenInCluster) {
  std::string explicitPath = Write("explicit", Config("    server: https://explicit:1\n", ""));
  std::string envPath = Write("env", Config("    server: https://env:1\n", ""));
  Write("home/.kube/config", Config("    server: https://home:1\n", ""));
  Write("sa/token", "tok\n");
  Write("sa/ca.crt", ca_.cert);
  Write("sa/namespace", "pods-ns");
  ConfigLoadOptions opts;
  opts.serviceAccountDir = dir_ + "/sa";

  ScopedEnv home("HOME", (dir_ + "/home").c_str());
  ScopedEnv kubeconfig("KUBECONFIG", envPath.c_str());
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");

  opts.kubeconfigPath = explicitPath;
  auto cfg = LoadConfig(opts);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://explicit:1");

  opts.kubeconfigPath.clear();
  cfg = LoadConfig(opts);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://env:1");

  {
    ScopedEnv noKubeconfig("KUBECONFIG", nullptr);
    cfg = LoadConfig(opts);
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    EXPECT_EQ(cfg->server, "https://home:1");

    ScopedEnv noHome("HOME", (dir_ + "/nowhere").c_str());
    cfg = LoadConfig(opts);
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    EXPECT_EQ(cfg->server, "https://10.96.0.1:443");
    EXPECT_EQ(cfg->bearerTokenFile, dir_ + "/sa/token");
    EXPECT_EQ(cfg->caPem, ca_.cert);
    EXPECT_EQ(cfg->namespace_, "pods-ns");

    ScopedEnv notInCluster("KUBERNETES_SERVICE_HOST", nullptr);
    cfg = LoadConfig(opts);
    ASSERT_FALSE(cfg.ok());
    EXPECT_THAT(cfg.status().message(), HasSubstr("no Kubernetes configuration"));
  }
}

TEST_F(KubeconfigTest, InClusterWithoutTokenFileSaysWhichFile) {
  Write("sa/ca.crt", ca_.cert);
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "fd00::1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "6443");
  ConfigLoadOptions opts;
  opts.serviceAccountDir = dir_ + "/sa";
  auto cfg = LoadInClusterConfig(opts);
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(cfg.status().message(), HasSubstr(dir_ + "/sa/token"));
  Write("sa/token", "t");
  cfg = LoadInClusterConfig(opts);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://[fd00::1]:6443");
}

}  // namespace
}  // namespace ayatori::kube
