#include "kube/exec_credential.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ayatori::kube {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kV1 = "client.authentication.k8s.io/v1";

std::string Credential(const std::string& status, const std::string& apiVersion = kV1) {
  return R"({"apiVersion":")" + apiVersion + R"(","kind":"ExecCredential","status":)" + status +
         "}";
}

TEST(ParseExecCredentialTest, ReadsTokenCertificateAndExpiry) {
  auto c = ParseExecCredential(
      Credential(R"({"token":"abc","expirationTimestamp":"2030-01-02T03:04:05Z"})"), kV1);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->token, "abc");
  ASSERT_TRUE(c->expiry.has_value());
  auto cert = ParseExecCredential(
      Credential(R"({"clientCertificateData":"CERT","clientKeyData":"KEY"})"), kV1);
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  EXPECT_EQ(cert->clientCertPem, "CERT");
  EXPECT_EQ(cert->clientKeyPem, "KEY");
  EXPECT_FALSE(cert->expiry.has_value());
}

TEST(ParseExecCredentialTest, BadAnswersAreNamedWithoutQuotingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json SECRET", "not a JSON"},
      {R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"Secret","status":{"token":"SECRET"}})",
       "kind"},
      {Credential(R"({"token":"SECRET"})", "client.authentication.k8s.io/v1beta1"), "apiVersion"},
      {Credential(R"({})"), "neither status.token nor"},
      {Credential(R"({"clientCertificateData":"SECRET"})"), "only one of"},
      {Credential(R"({"token":"SECRET","expirationTimestamp":"tomorrow"})"), "RFC 3339"},
      {Credential(R"({"token":42})"), "not a string"},
  };
  for (const auto& [text, problem] : cases) {
    auto c = ParseExecCredential(text, kV1);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_THAT(c.status().message(), AllOf(HasSubstr(problem), Not(HasSubstr("SECRET")))) << text;
  }
}

TEST(ExecCredentialProviderTest, CachesUntilExpiryAndAfterInvalidate) {
  int runs = 0;
  auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1000));
  ExecCredentialProvider p(
      ExecConfig{},
      [&](const ExecConfig&) -> StatusOr<ExecCredential> {
        ++runs;
        ExecCredential c;
        c.token = "t" + std::to_string(runs);
        c.expiry = now + std::chrono::seconds(2);
        return c;
      },
      [&] { return now; });
  EXPECT_EQ(p.Get()->token, "t1");
  now += std::chrono::seconds(1);
  EXPECT_EQ(p.Get()->token, "t1");
  now += std::chrono::seconds(1);  // at the expiry: a new one
  EXPECT_EQ(p.Get()->token, "t2");
  p.Invalidate("t1");  // a stale refusal does not drop the newer token
  EXPECT_EQ(p.Get()->token, "t2");
  p.Invalidate("t2");
  EXPECT_EQ(p.Get()->token, "t3");
  EXPECT_EQ(runs, 3);
}

// Real plugin processes (shell scripts), run without a shell by RunExecPlugin.
class RunExecPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ayatori-exec-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Script(const std::string& body) {
    std::string path = dir_ + "/plugin-" + std::to_string(n_++);
    std::ofstream(path) << "#!/bin/sh\n" << body;
    chmod(path.c_str(), 0755);
    return path;
  }
  ExecConfig Config(const std::string& command) {
    ExecConfig c;
    c.apiVersion = kV1;
    c.command = command;
    c.user = "alice";
    c.interactiveMode = ExecInteractiveMode::kNever;
    return c;
  }
  static std::string ReadAll(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_;
  int n_ = 0;
};

TEST_F(RunExecPluginTest, PassesArgvEnvAndClusterInfoWithoutAShell) {
  std::string seen = dir_ + "/seen";
  std::string script =
      Script("printf '%s\\n' \"$@\" > " + seen + "\n" + "printf '%s\\n' \"$REGION\" >> " + seen +
             "\n" + "printf '%s\\n' \"$KUBERNETES_EXEC_INFO\" >> " + seen + "\n" +
             "cat > /dev/null\n" + "echo '" + Credential(R"({"token":"tok"})") + "'\n");
  ExecConfig c = Config(script);
  c.args = {"a b", "$(touch " + dir_ + "/pwned)", "*"};
  c.env = {{"REGION", "eu-1"}};
  c.provideClusterInfo = true;
  c.server = "https://127.0.0.1:6443";
  c.caPem = "CA";
  auto cred = RunExecPlugin(c, {});
  ASSERT_TRUE(cred.ok()) << cred.status().ToString();
  EXPECT_EQ(cred->token, "tok");
  std::istringstream lines(ReadAll(seen));
  std::string l;
  std::vector<std::string> got;
  while (std::getline(lines, l)) got.push_back(l);
  ASSERT_EQ(got.size(), 5U);
  EXPECT_EQ(got[0], "a b");
  EXPECT_EQ(got[1], "$(touch " + dir_ + "/pwned)");
  EXPECT_EQ(got[2], "*");
  EXPECT_FALSE(fs::exists(dir_ + "/pwned"));
  EXPECT_EQ(got[3], "eu-1");
  auto info = nlohmann::json::parse(got[4]);
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], "https://127.0.0.1:6443");
  EXPECT_EQ(info["spec"]["cluster"]["certificate-authority-data"], "Q0E=");
}

