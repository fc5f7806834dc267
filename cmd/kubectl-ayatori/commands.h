// The verbs of kubectl-ayatori against a KubeClient: the binary passes kube::RestClient, so the
// same code runs against the test control plane (test/kubectl-ayatori/plugin_test.cc).
#pragma once

#include <chrono>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "api/types.h"
#include "ayatori/clock.h"
#include "ayatori/kube_client.h"
#include "format.h"
#include "options.h"

namespace ayatori::plugin {

// The log API's group. The Job kind's own group and version are served by the CRD, so the
// aggregated API that serves jobs/log (an APIService) needs a group of its own.
inline constexpr const char* kLogApiGroup = "logs.execution.ayatori.ddupan.top";
inline constexpr const char* kLogApiVersion = "v1alpha1";

struct LogOptions {
  bool follow = false;
  std::optional<int64_t> tailLines;
  std::optional<int64_t> sinceSeconds;
};

// /apis/<kLogApiGroup>/v1alpha1/namespaces/NS/jobs/NAME/log?follow=true&tailLines=..&sinceSeconds=..
std::string LogPath(std::string_view ns, std::string_view name, const LogOptions& options);

// Kueue's visibility API through the API server (an APIService of Kueue's install; make demo
// KUEUE=1 serves it, hack/demo.sh): the pending Workloads of one LocalQueue with their positions
// (a PendingWorkloadsSummary of Kueue v0.17.0, pinned in hack/testenv/kueue/go.mod).
inline constexpr const char* kKueueVisibilityGroup = "visibility.kueue.x-k8s.io";
inline constexpr const char* kKueueVisibilityVersion = "v1beta2";
// /apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/NS/localqueues/QUEUE/pendingworkloads
std::string PendingWorkloadsPath(std::string_view ns, std::string_view queue);

// GETs an API path and hands the body to onData as it arrives (kube::RestClient::StreamPath).
using PathStreamer = std::function<Status(std::string_view path, const std::stop_token& stop,
                                          const std::function<bool(std::string_view)>& onData)>;

// How the plugin waits between attempts while a just-installed CRD settles (see
// ServedKindRetry in commands.cc); a test passes a fake clock whose sleep advances it.
struct Pacing {
  const Clock* clock = &SystemClock::Instance();
  std::function<void(std::chrono::milliseconds)> sleep;  // empty: std::this_thread::sleep_for
};

struct Io {
  std::ostream& out;
  std::ostream& err;
  std::istream& in;
  Pacing pacing = {};
  std::stop_token stop = {};  // ends `get -w` (the binary runs it until interrupted)
  bool terminal = false;      // `out` is a terminal: wait's progress shows a spinner
};

// The CRD that serves the Job kind, named in the plugin's messages when the kind is not served.
inline constexpr const char* kJobsCrdName = "jobs.execution.ayatori.ddupan.top";
// How long the plugin retries a request that the API server refused because the Job kind is not
// served yet, when its CRD was just created (not Established, or younger than this): right
// after `kubectl apply` of the CRDs, kube-apiserver's admission learns a new kind within ~5 s
// (hack/wait-crds.sh says why).
inline constexpr std::chrono::seconds kCrdSettleTime{15};

// The value of the confirm-backend-lost annotation for a Job (docs/api.md):
// "<episode>:<who/why>", naming the ResultUnknown episode it confirms (status.resultUnknownEpisode,
// 0 when absent), so that a confirmation left on the Job never ends a later outage.
std::string ConfirmLostAnnotationValue(int64_t episode, const std::string& reason);
// status.resultUnknownEpisode of a Job as the API server returned it; 0 when absent.
int64_t ResultUnknownEpisode(const nlohmann::json& job);

// wait's exit code for a Job that finished (docs/kubectl-ayatori.md, "Exit codes"): 0 Succeeded,
// kExitJobFailed, kExitJobCancelled; nullopt while it has not finished. A Job being deleted
// counts by its Succeeded condition.
std::optional<int> FinishedExitCode(const api::Job& job);

// What `cancel` sends for `job` (as read from namespace `ns`): nothing when it already finished
// (false), else a merge patch of spec.desiredState=Cancelled (true); the API server's error.
// The web view's cancel button sends the same (ui/api.h).
StatusOr<bool> RequestCancel(KubeClient& client, const std::string& ns, const api::Job& job);

// The names of the Jobs of `ns`, for completion; empty when they cannot be listed.
std::vector<std::string> JobNames(KubeClient& client, const std::string& ns);

// The most of one visibility API answer read (Kueue's default page of 1000 pending Workloads
// is far below it); a longer answer gives no position.
inline constexpr size_t kMaxPendingWorkloadsBytes = size_t{8} * 1024 * 1024;
// Where the queued Jobs among `jobs` stand (format.h): the visibility API is asked once per
// LocalQueue that a queued Job names, through `streamer`. A LocalQueue whose answer is an error
// (the API is not served: 404; its server is down: 503; RBAC) or unreadable is left out, and
// `why` (if given) says what the first such answer was; the caller never fails because of it.
QueuePositions AskQueuePositions(const std::vector<api::Job>& jobs, const PathStreamer& streamer,
                                 std::string* why = nullptr);

// Runs one parsed command; `ns` is the namespace already defaulted. Returns the exit code.
int Execute(const Invocation& inv, const std::string& ns, KubeClient& client,
            const PathStreamer& streamer, Io io);

// An error for the user: the server's message and what to do about it.
std::string ExplainError(const Status& status, std::string_view what);

// True when the API server's answer means that it does not serve the Job kind (yet): a 404 for
// the resource path (no CRD, or one not Established), or the 503 "Resource kind ... not found"
// of its admission policies, which learn a new CRD's schema a few seconds after it is Established.
bool KindNotServed(const Status& status);

// What to tell the user when KindNotServed(status): which CRD, its state as `crd` (the CRD
// object as read, or the error reading it) shows it, and how to check; `what` is the request.
std::string ExplainKindNotServed(const Status& status, std::string_view what,
                                 const StatusOr<nlohmann::json>& crd,
                                 std::chrono::system_clock::time_point now);

}  // namespace ayatori::plugin
