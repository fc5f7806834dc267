// The writes the owner of a Workload makes (docs/queueing.md § What Ayatori writes), as request
// bodies: pure, no I/O; src/controller/workloads.cc sends them. Kueue keeps its own conditions in
// status.conditions, a list keyed by type, so no write here replaces the list: conditions are
// server-side applied one type at a time under a field manager of their own, and the one whole
// status write (the cleared reservation) is a PUT on the resourceVersion it was decided on.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/types.h"
#include "kueue/workload.h"

namespace ayatori::kueue {

// The server-side apply body that sets one condition of the Workload `current` (its name and
// namespace; its condition of that type, whose lastTransitionTime is kept when the status is
// unchanged). Apply it to the status subresource with force, under ConditionFieldManager.
nlohmann::json ConditionApply(const WorkloadState& current, api::ConditionStatus status,
                              const std::string& type, const std::string& reason,
                              const std::string& message, api::Time now);
// "ayatori-<type>": each condition the controller owns has a field manager of its own, so an
// apply of one never drops another.
std::string ConditionFieldManager(const std::string& type);

// What jobframework writes when an eviction is acknowledged without a run (Kueue then queues the
// Workload again): the Workload `workload` as read, with status.admission removed,
// QuotaReserved=False/Pending (message), Admitted=False/NoReservation and Requeued (True when
// Kueue evicted it for Preempted or NodeFailures, which it requeues at once; else False with the
// eviction's reason, which Kueue flips when the cause is gone). PUT it to the status subresource:
// its metadata.resourceVersion is the read's, so a Workload changed since is not overwritten.
nlohmann::json ReservationCleared(nlohmann::json workload, const std::string& evictionReason,
                                  const std::string& message, api::Time now);

// The JSON patch that removes Kueue's resource-in-use finalizer from `current`, tested at its
// index so that a list changed since the read is not edited blindly; nullopt when `current`
// does not hold it.
std::optional<nlohmann::json> ResourceInUseRemoval(const WorkloadState& current);

// A Workload's condition messages are capped by Kueue's CRD (metav1.Condition, 32768 bytes).
inline constexpr size_t kMaxConditionMessageBytes = 32768;

}  // namespace ayatori::kueue
