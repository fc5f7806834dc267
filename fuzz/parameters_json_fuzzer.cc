// The parameters kinds a JobClass points at (each adapter's, src/adapters/<backend>/parameters.h):
// any bytes decode to each kind or a clear error, and an encoding decodes to the same value.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "adapters/docker/parameters.h"
#include "adapters/kubernetes/parameters.h"
#include "adapters/opensandbox/parameters.h"
#include "fuzz/fuzz_check.h"

using namespace ayatori;

namespace {

template <class T, class Decode, class Encode>
void RoundTrip(const nlohmann::json& j, Decode decode, Encode encode) {
  StatusOr<T> value = decode(j);
  if (!value.ok()) {
    FUZZ_CHECK(!value.status().message().empty());
    return;
  }
  StatusOr<T> again = decode(encode(*value));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == *value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace docker = adapters::docker;
  namespace kubernetes = adapters::kubernetes;
  namespace opensandbox = adapters::opensandbox;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  RoundTrip<kubernetes::KubernetesExecutionParameters>(
      j, kubernetes::KubernetesExecutionParametersFromJson,
      [](const kubernetes::KubernetesExecutionParameters& p) { return kubernetes::ToJson(p); });
  RoundTrip<opensandbox::OpenSandboxExecutionParameters>(
      j, opensandbox::OpenSandboxExecutionParametersFromJson,
      [](const opensandbox::OpenSandboxExecutionParameters& p) { return opensandbox::ToJson(p); });
  RoundTrip<docker::DockerExecutionParameters>(
      j, docker::DockerExecutionParametersFromJson,
      [](const docker::DockerExecutionParameters& p) { return docker::ToJson(p); });
  return 0;
}
