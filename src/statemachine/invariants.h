// The state invariants (docs/design.md § The state machine) in one place. Decide() checks every
// status it computes against them; tests check every status write; the controller may check it.
#pragma once

#include <string>
#include <vector>

#include "api/types.h"

namespace ayatori::statemachine {

// Returns one human-readable line per violated invariant of the transition before → after
// (empty: fine). Checked:
//   - terminal (Succeeded=True/False) is irreversible: status, reason, completionTime, result and
//     startTime never change afterwards;
//   - startTime and completionTime, once set, never change; completionTime >= startTime;
//   - Succeeded=True/False has a completionTime; Succeeded=Unknown has neither completionTime nor
//     result (ResultUnknown in particular never has a completionTime);
//   - a non-empty status has a Succeeded condition (non-terminal is Unknown, never omitted);
//   - Scheduled=True never reverts; startTime only with Scheduled=True;
//   - Accepted=True never reverts; resolvedJobClass and effectiveResources, once set, never
//     change; execution.adapter and non-empty execution.references are never replaced.
std::vector<std::string> CheckInvariants(const api::JobStatus& before, const api::JobStatus& after);

}  // namespace ayatori::statemachine
