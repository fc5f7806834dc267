// Durations on the command line (the controller's --lease-duration, --renew-deadline,
// --retry-period, --sync-timeout; kubectl-ayatori's --deadline, --ttl, --timeout, --since): one
// grammar, a subset of Go's time.ParseDuration (docs/operations.md "Durations"):
//
//   duration = 1*( number unit )        e.g. 500ms, 90s, 10m, 1h30m, 2m30s500ms
//   number   = 1*9DIGIT                 whole numbers only: no sign, fraction or exponent
//   unit     = "ms" / "s" / "m" / "h"
//
// No spaces; a unit may repeat ("1m1m" is 2m), as in Go. "0s" is a duration of zero: a caller
// that needs a positive one says so. Go's ns, us and d are not taken, nor a number without its
// unit (kubectl-ayatori alone reads a bare number as seconds, docs/kubectl-ayatori.md).
#pragma once

#include <chrono>
#include <string_view>

#include "ayatori/status.h"

namespace ayatori::base {

// kInvalidArgument naming the text and what is wrong with it.
StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text);

}  // namespace ayatori::base
