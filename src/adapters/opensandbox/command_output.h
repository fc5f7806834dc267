// The logs of the OpenSandbox adapter (opensandbox_adapter.h): a task command's output as execd
// keeps it, one file of merged stdout and stderr without times, read by byte cursor in
// kLogChunkBytes pieces (ServerClient::ReadOutput) and never held whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "adapters/adapter.h"
#include "adapters/common/log_source.h"
#include "adapters/opensandbox/client.h"
#include "ayatori/status.h"
#include "kube/http.h"

namespace ayatori::adapters::opensandbox {

// Most of a command's output kept by Logs and by StreamLogs' tailLines window.
inline constexpr size_t kMaxLogsTailBytes = size_t{16} << 20;

// Where a Job's command output is read.
struct CommandOutput {
  std::shared_ptr<kube::HttpTransport> transport;  // the client's; kept alive with it
  std::unique_ptr<ServerClient> client;
  ExecdTarget execd;
  std::string commandId;
};

// Reads the output from `cursor` to its current end, kLogChunkBytes per request, handing it to
// `onData` (false: stop); returns the cursor after what was handed over.
StatusOr<uint64_t> ReadOutputFrom(const CommandOutput& output, uint64_t cursor,
                                  const std::function<bool(std::string_view)>& onData);

// The last `maxBytes` of the whole output into `window` (held: at most maxBytes plus one read);
// returns the cursor at its end.
StatusOr<uint64_t> ReadTail(const CommandOutput& output, size_t maxBytes, std::string& window);

// The last min(tailBytes, kMaxLogsTailBytes) bytes of the output.
StatusOr<std::string> TailOutput(const CommandOutput& output, size_t tailBytes);

// Hands the output to `sink` as LogSource::StreamLogs does: tailLines applied to the last
// kMaxLogsTailBytes; with follow, polls for what is new since the last read until
// `commandStopped` says the command ended (output read after that is all there is).
Status StreamOutput(const CommandOutput& output, const LogOptions& options, const LogSink& sink,
                    const std::function<bool()>& commandStopped);

}  // namespace ayatori::adapters::opensandbox
