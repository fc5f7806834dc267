#include "kueue/workload.h"

#include <utility>

#include "api/json.h"
#include "api/json_codec.h"

namespace ayatori::kueue {

using nlohmann::json;

namespace {

Status Invalid(const api::Job& job, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, "cannot build the Workload of Job " +
                                                  job.metadata.namespace_ + "/" +
                                                  job.metadata.name + ": " + what);
}

std::string LabelOf(const api::Job& job, const char* key) {
  auto it = job.metadata.labels.find(key);
  return it == job.metadata.labels.end() ? std::string() : it->second;
}

// The priority to write: the one `options` resolved, which must be the class the Job names.
StatusOr<ResolvedPriority> PriorityOf(const api::Job& job, const WorkloadOptions& options) {
  const std::string named = LabelOf(job, kPriorityClassLabel);
  if (named.empty()) return options.priority.value_or(ResolvedPriority{});
  if (!options.priority || options.priority->className != named) {
    return Invalid(job, std::string("its label ") + kPriorityClassLabel + " names \"" + named +
                            "\", whose value was not resolved");
  }
  return *options.priority;
}

json OwnerReference(const api::Job& job) {
  return {{"apiVersion", api::kApiVersion}, {"kind", "Job"},      {"name", job.metadata.name},
          {"uid", job.metadata.uid},        {"controller", true}, {"blockOwnerDeletion", true}};
}

// Requests only: Kueue admits by requests (a request the Job left unset was resolved from its
// limit at acceptance, api/resources.h). Never "pods": Kueue reserves that name and adds it itself.
json Requests(const api::Job& job) {
  json requests = json::object();
  const auto& effective = job.status.effectiveResources;
  if (!effective) return requests;
  if (effective->requests.cpu) requests["cpu"] = effective->requests.cpu->str();
  if (effective->requests.memory) requests["memory"] = effective->requests.memory->str();
  return requests;
}

// The pod template of podSet "main": Kueue reads only the containers' requests and the
// nodeSelector; the CRD requires a container name, no image.
json PodTemplate(const api::Job& job, const WorkloadOptions& options) {
  json container = {{"name", "task"}, {"resources", json::object()}};
  json requests = Requests(job);
  if (!requests.empty()) container["resources"]["requests"] = std::move(requests);
  json spec = {{"containers", json::array({std::move(container)})}};
  if (!options.nodeSelector.empty()) spec["nodeSelector"] = options.nodeSelector;
  return {{"spec", std::move(spec)}};
}

}  // namespace

std::string WorkloadName(std::string_view jobUid) { return "ajob-" + std::string(jobUid); }

StatusOr<json> BuildWorkload(const api::Job& job, const WorkloadOptions& options) {
  if (job.metadata.uid.empty() || job.metadata.name.empty()) {
    return Invalid(job, "the Job has no uid or name yet (it must be read from the API)");
  }
  const std::string queue =
      options.queueName.empty() ? LabelOf(job, kQueueNameLabel) : options.queueName;
  if (queue.empty()) return Invalid(job, std::string("no label ") + kQueueNameLabel);
  auto priority = PriorityOf(job, options);
  if (!priority.ok()) return priority.status();

  json metadata = {{"name", WorkloadName(job.metadata.uid)},
                   {"namespace", job.metadata.namespace_},
                   {"labels", {{kJobUidLabel, job.metadata.uid}}},
                   {"finalizers", json::array({kResourceInUseFinalizer})},
                   {"ownerReferences", json::array({OwnerReference(job)})}};
  json spec = {
      {"queueName", queue},
      {"priority", priority->value},
      {"podSets",
       json::array(
           {{{"name", kPodSetName}, {"count", 1}, {"template", PodTemplate(job, options)}}})}};
  if (!priority->className.empty()) {
    spec["priorityClassRef"] = {
        {"group", kGroup}, {"kind", "WorkloadPriorityClass"}, {"name", priority->className}};
  }
  return json{{"apiVersion", kApiVersion},
              {"kind", "Workload"},
              {"metadata", std::move(metadata)},
              {"spec", std::move(spec)}};
}

