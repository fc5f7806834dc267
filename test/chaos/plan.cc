#include "test/chaos/plan.h"

#include <algorithm>
#include <array>
#include <random>

namespace ayatori::chaos {

using std::chrono::milliseconds;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

const char* BackendName(Backend b) { return b == Backend::kDocker ? "docker" : "kubernetes"; }

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kExit0:
      return "exit0";
    case Kind::kExit3:
      return "exit3";
    case Kind::kDeadline:
      return "deadline";
    case Kind::kCancel:
      return "cancel";
    case Kind::kCancelRace:
      return "cancel-race";
    case Kind::kDelete:
      return "delete";
  }
  return "?";
}

const char* DisruptionName(Disruption::Type t) {
  switch (t) {
    case Disruption::Type::kKillReplica:
      return "SIGKILL replica";
    case Disruption::Type::kRestartDockerd:
      return "restart dockerd";
    case Disruption::Type::kRestartApiserver:
      return "restart kube-apiserver";
  }
  return "?";
}

namespace {

// std::uniform_int_distribution's algorithm is left to the library; this one is fixed, so a
// seed means the same plan wherever it is replayed. (The modulo bias is irrelevant here.)
class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  // In [lo, hi].
  int64_t Uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(engine_() % static_cast<uint64_t>(hi - lo + 1));
  }
  milliseconds Millis(milliseconds lo, milliseconds hi) {
    return milliseconds(Uniform(lo.count(), hi.count()));
  }
  bool OneIn(int n) { return Uniform(0, n - 1) == 0; }

 private:
  std::mt19937_64 engine_;
};

constexpr std::array<Kind, 6> kKinds = {Kind::kExit0,  Kind::kExit3,      Kind::kDeadline,
                                        Kind::kCancel, Kind::kCancelRace, Kind::kDelete};

JobPlan MakeJob(Random& r, Backend backend, Kind kind) {
  JobPlan j;
  j.backend = backend;
  j.kind = kind;
  switch (kind) {
    case Kind::kExit0:
    case Kind::kExit3:
      j.runSeconds = static_cast<int>(r.Uniform(2, 8));
      j.exitCode = kind == Kind::kExit3 ? 3 : 0;
      break;
    case Kind::kDeadline:
      j.activeDeadlineSeconds = static_cast<int>(r.Uniform(2, 5));
      break;
    case Kind::kCancelRace:
      // The round sees the start up to about a second late (it polls every second, the status
      // follows the start): acting 0 to runSeconds after that splits the wins between the
      // process and the cancel.
      j.runSeconds = static_cast<int>(r.Uniform(2, 5));
      j.actAfter = r.Millis(0ms, milliseconds(j.runSeconds * 1000));
      break;
    case Kind::kCancel:
    case Kind::kDelete:
      j.actEarly = r.OneIn(4);
      j.actAfter = j.actEarly ? r.Millis(0ms, 2000ms) : r.Millis(0ms, 5000ms);
      break;
  }
  return j;
}

}  // namespace

Plan MakePlan(int jobs, uint64_t seed) {
  jobs = std::max(jobs, 1);
  Random r(seed);
  Plan plan;
  plan.seed = seed;
  plan.creationWindow = std::max<milliseconds>(20s, milliseconds(750) * jobs);
  plan.chaosWindow = plan.creationWindow + 10s;

  // Kinds in turn per backend, then the creation order shuffled.
  std::vector<JobPlan> planned;
  int perBackend[2] = {0, 0};
  for (int i = 0; i < jobs; ++i) {
    Backend b = i % 2 == 0 ? Backend::kDocker : Backend::kKubernetes;
    int& n = perBackend[b == Backend::kDocker ? 0 : 1];
    planned.push_back(MakeJob(r, b, kKinds[static_cast<size_t>(n) % kKinds.size()]));
    ++n;
  }
  for (size_t i = planned.size(); i > 1; --i) {
    std::swap(planned[i - 1],
              planned[static_cast<size_t>(r.Uniform(0, static_cast<int64_t>(i) - 1))]);
  }
  const milliseconds slot = plan.creationWindow / jobs;
  for (int i = 0; i < jobs; ++i) {
    JobPlan& j = planned[static_cast<size_t>(i)];
    j.createAt = slot * i + r.Millis(0ms, slot - 1ms);
    char name[64];
    snprintf(name, sizeof(name), "%c-%02d-%s", j.backend == Backend::kDocker ? 'd' : 'k', i,
             KindName(j.kind));
    j.name = name;
  }
  plan.jobs = std::move(planned);

  const milliseconds w = plan.creationWindow;
  Disruption dockerd, apiserver;
  dockerd.type = Disruption::Type::kRestartDockerd;
  dockerd.at = r.Millis(w * 15 / 100, w * 40 / 100);
  dockerd.downtime = r.Millis(3s, 8s);
  apiserver.type = Disruption::Type::kRestartApiserver;
  apiserver.at = r.Millis(w * 50 / 100, w * 80 / 100);
  apiserver.downtime = r.Millis(5s, 10s);
  apiserver.at = std::max(apiserver.at, dockerd.at + dockerd.downtime + 3s);
  // Kills go on for a while after the outage (in which there are none).
  plan.chaosWindow = std::max(plan.chaosWindow, apiserver.at + apiserver.downtime + 15s);
  plan.disruptions = {dockerd, apiserver};
  for (milliseconds t = r.Millis(2s, 6s); t < plan.chaosWindow; t += r.Millis(4s, 12s)) {
    // No kill from shortly before the apiserver goes down until it is back (it takes a few
    // seconds to start): a leader must be there (a killed one is replaced within about 5 s) to
    // lose its Lease to the outage itself.
    if (t + kLeaderSettles > apiserver.at && t < apiserver.at + apiserver.downtime + 3s) continue;
    Disruption kill;  // kKillReplica
    kill.at = t;
    kill.leader = !r.OneIn(3);
    kill.replica = static_cast<int>(r.Uniform(0, 1));
    plan.disruptions.push_back(kill);
  }
  // At least two kills (a short round may have drawn fewer): after the apiserver is back.
  for (int k = 0; plan.disruptions.size() < 4; ++k) {
    Disruption kill;
    kill.at = apiserver.at + apiserver.downtime + 3s + 5s * k;
    kill.leader = true;
    plan.disruptions.push_back(kill);
  }
  std::stable_sort(plan.disruptions.begin(), plan.disruptions.end(),
                   [](const Disruption& a, const Disruption& b) { return a.at < b.at; });
  return plan;
}

uint64_t RandomSeed() {
  std::random_device rd;
  return 1 + (static_cast<uint64_t>(rd()) << 32 | rd()) % 999999999ULL;  // short to type, never 0
}

}  // namespace ayatori::chaos
