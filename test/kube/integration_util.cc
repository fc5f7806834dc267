#include "test/kube/integration_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <random>
#include <sstream>

#include "kube/http.h"
#include "kube/resource.h"
#include "test/support/testenv.h"

namespace ayatori::kube::testing {

std::string ReadFileOrFail(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RestConfig AdminConfig() {
  std::string path = ayatori::testing::TestenvVar("KUBECONFIG");
  auto cfg = LoadKubeconfigFile(path, {});
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  return cfg.ok() ? *cfg : RestConfig{};
}

RestConfig TokenConfig(const std::string& token) {
  RestConfig cfg;
  cfg.server = ayatori::testing::TestenvVar("TESTENV_API");
  cfg.caPem = ReadFileOrFail(ayatori::testing::TestenvVar("TESTENV_CA"));
  cfg.bearerToken = token;
  cfg.source = "test token";
  return cfg;
}

RestConfig CertConfig(const std::string& certFile, const std::string& keyFile) {
  RestConfig cfg = TokenConfig("");
  cfg.clientCertPem = ReadFileOrFail(certFile);
  cfg.clientKeyPem = ReadFileOrFail(keyFile);
  cfg.source = "test client certificate";
  return cfg;
}

std::unique_ptr<RestClient> Client(const RestConfig& config) {
  RestClientOptions o;
  o.qps = 200;
  o.burst = 400;
  o.userAgent = "ayatori-kube-test";
  return RestClient::New(config, o);
}

std::string NewNamespace(RestClient& client, const std::string& prefix) {
  static std::atomic<int> counter{0};
  std::random_device rd;
  std::string name = prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++) +
                     "-" + std::to_string(rd() % 100000);
  auto r = client.Create(NamespacesResource(), "", {{"metadata", {{"name", name}}}}, {});
  EXPECT_TRUE(r.ok()) << "create namespace " << name << ": " << r.status().ToString();
  return name;
}

int64_t CompactEtcd() {
  RestConfig etcd;
  etcd.server = ayatori::testing::TestenvVar("TESTENV_ETCD");
  auto t = NewCurlTransport(etcd, {});
  auto post = [&](const std::string& path, const nlohmann::json& body) -> nlohmann::json {
    HttpRequest r;
    r.method = "POST";
    r.url = etcd.server + path;
    r.body = body.dump();
    r.headers = {{"Content-Type", "application/json"}};
    r.timeout = std::chrono::seconds(10);
    auto resp = t->Do(r);
    EXPECT_TRUE(resp.ok()) << path << ": " << resp.status().ToString();
    if (!resp.ok()) return {};
    EXPECT_EQ(resp->status, 200) << path << ": " << resp->body;
    return nlohmann::json::parse(resp->body, nullptr, false);
  };
  nlohmann::json range = post("/v3/kv/range", {{"key", "AA=="}});
  if (!range.is_object() || !range.contains("header")) {
    ADD_FAILURE() << "etcd range gave no header: " << range.dump();
    return 0;
  }
  int64_t rev = std::stoll(range["header"]["revision"].get<std::string>());
  post("/v3/kv/compaction", {{"revision", rev}, {"physical", true}});
  return rev;
}

}  // namespace ayatori::kube::testing