namespace {

// status.admission: the ClusterQueue and the flavors of podSet "main".
struct Admission {
  std::string clusterQueue;
  std::map<std::string, std::string> flavors;
};

struct PodSetAssignment {
  std::string name;
  std::map<std::string, std::string> flavors;
};

api::Decoded Decode(const json& j, PodSetAssignment& out) {
  return api::ObjectDecoder(j)("name", out.name)("flavors", out.flavors).Done();
}

api::Decoded Decode(const json& j, Admission& out) {
  std::vector<PodSetAssignment> assignments;
  api::Decoded e =
      api::ObjectDecoder(j)("clusterQueue", out.clusterQueue)("podSetAssignments", assignments)
          .Done();
  for (PodSetAssignment& a : assignments) {
    if (a.name == kPodSetName) out.flavors = std::move(a.flavors);
  }
  return e;
}

api::Decoded DecodeStatus(const json& j, std::vector<api::Condition>& conditions,
                          Admission& admission) {
  return api::ObjectDecoder(j)("conditions", conditions)("admission", admission).Done();
}

api::Decoded DecodeWorkload(const json& j, WorkloadState& out, Admission& admission) {
  if (!j.is_object()) return api::WrongType(j, "an object");
  if (j.contains("kind") && j["kind"] != "Workload") {
    return api::InField(api::DecodeFailure("expected \"Workload\", got " + api::Excerpt(j["kind"])),
                        "kind");
  }
  if (j.contains("apiVersion") && j["apiVersion"] != kApiVersion) {
    return api::InField(api::DecodeFailure(std::string("expected \"") + kApiVersion + "\", got " +
                                           api::Excerpt(j["apiVersion"])),
                        "apiVersion");
  }
  return api::ObjectDecoder(j)("metadata", out.metadata)
      .With("spec",
            [&out](const json& spec) {
              return api::ObjectDecoder(spec)("queueName", out.queueName).Done();
            })
      .With("status",
            [&](const json& status) { return DecodeStatus(status, out.conditions, admission); })
      .Done();
}

const api::Condition* Find(const std::vector<api::Condition>& conditions, const char* type) {
  for (const api::Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool IsTrue(const api::Condition* c) {
  return c != nullptr && c->status == api::ConditionStatus::kTrue;
}

std::optional<Reason> ReasonIfTrue(const std::vector<api::Condition>& conditions,
                                   const char* type) {
  const api::Condition* c = Find(conditions, type);
  if (!IsTrue(c)) return std::nullopt;
  return Reason{c->reason, c->message};
}

void Summarize(WorkloadState& s) {
  const api::Condition* reserved = Find(s.conditions, kConditionQuotaReserved);
  s.quotaReserved = IsTrue(reserved);
  if (reserved != nullptr && reserved->status == api::ConditionStatus::kFalse) {
    s.pendingReason = reserved->reason;
    s.pendingMessage = reserved->message;
  }
  s.admitted = IsTrue(Find(s.conditions, kConditionAdmitted));
  s.podsReady = IsTrue(Find(s.conditions, kConditionPodsReady));
  s.evicted = ReasonIfTrue(s.conditions, kConditionEvicted);
  s.preempted = ReasonIfTrue(s.conditions, kConditionPreempted);
  s.finished = ReasonIfTrue(s.conditions, kConditionFinished);
  if (const api::Condition* r = Find(s.conditions, kConditionRequeued)) s.requeued = *r;
}

}  // namespace

StatusOr<WorkloadState> ReadWorkload(const json& workload) {
  WorkloadState state;
  Admission admission;
  if (api::Decoded e = DecodeWorkload(workload, state, admission)) {
    return Status(StatusCode::kInvalidArgument, api::DescribeDecodeError("Workload", workload, *e));
  }
  state.clusterQueue = std::move(admission.clusterQueue);
  state.flavors = std::move(admission.flavors);
  Summarize(state);
  return state;
}

}  // namespace ayatori::kueue
