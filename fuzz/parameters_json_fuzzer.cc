// The parameters kinds a JobClass points at (Kubernetes-, OpenSandbox-, DockerExecutionParameters;
// api/json.h): any bytes decode to each kind or a clear error, and an encoding decodes to the
// same value.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "api/json.h"
#include "fuzz/fuzz_check.h"

using namespace ayatori;

namespace {

template <class T, class Decode>
void RoundTrip(const nlohmann::json& j, Decode decode) {
  StatusOr<T> value = decode(j);
  if (!value.ok()) {
    FUZZ_CHECK(!value.status().message().empty());
    return;
  }
  StatusOr<T> again = decode(api::ToJson(*value));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == *value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  RoundTrip<api::KubernetesExecutionParameters>(j, api::KubernetesExecutionParametersFromJson);
  RoundTrip<api::OpenSandboxExecutionParameters>(j, api::OpenSandboxExecutionParametersFromJson);
  RoundTrip<api::DockerExecutionParameters>(j, api::DockerExecutionParametersFromJson);
  return 0;
}
