// What a JobReconciler remembers about Jobs between rounds, in memory only: each table either
// saves a request (a round that would only earn a 409 Conflict, a waiting message written too
// often) or bridges one lost answer (an execution created whose report did not land, an
// acceptance sent whose answer was lost). A restarted process starts with empty tables and is
// still correct, only slower: the state that matters lives in the API server and the backends.
// Rounds of different Jobs run on several workers, so every method is thread-safe; the rounds of
// one Job never overlap (the workqueue hands a key to one worker at a time).
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/types.h"
#include "ayatori/clock.h"
#include "statemachine/statemachine.h"

namespace ayatori::controller {

// Own writes the cache has not seen yet (CacheBehindOwnWrite): how long they are remembered and
// how many per Job.
inline constexpr std::chrono::seconds kOwnWriteMemory{30};
inline constexpr size_t kOwnWritesRemembered = 4;

class JobTables {
 public:
  // `clock`'s steady time dates the entries that expire (waiting messages, own writes).
  explicit JobTables(const Clock& clock) : clock_(clock) {}

  // The rate limit of waiting messages (statemachine::kWaitingMessageInterval), by Job UID: how
  // long a new message must still wait (nullopt: it may be written now), the write, and the end
  // of the wait (the Job stopped waiting).
  std::optional<std::chrono::seconds> WaitingMessageHold(const std::string& uid);
  void WaitingMessageWritten(const std::string& uid);
  void ForgetWaitingMessage(const std::string& uid);

  // Own writes and a lagging cache: after a write, the cache keeps showing the Job as it was
  // before it until the write's watch event arrives. A round that decided on that copy would act
  // on what this controller already changed, and its write would only earn a 409 Conflict (an
  // extra request per Job under load). Like the expectations of client-go controllers, the
  // tables remember the resourceVersions the recent writes of a Job replaced; a round that
  // starts from one of them reads the Job from the API server instead.
  void WroteOver(const api::Job& before, const api::Job& after);
  bool CacheBehindOwnWrite(const api::Job& cached);

  // The Job of this key (namespace/name) has an execution whose report a round could not write
  // (statemachine::UnreportedExecution): its next round writes it.
  bool HasUnreportedExecution(const std::string& key) const;
  // The execution a round of this process left unreported for the Job of `key`, if it is the
  // same UID and its status still has no references (and, into `acceptance` if given, the
  // acceptance not written with it); forgets any other entry of the key (job == nullptr: the Job
  // is gone).
  std::optional<statemachine::UnreportedExecution> UnreportedExecutionOf(
      const std::string& key, const api::Job* job, std::optional<api::JobStatus>* acceptance);
  void KeepUnreportedExecution(const api::Job& job, statemachine::UnreportedExecution execution,
                               std::optional<api::JobStatus> acceptance);

  // Status writes that accept a Job, sent by this process (landed or not: an answer may be
  // lost), until a round's copy shows the acceptance. A round whose copy does not reads the Job
  // first: deciding the acceptance again on a copy that may predate the first could create an
  // execution carrying an acceptance for another class. AcceptanceSent forgets the key's entry
  // when `job` (the cache's copy) shows it or is another UID; ForgetAcceptanceSent when the Job
  // is gone.
  void KeepAcceptanceSent(const api::Job& job);
  bool AcceptanceSent(const std::string& key, const api::Job& job);
  void ForgetAcceptanceSent(const std::string& key);

 private:
  const Clock& clock_;

  std::mutex waitingMu_;
  // Last write of a changed waiting message per Job UID; entries older than the interval are
  // dropped as new ones come, and a Job's entry when it stops waiting.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> waitingWrites_;

  std::mutex writesMu_;
  struct SupersededVersions {
    std::vector<std::string> resourceVersions;  // the last few; a round writes at most ~3 times
    std::chrono::steady_clock::time_point at;   // of the last write
  };
  // By Job UID: the resourceVersions this controller's recent writes replaced. Entries go when a
  // round sees the cache past them, or after kOwnWriteMemory (a deleted Job's last writes).
  std::unordered_map<std::string, SupersededVersions> superseded_;

  mutable std::mutex unreportedMu_;
  struct UnreportedEntry {
    std::string uid;
    statemachine::UnreportedExecution execution;
    std::optional<api::JobStatus> acceptance;  // not written yet (Plan::unwrittenAcceptance)
  };
  // By Job key (namespace/name). An entry goes when a round sees the references in the status,
  // the Job gone or replaced by a new UID; the round whose write failed is retried with backoff,
  // and its next round writes the references first.
  std::unordered_map<std::string, UnreportedEntry> unreported_;
  std::unordered_map<std::string, std::string> acceptanceSent_;  // Job key -> UID
};

}  // namespace ayatori::controller
