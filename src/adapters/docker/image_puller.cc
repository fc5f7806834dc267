#include "adapters/docker/image_puller.h"

#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "adapters/common/observations.h"
#include "adapters/common/registry_auth.h"
#include "adapters/docker/engine_errors.h"
#include "adapters/docker/json_get.h"
#include "base/url.h"

namespace ayatori::adapters::docker {

namespace {

using nlohmann::json;

// A pull answers with a progress stream whose verdict comes last: only its tail is kept.
constexpr BodyLimit kPullAnswerLimit{size_t{1} << 20, true};

// A finished pull's result is kept for the Jobs that waited on it, at most this long.
constexpr std::chrono::minutes kPullResultKept{10};

// At most this many private repositories are remembered (MustPull).
constexpr size_t kMaxPrivateImages = 10000;

Observation ImagePulling(const std::string& image) {
  return Pending("ImagePulling", "pulling image \"" + image + "\"");
}

// The first {"error": ...} message in a pull's progress stream, if any.
std::optional<std::string> PullStreamError(const std::string& body) {
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    auto msg = json::parse(line, nullptr, false);
    if (!msg.is_object()) continue;
    if (auto e = msg.find("error"); e != msg.end() && e->is_string()) return e->get<std::string>();
    if (const json* d = GetObject(msg, "errorDetail")) {
      std::string m = GetString(*d, "message");
      return m.empty() ? "unknown error" : m;
    }
  }
  return std::nullopt;
}

// GET /images/{image}/json: whether the engine has the image `ref` names by that name (not by
// (a prefix of) the ID of some other cached image).
StatusOr<bool> HasImage(EngineClient& client, const std::string& image, const ImageReference& ref) {
  auto r = client.Call("GET", "/images/" + base::PercentEncode(image) + "/json");
  if (!r.ok()) return r.status();
  if (r->status == 404) return false;
  if (r->status != 200) return EngineError("inspect image", *r);
  return ImageNamedBy(json::parse(r->body, nullptr, false), ref);
}

}  // namespace

std::optional<Observation> PullAnswerObservation(const StatusOr<HttpResponse>& answer,
                                                 const std::string& image) {
  if (!answer.ok()) return EngineUnreachable(answer.status());
  if (answer->status != 200) {
    return Failed(kReasonImagePullFailed, "The image \"" + image + "\" could not be pulled: " +
                                              EngineErrorMessage(*answer));
  }
  if (auto error = PullStreamError(answer->body)) {
    return Failed(kReasonImagePullFailed,
                  "The image \"" + image + "\" could not be pulled: " + *error);
  }
  return std::nullopt;
}

struct ImagePuller::State {
  struct Pull {
    bool done = false;
    std::optional<Observation> failure;  // when done
    std::chrono::steady_clock::time_point doneAt;
    std::set<std::pair<std::string, std::string>> waiters;  // Jobs (namespace, name) to wake
  };
  std::mutex mu;
  NotifyFn notify;                    // empty before SetNotify and after SetNotify(nullptr)
  std::map<std::string, Pull> byKey;  // endpoint, image and credentials
  // Repositories (endpoint + "\n" + registry/path) pulled with credentials: private, so every
  // Job that uses them pulls with its own. In memory: lost at a restart.
  std::set<std::string> privateImages;
};

ImagePuller::ImagePuller(std::chrono::milliseconds pullTimeout)
    : pullTimeout_(pullTimeout), state_(std::make_shared<State>()) {}

void ImagePuller::SetNotify(NotifyFn notify) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->notify = std::move(notify);
}

bool ImagePuller::MustPull(const std::string& repository, const ExecutionRequest& request,
                           PullPolicy policy) {
  if (policy != PullPolicy::kIfNotPresent) return policy == PullPolicy::kAlways;
  std::lock_guard<std::mutex> lock(state_->mu);
  return !request.imagePullConfigs.empty() || state_->privateImages.contains(repository);
}

