// Decoder of the Docker multiplexed attach/logs stream (containers created without a TTY): each
// frame is an 8-byte header {stream type (0 stdin, 1 stdout, 2 stderr), 0, 0, 0, big-endian
// uint32 payload length} followed by the payload. Frames may be split across reads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "ayatori/status.h"

namespace ayatori::adapters::docker {

enum class LogStream : uint8_t { kStdin = 0, kStdout = 1, kStderr = 2 };

class LogDemuxer {
 public:
  using Sink = std::function<void(LogStream, std::string_view)>;
  explicit LogDemuxer(Sink sink) : sink_(std::move(sink)) {}

  // Feeds the next bytes of the stream; payloads are passed to the sink as they complete (a large
  // payload may arrive in several pieces). A malformed header is an error and ends decoding.
  Status Feed(std::string_view bytes);
  // Call at the end of the stream: an error if it stopped inside a frame.
  Status Finish() const;

 private:
  Sink sink_;
  std::string header_;      // bytes of an incomplete header
  uint32_t remaining_ = 0;  // payload bytes still expected for the current frame
  LogStream stream_ = LogStream::kStdout;
  bool broken_ = false;
};

// Keeps the last `limit` bytes of what it is given.
class TailBuffer {
 public:
  explicit TailBuffer(size_t limit) : limit_(limit) {}
  void Append(std::string_view bytes);
  std::string str() const {
    return data_.size() > limit_ ? data_.substr(data_.size() - limit_) : data_;
  }

 private:
  size_t limit_;
  std::string data_;
};

}  // namespace ayatori::adapters::docker
