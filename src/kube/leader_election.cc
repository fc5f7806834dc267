#include "kube/leader_election.h"

#include <condition_variable>
#include <cstdio>
#include <random>
#include <thread>

#include "kube/resource.h"
#include "kube/time_format.h"

namespace ayatori::kube {
namespace {

// Sleeps `d` unless `stop` is requested first; false if stopped.
bool Sleep(std::chrono::milliseconds d, const std::stop_token& stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

}  // namespace

LeaseRecord LeaseRecordFromJson(const nlohmann::json& lease) {
  LeaseRecord r;
  auto spec = lease.find("spec");
  if (spec == lease.end() || !spec->is_object()) return r;
  r.holderIdentity = spec->value("holderIdentity", "");
  r.leaseDurationSeconds = spec->value("leaseDurationSeconds", int64_t{0});
  r.acquireTime = spec->value("acquireTime", "");
  r.renewTime = spec->value("renewTime", "");
  r.leaseTransitions = spec->value("leaseTransitions", int64_t{0});
  return r;
}

Status LeaderElector::Validate(const LeaderElectionConfig& c) {
  if (c.leaseName.empty() || c.leaseNamespace.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "leader election: lease namespace and name are required");
  }
  if (c.identity.empty()) {
    return Status(StatusCode::kInvalidArgument, "leader election: identity is required");
  }
  if (c.retryPeriod.count() <= 0 || c.renewDeadline <= c.retryPeriod ||
      c.leaseDuration <= c.renewDeadline) {
    return Status(StatusCode::kInvalidArgument,
                  "leader election: need leaseDuration > renewDeadline > retryPeriod > 0");
  }
  if (c.leaseDuration < std::chrono::seconds(1)) {
    return Status(StatusCode::kInvalidArgument, "leader election: leaseDuration must be >= 1s");
  }
  return Status::Ok();
}

LeaderElector::LeaderElector(KubeClient& client, const Clock& clock, LeaderElectionConfig config)
    : client_(client), clock_(clock), config_(std::move(config)) {}

void LeaderElector::Log(const std::string& line) const {
  std::string msg = "leader election " + config_.leaseNamespace + "/" + config_.leaseName + " (" +
                    config_.identity + "): " + line;
  if (config_.log) {
    config_.log(msg);
  } else {
    std::fprintf(stderr, "%s\n", msg.c_str());
  }
}

std::string LeaderElector::ObservedLeader() const {
  std::lock_guard lock(mu_);
  return observed_.holderIdentity;
}

std::chrono::milliseconds LeaderElector::Jittered(std::chrono::milliseconds d) const {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> f(0.0, 0.2);
  return d +
         std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(d.count()) * f(rng)));
}

void LeaderElector::Observe(const LeaseRecord& record) {
  std::string announce;
  {
    std::lock_guard lock(mu_);
    if (!(record == observed_) || observedTime_ == std::chrono::steady_clock::time_point{}) {
      observed_ = record;
      observedTime_ = clock_.SteadyNow();
    }
    if (record.holderIdentity != reportedLeader_) {
      reportedLeader_ = record.holderIdentity;
      announce = record.holderIdentity;
      if (announce.empty()) return;
    } else {
      return;
    }
  }
  if (config_.onNewLeader) config_.onNewLeader(announce);
}

bool LeaderElector::TryAcquireOrRenew() {
  const ResourceRef ref = LeasesResource();
  const std::string now = FormatMicroTime(clock_.Now());
  const int64_t durationSeconds =
      std::chrono::duration_cast<std::chrono::seconds>(config_.leaseDuration).count();

  auto lease = client_.Get(ref, config_.leaseNamespace, config_.leaseName);
  if (!lease.ok() && lease.status().code() == StatusCode::kNotFound) {
    nlohmann::json obj = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.leaseName}, {"namespace", config_.leaseNamespace}}},
        {"spec",
         {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", durationSeconds},
          {"acquireTime", now},
          {"renewTime", now},
          {"leaseTransitions", 0}}}};
    auto created = client_.Create(ref, config_.leaseNamespace, obj, {});
    if (!created.ok()) {
      if (created.status().code() != StatusCode::kAlreadyExists) {
        Log("cannot create the lease: " + created.status().ToString());
      }
      return false;
    }
    Observe(LeaseRecordFromJson(*created));
    return true;
  }
  if (!lease.ok()) {
    Log("cannot read the lease: " + lease.status().ToString());
    return false;
  }
  LeaseRecord old = LeaseRecordFromJson(*lease);
  Observe(old);
  const bool mine = old.holderIdentity == config_.identity;
  if (!old.holderIdentity.empty() && !mine) {
    std::lock_guard lock(mu_);
    auto duration = old.leaseDurationSeconds > 0
                        ? std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::seconds(old.leaseDurationSeconds))
                        : std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              config_.leaseDuration);
    if (observedTime_ + duration > clock_.SteadyNow()) return false;  // held and not expired
  }
  nlohmann::json updated = *lease;
  nlohmann::json& spec = updated["spec"];
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = durationSeconds;
  spec["renewTime"] = now;
  if (!mine) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = old.leaseTransitions + 1;
  }
  auto written = client_.Update(ref, config_.leaseNamespace, updated, {});
  if (!written.ok()) {
    if (written.status().code() != StatusCode::kConflict) {
      Log("cannot update the lease: " + written.status().ToString());
    }
    return false;
  }
  Observe(LeaseRecordFromJson(*written));
  return true;
}

