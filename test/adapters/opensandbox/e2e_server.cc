#include "test/adapters/opensandbox/e2e_server.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "adapters/opensandbox/client.h"
#include "adapters/opensandbox/spec.h"
#include "test/adapters/docker/e2e_support.h"

namespace ayatori::adapters::opensandbox::e2e {

using nlohmann::json;

void TestServer::Connect() {
  const char* dir = std::getenv("AYATORI_OPENSANDBOX_DIR");
  ASSERT_NE(dir, nullptr) << "AYATORI_OPENSANDBOX_DIR is not set (run through ctest)";
  auto env = docker::e2e::ReadEnvFile(std::string(dir) + "/env.sh");
  domain_ = env["AYATORI_OSB_DOMAIN"];
  apiKey_ = env["AYATORI_OSB_API_KEY"];
  workload_ = env["AYATORI_OSB_WORKLOAD_IMAGE"];
  ASSERT_FALSE(domain_.empty() || apiKey_.empty() || workload_.empty());
  real_ = kube::NewCurlTransport(kube::RestConfig{}, {});
}

json TestServer::Parameters(const json& extra) const {
  json spec = {
      {"endpoint", Endpoint()},
      {"insecure", true},  // the test server listens on loopback only
      {"apiKeySecretRef", {{"namespace", "ayatori-system"}, {"name", "osb"}, {"key", "k"}}}};
  spec.update(extra);
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "OpenSandboxExecutionParameters"},
          {"metadata", {{"name", "e2e"}}},
          {"spec", spec}};
}

std::unique_ptr<OpenSandboxAdapter> TestServer::NewAdapter(
    std::shared_ptr<kube::HttpTransport> transport) const {
  OpenSandboxAdapterOptions o;
  o.transport = std::move(transport);
  const std::string key = apiKey_;
  o.apiKey = [key](const api::SecretKeyReference&) -> StatusOr<SensitiveString> {
    return SensitiveString(key);
  };
  return std::make_unique<OpenSandboxAdapter>(o);
}

int TestServer::CountSandboxes(const std::string& uid) const {
  ServerClient c(*real_, Endpoint(), SensitiveString(apiKey_), {});
  auto r = c.Call("GET", uid.empty() ? "/sandboxes?pageSize=200"
                                     : "/sandboxes?pageSize=200&metadata=" + UidMetadataQuery(uid));
  if (!r.ok() || r->status != 200) {
    ADD_FAILURE() << "listing sandboxes: " << (r.ok() ? r->body : r.status().ToString());
    return -1;
  }
  return static_cast<int>(json::parse(r->body)["items"].size());
}

}  // namespace ayatori::adapters::opensandbox::e2e
