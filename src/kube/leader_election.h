// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics
// (k8s.io/client-go/tools/leaderelection): a candidate takes the lease when it is absent, free
// (holderIdentity empty) or not renewed for leaseDuration as measured by the candidate's own
// clock since it last saw the record change (no clock-skew assumptions); the leader renews every
// retryPeriod and steps down when it could not renew for renewDeadline or sees another holder.
// Writes use the lease's resourceVersion, so two candidates never both win. The leader's work runs
// on a thread of its own and renewals on another, so neither a slow start nor a hanging renewal
// delays the end of a term past renewDeadline.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>

#include "ayatori/clock.h"
#include "ayatori/kube_client.h"
#include "ayatori/status.h"

namespace ayatori::kube {

struct LeaderElectionConfig {
  std::string leaseNamespace;
  std::string leaseName;
  std::string identity;  // unique per replica, e.g. "<pod name>_<random>"
  std::chrono::milliseconds leaseDuration{15000};
  std::chrono::milliseconds renewDeadline{10000};
  std::chrono::milliseconds retryPeriod{2000};
  // On stop, clear holderIdentity so another replica takes over at once. Safe because the work
  // guarded by the lease has ended by then: Run joins the onStartedLeading thread first.
  bool releaseOnCancel = true;

  // Runs on a thread of its own once this replica leads, while the elector goes on renewing (as
  // client-go runs OnStartedLeading in its own goroutine): work that takes long to start, such
  // as an informer sync, must not keep the lease from being renewed. `leading` is stopped when
  // the term ends, for whatever reason; the function must then return soon: the elector joins
  // it before it releases the lease or campaigns again.
  std::function<void(std::stop_token leading)> onStartedLeading;
  // Called on the elector's thread as soon as the term ended (another holder, no renewal within
  // renewDeadline, or Run stopped), before the elector waits for the onStartedLeading thread
  // or a renewal still in flight, and before the release. On a loss it runs before `leading` is
  // stopped, on a requested stop after. A process whose work must not outlive the lease ends
  // here (src/manager/manager.cc), abandoning the work before it sees the stop.
  std::function<void()> onStoppedLeading;
  // Called when the observed holder changes (including to ourselves).
  std::function<void(const std::string& identity)> onNewLeader;
  std::function<void(const std::string&)> log;  // nullptr = stderr
};

// What a Lease says about its holder.
struct LeaseRecord {
  std::string holderIdentity;
  int64_t leaseDurationSeconds = 0;
  std::string acquireTime;  // MicroTime text
  std::string renewTime;
  int64_t leaseTransitions = 0;
  bool operator==(const LeaseRecord&) const = default;
};

LeaseRecord LeaseRecordFromJson(const nlohmann::json& lease);

class LeaderElector {
 public:
  // Checks leaseDuration > renewDeadline > retryPeriod > 0 and that names are set.
  static Status Validate(const LeaderElectionConfig& config);

  LeaderElector(KubeClient& client, const Clock& clock, LeaderElectionConfig config);

  // Campaigns, leads, and after losing leadership campaigns again, until `stop` is requested;
  // then steps down (onStoppedLeading, joins the work, releases) and returns.
  void Run(const std::stop_token& stop);

  bool IsLeader() const { return leading_.load(); }
  // The holder last observed in the lease ("" when free or unknown).
  std::string ObservedLeader() const;

 private:
  // One attempt: creates, takes over or renews the lease. True when we hold it afterwards.
  bool TryAcquireOrRenew();
  void Release();
  void Lead(const std::stop_token& stop);
  void Observe(const LeaseRecord& record);
  void Log(const std::string& line) const;
  std::chrono::milliseconds Jittered(std::chrono::milliseconds d) const;

  KubeClient& client_;
  const Clock& clock_;
  const LeaderElectionConfig config_;
  std::atomic<bool> leading_{false};

  mutable std::mutex mu_;
  LeaseRecord observed_;
  std::chrono::steady_clock::time_point observedTime_{};
  std::string observedResourceVersion_;
  std::string reportedLeader_;
};

}  // namespace ayatori::kube
