// The image puller of the Docker adapter: makes a Job's image available on its engine before the
// container is created, per the parameters' pullPolicy, with the registry credentials of the
// Job's imagePullSecrets (X-Registry-Auth), and says what a failed pull means for the Job
// (ImagePullFailed, or Unknown/BackendUnreachable when the engine could not be asked).
//
// The engine's image cache is shared by every Job on it. A Job may use a cached image only if its
// own credentials can pull it: a Job with pull credentials always pulls (the registry checks
// them), and so does any Job whose image this puller once pulled with credentials (a private
// image: without its own, the pull fails). pullPolicy Never trusts the cache whole, but, like
// IfNotPresent, only an image found by its name (ImageNamedBy).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "adapters/adapter.h"
#include "adapters/docker/engine.h"
#include "adapters/docker/events.h"
#include "adapters/docker/parameters.h"
#include "ayatori/status.h"

namespace ayatori::adapters::docker {

class ImagePuller {
 public:
  // `pullTimeout` bounds one POST /images/create.
  explicit ImagePuller(std::chrono::milliseconds pullTimeout);

  // Non-empty: pulls run in the background from now on, and `notify` wakes the Jobs that waited
  // on one when it ends. Empty (before the adapter's Start, after its Stop): pulls run in the
  // caller, and a background pull still running wakes nobody. A pull is not cancellable, so its
  // thread may outlive the puller.
  void SetNotify(NotifyFn notify);

  // Makes request.job.spec.task.image available on the engine of `client` (`endpoint` names it)
  // per `policy`. nullopt when it is; else what to report: the failure, or kPending/ImagePulling
  // while a background pull runs (nothing is created meanwhile; the Job's next Ensure asks again
  // and gets the pull's result).
  std::optional<Observation> Ensure(const std::shared_ptr<EngineClient>& client,
                                    const std::string& endpoint, const ExecutionRequest& request,
                                    PullPolicy policy);

 private:
  struct State;
  // Whether the Job must pull rather than use a cached image (see the file comment).
  // `repository` names the engine and the image's repository.
  bool MustPull(const std::string& repository, const ExecutionRequest& request, PullPolicy policy);
  // Starts (or joins) the background pull of `key`; the answer while it runs, or its result.
  std::optional<Observation> PullInBackground(const std::shared_ptr<EngineClient>& client,
                                              const ExecutionRequest& request,
                                              const std::string& key, const std::string& path,
                                              std::vector<std::string> headers);

  std::chrono::milliseconds pullTimeout_;
  // Shared with the background pulls' threads.
  std::shared_ptr<State> state_;
};

// What a POST /images/create answer (or its transport error) means for the Job pulling `image`:
// nullopt when the image is there; Failed/ImagePullFailed with the engine's error, or the first
// error of the progress stream (a 200 answer whose stream ends in an error); Unknown/
// BackendUnreachable when the engine could not be asked.
std::optional<Observation> PullAnswerObservation(const StatusOr<HttpResponse>& answer,
                                                 const std::string& image);

}  // namespace ayatori::adapters::docker
