// The verbs of kubectl-ayatori against a KubeClient: the binary passes kube::RestClient, so the
// same code runs against the test control plane (test/kubectl-ayatori/plugin_test.cc).
#pragma once

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <string_view>

#include "api/types.h"
#include "ayatori/kube_client.h"
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

// GETs an API path and hands the body to onData as it arrives (kube::RestClient::StreamPath).
using PathStreamer = std::function<Status(std::string_view path, const std::stop_token& stop,
                                          const std::function<bool(std::string_view)>& onData)>;

struct Io {
  std::ostream& out;
  std::ostream& err;
  std::istream& in;
};

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

// Runs one parsed command; `ns` is the namespace already defaulted. Returns the exit code.
int Execute(const Invocation& inv, const std::string& ns, KubeClient& client,
            const PathStreamer& streamer, Io io);

// An error for the user: the server's message and what to do about it.
std::string ExplainError(const Status& status, std::string_view what);

}  // namespace ayatori::plugin
