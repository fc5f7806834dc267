// What a chaos round does and when, drawn from one seed: the Jobs (backend, kind, task timing,
// when they are cancelled or deleted) and the disruptions (SIGKILLs of controller replicas, one
// restart of dockerd, one of kube-apiserver). Pure: the same seed and size give the same plan, so
// a failing round is replayed with its seed (test/chaos/runner.h executes a plan).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ayatori::chaos {

enum class Backend { kDocker, kKubernetes };

// What a Job's task does and what the round does to it.
enum class Kind {
  kExit0,       // runs a few seconds, exits 0
  kExit3,       // runs a few seconds, exits 3
  kDeadline,    // runs "forever" with activeDeadlineSeconds of a few seconds
  kCancel,      // runs "forever", cancelled (desiredState=Cancelled) while it runs
  kCancelRace,  // runs a few seconds then exits 0, cancelled at about that moment: either the
                // process or the cancel wins, the backend's record says which
  kDelete,      // runs "forever", the Job is deleted while it runs
};

const char* BackendName(Backend b);
const char* KindName(Kind k);

struct JobPlan {
  std::string name;  // unique in the round's namespace, e.g. "d-07-cancel"
  Backend backend = Backend::kDocker;
  Kind kind = Kind::kExit0;
  std::chrono::milliseconds createAt{0};  // from the start of the round
  // How long the task runs before it exits by itself; 0 for "forever" (kDeadline, kCancel,
  // kDelete: 300 s on Docker, 24 h on the kwok node).
  int runSeconds = 0;
  int exitCode = 0;
  int activeDeadlineSeconds = 0;  // kDeadline only
  // kCancel, kCancelRace, kDelete: when the round acts, counted from the moment it first sees the
  // Job running (status.startTime), or from its creation when `actEarly` (then the Job may not
  // even have an execution yet). A Job that shows no startTime for `kActWithoutStartAfter`
  // is acted on anyway.
  std::chrono::milliseconds actAfter{0};
  bool actEarly = false;
};

struct Disruption {
  enum class Type { kKillReplica, kRestartDockerd, kRestartApiserver };
  Type type = Type::kKillReplica;
  std::chrono::milliseconds at{0};  // from the start of the round
  // kKillReplica: the leader (as the Lease names it) or the standby; replica 0 or 1 when the
  // Lease cannot be read (the apiserver is down).
  bool leader = true;
  int replica = 0;
  std::chrono::milliseconds downtime{0};  // restarts: how long the service stays down
};

const char* DisruptionName(Disruption::Type t);

struct Plan {
  uint64_t seed = 0;
  std::vector<JobPlan> jobs;                    // by createAt
  std::vector<Disruption> disruptions;          // by `at`
  std::chrono::milliseconds creationWindow{0};  // every Job is created within it
  std::chrono::milliseconds chaosWindow{0};     // every disruption starts within it
};

inline constexpr std::chrono::seconds kActWithoutStartAfter{30};
// How long before the apiserver outage no replica is killed: enough for a killed leader to be
// replaced (lease duration 4 s + retry period 1 s + a margin), so the outage meets a leader.
inline constexpr std::chrono::seconds kLeaderSettles{8};

// `jobs` Jobs, half on each backend (Docker gets the odd one), the kinds in turn so that every
// kind appears on both backends once there are 12 Jobs or more; a replica is killed every 4-12 s
// during the chaos window (none from kLeaderSettles before the apiserver outage until 3 s after
// it, at least two),
// the leader two times in three; dockerd and then kube-apiserver each go
// down once (3-8 s, 5-10 s) in it. `jobs` < 1 is treated as 1.
Plan MakePlan(int jobs, uint64_t seed);

// A random seed for a round that was given none.
uint64_t RandomSeed();

}  // namespace ayatori::chaos
