// The Docker engine's multiplexed log stream (adapters/docker/stream.h): any bytes give the
// payloads and a clear error, the same however the stream is cut into pieces; the tail buffer
// keeps exactly the last bytes.
#include <cstdint>
#include <string>
#include <string_view>

#include "adapters/docker/stream.h"
#include "fuzz/fuzz_check.h"

using namespace ayatori;
using ayatori::adapters::docker::LogDemuxer;
using ayatori::adapters::docker::LogStream;
using ayatori::adapters::docker::TailBuffer;

namespace {

struct Demuxed {
  std::string stdoutText, stderrText, all;
  Status status;
};

Demuxed Demux(std::string_view stream, size_t piece) {
  Demuxed d;
  LogDemuxer demuxer([&](LogStream s, std::string_view bytes) {
    FUZZ_CHECK(s == LogStream::kStdin || s == LogStream::kStdout || s == LogStream::kStderr);
    (s == LogStream::kStderr ? d.stderrText : d.stdoutText) += bytes;
    d.all += bytes;
  });
  fuzz::FeedInPieces(stream, piece, [&](std::string_view p) {
    d.status = demuxer.Feed(p);
    return d.status.ok();
  });
  if (d.status.ok()) d.status = demuxer.Finish();
  FUZZ_CHECK(d.status.ok() || !d.status.message().empty());
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view stream(reinterpret_cast<const char*>(data), size);
  const Demuxed whole = Demux(stream, stream.size() + 1);
  FUZZ_CHECK(whole.all.size() <= stream.size());
  for (size_t piece : {size_t{1}, size_t{3}, size_t{8}}) {
    const Demuxed cut = Demux(stream, piece);
    FUZZ_CHECK(cut.stdoutText == whole.stdoutText);
    FUZZ_CHECK(cut.stderrText == whole.stderrText);
    FUZZ_CHECK(cut.status.code() == whole.status.code());
  }

  const size_t limit = size % 37;
  TailBuffer tail(limit);
  fuzz::FeedInPieces(whole.all, 5, [&](std::string_view p) {
    tail.Append(p);
    return true;
  });
  const std::string& all = whole.all;
  FUZZ_CHECK(tail.str() == (all.size() > limit ? all.substr(all.size() - limit) : all));
  return 0;
}
