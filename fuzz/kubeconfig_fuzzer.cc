// kubeconfig files (kube/config.h): any bytes give a RestConfig or a clear error naming the file.
// File references resolve below a folder that does not exist, so the target reads no files
// unless an input names an absolute path.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "kube/config.h"

using namespace ayatori;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = "/nonexistent/ayatori-fuzz/kubeconfig";
  for (bool allowInsecure : {false, true}) {
    kube::ConfigLoadOptions options;
    options.allowInsecureSkipTlsVerify = allowInsecure;
    StatusOr<kube::RestConfig> cfg = kube::ParseKubeconfig(text, path, options);
    if (cfg.ok()) {
      FUZZ_CHECK(cfg->server.rfind("http", 0) == 0);
      FUZZ_CHECK(allowInsecure || !cfg->insecureSkipTlsVerify);
      FUZZ_CHECK(!cfg->Describe().empty());
    } else {
      FUZZ_CHECK(cfg.status().code() == StatusCode::kInvalidArgument);
      FUZZ_CHECK(cfg.status().message().find(path) != std::string::npos);
    }
  }
  return 0;
}
