// Job JSON as the API server sends it (api/json.h): any bytes decode to a Job or a clear error,
// and what the controller would write back decodes to the same Job.
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

  StatusOr<api::Job> job = api::JobFromJson(j);
  if (job.ok()) {
    StatusOr<api::Job> again = api::JobFromJson(api::ToJson(*job));
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(*again == *job);
    StatusOr<api::JobStatus> status = api::JobStatusFromJson(api::StatusToJson(job->status));
    FUZZ_CHECK(status.ok());
    FUZZ_CHECK(*status == job->status);
  } else {
    FUZZ_CHECK(!job.status().message().empty());
  }
  // The whole document as the value of "status" too (the /status subresource's replies).
  StatusOr<api::JobStatus> status = api::JobStatusFromJson(j);
  if (!status.ok()) FUZZ_CHECK(!status.status().message().empty());
  return 0;
}
