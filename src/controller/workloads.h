// The controller's reads and writes of the Kueue Workloads of queued Jobs (statemachine.h §
// Queueing; the bodies are src/kueue's). Every write here may be refused while Kueue or the API
// server is away: the reconciler then ends its round with backoff, and nothing of the Job's own
// progress waits on it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "api/types.h"
#include "ayatori/clock.h"
#include "ayatori/kube_client.h"
#include "kueue/workload.h"
#include "statemachine/statemachine.h"

namespace ayatori::controller {

// Whether `workload` is the Job `jobUid`'s: its controller ownerReference names that Job. A
// Workload of the same name made by anyone else (whoever may create Workloads in the namespace)
// is never taken for the Job's: the Job then waits, and its create says why.
bool ControlledByJob(const kueue::WorkloadState& workload, const std::string& jobUid);

// What the state machine needs of a Workload read from the cache (fresh = false) or from the
// API server this round (fresh = true).
statemachine::WorkloadFacts WorkloadFactsOf(const kueue::WorkloadState& workload, bool fresh);

// The node labels and tolerations of the ResourceFlavors a Workload was admitted on.
struct FlavorPlacement {
  std::map<std::string, std::string> nodeLabels;
  nlohmann::json tolerations = nlohmann::json::array();  // core/v1 Tolerations
};

// `parameters` (a parameters object as JSON) with `placement` laid over spec.nodeSelector (a
// flavor's label wins over the parameters' own for the same key) and added to spec.tolerations.
nlohmann::json WithPlacement(nlohmann::json parameters, const FlavorPlacement& placement);

// The podSet nodeSelector of the Workloads of Jobs run with `parameters`: its
// spec.queueing.nodeSelector (empty when unset).
std::map<std::string, std::string> QueueNodeSelector(const nlohmann::json& parameters);

class WorkloadClient {
 public:
  // `countWrite` is called before each request that writes (a Finish may make two).
  WorkloadClient(KubeClient& client, const Clock& clock, std::function<void()> countWrite = {})
      : client_(client), clock_(clock), countWrite_(std::move(countWrite)) {}

  // Creates the Workload of `job` in LocalQueue `queueName` (its priority label, its effective
  // resources). An
  // existing one of the same Job is fine; one that is Finished (someone ended it before the Job
  // was admitted) loses its finalizer and is deleted, and kUnavailable asks for a later round to
  // create it anew.
  // `nodeSelector`: the podSet's (QueueNodeSelector of the Job's parameters).
  Status Create(const api::Job& job, const std::string& queueName,
                const std::map<std::string, std::string>& nodeSelector = {});
  // The Job's Workload as the API server has it now; nullopt when there is none.
  StatusOr<std::optional<nlohmann::json>> Read(const std::string& ns, const std::string& jobUid);
  // Gives the reservation back after an eviction that came before the Job's admission was
  // persisted (kueue::ReservationCleared), on `decidedOn`'s resourceVersion.
  Status ClearReservation(const nlohmann::json& decidedOn, const std::string& evictionReason,
                          const std::string& message);
  // PodsReady=True, so that a waitForPodsReady cluster does not evict the running task.
  Status MarkPodsReady(const nlohmann::json& current, const std::string& reason,
                       const std::string& message);
  // Where the Workload of the Job `jobUid` was admitted: the nodeLabels and tolerations of every
  // ResourceFlavor of its podSet (read now, with the Workload). kFailedPrecondition when it is not
  // admitted or names a flavor that does not exist.
  StatusOr<FlavorPlacement> AdmittedPlacement(const std::string& ns, const std::string& jobUid);
  // Releases the quota: Kueue's finalizer goes first, then Finished=True (reason Succeeded or
  // Failed). A Workload without the finalizer but not Finished yet is finished by the next try;
  // one Finished keeps no finalizer of ours.
  Status Finish(const nlohmann::json& current, const std::string& reason,
                const std::string& message);

 private:
  StatusOr<kueue::ResolvedPriority> ResolvePriority(const api::Job& job);
  Status ApplyCondition(const kueue::WorkloadState& current, const std::string& type,
                        const std::string& reason, const std::string& message);
  Status RemoveFinalizer(const kueue::WorkloadState& current);
  // An existing Workload of `job`'s name: kept unless Finished, which is removed.
  Status TakeExisting(const api::Job& job);

  void CountWrite() const {
    if (countWrite_) countWrite_();
  }

  KubeClient& client_;
  const Clock& clock_;
  std::function<void()> countWrite_;
};

}  // namespace ayatori::controller
