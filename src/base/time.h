// RFC 3339 date-times as Kubernetes and the backends write them: metav1.Time
// ("2026-11-29T08:00:00Z"), metav1.MicroTime ("2026-11-29T08:00:00.123456Z"), any number of
// fraction digits (microseconds kept), "Z" or a numeric offset "+hh:mm" / "-hh:mm". The one
// parser of the code base: api::ParseTime is its view in whole seconds.
#pragma once

#include <chrono>
#include <string_view>

#include "ayatori/status.h"

namespace ayatori::base {

// Microseconds since the epoch: every year from 0001 fits (Go's zero time 0001-01-01T00:00:00Z,
// which Docker writes for "never", would overflow system_clock's nanoseconds).
using Rfc3339Time = std::chrono::sys_time<std::chrono::microseconds>;

// kInvalidArgument naming the text (its first 64 characters) when it is not such a time:
// seconds 00-59 (no leap second), offsets up to 23:59, a valid calendar date.
StatusOr<Rfc3339Time> ParseTime(std::string_view text);

}  // namespace ayatori::base
