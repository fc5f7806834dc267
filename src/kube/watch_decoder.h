// Decoder of a watch response body: one JSON event per line
// (`{"type":"ADDED","object":{...}}\n`), arriving in pieces that split lines anywhere. Pure: no
// I/O, so the bytes of a stream can be replayed through it (test/kube/watch_decoder_test.cc,
// fuzz/watch_fuzzer.cc).
#pragma once

#include <string>
#include <string_view>

#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::kube {

// One line of a watch stream. An ERROR event becomes the error of its metav1.Status (410 Expired
// -> kGone); a line that is not an event object, lacks "object" or has an unknown type is
// kInternal naming `resource` (the watched resource, for the message).
StatusOr<WatchEvent> DecodeWatchEvent(std::string_view line, std::string_view resource);

class WatchStreamDecoder {
 public:
  // `handler` gets each decoded event; returning false ends decoding.
  WatchStreamDecoder(std::string resource, const WatchHandler& handler)
      : resource_(std::move(resource)), handler_(handler) {}

  // Decodes the complete lines of `chunk` (and of what came before). False once decoding ended:
  // the handler returned false or a line was bad (then error() says why); later calls do nothing.
  bool Feed(std::string_view chunk);
  // At the end of the stream: decodes a last event that lacks its newline, unless decoding ended.
  // Returns error().
  Status Finish();

  const Status& error() const { return error_; }

 private:
  // False when decoding ends.
  bool Line(std::string_view line);

  const std::string resource_;
  const WatchHandler& handler_;
  std::string pending_;  // bytes of an incomplete line
  Status error_;
  bool ended_ = false;
};

}  // namespace ayatori::kube
