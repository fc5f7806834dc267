// The real opensandbox-server of the "opensandbox" CTest fixture (hack/opensandbox/opensandbox.sh)
// as the adapter's e2e tests reach it (opensandbox_e2e_test.cc, contract_test.cc): its address,
// API key and workload image from the fixture's env.sh, the parameters of a class that names it,
// and the sandboxes it holds, counted on the server itself.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "adapters/opensandbox/opensandbox_adapter.h"
#include "kube/http.h"

namespace ayatori::adapters::opensandbox::e2e {

class TestServer {
 public:
  // Reads the fixture's env.sh (AYATORI_OPENSANDBOX_DIR, set by ctest); fails the test (ASSERT)
  // when it is not there. Call as ASSERT_NO_FATAL_FAILURE(server.Connect()).
  void Connect();

  // The lifecycle API's base URL, http://<domain>/v1.
  std::string Endpoint() const { return "http://" + domain_ + "/v1"; }
  const std::string& apiKey() const { return apiKey_; }
  const std::string& workloadImage() const { return workload_; }
  // libcurl, straight to the server.
  const std::shared_ptr<kube::HttpTransport>& transport() const { return real_; }

  // An OpenSandboxExecutionParameters object naming this server, with `extra` laid over its spec.
  nlohmann::json Parameters(const nlohmann::json& extra = nlohmann::json::object()) const;
  // A fresh adapter that reaches the server through `transport` and reads its API key: what a
  // restarted controller has (no memory of earlier calls).
  std::unique_ptr<OpenSandboxAdapter> NewAdapter(
      std::shared_ptr<kube::HttpTransport> transport) const;
  // Sandboxes the server lists for the Job `uid`, or all of them for ""; -1 (and a test failure)
  // when it cannot list them.
  int CountSandboxes(const std::string& uid) const;

 private:
  std::string domain_, apiKey_, workload_;
  std::shared_ptr<kube::HttpTransport> real_;
};

}  // namespace ayatori::adapters::opensandbox::e2e
