#include "controller/job_tables.h"

#include <algorithm>

#include "kube/resource.h"

namespace ayatori::controller {

std::optional<std::chrono::seconds> JobTables::WaitingMessageHold(const std::string& uid) {
  std::lock_guard lock(waitingMu_);
  auto it = waitingWrites_.find(uid);
  if (it == waitingWrites_.end()) return std::nullopt;
  auto left = it->second + statemachine::kWaitingMessageInterval - clock_.SteadyNow();
  if (left <= std::chrono::seconds(0)) return std::nullopt;
  return std::chrono::ceil<std::chrono::seconds>(left);
}

void JobTables::WaitingMessageWritten(const std::string& uid) {
  const auto now = clock_.SteadyNow();
  std::lock_guard lock(waitingMu_);
  // Entries past the interval hold nothing: drop them now and then, so the map stays as large
  // as the number of Jobs whose waiting message changed in the last interval.
  if (waitingWrites_.size() >= 1024 && waitingWrites_.size() % 256 == 0) {
    std::erase_if(waitingWrites_, [&](const auto& e) {
      return e.second + statemachine::kWaitingMessageInterval <= now;
    });
  }
  waitingWrites_[uid] = now;
}

void JobTables::ForgetWaitingMessage(const std::string& uid) {
  std::lock_guard lock(waitingMu_);
  waitingWrites_.erase(uid);
}

void JobTables::WroteOver(const api::Job& before, const api::Job& after) {
  // A write that changed nothing keeps the resourceVersion: the cache showing it is current. But
  // the write that removes the last finalizer of a deleted Job also answers with the
  // resourceVersion it had (the server deletes the object and returns its last stored state), and
  // the cache keeps showing that version with the finalizer until the deletion's event arrives.
  const bool deletedByWrite = after.metadata.deletionTimestamp && after.metadata.finalizers.empty();
  if (after.metadata.resourceVersion == before.metadata.resourceVersion && !deletedByWrite) return;
  const auto now = clock_.SteadyNow();
  std::lock_guard lock(writesMu_);
  // Entries of Jobs that went away (the last write removed the finalizer) are dropped now and
  // then, so the map stays as large as the number of Jobs written in the last kOwnWriteMemory.
  if (superseded_.size() >= 1024 && superseded_.size() % 256 == 0) {
    std::erase_if(superseded_, [&](const auto& e) { return e.second.at + kOwnWriteMemory <= now; });
  }
  auto& entry = superseded_[before.metadata.uid];
  if (entry.resourceVersions.size() >= kOwnWritesRemembered) {
    entry.resourceVersions.erase(entry.resourceVersions.begin());
  }
  entry.resourceVersions.push_back(before.metadata.resourceVersion);
  entry.at = now;
}

bool JobTables::CacheBehindOwnWrite(const api::Job& cached) {
  const auto now = clock_.SteadyNow();
  std::lock_guard lock(writesMu_);
  auto it = superseded_.find(cached.metadata.uid);
  if (it == superseded_.end()) return false;
  const auto& versions = it->second.resourceVersions;
  if (it->second.at + kOwnWriteMemory > now &&
      std::find(versions.begin(), versions.end(), cached.metadata.resourceVersion) !=
          versions.end()) {
    return true;
  }
  superseded_.erase(it);  // the cache has caught up (or the entry is too old to trust)
  return false;
}

bool JobTables::HasUnreportedExecution(const std::string& key) const {
  std::lock_guard lock(unreportedMu_);
  return unreported_.contains(key);
}

std::optional<statemachine::UnreportedExecution> JobTables::UnreportedExecutionOf(
    const std::string& key, const api::Job* job, std::optional<api::JobStatus>* acceptance) {
  std::lock_guard lock(unreportedMu_);
  auto it = unreported_.find(key);
  if (it == unreported_.end()) return std::nullopt;
  const bool reported =
      job != nullptr && job->status.execution && !job->status.execution->references.empty();
  if (job == nullptr || reported || it->second.uid != job->metadata.uid) {
    unreported_.erase(it);
    return std::nullopt;
  }
  if (acceptance != nullptr) *acceptance = it->second.acceptance;
  return it->second.execution;
}

void JobTables::KeepUnreportedExecution(const api::Job& job,
                                        statemachine::UnreportedExecution execution,
                                        std::optional<api::JobStatus> acceptance) {
  std::lock_guard lock(unreportedMu_);
  unreported_[kube::ObjectKey(job.metadata.namespace_, job.metadata.name)] =
      UnreportedEntry{job.metadata.uid, std::move(execution), std::move(acceptance)};
}

void JobTables::KeepAcceptanceSent(const api::Job& job) {
  std::lock_guard lock(unreportedMu_);
  acceptanceSent_[kube::ObjectKey(job.metadata.namespace_, job.metadata.name)] = job.metadata.uid;
}

bool JobTables::AcceptanceSent(const std::string& key, const api::Job& job) {
  std::lock_guard lock(unreportedMu_);
  auto it = acceptanceSent_.find(key);
  if (it == acceptanceSent_.end()) return false;
  if (it->second != job.metadata.uid ||
      api::IsConditionTrue(job.status.conditions, api::kConditionAccepted)) {
    acceptanceSent_.erase(it);
    return false;
  }
  return true;
}

void JobTables::ForgetAcceptanceSent(const std::string& key) {
  std::lock_guard lock(unreportedMu_);
  acceptanceSent_.erase(key);
}

}  // namespace ayatori::controller
