// The metadata-only view of Secrets and ConfigMaps (kube/object_metadata.h): any JSON gives the
// four fields or a clear error, and what decodes survives the PartialObjectMetadata projection the
// API server's answer goes through unchanged.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz/fuzz_check.h"
#include "kube/object_metadata.h"

using namespace ayatori;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const nlohmann::json doc = nlohmann::json::parse(bytes, nullptr, false);
  if (doc.is_discarded()) return 0;
  auto decoded = kube::DecodeObjectMetadata(doc);
  if (!decoded.ok()) {
    FUZZ_CHECK(decoded.status().code() == StatusCode::kInvalidArgument);
    FUZZ_CHECK(!decoded.status().message().empty());
    return 0;
  }
  auto projected = kube::DecodeObjectMetadata(kube::PartialObjectMetadataOf(doc));
  FUZZ_CHECK(projected.ok());
  FUZZ_CHECK(*projected == *decoded);
  return 0;
}
