// Judging a chaos round: what every Job's true result is, what was observed of it at the end of
// the round (its status, the backend's own records), and the violations of the guarantees. Pure:
// the runner (runner.h) gathers the facts, this decides, so the rules are unit-tested on their own
// (verdict_test.cc). The rules are described in docs/chaos.md.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "test/chaos/plan.h"

namespace ayatori::chaos {

// How the backend itself recorded the end of a Job's process: a container's final state, the
// terminated state of a pod as it was seen by a watch that missed nothing for this Job.
struct ProcessRecord {
  bool known = false;   // false: the record may be incomplete (then no conclusion is drawn)
  bool exited = false;  // the process ran and ended, by itself or stopped
  int exitCode = -1;    // when exited
  // The record shows the stop requested no later than the end, at the records' precision (whole
  // seconds for pods): whether the process ended by itself cannot be told.
  bool stopRequestedBeforeEnd = false;
  std::string detail;  // what the record says, for messages (pod names, times)
  // The backend itself lost the exit status: Docker recorded exit code 255 at its own restart
  // (containerd's code for a task whose status it lost; docs/operations.md "dockerd was
  // restarted"). Then nobody can know the true result, and the Job must not claim one.
  bool exitStatusLost = false;
};

// What the round saw of one Job at its end (after the settle phase).
struct JobFacts {
  std::string uid;  // "" when the round could not create the Job
  // The Job in the API.
  bool exists = false;
  bool deleting = false;  // metadata.deletionTimestamp set
  std::vector<std::string> finalizers;
  std::string succeeded;        // "<status>/<reason>" of the Succeeded condition, "" when absent
  std::string message;          // its message
  std::string completionTime;   // status.completionTime
  std::optional<int> exitCode;  // status.result.exitCode
  std::vector<std::string> references;  // status.execution.references[].id
  bool scheduled = false;               // Scheduled=True: an execution was created
  // What the round did.
  bool acted = false;          // cancelled or deleted (kinds kCancel, kCancelRace, kDelete)
  std::string stateWhenActed;  // the Job's derived state then: Resolving, Scheduling, Running...
  int resultUnknownPolls = 0;  // polls that saw Succeeded=Unknown/ResultUnknown
  // The backend.
  int executionsCreated = -1;           // creations for this UID ever; -1 unknown
  std::vector<std::string> createdIds;  // Docker: the containers created (ids)
  int executionsLeft = 0;               // containers / batch Jobs with the UID label now
  int activeLeft = 0;                   // of them (or their pods) still running
  ProcessRecord process;
};

struct KillRecord {
  std::chrono::milliseconds at{0};
  int replica = 0;
  int pid = 0;
  std::string role;  // "leader", "standby", "unknown" (the Lease could not be read)
};

struct ExitRecord {
  std::chrono::milliseconds at{0};
  int replica = 0;
  int pid = 0;
  bool killedByRound = false;
  int exitCode = -1;  // when it exited by itself
  int signal = 0;     // when a signal ended it
};

struct RestartRecord {
  std::string what;  // "dockerd", "kube-apiserver"
  std::chrono::milliseconds at{0};
  std::chrono::milliseconds downtime{0};  // from the stop until the service answered again
  bool ok = false;
  std::string error;
  // What the restart itself repaired or left, as its script said (hack/dockerd.sh: the starts
  // that the crash interrupted, cleared as the runbook says).
  std::vector<std::string> repairs;
  // When it was stopped and answered again on the wall clock, to compare with the backend's own
  // records.
  std::chrono::system_clock::time_point stoppedAt{}, answeredAt{};
};

// What happened to the round itself, apart from the Jobs.
struct RoundLog {
  std::string ns;
  std::chrono::milliseconds duration{0};
  std::vector<KillRecord> kills;
  std::vector<ExitRecord> exits;
  std::vector<RestartRecord> restarts;
  int replicaStarts = 0;
  bool settled = false;  // every Job finished (or was gone) before the settle deadline
  // Watches that had to start over without their history (the facts of some Jobs may be
  // incomplete; those are then marked unknown rather than trusted).
  int podWatchGaps = 0;
  int dockerEventReconnects = 0;
  int batchCreateConflicts = 0;  // batch Job creations refused as AlreadyExists (repeats)
  // After the verdict's Jobs: the final deletion of every remaining Job through the controller.
  std::vector<std::string> cleanupStuck;      // Jobs whose finalizer the controller did not remove
  std::vector<std::string> cleanupLeftovers;  // backend objects left after that deletion
  std::vector<std::string> setupProblems;     // anything else that makes the round unusable
};

// The results a Job may end with: "<status>/<reason>" and the exit code when it is known.
struct Truth {
  std::vector<std::string> acceptable;  // empty for kDelete: the Job must be gone
  std::optional<int> exitCode;
  std::string why;  // how it was derived, for messages
};

// kExit0 True/Completed 0, kExit3 False/ProcessFailed 3, kDeadline False/DeadlineExceeded,
// kCancel False/Cancelled; kCancelRace from the backend's record: True/Completed 0 when the
// process exited 0 before the stop was requested, False/Cancelled when it never ran or was
// stopped (exit code not 0), either when it exited 0 while being stopped or the record is
// unknown.
Truth TruthOf(const JobPlan& job, const ProcessRecord& process);

// Reasons a Job of this harness can only get from a broken backend or a lost execution.
bool IsOutageReason(const std::string& reason);

struct Verdict {
  std::vector<std::string> violations;
  // Final outcomes: succeeded, failed-by-exit, deadline, cancelled, deleted, failed-by-outage,
  // unfinished, other.
  std::map<std::string, int> outcomes;
  std::map<int, int> executionsPerUid;  // executions created -> Jobs (-1: unknown)
  int exitStatusLost = 0;               // Jobs whose backend lost the exit status (ProcessRecord)
  // kCancelRace: exited 0 before the stop request, stopped, exited 0 while being stopped (either
  // result stands), no complete record.
  int raceWonByProcess = 0, raceWonByCancel = 0, raceTied = 0, raceUnverified = 0;
  int actedBeforeStart = 0, actedWhileRunning = 0;
  int sawResultUnknown = 0;
  bool ok() const { return violations.empty(); }
};

// `facts` is parallel to plan.jobs.
Verdict Judge(const Plan& plan, const std::vector<JobFacts>& facts, const RoundLog& log);

// The round in a few lines: seed and how to replay it, Jobs, kills, restarts, every count and
// every violation.
std::string FormatReport(const Plan& plan, const std::vector<JobFacts>& facts, const RoundLog& log,
                         const Verdict& verdict);

}  // namespace ayatori::chaos
