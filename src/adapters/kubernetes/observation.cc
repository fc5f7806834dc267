#include "adapters/kubernetes/observation.h"

#include <string>
#include <tuple>
#include <utility>

#include "adapters/kubernetes/batch_job.h"
#include "adapters/task_messages.h"
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

std::string Str(const json& j, std::initializer_list<const char*> keys) {
  const json* v = Path(j, keys);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
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

std::string Label(const json& obj, const char* key) {
  return Str(obj, {"metadata", "labels", key});
}

std::string Annotation(const json& obj, const char* key) {
  return Str(obj, {"metadata", "annotations", key});
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

// The controller ownerReference when it is a batch/v1 Job (the only kind that runs our pods):
// {name, uid}, both empty otherwise.
std::pair<std::string, std::string> BatchJobController(const json& obj) {
  const json* owners = Path(obj, {"metadata", "ownerReferences"});
  if (owners == nullptr || !owners->is_array()) return {};
  for (const auto& ref : *owners) {
    if (!ref.is_object() || !ref.value("controller", false)) continue;
    if (Str(ref, {"apiVersion"}) != "batch/v1" || Str(ref, {"kind"}) != "Job") return {};
    return {Str(ref, {"name"}), Str(ref, {"uid"})};
  }
  return {};
}

// Waiting reasons of a container that is being set up normally: nothing to explain.
bool IsOnItsWay(const std::string& reason) {
  return reason.empty() || reason == "ContainerCreating" || reason == "PodInitializing";
}

bool IsImagePullReason(const std::string& reason) {
  return reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "InvalidImageName";
}

std::string Details(const std::string& reason, const std::string& message) {
  return (reason.empty() ? "" : ": " + reason) + (message.empty() ? "" : ": " + message);
}

// The main container has terminated: its exit code, or unknown without one.
Observation ObserveTerminated(const PodFacts& pod) {
  Observation o;
  o.startedAt = pod.startedAt;
  o.finishedAt = pod.finishedAt;
  if (pod.reason == "ContainerStatusUnknown" || !pod.exitCode) {
    o.phase = ExecutionPhase::kUnknown;
    o.reason = "ContainerStatusUnknown";
    o.message = "The task's result is unknown: pod " + pod.name + Details(pod.reason, pod.message);
    return o;
  }
  o.exitCode = pod.exitCode;
  if (pod.reason == "OOMKilled") {
    o.phase = ExecutionPhase::kFailed;
    o.reason = "OOMKilled";
    o.message = TaskOomKilledMessage(*pod.exitCode);
  } else if (*pod.exitCode == 0) {
    o.phase = ExecutionPhase::kSucceeded;
    o.reason = "Completed";
    o.message = TaskExitedMessage(0);
  } else {
    o.phase = ExecutionPhase::kFailed;
    o.reason = "ProcessFailed";
    o.message = TaskExitedMessage(*pod.exitCode);
  }
  return o;
}

// The main container waits: pending, or ImagePullFailed once the pull timeout has passed.
Observation ObserveWaiting(const PodFacts& pod, api::Time now,
                           std::chrono::seconds imagePullTimeout) {
  Observation o;
  if (IsImagePullReason(pod.reason) && pod.created && now - *pod.created >= imagePullTimeout) {
    o.phase = ExecutionPhase::kFailed;
    o.reason = "ImagePullFailed";
    o.message = "The image could not be pulled within " + std::to_string(imagePullTimeout.count()) +
                "s" + Details(pod.reason, pod.message);
    return o;
  }
  o.phase = ExecutionPhase::kPending;
  if (IsOnItsWay(pod.reason)) return o;
  o.reason = pod.reason;
  o.message = "pod " + pod.name + ": " + (pod.message.empty() ? "container waiting" : pod.message);
  if (IsImagePullReason(pod.reason) && pod.created &&
      imagePullTimeout < std::chrono::seconds::max() / 2) {
    o.message += "; the Job fails with ImagePullFailed at " +
                 api::FormatTime(*pod.created + imagePullTimeout) +
                 " if the image cannot be pulled by then (imagePullFailureTimeoutSeconds " +
                 std::to_string(imagePullTimeout.count()) + ")";
  }
  return o;
}

// No container status yet: what the pod's phase says.
Observation ObservePodPhase(const PodFacts& pod) {
  Observation o;
  if (pod.phase == "Failed") {
    o.phase = ExecutionPhase::kFailed;
    o.reason = "BackendRejected";
    o.message = "The task could not start: pod " + pod.name +
                " failed before its container started" + Details(pod.podReason, pod.podMessage);
  } else if (pod.phase == "Succeeded") {
    o.phase = ExecutionPhase::kSucceeded;
    o.reason = "Completed";
    o.message = TaskExitedMessage(0);
    o.exitCode = 0;  // the kubelet reports Succeeded only when every container exited 0
  } else if (pod.phase == "Running") {
    o.phase = ExecutionPhase::kRunning;
  } else {
    o.phase = ExecutionPhase::kPending;
    if (!pod.unschedulable.empty()) {
      o.reason = pod.unschedulable;
      o.message = "pod " + pod.name + " cannot be scheduled: " +
                  (pod.unschedulableMessage.empty() ? "no reason given" : pod.unschedulableMessage);
    }
  }
  return o;
}

// What one pod says, without the batch Job.
Observation ObservePod(const PodFacts& pod, api::Time now, std::chrono::seconds imagePullTimeout) {
  switch (pod.state) {
    case ContainerState::kTerminated:
      return ObserveTerminated(pod);
    case ContainerState::kRunning: {
      Observation o;
      o.phase = ExecutionPhase::kRunning;
      o.startedAt = pod.startedAt;
      return o;
    }
    case ContainerState::kWaiting:
      return ObserveWaiting(pod, now, imagePullTimeout);
    case ContainerState::kNone:
      break;
  }
  return ObservePodPhase(pod);
}

// Which pod speaks for the execution when there are several: a result first, then one that
// runs, then a lost one, then one that waits.
int Rank(const Observation& o) {
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

BatchJobFacts BatchJobFactsFromJson(const json& j) {
  BatchJobFacts f;
  f.name = Str(j, {"metadata", "name"});
  f.uid = Str(j, {"metadata", "uid"});
  f.jobUid = Label(j, api::kJobUidLabel);
  f.jobName = Annotation(j, kJobNameAnnotation);
  if (f.jobName.empty()) f.jobName = Label(j, api::kJobNameLabel);
  f.owned = !f.jobUid.empty() && IsOwnedBy(j, f.jobUid);
  f.acceptanceRecorded = !Annotation(j, kAcceptanceAnnotation).empty();
  f.completionTime = TimeAt(j, {"status", "completionTime"});
  if (const json* conditions = Path(j, {"status", "conditions"});
      conditions && conditions->is_array()) {
    for (const auto& c : *conditions) {
      if (Str(c, {"status"}) != "True") continue;
      const std::string type = Str(c, {"type"});
      if (type == "Complete") {
        f.complete = true;
        if (!f.completionTime) f.completionTime = TimeAt(c, {"lastTransitionTime"});
      } else if (type == "Failed") {
        f.failed = true;
        f.failedReason = Str(c, {"reason"});
        f.failedMessage = Str(c, {"message"});
      }
    }
  }
  bool uncounted = false;  // pods that finished but the Job controller has not counted yet
  if (const json* u = Path(j, {"status", "uncountedTerminatedPods"})) {
    for (const char* k : {"succeeded", "failed"}) {
      const json* list = Get(*u, k);
      if (list != nullptr && list->is_array() && !list->empty()) uncounted = true;
    }
  }
  f.hadPods = f.failed || f.complete || uncounted || Int(j, {"status", "active"}) > 0 ||
              Int(j, {"status", "failed"}) > 0 || Int(j, {"status", "succeeded"}) > 0 ||
              Int(j, {"status", "terminating"}) > 0;
  return f;
}

FailedCreateFacts FailedCreateFactsFromJson(const json& j) {
  FailedCreateFacts f;
  f.jobName = Str(j, {"involvedObject", "name"});
  f.jobUid = Str(j, {"involvedObject", "uid"});
  f.message = Str(j, {"message"});
  f.lastSeen = TimeAt(j, {"lastTimestamp"});
  if (!f.lastSeen) f.lastSeen = TimeAt(j, {"eventTime"});
  if (!f.lastSeen) f.lastSeen = TimeAt(j, {"firstTimestamp"});
  return f;
}

PodFacts PodFactsFromJson(const json& j) {
  PodFacts f;
  f.name = Str(j, {"metadata", "name"});
  f.jobUid = Label(j, api::kJobUidLabel);
  f.jobName = Annotation(j, kJobNameAnnotation);
  if (f.jobName.empty()) f.jobName = Label(j, api::kJobNameLabel);
  std::tie(f.controllerName, f.controllerUid) = BatchJobController(j);
  f.batchJobUidLabel = Label(j, "batch.kubernetes.io/controller-uid");
  if (f.batchJobUidLabel.empty()) f.batchJobUidLabel = Label(j, "controller-uid");
  f.created = TimeAt(j, {"metadata", "creationTimestamp"});
  f.deleted = TimeAt(j, {"metadata", "deletionTimestamp"});
  f.deletionGracePeriodSeconds = Int(j, {"metadata", "deletionGracePeriodSeconds"});
  f.phase = Str(j, {"status", "phase"});
  if (f.phase == "Failed") {
    f.podReason = Str(j, {"status", "reason"});
    f.podMessage = Str(j, {"status", "message"});
  }
  if (const json* conditions = Path(j, {"status", "conditions"});
      conditions && conditions->is_array()) {
    for (const auto& c : *conditions) {
      if (Str(c, {"type"}) == "PodScheduled" && Str(c, {"status"}) == "False") {
        f.unschedulable = Str(c, {"reason"});
        if (f.unschedulable.empty()) f.unschedulable = "Unschedulable";
        f.unschedulableMessage = Str(c, {"message"});
      }
    }
  }
  const json* cs = MainContainerStatus(j);
  const json* state = cs != nullptr ? Get(*cs, "state") : nullptr;
  if (state == nullptr) return f;
  if (const json* term = Get(*state, "terminated")) {
    f.state = ContainerState::kTerminated;
    f.reason = Str(*term, {"reason"});
    f.message = Str(*term, {"message"});
    const json* code = Get(*term, "exitCode");
    if (code != nullptr && code->is_number_integer()) f.exitCode = code->get<int32_t>();
    f.startedAt = TimeAt(*term, {"startedAt"});
    f.finishedAt = TimeAt(*term, {"finishedAt"});
  } else if (const json* running = Get(*state, "running")) {
    f.state = ContainerState::kRunning;
    f.startedAt = TimeAt(*running, {"startedAt"});
  } else if (const json* waiting = Get(*state, "waiting")) {
    f.state = ContainerState::kWaiting;
    f.reason = Str(*waiting, {"reason"});
    f.message = Str(*waiting, {"message"});
  }
  return f;
}

Observation ExplainMissingPod(Observation o, const std::string& batchJobName,
                              const std::string& failedCreateMessage) {
  if (o.phase != ExecutionPhase::kPending || !o.reason.empty() || failedCreateMessage.empty()) {
    return o;
  }
  o.reason = "FailedCreate";
  o.message =
      "the pod of batch/v1 Job " + batchJobName + " could not be created: " + failedCreateMessage;
  return o;
}

std::string ReferencedBatchJobUid(const std::vector<api::ExecutionReference>& references) {
  for (const auto& r : references) {
    if (r.type == kReferenceType) return r.id;
  }
  return "";
}

bool IsPodOfBatchJob(const PodFacts& pod, std::string_view jobUid, std::string_view batchJobUid) {
  return !jobUid.empty() && pod.jobUid == jobUid && !pod.controllerUid.empty() &&
         pod.controllerName == BatchJobName(jobUid) &&
         (batchJobUid.empty() || pod.controllerUid == batchJobUid);
}

bool IsOrphanOfBatchJob(const PodFacts& pod, std::string_view jobUid,
                        std::string_view batchJobUid) {
  return !jobUid.empty() && !batchJobUid.empty() && pod.jobUid == jobUid &&
         pod.controllerUid.empty() && pod.batchJobUidLabel == batchJobUid;
}

bool IsPodTerminal(const PodFacts& pod) {
  return pod.phase == "Succeeded" || pod.phase == "Failed" ||
         pod.state == ContainerState::kTerminated;
}

Observation ObserveExecution(const std::optional<BatchJobFacts>& batchJob,
                             const std::vector<PodFacts>& pods, api::Time now,
                             std::chrono::seconds imagePullFailureTimeout,
                             const std::string& expectedBatchJobUid) {
  if (batchJob && !expectedBatchJobUid.empty() && batchJob->uid != expectedBatchJobUid) {
    Observation o;
    o.phase = ExecutionPhase::kUnknown;
    o.reason = "ExecutionMismatch";
    o.message = "The task's batch/v1 Job " + batchJob->name + " has uid " + batchJob->uid +
                ", not the recorded execution " + expectedBatchJobUid;
    return o;
  }
  std::optional<Observation> best;
  for (const PodFacts& p : pods) {
    // Only the batch Job's own pods; without a batch Job, whatever is left of the UID.
    if (batchJob && p.controllerUid != batchJob->uid) continue;
    Observation o = ObservePod(p, now, imagePullFailureTimeout);
    if (!best || Rank(o) < Rank(*best)) best = std::move(o);
  }

  if (!batchJob) {
    if (best) return *best;
    Observation o;
    o.phase = ExecutionPhase::kAbsent;
    return o;
  }

  Observation o;
  if (batchJob->failed && batchJob->failedReason == "DeadlineExceeded" &&
      (!best || best->phase != ExecutionPhase::kSucceeded)) {
    // The batch Job's activeDeadlineSeconds (BuildBatchJob's backstop behind the controller's
    // deadline) ended the pod: the execution was stopped, not failed by the task. A kill's exit
    // code is kept; an exit 0 that won the race stays a success (above).
    o.phase = ExecutionPhase::kCancelled;
    o.reason = "DeadlineExceeded";
    o.message = "The batch/v1 Job " + batchJob->name +
                " reached its activeDeadlineSeconds (the backstop behind the Job's deadline) and "
                "its pod was stopped";
    if (best) {
      o.exitCode = best->exitCode;
      o.startedAt = best->startedAt;
      o.finishedAt = best->finishedAt;
    }
  } else if (best) {
    o = std::move(*best);
  } else if (batchJob->complete) {
    o.phase = ExecutionPhase::kSucceeded;
    o.reason = "Completed";
    o.message = TaskExitedMessage(0);
    o.exitCode = 0;  // the Job controller counts a pod as succeeded only when it exited 0
    o.finishedAt = batchJob->completionTime;
  } else if (batchJob->hadPods) {
    o.phase = ExecutionPhase::kUnknown;
    o.reason = "PodLost";
    o.message = "The task's pod (of batch/v1 Job " + batchJob->name +
                ") is gone without a result that can be read";
    if (batchJob->failed) {
      o.message += " (Job condition Failed: " + batchJob->failedReason + ": " +
                   batchJob->failedMessage + ")";
    }
  } else {
    o.phase = ExecutionPhase::kPending;
    o.message = "batch/v1 Job " + batchJob->name + " has no pod yet";
  }
  o.references = {{kReferenceType, batchJob->uid}};
  return o;
}

Observation ObserveExecutionFromJson(const std::optional<json>& batchJob,
                                     const std::vector<json>& pods, api::Time now,
                                     std::chrono::seconds imagePullFailureTimeout,
                                     const std::string& expectedBatchJobUid) {
  std::optional<BatchJobFacts> job;
  if (batchJob) job = BatchJobFactsFromJson(*batchJob);
  std::vector<PodFacts> facts;
  facts.reserve(pods.size());
  for (const auto& p : pods) facts.push_back(PodFactsFromJson(p));
  return ObserveExecution(job, facts, now, imagePullFailureTimeout, expectedBatchJobUid);
}

Observation ObserveCancellation(const std::vector<PodFacts>& pods, api::Time now) {
  std::optional<Observation> stopping;
  std::optional<Observation> natural;  // a result reached before the deletion was requested
  std::optional<api::Time> ranFrom, ranUntil;
  for (const PodFacts& pod : pods) {
    // The image-pull timeout does not matter here: a waiting pod is still "stopping".
    Observation o = ObservePod(pod, now, std::chrono::seconds::max());
    if (!IsPodTerminal(pod)) {
      if (!stopping || Rank(o) < Rank(*stopping)) stopping = std::move(o);
      continue;
    }
    if (o.startedAt) ranFrom = o.startedAt;
    if (o.finishedAt) ranUntil = o.finishedAt;
    // deletionTimestamp - deletionGracePeriodSeconds is when the deletion was requested, but only
    // as long as no later delete shortened the grace period: the kubelet (and kwok) finish a
    // deletion with grace 0 once the container is dead, which moves deletionTimestamp to that
    // moment while a finalizer (batch.kubernetes.io/job-tracking) keeps the pod. With grace 0 the
    // request time is lost, and a kill by our stop would pass for an earlier failure.
    bool beforeDeletion = !pod.deleted.has_value();
    if (pod.deleted && o.finishedAt && pod.deletionGracePeriodSeconds > 0) {
      beforeDeletion =
          *o.finishedAt < *pod.deleted - std::chrono::seconds(pod.deletionGracePeriodSeconds);
    }
    // Exit 0 is the task's own success whenever it happened, as on every adapter: the stop's
    // kill gives 137 (or 143); a process that still exits 0 finished its work (success wins).
    // Any other ending counts as the task's own only if it came before the stop was requested.
    if (o.phase == ExecutionPhase::kSucceeded ||
        (beforeDeletion && o.phase == ExecutionPhase::kFailed)) {
      if (!natural || o.phase == ExecutionPhase::kSucceeded) natural = std::move(o);
    }
  }
  if (stopping) return *stopping;
  if (natural) return *natural;
  Observation o;
  o.phase = ExecutionPhase::kCancelled;
  o.reason = "Cancelled";
  o.startedAt = ranFrom;
  o.finishedAt = ranUntil;
  o.message = ranFrom ? TaskStoppedMessage("(its pod was deleted)")
                      : "The task was cancelled before it started, or its pod is gone";
  return o;
}

Observation ObserveCancellationFromJson(const std::vector<json>& pods, api::Time now) {
  std::vector<PodFacts> facts;
  facts.reserve(pods.size());
  for (const auto& p : pods) facts.push_back(PodFactsFromJson(p));
  return ObserveCancellation(facts, now);
}

}  // namespace ayatori::adapters::kubernetes
