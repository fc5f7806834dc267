#include "adapters/kubernetes/observation.h"

#include <algorithm>
#include <string>

#include "adapters/kubernetes/batch_job.h"
#include "api/json.h"

namespace ayatori::adapters::kubernetes {

namespace {

using nlohmann::json;

// Safe lookups: the objects come from the network, so nothing is assumed about their shape.
const json* Get(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

const json* Path(const json& j, std::initializer_list<const char*> keys) {
  const json* cur = &j;
  for (const char* k : keys) {
    cur = Get(*cur, k);
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

std::string Str(const json* j) {
  return j != nullptr && j->is_string() ? j->get<std::string>() : "";
}

std::string Str(const json& j, std::initializer_list<const char*> keys) {
  return Str(Path(j, keys));
}

int64_t Int(const json& j, std::initializer_list<const char*> keys) {
  const json* v = Path(j, keys);
  return v != nullptr && v->is_number_integer() ? v->get<int64_t>() : 0;
}

std::optional<api::Time> TimeAt(const json& j, std::initializer_list<const char*> keys) {
  std::string s = Str(j, keys);
  if (s.empty()) return std::nullopt;
  auto t = api::ParseTime(s);
  if (!t.ok()) return std::nullopt;
  return *t;
}

bool IsImagePullReason(const std::string& reason) {
  return reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "InvalidImageName";
}

// The status of container "main", else the first one.
const json* MainContainerStatus(const json& pod) {
  const json* statuses = Path(pod, {"status", "containerStatuses"});
  if (statuses == nullptr || !statuses->is_array() || statuses->empty()) return nullptr;
  for (const auto& s : *statuses) {
    if (Str(s, {"name"}) == kContainerName) return &s;
  }
  return &(*statuses)[0];
}

std::string Uid(const json& obj) { return Str(obj, {"metadata", "uid"}); }

bool IsControlledBy(const json& pod, const std::string& ownerUid) {
  const json* owners = Path(pod, {"metadata", "ownerReferences"});
  if (owners == nullptr || !owners->is_array()) return false;
  for (const auto& ref : *owners) {
    if (ref.is_object() && ref.value("controller", false) && ref.value("uid", "") == ownerUid) {
      return true;
    }
  }
  return false;
}

// The condition of `type` with status "True" of a batch Job, or nullptr.
const json* TrueCondition(const json& batchJob, const char* type) {
  const json* conditions = Path(batchJob, {"status", "conditions"});
  if (conditions == nullptr || !conditions->is_array()) return nullptr;
  for (const auto& c : *conditions) {
    if (Str(c, {"type"}) == type && Str(c, {"status"}) == "True") return &c;
  }
  return nullptr;
}

// What one pod says, without the batch Job.
Observation ObservePod(const json& pod, api::Time now, std::chrono::seconds imagePullTimeout) {
  Observation o;
  const std::string phase = Str(pod, {"status", "phase"});
  const std::string podName = Str(pod, {"metadata", "name"});
  const json* cs = MainContainerStatus(pod);
  const json* state = cs != nullptr ? Get(*cs, "state") : nullptr;

  if (state != nullptr) {
    if (const json* term = Get(*state, "terminated")) {
      const std::string termReason = Str(*term, {"reason"});
      o.startedAt = TimeAt(*term, {"startedAt"});
      o.finishedAt = TimeAt(*term, {"finishedAt"});
      const json* code = Get(*term, "exitCode");
      std::optional<int32_t> exitCode;
      if (code != nullptr && code->is_number_integer()) exitCode = code->get<int32_t>();
      if (termReason == "ContainerStatusUnknown" || !exitCode) {
        o.phase = ExecutionPhase::kUnknown;
        o.reason = "ContainerStatusUnknown";
        o.message = "pod " + podName + ": the container's result is unknown (" +
                    (termReason.empty() ? "no exit code" : termReason) + ")";
        return o;
      }
      o.exitCode = exitCode;
      if (termReason == "OOMKilled") {
        o.phase = ExecutionPhase::kFailed;
        o.reason = "OOMKilled";
        o.message = "the container was killed for exceeding its memory limit (exit code " +
                    std::to_string(*exitCode) + ")";
      } else if (*exitCode == 0) {
        o.phase = ExecutionPhase::kSucceeded;
        o.reason = "Completed";
      } else {
        o.phase = ExecutionPhase::kFailed;
        o.reason = "ProcessFailed";
        o.message = "the container exited with code " + std::to_string(*exitCode) +
                    (termReason.empty() ? "" : " (" + termReason + ")");
      }
      return o;
    }
    if (const json* running = Get(*state, "running")) {
      o.phase = ExecutionPhase::kRunning;
      o.startedAt = TimeAt(*running, {"startedAt"});
      return o;
    }
    if (const json* waiting = Get(*state, "waiting")) {
      const std::string reason = Str(*waiting, {"reason"});
      const std::string message = Str(*waiting, {"message"});
      if (IsImagePullReason(reason)) {
        auto created = TimeAt(pod, {"metadata", "creationTimestamp"});
        if (created && now - *created >= imagePullTimeout) {
          o.phase = ExecutionPhase::kFailed;
          o.reason = "ImagePullFailed";
          o.message = "the image could not be pulled for " +
                      std::to_string(imagePullTimeout.count()) + "s: " + reason +
                      (message.empty() ? "" : ": " + message);
          return o;
        }
      }
      o.phase = ExecutionPhase::kPending;
      o.message = "pod " + podName + ": container waiting" + (reason.empty() ? "" : ": " + reason) +
                  (message.empty() ? "" : ": " + message);
      return o;
    }
  }

  // No container state.
  if (phase == "Failed") {
    const std::string reason = Str(pod, {"status", "reason"});
    const std::string message = Str(pod, {"status", "message"});
    o.phase = ExecutionPhase::kFailed;
    o.reason = "BackendRejected";
    o.message = "pod " + podName + " failed before its container started" +
                (reason.empty() ? "" : ": " + reason) + (message.empty() ? "" : ": " + message);
    return o;
  }
  if (phase == "Succeeded") {
    o.phase = ExecutionPhase::kSucceeded;
    o.reason = "Completed";
    o.exitCode = 0;  // the kubelet reports Succeeded only when every container exited 0
    return o;
  }
  if (phase == "Running") {
    o.phase = ExecutionPhase::kRunning;
    return o;
  }
  o.phase = ExecutionPhase::kPending;
  const json* conditions = Path(pod, {"status", "conditions"});
  if (conditions != nullptr && conditions->is_array()) {
    for (const auto& c : *conditions) {
      if (Str(c, {"type"}) == "PodScheduled" && Str(c, {"status"}) == "False") {
        o.message = "pod " + podName + " is not scheduled: " + Str(c, {"reason"}) + ": " +
                    Str(c, {"message"});
      }
    }
  }
  if (o.message.empty()) o.message = "pod " + podName + " is pending";
  return o;
}

int Rank(const Observation& o) {
  // Which pod speaks for the execution when there are several: a result first, then one that
  // runs, then one that waits.
  switch (o.phase) {
    case ExecutionPhase::kSucceeded:
    case ExecutionPhase::kFailed:
      return 0;
    case ExecutionPhase::kRunning:
      return 1;
    case ExecutionPhase::kUnknown:
      return 2;
    default:
      return 3;
  }
}

}  // namespace

std::string ReferencedBatchJobUid(const std::vector<api::ExecutionReference>& references) {
  for (const auto& r : references) {
    if (r.type == kReferenceType) return r.id;
  }
  return "";
}

bool IsPodTerminal(const json& pod) {
  const std::string phase = Str(pod, {"status", "phase"});
  if (phase == "Succeeded" || phase == "Failed") return true;
  const json* cs = MainContainerStatus(pod);
  return cs != nullptr && Path(*cs, {"state", "terminated"}) != nullptr;
}

Observation ObserveExecution(const std::optional<json>& batchJob, const std::vector<json>& pods,
                             api::Time now, std::chrono::seconds imagePullFailureTimeout,
                             const std::string& expectedBatchJobUid) {
  std::vector<const json*> own;
  if (batchJob) {
    const std::string uid = Uid(*batchJob);
    if (!expectedBatchJobUid.empty() && uid != expectedBatchJobUid) {
      Observation o;
      o.phase = ExecutionPhase::kUnknown;
      o.reason = "ExecutionMismatch";
      o.message = "batch/v1 Job " + Str(*batchJob, {"metadata", "name"}) + " has uid " + uid +
                  ", not the recorded execution " + expectedBatchJobUid;
      return o;
    }
    for (const auto& p : pods) {
      if (IsControlledBy(p, uid)) own.push_back(&p);
    }
  } else {
    for (const auto& p : pods) own.push_back(&p);
  }

  std::optional<Observation> best;
  for (const json* p : own) {
    Observation o = ObservePod(*p, now, imagePullFailureTimeout);
    if (!best || Rank(o) < Rank(*best)) best = std::move(o);
  }

  if (!batchJob) {
    if (!best) {
      Observation o;
      o.phase = ExecutionPhase::kAbsent;
      return o;
    }
    return *best;
  }

  Observation o;
  if (best) {
    o = std::move(*best);
  } else if (const json* complete = TrueCondition(*batchJob, "Complete")) {
    o.phase = ExecutionPhase::kSucceeded;
    o.reason = "Completed";
    o.exitCode = 0;  // the Job controller counts a pod as succeeded only when it exited 0
    o.finishedAt = TimeAt(*batchJob, {"status", "completionTime"});
    if (!o.finishedAt) o.finishedAt = TimeAt(*complete, {"lastTransitionTime"});
  } else {
    const json* failed = TrueCondition(*batchJob, "Failed");
    bool uncounted = false;  // pods that finished but the Job controller has not counted yet
    if (const json* u = Path(*batchJob, {"status", "uncountedTerminatedPods"})) {
      for (const char* k : {"succeeded", "failed"}) {
        const json* list = Get(*u, k);
        if (list != nullptr && list->is_array() && !list->empty()) uncounted = true;
      }
    }
    const bool podExisted =
        failed != nullptr || uncounted || Int(*batchJob, {"status", "active"}) > 0 ||
        Int(*batchJob, {"status", "failed"}) > 0 || Int(*batchJob, {"status", "succeeded"}) > 0 ||
        Int(*batchJob, {"status", "terminating"}) > 0;
    if (podExisted) {
      o.phase = ExecutionPhase::kUnknown;
      o.reason = "PodLost";
      o.message = "the pod of batch/v1 Job " + Str(*batchJob, {"metadata", "name"}) +
                  " is gone without a result that can be read";
      if (failed != nullptr) {
        o.message += " (Job condition Failed: " + Str(*failed, {"reason"}) + ": " +
                     Str(*failed, {"message"}) + ")";
      }
    } else {
      o.phase = ExecutionPhase::kPending;
      o.message = "batch/v1 Job " + Str(*batchJob, {"metadata", "name"}) + " has no pod yet";
    }
  }
  o.references = {{kReferenceType, Uid(*batchJob)}};
  return o;
}

Observation ObserveCancellation(const std::vector<json>& pods, api::Time now) {
  std::optional<Observation> stopping;
  std::optional<Observation> natural;  // a result reached before the deletion was requested
  std::optional<api::Time> ranFrom, ranUntil;
  for (const auto& pod : pods) {
    // The image-pull timeout does not matter here: a waiting pod is still "stopping".
    Observation o = ObservePod(pod, now, std::chrono::seconds::max());
    if (!IsPodTerminal(pod)) {
      if (!stopping || Rank(o) < Rank(*stopping)) stopping = std::move(o);
      continue;
    }
    if (o.startedAt) ranFrom = o.startedAt;
    if (o.finishedAt) ranUntil = o.finishedAt;
    auto deleted = TimeAt(pod, {"metadata", "deletionTimestamp"});
    bool beforeDeletion = !deleted.has_value();
    if (deleted && o.finishedAt) {
      auto requested =
          *deleted - std::chrono::seconds(Int(pod, {"metadata", "deletionGracePeriodSeconds"}));
      beforeDeletion = *o.finishedAt < requested;
    }
    if (beforeDeletion &&
        (o.phase == ExecutionPhase::kSucceeded || o.phase == ExecutionPhase::kFailed)) {
      if (!natural || o.phase == ExecutionPhase::kSucceeded) natural = std::move(o);
    }
  }
  if (stopping) {
    stopping->references.clear();
    return *stopping;
  }
  if (natural) return *natural;
  Observation o;
  o.phase = ExecutionPhase::kCancelled;
  o.reason = "Cancelled";
  o.startedAt = ranFrom;
  o.finishedAt = ranUntil;
  o.message = ranFrom ? "the container was stopped" : "the execution was stopped before it started";
  return o;
}

}  // namespace ayatori::adapters::kubernetes
