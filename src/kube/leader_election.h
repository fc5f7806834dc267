// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics
// (k8s.io/client-go/tools/leaderelection): a candidate takes the lease when it is absent, free
// (holderIdentity empty) or not renewed for leaseDuration as measured by the candidate's own
// clock since it last saw the record change (no clock-skew assumptions); the leader renews every
// retryPeriod and steps down when it could not renew for renewDeadline or sees another holder.
// Writes use the lease's resourceVersion, so two candidates never both win.
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
  // On stop, clear holderIdentity so another replica takes over at once. Only safe when the work
  // guarded by the lease has stopped, which onStoppedLeading must ensure (it runs first).
  bool releaseOnCancel = true;

  // Called on the elector's thread; must return promptly (start workers and return). The token
  // is stopped when leadership ends, for whatever reason.
  std::function<void(std::stop_token leading)> onStartedLeading;
  // Called on the elector's thread after leadership ended (lost, or Run stopped while leading),
  // before the lease is released; should stop the work and wait for it.
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
  // then steps down (onStoppedLeading, release) and returns.
  void Run(std::stop_token stop);

  bool IsLeader() const { return leading_.load(); }
  // The holder last observed in the lease ("" when free or unknown).
  std::string ObservedLeader() const;

 private:
  // One attempt: creates, takes over or renews the lease. True when we hold it afterwards.
  bool TryAcquireOrRenew();
  void Release();
  void Lead(std::stop_token stop);
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
