// Every metric the controller exports, declared once: name, type, help text and label names. Call
// sites pass the declaration to Registry::GetCounter / GetGauge / GetHistogram, never a name of
// their own. docs/operations.md ("Health and metrics") documents each one;
// test/obs/metrics_catalog_test.cc checks the names are unique, documented, and written nowhere
// else in src/ and cmd/.
#pragma once

#include <array>
#include <string_view>

namespace ayatori::obs {

enum class MetricType { kCounter, kGauge, kHistogram };

struct MetricDef {
  std::string_view name;
  MetricType type;
  std::string_view help;
  // The label names every sample carries, comma-separated, in the order the call site gives them
  // ("" for none).
  std::string_view labels;
};

namespace metrics {

// The controller's work (src/controller/).
inline constexpr MetricDef kJobs{"ayatori_jobs", MetricType::kGauge,
                                 "Jobs in the cache by derived state.", "state"};
inline constexpr MetricDef kReconcileDuration{"ayatori_reconcile_duration_seconds",
                                              MetricType::kHistogram,
                                              "Duration of Job reconcile rounds.", ""};
inline constexpr MetricDef kReconcilePanics{
    "ayatori_reconcile_panics_total", MetricType::kCounter,
    "Reconcile rounds that ended with an exception; the Job is retried with backoff.", ""};
inline constexpr MetricDef kAdapterCallDuration{"ayatori_adapter_call_duration_seconds",
                                                MetricType::kHistogram, "Latency of adapter calls.",
                                                "adapter,call"};
inline constexpr MetricDef kAdapterCallErrors{
    "ayatori_adapter_call_errors_total", MetricType::kCounter,
    "Adapter calls whose outcome was unknown (backend unreachable, ambiguous).", "adapter,call"};
inline constexpr MetricDef kJobApiWrites{
    "ayatori_job_api_writes_total", MetricType::kCounter,
    "API writes made for Jobs (finalizer patches, status updates, TTL deletes).", "kind"};
inline constexpr MetricDef kAcceptancesDeferred{
    "ayatori_acceptances_deferred_total", MetricType::kCounter,
    "Jobs whose acceptance a busy round left to the Job's next write, the execution's create "
    "carrying it.",
    ""};
inline constexpr MetricDef kCreatesNotConfirmed{
    "ayatori_creates_not_confirmed_total", MetricType::kCounter,
    "Executions not created because the fresh read of the Job right before the create found it "
    "changed since the decision (cancelled, deleted, ...).",
    ""};
inline constexpr MetricDef kCompactJobReads{
    "ayatori_compact_job_reads_total", MetricType::kCounter,
    "Reads of a Job whose cached copy is compact, before a resolution that may accept it.", ""};
inline constexpr MetricDef kWaitingJobWakeups{
    "ayatori_waiting_job_wakeups_total", MetricType::kCounter,
    "Waiting Jobs requeued because an object they wait on changed.", ""};
inline constexpr MetricDef kWorkqueueDepth{"ayatori_workqueue_depth", MetricType::kGauge,
                                           "Job keys ready in the workqueue.", ""};
inline constexpr MetricDef kWorkqueueWaiting{"ayatori_workqueue_waiting", MetricType::kGauge,
                                             "Job keys waiting for a delayed requeue.", ""};
inline constexpr MetricDef kWorkqueueRetries{
    "ayatori_workqueue_retries_total", MetricType::kCounter, "Job keys requeued with backoff.", ""};

// The Job log API (src/logapi/server.cc).
inline constexpr MetricDef kLogsApiConnectionsRefused{
    "ayatori_logs_api_connections_refused_total", MetricType::kCounter,
    "Connections to the log API closed before their TLS handshake was read, because their client "
    "address (limit=client) or all clients (limit=total) had the most handshakes in progress.",
    "limit"};

// The process (cmd/ayatori-controller/main.cc).
inline constexpr MetricDef kApiRequests{"ayatori_api_requests_total", MetricType::kCounter,
                                        "Requests to the Kubernetes API.", "verb,code"};
inline constexpr MetricDef kLeader{"ayatori_leader", MetricType::kGauge,
                                   "1 while this replica leads.", ""};

}  // namespace metrics

// Every declaration above; a new one is added here too (the test counts the declarations in
// this header against this list).
inline constexpr std::array<const MetricDef*, 16> kMetricCatalog = {
    &metrics::kJobs,
    &metrics::kReconcileDuration,
    &metrics::kReconcilePanics,
    &metrics::kAdapterCallDuration,
    &metrics::kAdapterCallErrors,
    &metrics::kJobApiWrites,
    &metrics::kAcceptancesDeferred,
    &metrics::kCreatesNotConfirmed,
    &metrics::kCompactJobReads,
    &metrics::kWaitingJobWakeups,
    &metrics::kWorkqueueDepth,
    &metrics::kWorkqueueWaiting,
    &metrics::kWorkqueueRetries,
    &metrics::kLogsApiConnectionsRefused,
    &metrics::kApiRequests,
    &metrics::kLeader,
};

}  // namespace ayatori::obs
