// What a batch/v1 Job and its pod say about the one execution of an Ayatori Job: pure functions
// of the objects' JSON (as read from the apiserver or the informer caches) and the time, so every
// mapping rule is unit-tested without a cluster.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "api/types.h"
#include "ayatori/adapter.h"

namespace ayatori::adapters::kubernetes {

// Reference type written to status.execution.references: {type: Job, id: <batch Job uid>}.
inline constexpr const char* kReferenceType = "Job";

// Observe: the execution as it stands.
//  - batch Job absent: kAbsent, unless pods of the UID are still there (their state is reported:
//    a pod still running is not "absent").
//  - the main container ("main", else the first) of the batch Job's pod decides:
//      running                                  -> kRunning, startedAt = state.running.startedAt
//      terminated exit 0                        -> kSucceeded, exitCode 0
//      terminated reason OOMKilled              -> kFailed OOMKilled (with the exit code)
//      terminated exit != 0                     -> kFailed ProcessFailed (with the exit code)
//      terminated ContainerStatusUnknown        -> kUnknown (the kubelet lost the container)
//      waiting ErrImagePull / ImagePullBackOff / InvalidImageName for at least
//        imagePullFailureTimeout since the pod was created
//                                               -> kFailed ImagePullFailed, no startedAt
//      waiting otherwise, or no container state -> kPending (message says why)
//    terminated states carry startedAt/finishedAt from the container state.
//  - pod Failed without a container state (evicted or rejected by the node) -> kFailed
//    BackendRejected with the pod's reason.
//  - no pod: batch Job Complete -> kSucceeded; the Job controller has not made the pod yet ->
//    kPending; a pod existed (active/failed counts, Failed condition) but is gone without a
//    terminal state we can read -> kUnknown PodLost (never a guess at failure).
// `expectedBatchJobUid`, when not empty, is the batch Job uid persisted in status: a batch Job
// with another uid is a different execution -> kUnknown ExecutionMismatch.
Observation ObserveExecution(const std::optional<nlohmann::json>& batchJob,
                             const std::vector<nlohmann::json>& pods, api::Time now,
                             std::chrono::seconds imagePullFailureTimeout,
                             const std::string& expectedBatchJobUid = "");

// Cancel, after the batch Job was deleted (propagationPolicy=Background): what is left of the
// execution, judged from the pods still carrying the UID label.
//  - a pod not yet terminal -> its kPending / kRunning observation (still stopping);
//  - a container that terminated before the deletion was requested (no deletionTimestamp on the
//    pod, or finishedAt < deletionTimestamp - deletionGracePeriodSeconds) keeps its own result:
//    exit 0 -> kSucceeded (success wins), otherwise its kFailed;
//  - everything else (killed, or nothing left at all) -> kCancelled.
Observation ObserveCancellation(const std::vector<nlohmann::json>& pods, api::Time now);

// The batch Job uid in `key.references` ({type: Job, id}), empty if none.
std::string ReferencedBatchJobUid(const std::vector<api::ExecutionReference>& references);

// True when `pod` is terminal (phase Succeeded/Failed, or its main container terminated).
bool IsPodTerminal(const nlohmann::json& pod);

}  // namespace ayatori::adapters::kubernetes
