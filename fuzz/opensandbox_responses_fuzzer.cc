// What an OpenSandbox server and its execd send back (adapters/opensandbox): the command event
// stream, the marker probe's output, sandbox and command-status objects, error bodies and the
// endpoint answer. Any bytes give a result or a clear error, never an exception or a crash; the
// event stream gives the same events however it is cut into pieces. The input is used whole for
// each decoder (they read different shapes, the corpus holds one shape per file).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/opensandbox/client.h"
#include "adapters/opensandbox/spec.h"
#include "fuzz/fuzz_check.h"

using namespace ayatori;
namespace opensandbox = ayatori::adapters::opensandbox;

namespace {

std::vector<std::string> Events(std::string_view stream, size_t piece) {
  opensandbox::EventStreamParser parser;
  std::vector<std::string> events;
  fuzz::FeedInPieces(stream, piece, [&](std::string_view p) {
    for (const nlohmann::json& e : parser.Feed(p)) {
      FUZZ_CHECK(e.is_object());  // only complete JSON objects are handed out
      events.push_back(e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    return true;
  });
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> whole = Events(bytes, bytes.size() + 1);
  FUZZ_CHECK(Events(bytes, 1) == whole);
  FUZZ_CHECK(Events(bytes, 7) == whole);

  const opensandbox::ProbeResult probe = opensandbox::ParseProbeOutput(bytes);
  if (probe.kind == opensandbox::ProbeResult::Kind::kStarted) FUZZ_CHECK(!probe.commandId.empty());

  (void)opensandbox::ErrorCode(bytes);
  const std::string message = opensandbox::ErrorMessage(500, bytes);
  FUZZ_CHECK(!message.empty());  // an error always says something

  const nlohmann::json doc = nlohmann::json::parse(bytes, nullptr, false);
  if (doc.is_discarded()) return 0;
  (void)opensandbox::ObservationFromSandbox(doc);
  (void)opensandbox::ObservationFromCommandStatus(doc);
  (void)opensandbox::ExecdBaseUrl(doc);
  return 0;
}
