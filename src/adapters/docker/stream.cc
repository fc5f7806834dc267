#include "adapters/docker/stream.h"

namespace ayatori::adapters::docker {

Status LogDemuxer::Feed(std::string_view bytes) {
  if (broken_) return Status(StatusCode::kInternal, "log stream: decoding stopped at a bad frame");
  while (!bytes.empty()) {
    if (remaining_ > 0) {
      size_t n = std::min<size_t>(remaining_, bytes.size());
      sink_(stream_, bytes.substr(0, n));
      remaining_ -= static_cast<uint32_t>(n);
      bytes.remove_prefix(n);
      continue;
    }
    size_t need = 8 - header_.size();
    size_t n = std::min(need, bytes.size());
    header_.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
    if (header_.size() < 8) break;
    auto byte = [&](size_t i) { return static_cast<uint8_t>(header_[i]); };
    if (byte(0) > 2 || byte(1) != 0 || byte(2) != 0 || byte(3) != 0) {
      broken_ = true;
      return Status(StatusCode::kInternal,
                    "log stream: not a multiplexed stream (bad frame header; was the container "
                    "created with a TTY?)");
    }
    stream_ = static_cast<LogStream>(byte(0));
    remaining_ = (static_cast<uint32_t>(byte(4)) << 24) | (static_cast<uint32_t>(byte(5)) << 16) |
                 (static_cast<uint32_t>(byte(6)) << 8) | static_cast<uint32_t>(byte(7));
    header_.clear();
  }
  return Status::Ok();
}

Status LogDemuxer::Finish() const {
  if (broken_) return Status(StatusCode::kInternal, "log stream: decoding stopped at a bad frame");
  if (!header_.empty() || remaining_ > 0) {
    return Status(StatusCode::kInternal, "log stream: ended inside a frame");
  }
  return Status::Ok();
}

void TailBuffer::Append(std::string_view bytes) {
  if (limit_ == 0) return;
  if (bytes.size() >= limit_) {
    data_.assign(bytes.substr(bytes.size() - limit_));
    return;
  }
  data_.append(bytes);
  // Trim in batches so that appending many small pieces stays linear.
  if (data_.size() > 2 * limit_) data_.erase(0, data_.size() - limit_);
}

}  // namespace ayatori::adapters::docker