TEST_F(RunExecPluginTest, NoClusterInfoUnlessAsked) {
  std::string seen = dir_ + "/seen";
  std::string script = Script("printf '%s' \"$KUBERNETES_EXEC_INFO\" > " + seen + "\necho '" +
                              Credential(R"({"token":"tok"})") + "'\n");
  ExecConfig c = Config(script);
  c.server = "https://127.0.0.1:6443";
  ASSERT_TRUE(RunExecPlugin(c, {}).ok());
  auto info = nlohmann::json::parse(ReadAll(seen));
  EXPECT_FALSE(info["spec"].contains("cluster"));
}

TEST_F(RunExecPluginTest, FailureNamesUserAndCommandAndQuotesBoundedStderrNeverStdout) {
  std::string script = Script(
      "echo 'TOKEN-ON-STDOUT'\nprintf 'login expired; run sso login' >&2\n"
      "head -c 5000 /dev/zero | tr '\\0' x >&2\nexit 3\n");
  auto cred = RunExecPlugin(Config(script), {});
  ASSERT_FALSE(cred.ok());
  const std::string& m = cred.status().message();
  EXPECT_THAT(m, AllOf(HasSubstr("user \"alice\""), HasSubstr(script), HasSubstr("status 3"),
                       HasSubstr("login expired"), Not(HasSubstr("TOKEN-ON-STDOUT"))));
  EXPECT_LT(m.size(), 1000U);  // 5000 bytes of stderr were cut
}

TEST_F(RunExecPluginTest, WrongAnswerIsAnErrorWithoutTheToken) {
  std::string script = Script(
      "echo '" + Credential(R"({"token":"SECRET-TOKEN"})", "client.authentication.k8s.io/v1beta1") +
      "'\n");
  auto cred = RunExecPlugin(Config(script), {});
  ASSERT_FALSE(cred.ok());
  EXPECT_THAT(cred.status().message(),
              AllOf(HasSubstr("alice"), HasSubstr("apiVersion"), Not(HasSubstr("SECRET-TOKEN"))));
}

TEST_F(RunExecPluginTest, MissingCommandGivesTheInstallHint) {
  ExecConfig c = Config("ayatori-no-such-plugin");
  c.installHint = "Install it with: apt install no-such-plugin";
  auto cred = RunExecPlugin(c, {});
  ASSERT_FALSE(cred.ok());
  EXPECT_THAT(cred.status().message(),
              AllOf(HasSubstr("ayatori-no-such-plugin"), HasSubstr("apt install no-such-plugin")));
}

TEST_F(RunExecPluginTest, EndlessOutputIsCutAtTheLimit) {
  std::string script = Script("exec cat /dev/zero\n");
  ExecLimits limits;
  limits.maxStdoutBytes = 1 << 20;
  auto cred = RunExecPlugin(Config(script), limits);
  ASSERT_FALSE(cred.ok());
  EXPECT_THAT(cred.status().message(), HasSubstr("printed more than 1048576 bytes"));
}

TEST_F(RunExecPluginTest, HangingPluginIsStoppedAtTheTimeout) {
  std::string script = Script("exec sleep 60\n");
  ExecLimits limits;
  limits.timeout = std::chrono::milliseconds(300);
  auto begin = std::chrono::steady_clock::now();
  auto cred = RunExecPlugin(Config(script), limits);
  ASSERT_FALSE(cred.ok());
  EXPECT_THAT(cred.status().message(), HasSubstr("gave no answer"));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(30));
}

TEST_F(RunExecPluginTest, AlwaysInteractiveWithoutATerminalIsRefused) {
  // stdin is /dev/null for this test, whatever ran it.
  int saved = dup(STDIN_FILENO);
  int null = open("/dev/null", O_RDONLY);
  ASSERT_GE(null, 0);
  dup2(null, STDIN_FILENO);
  close(null);
  ExecConfig c = Config(Script("exit 0\n"));
  c.interactiveMode = ExecInteractiveMode::kAlways;
  auto cred = RunExecPlugin(c, {});
  dup2(saved, STDIN_FILENO);
  close(saved);
  ASSERT_FALSE(cred.ok());
  EXPECT_THAT(cred.status().message(),
              AllOf(HasSubstr("user \"alice\""), HasSubstr("Always"), HasSubstr("not a terminal")));
}

}  // namespace
}  // namespace ayatori::kube
