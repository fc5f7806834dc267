#include "controller/cached_job.h"

#include <zlib.h>

#include <string_view>

#include "api/json.h"
#include "controller/resolver.h"

namespace ayatori::controller {
namespace {

// zlib's preset dictionary: what most cached Jobs share (keys, the API group, condition types,
// reasons and messages the state machine writes, timestamps' shape). No backend's names: those
// come from the adapters (src/adapters/*/descriptor.cc); the shared parts of them
// (execution.ayatori.ddupan.top/, ExecutionParameters) are enough. Deflate finds the longest
// matches best near the end of the dictionary, so the most common strings come last. Changing it
// is safe: entries never outlive the process.
constexpr std::string_view kDictionary =
    R"(ProcessFailed","status":"False","type":"Succeeded"}OOMKilledImagePullFailedDeadlineExceeded)"
    R"(CancelledResultUnknownThe task is runningWaiting for the backend to start the task)"
    R"("deletionTimestamp":"2026-11-29T08:01:00Z","annotations":{"execution.ayatori.ddupan.top/)"
    R"(confirm-backend-lost":"{"type":"","id":")"
    R"("adapter":"","controllerName":"execution.ayatori.ddupan.top/","kind":"ExecutionParameters")"
    R"("effectiveResources":{"limits":{"cpu":"1","memory":"512Mi"},"requests":{"cpu":"100m",)"
    R"("memory":"128Mi"}},"activeDeadlineSeconds":600,"ttlSecondsAfterFinished":3600,)"
    R"({"apiVersion":"execution.ayatori.ddupan.top/v1alpha1","kind":"Job","metadata":)"
    R"({"creationTimestamp":"2026-11-29T08:00:00Z","finalizers":["execution.ayatori.ddupan.top/)"
    R"(job-cleanup"],"generation":1,"name":"","namespace":"default","resourceVersion":"1",)"
    R"("uid":"00000000-0000-0000-0000-000000000000"},"spec":{"desiredState":"Running",)"
    R"("jobClassName":"default","task":{"image":""}},"status":{"completionTime":)"
    R"("2026-11-29T08:01:00Z","conditions":[{"lastTransitionTime":"2026-11-29T08:00:00Z",)"
    R"("message":"Resolved JobClass default","observedGeneration":1,"reason":"Valid","status":)"
    R"("True","type":"Accepted"},{"lastTransitionTime":"2026-11-29T08:00:00Z","message":)"
    R"("The backend execution exists","observedGeneration":1,"reason":"BackendCreated",)"
    R"("status":"True","type":"Scheduled"},{"lastTransitionTime":"2026-11-29T08:01:00Z",)"
    R"("message":"The task exited with code 0","observedGeneration":1,"reason":"Completed",)"
    R"("status":"True","type":"Succeeded"}],"execution":{"adapter":"","exitCode":0,)"
    R"("references":[{"id":"00000000-0000-0000-0000-000000000000","type":""}]},)"
    R"("observedGeneration":1,"resolvedJobClass":{"backendSnapshot":)"
    R"("ayatori-backend-0000000000000000","controllerName":)"
    R"("execution.ayatori.ddupan.top/","name":"default","parametersRef":{"group":)"
    R"("execution.ayatori.ddupan.top","kind":"ExecutionParameters","name":"default",)"
    R"("uid":"00000000-0000-0000-0000-000000000000"},"uid":"00000000-0000-0000-0000-)"
    R"(000000000000"},"startTime":"2026-11-29T08:00:00Z"}})";

const Bytef* Bytes(std::string_view s) { return reinterpret_cast<const Bytef*>(s.data()); }

}  // namespace

StatusOr<CachedJob> CachedJob::Encode(const api::Job& job, bool taskComplete) {
  const std::string json = api::ToJson(job).dump();
  z_stream z{};
  if (deflateInit(&z, Z_BEST_SPEED) != Z_OK) {
    return Status(StatusCode::kInternal, "zlib deflateInit failed");
  }
  std::string out(deflateBound(&z, json.size()), '\0');
  int rc = deflateSetDictionary(&z, Bytes(kDictionary), static_cast<uInt>(kDictionary.size()));
  if (rc == Z_OK) {
    z.next_in = const_cast<Bytef*>(Bytes(json));  // zlib's API is not const-correct
    z.avail_in = static_cast<uInt>(json.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    rc = deflate(&z, Z_FINISH);
  }
  const size_t written = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return Status(StatusCode::kInternal, "zlib deflate failed: " + std::to_string(rc));
  }
  CachedJob entry;
  entry.deflated_.assign(out.data(), written);  // exact capacity: out's slack is not kept
  entry.inflatedBytes_ = static_cast<uint32_t>(json.size());
  entry.state_ = statemachine::DeriveState(job);
  entry.needsResolution_ = statemachine::NeedsResolution(job);
  entry.taskComplete_ = taskComplete;
  entry.waitsOn_ = WaitTargets(job);
  return entry;
}

StatusOr<api::Job> CachedJob::Decode() const {
  std::string json(inflatedBytes_, '\0');
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return Status(StatusCode::kInternal, "zlib inflateInit failed");
  z.next_in = const_cast<Bytef*>(Bytes(deflated_));
  z.avail_in = static_cast<uInt>(deflated_.size());
  z.next_out = reinterpret_cast<Bytef*>(json.data());
  z.avail_out = static_cast<uInt>(json.size());
  int rc = inflate(&z, Z_FINISH);
  if (rc == Z_NEED_DICT) {
    rc = inflateSetDictionary(&z, Bytes(kDictionary), static_cast<uInt>(kDictionary.size()));
    if (rc == Z_OK) rc = inflate(&z, Z_FINISH);
  }
  const size_t written = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || written != inflatedBytes_) {
    return Status(StatusCode::kInternal,
                  "zlib inflate of a cached Job failed: " + std::to_string(rc));
  }
  auto parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return Status(StatusCode::kInternal, "a cached Job does not parse as JSON");
  }
  return api::JobFromJson(parsed);
}

}  // namespace ayatori::controller
