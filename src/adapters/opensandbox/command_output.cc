#include "adapters/opensandbox/command_output.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace ayatori::adapters::opensandbox {

namespace {

// How often a follower looks for more output: execd has no streaming endpoint for a command
// started in the background.
constexpr auto kFollowPoll = std::chrono::milliseconds(500);

// A sink that remembers when the reader left (returned false), so that reading stops there.
class LeavingSink {
 public:
  explicit LeavingSink(const LogSink& sink) : sink_(sink) {}
  bool operator()(std::string_view d) {
    if (sink_(d)) return true;
    left_ = true;
    return false;
  }
  bool left() const { return left_; }

 private:
  const LogSink& sink_;
  bool left_ = false;
};

// The last options.tailLines lines, from a bounded window over the output read once; the cursor
// after them, or nullopt when nothing more is to be read (not following, the command ended, or
// the reader left).
StatusOr<std::optional<uint64_t>> WriteLastLines(const CommandOutput& output,
                                                 const LogOptions& options, LeavingSink& write,
                                                 const std::function<bool()>& commandStopped) {
  // The state first: output read after the command was seen stopped is all there is.
  const bool last = !options.follow || commandStopped();
  std::string window;
  auto end = ReadTail(output, kMaxLogsTailBytes, window);
  if (!end.ok()) return end.status();
  const size_t from = LastLinesOffset(window, *options.tailLines);
  if (window.size() > from && !write(std::string_view(window).substr(from))) {
    return std::optional<uint64_t>();
  }
  if (last) return std::optional<uint64_t>();
  // The poll's pause, cut short when the reader leaves (LogOptions::stop).
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, options.stop, kFollowPoll, [] { return false; });
  if (options.stop.stop_requested()) return std::optional<uint64_t>();
  return std::optional<uint64_t>(*end);
}

}  // namespace

StatusOr<uint64_t> ReadOutputFrom(const CommandOutput& output, uint64_t cursor,
                                  const std::function<bool(std::string_view)>& onData) {
  for (;;) {
    bool readerLeft = false;
    auto n = output.client->ReadOutput(output.execd, output.commandId, cursor, kLogChunkBytes,
                                       [&](std::string_view d) {
                                         if (onData(d)) return true;
                                         readerLeft = true;
                                         return false;
                                       });
    if (!n.ok()) return n.status();
    cursor += *n;
    if (readerLeft || *n < kLogChunkBytes) return cursor;
  }
}

StatusOr<uint64_t> ReadTail(const CommandOutput& output, size_t maxBytes, std::string& window) {
  // A window over the output as it streams past: never more than maxBytes + one read.
  window.clear();
  auto end = ReadOutputFrom(output, 0, [&](std::string_view d) {
    window.append(d);
    if (window.size() > maxBytes + kLogChunkBytes) window.erase(0, window.size() - maxBytes);
    return true;
  });
  if (window.size() > maxBytes) window.erase(0, window.size() - maxBytes);
  return end;
}

StatusOr<std::string> TailOutput(const CommandOutput& output, size_t tailBytes) {
  std::string window;
  auto end = ReadTail(output, std::min(tailBytes, kMaxLogsTailBytes), window);
  if (!end.ok()) return end.status();
  return window;
}

Status StreamOutput(const CommandOutput& output, const LogOptions& options, const LogSink& sink,
                    const std::function<bool()>& commandStopped) {
  uint64_t cursor = 0;  // execd's byte offset of what was written to the sink
  LeavingSink write(sink);
  if (options.tailLines) {
    auto after = WriteLastLines(output, options, write, commandStopped);
    if (!after.ok()) return after.status();
    if (!*after) return Status::Ok();
    cursor = **after;
  }
  for (;;) {
    const bool last = !options.follow || commandStopped();
    // Only what is new since the last read, by cursor, handed on as it arrives.
    auto next = ReadOutputFrom(output, cursor, [&](std::string_view d) { return write(d); });
    if (!next.ok()) return next.status();
    cursor = *next;
    if (write.left() || last) return Status::Ok();
    std::this_thread::sleep_for(kFollowPoll);
  }
}

}  // namespace ayatori::adapters::opensandbox
