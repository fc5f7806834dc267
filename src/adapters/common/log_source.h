// Reading what an execution printed, for diagnostics (kubectl ayatori logs) and tests. Separate
// from the Adapter contract because not every backend keeps logs; the Docker and OpenSandbox
// adapters implement it.
#pragma once

#include <cstddef>
#include <string>

#include "adapters/adapter.h"
#include "ayatori/status.h"

namespace ayatori::adapters {

class LogSource {
 public:
  virtual ~LogSource() = default;
  // The last `tailBytes` bytes of the execution's stdout and stderr, interleaved as written.
  // kNotFound when the execution does not exist; kUnavailable when the backend cannot be reached.
  virtual StatusOr<std::string> Logs(const ExecutionKey& key, size_t tailBytes) = 0;
};

}  // namespace ayatori::adapters
