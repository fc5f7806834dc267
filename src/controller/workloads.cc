#include "controller/workloads.h"

#include <cstdint>
#include <set>
#include <utility>

#include "adapters/registry.h"
#include "controller/kinds.h"
#include "kueue/workload_writes.h"

namespace ayatori::controller {

namespace {

const api::Condition* Find(const std::vector<api::Condition>& conditions, const char* type) {
  for (const api::Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

api::Time Seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::time_point_cast<std::chrono::seconds>(t);
}

std::string LabelOf(const api::Job& job, const char* key) {
  auto it = job.metadata.labels.find(key);
  return it == job.metadata.labels.end() ? std::string() : it->second;
}

}  // namespace

bool ControlledByJob(const kueue::WorkloadState& workload, const std::string& jobUid) {
  for (const api::OwnerReference& owner : workload.metadata.ownerReferences) {
    if (owner.controller) {
      return owner.uid == jobUid && owner.kind == "Job" && owner.apiVersion == api::kApiVersion;
    }
  }
  return false;
}

statemachine::WorkloadFacts WorkloadFactsOf(const kueue::WorkloadState& workload, bool fresh) {
  statemachine::WorkloadFacts facts;
  facts.fresh = fresh;
  facts.quotaReserved = workload.quotaReserved;
  facts.admitted = workload.admitted;
  if (!workload.pendingReason.empty() || !workload.pendingMessage.empty()) {
    facts.reason = workload.pendingReason;
    facts.message = workload.pendingMessage;
  } else if (const api::Condition* admitted =
                 Find(workload.conditions, kueue::kConditionAdmitted)) {
    facts.reason = admitted->reason;
    facts.message = admitted->message;
  }
  if (workload.evicted) {
    facts.evicted = true;
    facts.evictedReason = workload.evicted->reason;
    facts.evictedMessage = workload.evicted->message;
  }
  facts.podsReady = workload.podsReady;
  facts.finished = workload.finished.has_value();
  return facts;
}

nlohmann::json WithPlacement(nlohmann::json parameters, const FlavorPlacement& placement) {
  if (!parameters.is_object()) parameters = nlohmann::json::object();
  nlohmann::json& spec = parameters["spec"];
  if (!spec.is_object()) spec = nlohmann::json::object();
  if (!placement.nodeLabels.empty()) {
    nlohmann::json& selector = spec["nodeSelector"];
    if (!selector.is_object()) selector = nlohmann::json::object();
    for (const auto& [key, value] : placement.nodeLabels) selector[key] = value;
  }
  if (!placement.tolerations.empty()) {
    nlohmann::json& tolerations = spec["tolerations"];
    if (!tolerations.is_array()) tolerations = nlohmann::json::array();
    for (const auto& t : placement.tolerations) tolerations.push_back(t);
  }
  return parameters;
}

std::map<std::string, std::string> QueueNodeSelector(const nlohmann::json& parameters) {
  std::map<std::string, std::string> selector;
  const nlohmann::json::json_pointer pointer =
      nlohmann::json::json_pointer("/spec") / adapters::kQueueingParameters / "nodeSelector";
  if (!parameters.is_object() || !parameters.contains(pointer)) return selector;
  const nlohmann::json& labels = parameters.at(pointer);
  if (!labels.is_object()) return selector;
  for (const auto& [key, value] : labels.items()) {
    if (value.is_string()) selector[key] = value.get<std::string>();
  }
  return selector;
}

StatusOr<FlavorPlacement> WorkloadClient::AdmittedPlacement(const std::string& ns,
                                                            const std::string& jobUid) {
  auto read = Read(ns, jobUid);
  if (!read.ok()) return read.status();
  if (!*read) return Status(StatusCode::kFailedPrecondition, "the Job's Workload is gone");
  auto state = kueue::ReadWorkload(**read);
  if (!state.ok()) return state.status();
  if (!ControlledByJob(*state, jobUid) || !state->admitted || state->flavors.empty()) {
    return Status(StatusCode::kFailedPrecondition, "the Job's Workload is not admitted");
  }
  std::set<std::string> flavors;
  for (const auto& [resource, flavor] : state->flavors) flavors.insert(flavor);
  FlavorPlacement placement;
  for (const std::string& name : flavors) {
    auto flavor = client_.Get(kResourceFlavors, "", name);
    if (!flavor.ok()) return flavor.status();
    const nlohmann::json labels =
        flavor->value("/spec/nodeLabels"_json_pointer, nlohmann::json::object());
    for (const auto& [key, value] : labels.items()) {
      if (value.is_string()) placement.nodeLabels[key] = value.get<std::string>();
    }
    const nlohmann::json tolerations =
        flavor->value("/spec/tolerations"_json_pointer, nlohmann::json::array());
    for (const auto& t : tolerations) placement.tolerations.push_back(t);
  }
  return placement;
}

StatusOr<kueue::ResolvedPriority> WorkloadClient::ResolvePriority(const api::Job& job) {
  const std::string name = LabelOf(job, kueue::kPriorityClassLabel);
  if (name.empty()) return kueue::ResolvedPriority{};
  auto cls = client_.Get(kWorkloadPriorityClasses, "", name);
  if (!cls.ok()) return cls.status();
  const nlohmann::json value = cls->value("value", nlohmann::json());
  // Kueue's CRD holds an int32.
  if (!value.is_number_integer() || value.get<int64_t>() < INT32_MIN ||
      value.get<int64_t>() > INT32_MAX) {
    return Status(StatusCode::kInvalidArgument,
                  "WorkloadPriorityClass " + name + " has no 32-bit integer value");
  }
  return kueue::ResolvedPriority{name, static_cast<int32_t>(value.get<int64_t>())};
}

Status WorkloadClient::Create(const api::Job& job, const std::string& queueName,
                              const std::map<std::string, std::string>& nodeSelector) {
  auto priority = ResolvePriority(job);
  if (!priority.ok()) return priority.status();
  kueue::WorkloadOptions options;
  options.priority = *priority;
  options.queueName = queueName;
  options.nodeSelector = nodeSelector;
  auto workload = kueue::BuildWorkload(job, options);
  if (!workload.ok()) return workload.status();
  CountWrite();
  auto created = client_.Create(kWorkloads, job.metadata.namespace_, *workload, {});
  if (created.ok()) return Status::Ok();
  if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  return TakeExisting(job);
}

Status WorkloadClient::TakeExisting(const api::Job& job) {
  auto existing = Read(job.metadata.namespace_, job.metadata.uid);
  if (!existing.ok()) return existing.status();
  if (!*existing) return Status(StatusCode::kUnavailable, "the Workload went away; create again");
  auto state = kueue::ReadWorkload(**existing);
  if (!state.ok()) return state.status();
  if (!ControlledByJob(*state, job.metadata.uid)) {
    return Status(StatusCode::kFailedPrecondition,
                  "Workload " + state->metadata.name + " exists and is not controlled by this Job");
  }
  if (!state->finished) return Status::Ok();
  if (Status s = RemoveFinalizer(*state); !s.ok()) return s;
  DeleteOptions options;
  options.preconditionUid = state->metadata.uid;
  CountWrite();
  if (Status s = client_.Delete(kWorkloads, job.metadata.namespace_, state->metadata.name, options);
      !s.ok() && s.code() != StatusCode::kNotFound) {
    return s;
  }
  return Status(StatusCode::kUnavailable, "Workload " + state->metadata.name +
                                              " was Finished before the Job was admitted; " +
                                              "it was deleted and is created anew");
}

StatusOr<std::optional<nlohmann::json>> WorkloadClient::Read(const std::string& ns,
                                                             const std::string& jobUid) {
  auto got = client_.Get(kWorkloads, ns, kueue::WorkloadName(jobUid));
  if (got.ok()) return std::optional<nlohmann::json>(std::move(*got));
  if (got.status().code() == StatusCode::kNotFound) return std::optional<nlohmann::json>();
  return got.status();
}

Status WorkloadClient::ClearReservation(const nlohmann::json& decidedOn,
                                        const std::string& evictionReason,
                                        const std::string& message) {
  auto body = kueue::ReservationCleared(decidedOn, evictionReason, message, Seconds(clock_.Now()));
  const std::string ns = body["metadata"].value("namespace", "");
  CountWrite();
  auto written = client_.UpdateStatus(kWorkloads, ns, body, {});
  return written.ok() ? Status::Ok() : written.status();
}

Status WorkloadClient::ApplyCondition(const kueue::WorkloadState& current, const std::string& type,
                                      const std::string& reason, const std::string& message) {
  PatchOptions options;
  options.subresource = "status";
  options.fieldManager = kueue::ConditionFieldManager(type);
  options.force = true;
  CountWrite();
  auto applied = client_.Patch(kWorkloads, current.metadata.namespace_, current.metadata.name,
                               PatchType::kApply,
                               kueue::ConditionApply(current, api::ConditionStatus::kTrue, type,
                                                     reason, message, Seconds(clock_.Now())),
                               options);
  return applied.ok() ? Status::Ok() : applied.status();
}

Status WorkloadClient::MarkPodsReady(const nlohmann::json& current, const std::string& reason,
                                     const std::string& message) {
  auto state = kueue::ReadWorkload(current);
  if (!state.ok()) return state.status();
  return ApplyCondition(*state, kueue::kConditionPodsReady, reason, message);
}

Status WorkloadClient::RemoveFinalizer(const kueue::WorkloadState& current) {
  auto patch = kueue::ResourceInUseRemoval(current);
  if (!patch) return Status::Ok();
  CountWrite();
  auto patched = client_.Patch(kWorkloads, current.metadata.namespace_, current.metadata.name,
                               PatchType::kJson, *patch, {});
  if (patched.ok() || patched.status().code() == StatusCode::kNotFound) return Status::Ok();
  return patched.status();
}

Status WorkloadClient::Finish(const nlohmann::json& current, const std::string& reason,
                              const std::string& message) {
  auto state = kueue::ReadWorkload(current);
  if (!state.ok()) return state.status();
  // The finalizer first: a Finished Workload is never asked to finish again, so one left with
  // the finalizer would stay Terminating once the Job is gone. The task is confirmed stopped
  // here, so a deletion in between frees nothing that is still in use.
  if (Status s = RemoveFinalizer(*state); !s.ok()) return s;
  Status applied = ApplyCondition(*state, kueue::kConditionFinished, reason, message);
  return applied.code() == StatusCode::kNotFound ? Status::Ok() : applied;
}

}  // namespace ayatori::controller
