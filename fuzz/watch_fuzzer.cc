// Watch streams (kube/watch_decoder.h) and error bodies (kube/api_error.h) from the API server:
// any bytes give events and a clear error, the same however the stream is cut into pieces.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "kube/api_error.h"
#include "kube/watch_decoder.h"

using namespace ayatori;

namespace {

struct Decoded {
  std::vector<std::string> events;  // "<type> <object>"
  Status status;
};

// Decodes `stream` fed in pieces of `piece` bytes; the handler ends the watch after `stopAfter`
// events.
Decoded Decode(std::string_view stream, size_t piece, size_t stopAfter) {
  Decoded d;
  WatchHandler handler = [&](WatchEvent&& ev) {
    d.events.push_back(std::string(WatchEventTypeName(ev.type)) + " " + ev.object.dump());
    return d.events.size() < stopAfter;
  };
  kube::WatchStreamDecoder decoder("jobs.execution.ayatori.ddupan.top", handler);
  fuzz::FeedInPieces(stream, piece, [&](std::string_view p) { return decoder.Feed(p); });
  d.status = decoder.Finish();
  FUZZ_CHECK(d.status.ok() || !d.status.message().empty());
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view stream(reinterpret_cast<const char*>(data), size);
  const Decoded whole = Decode(stream, stream.size() + 1, SIZE_MAX);
  const Decoded bytewise = Decode(stream, 1, SIZE_MAX);
  FUZZ_CHECK(whole.events == bytewise.events);
  FUZZ_CHECK(whole.status.code() == bytewise.status.code());
  FUZZ_CHECK(whole.status.message() == bytewise.status.message());
  if (!whole.events.empty()) {
    // A handler that returns false ends the watch at once, without an error.
    const Decoded first = Decode(stream, 7, 1);
    FUZZ_CHECK(first.events.size() == 1 && first.events[0] == whole.events[0]);
    FUZZ_CHECK(first.status.ok());
  }

  // The same bytes as the body of a failed request.
  for (int httpCode : {410, 500}) {
    kube::ApiError e = kube::DecodeApiError(httpCode, stream);
    FUZZ_CHECK(e.httpCode == httpCode);
    FUZZ_CHECK(e.code != StatusCode::kOk);
    FUZZ_CHECK(!e.message.empty());
  }
  return 0;
}