void LeaderElector::Release() {
  const ResourceRef ref = LeasesResource();
  auto lease = client_.Get(ref, config_.leaseNamespace, config_.leaseName);
  if (!lease.ok()) {
    Log("release: cannot read the lease: " + lease.status().ToString());
    return;
  }
  LeaseRecord r = LeaseRecordFromJson(*lease);
  if (r.holderIdentity != config_.identity) return;  // someone else holds it already
  const std::string now = FormatMicroTime(clock_.Now());
  nlohmann::json updated = *lease;
  nlohmann::json& spec = updated["spec"];
  spec.erase("holderIdentity");
  spec["leaseDurationSeconds"] = 1;
  spec["acquireTime"] = now;
  spec["renewTime"] = now;
  auto written = client_.Update(ref, config_.leaseNamespace, updated, {});
  if (!written.ok()) {
    Log("release failed: " + written.status().ToString());
    return;
  }
  Observe(LeaseRecordFromJson(*written));
}

void LeaderElector::Lead(const std::stop_token& stop) {
  std::stop_source term;  // stopped when this term ends, for whatever reason
  leading_ = true;
  Log("became leader");
  std::thread work;
  if (config_.onStartedLeading) {
    work = std::thread([this, leading = term.get_token()] { config_.onStartedLeading(leading); });
  }

  // Renewals run on their own thread, so that a renewal request hanging for the client's whole
  // timeout cannot keep this thread from ending the term at renewDeadline.
  std::mutex mu;
  std::condition_variable_any cv;
  auto lastRenew = clock_.SteadyNow();  // guarded by mu
  std::string otherHolder;              // guarded by mu
  std::stop_source renewals;  // stopped first when the term ends: no renewal starts after that
  std::thread renewer([&, ended = renewals.get_token()] {
    while (Sleep(config_.retryPeriod, ended)) {
      if (TryAcquireOrRenew()) {
        std::lock_guard lock(mu);
        lastRenew = clock_.SteadyNow();
        continue;
      }
      std::string holder = ObservedLeader();
      if (!holder.empty() && holder != config_.identity) {
        std::lock_guard lock(mu);
        otherHolder = holder;
        cv.notify_all();
        return;
      }
    }
  });

  std::string why;
  {
    std::unique_lock lock(mu);
    while (!stop.stop_requested()) {
      if (!otherHolder.empty()) {
        why = "the lease is now held by " + otherHolder;
        break;
      }
      auto deadline = lastRenew + config_.renewDeadline;
      auto now = clock_.SteadyNow();
      if (now >= deadline) {
        why = "could not renew the lease within the renew deadline";
        break;
      }
      cv.wait_for(lock, stop, deadline - now, [&] { return !otherHolder.empty(); });
    }
  }
  const bool cancelled = why.empty();
  renewals.request_stop();
  leading_ = false;
  Log(cancelled ? "stepping down: stopped" : why + "; stepping down");
  // A loss is reported before the work sees its token stopped: a process that must abandon its
  // work (src/manager/manager.cc) does so before that work starts winding down in order. A
  // requested stop is the orderly case, so the work sees it first.
  if (cancelled) term.request_stop();
  if (config_.onStoppedLeading) config_.onStoppedLeading();
  term.request_stop();
  renewer.join();
  if (work.joinable()) work.join();
  if (cancelled && config_.releaseOnCancel) Release();
  Log("stopped leading");
}

void LeaderElector::Run(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    if (TryAcquireOrRenew()) {
      Lead(stop);
      continue;
    }
    Sleep(Jittered(config_.retryPeriod), stop);
  }
}

}  // namespace ayatori::kube
