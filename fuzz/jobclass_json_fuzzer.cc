// JobClass JSON as the API server sends it (api/json.h): any bytes decode to a JobClass or a clear
// error, and its encoding decodes to the same JobClass.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "api/json.h"
#include "fuzz/fuzz_check.h"

using namespace ayatori;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;

  StatusOr<api::JobClass> jobClass = api::JobClassFromJson(j);
  if (jobClass.ok()) {
    StatusOr<api::JobClass> again = api::JobClassFromJson(api::ToJson(*jobClass));
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(*again == *jobClass);
  } else {
    FUZZ_CHECK(!jobClass.status().message().empty());
  }
  return 0;
}
