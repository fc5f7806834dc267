// The state invariants (docs/design.md § The state machine) in one place. Decide() checks every
// status it computes against them; tests check every status write; the controller may check it.
#pragma once

#include <string>
#include <vector>

#include "api/types.h"
#include "statemachine/statemachine.h"

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
//     change; execution.adapter and non-empty execution.references are never replaced;
//   - queueing (statemachine.h, "Queueing"): Admitted=True never reverts and needs Accepted=True;
//     an Admitted condition never appears on a Job already accepted without one; a Job whose
//     Admitted is not True has no execution (Scheduled=True, references, startTime); Evicted=True
//     needs Admitted=True and never reverts; Succeeded=False/Preempted or /Evicted needs
//     Evicted=True.
std::vector<std::string> CheckInvariants(const api::JobStatus& before, const api::JobStatus& after);

// Returns one line per rule the plan breaks for `job` (the Job it was decided on). Checked:
//   - an Ensure follows a status (the plan's write, else the acceptance it carries, else the
//     persisted one) that is Accepted=True, not terminal, without references, and, for a queued
//     Job, Admitted=True: no Ensure before Admitted=True is persisted (the plan's write lands
//     before its call); and never on a Job cancelled, being deleted or evicted. With the
//     adapter's lookup by UID (docs/design.md § At most one execution per Job) this is the state
//     machine's share of one execution per UID, which the property tests count
//     (test/statemachine/property_test.cc, kueue_property_test.cc);
//   - the Workload is marked Finished only once the Job's status is terminal (the stop confirmed)
//     or the finalizer is removed (the cleanup confirmed): never before the stop is confirmed;
//   - PodsReady only once the task started; a reservation is cleared only while Admitted=True was
//     never persisted.
std::vector<std::string> CheckPlan(const api::Job& job, const Plan& plan);

}  // namespace ayatori::statemachine