std::optional<Observation> ImagePuller::Ensure(const std::shared_ptr<EngineClient>& client,
                                               const std::string& endpoint,
                                               const ExecutionRequest& request, PullPolicy policy) {
  const std::string& image = request.job.spec.task.image;
  auto ref = ParseImageReference(image);
  if (!ref.ok()) return Failed(kReasonImagePullFailed, ref.status().message());
  // By repository: another tag or a digest of a private repository is private too.
  const std::string repository = endpoint + "\n" + ref->registry + "/" + ref->path;
  if (!MustPull(repository, request, policy)) {
    auto present = HasImage(*client, image, *ref);
    if (!present.ok()) return EngineUnreachable(present.status());
    if (*present) return std::nullopt;
    if (policy == PullPolicy::kNever) {
      return Failed(kReasonImagePullFailed, "The image \"" + image +
                                                "\" is not present on the engine and pullPolicy is "
                                                "Never: pull it there or change the pullPolicy");
    }
  }
  auto creds = SelectRegistryCredentials(request.imagePullConfigs, *ref);
  if (!creds.ok()) return Failed(kReasonImagePullFailed, creds.status().message());
  std::vector<std::string> headers;
  bool background = false;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (*creds) {
      headers.push_back("X-Registry-Auth: " + RegistryAuthHeaderValue(**creds).reveal());
      if (state_->privateImages.size() < kMaxPrivateImages) {
        state_->privateImages.insert(repository);
      }
    }
    background = static_cast<bool>(state_->notify);
  }
  const std::string path = "/images/create?fromImage=" + base::PercentEncode(ref->name) +
                           "&tag=" + base::PercentEncode(ref->PullTag());
  if (background) {
    // One pull per engine, image and credentials (a hash of them: the key stays in memory).
    const std::string key =
        endpoint + "\n" + image + "\n" +
        std::to_string(std::hash<std::string>{}(headers.empty() ? "" : headers[0]));
    return PullInBackground(client, request, key, path, std::move(headers));
  }
  return PullAnswerObservation(
      client->Call("POST", path, "", headers, pullTimeout_, kPullAnswerLimit), image);
}

std::optional<Observation> ImagePuller::PullInBackground(
    const std::shared_ptr<EngineClient>& client, const ExecutionRequest& request,
    const std::string& key, const std::string& path, std::vector<std::string> headers) {
  const std::string& image = request.job.spec.task.image;
  const std::pair<std::string, std::string> job{request.job.metadata.namespace_,
                                                request.job.metadata.name};
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(state_->byKey, [&](const auto& e) {
      return e.second.done && e.second.doneAt + kPullResultKept < now;
    });
    auto it = state_->byKey.find(key);
    if (it != state_->byKey.end()) {
      State::Pull& pull = it->second;
      if (!pull.done) {
        pull.waiters.insert(job);
        return ImagePulling(image);
      }
      std::optional<Observation> result = pull.failure;
      pull.waiters.erase(job);
      if (pull.waiters.empty()) state_->byKey.erase(it);
      return result;
    }
    state_->byKey[key].waiters.insert(job);
  }
  std::thread([state = state_, client, key, path, headers = std::move(headers), image,
               timeout = pullTimeout_] {
    std::optional<Observation> result = PullAnswerObservation(
        client->Call("POST", path, "", headers, timeout, kPullAnswerLimit), image);
    NotifyFn notify;
    std::set<std::pair<std::string, std::string>> waiters;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      State::Pull& pull = state->byKey[key];
      pull.done = true;
      pull.failure = std::move(result);
      pull.doneAt = std::chrono::steady_clock::now();
      waiters = pull.waiters;
      notify = state->notify;
    }
    if (!notify) return;
    for (const auto& [ns, name] : waiters) notify(ns, name);
  }).detach();
  return ImagePulling(image);
}

}  // namespace ayatori::adapters::docker
