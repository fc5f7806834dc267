// The Docker engine's /events stream (adapters/docker/events.h): any bytes give the container
// changes it holds, the same however the stream is cut into pieces.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/docker/events.h"
#include "fuzz/fuzz_check.h"

using namespace ayatori;
using ayatori::adapters::docker::ContainerEvent;
using ayatori::adapters::docker::EventStreamDecoder;

namespace {

std::vector<std::string> Decode(std::string_view stream, size_t piece) {
  std::vector<std::string> events;
  EventStreamDecoder decoder([&](ContainerEvent&& e) {
    FUZZ_CHECK(!e.action.empty() && !e.uid.empty());
    events.push_back(e.action + "\n" + e.uid + "\n" + e.namespace_ + "\n" + e.name);
  });
  fuzz::FeedInPieces(stream, piece, [&](std::string_view p) {
    decoder.Feed(p);
    return true;
  });
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view stream(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> whole = Decode(stream, stream.size() + 1);
  FUZZ_CHECK(Decode(stream, 1) == whole);
  FUZZ_CHECK(Decode(stream, 13) == whole);
  return 0;
}
