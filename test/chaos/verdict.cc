#include "test/chaos/verdict.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace ayatori::chaos {

namespace {

constexpr const char* kSucceeded = "True/Completed";
constexpr const char* kProcessFailed = "False/ProcessFailed";
constexpr const char* kDeadlineExceeded = "False/DeadlineExceeded";
constexpr const char* kCancelled = "False/Cancelled";

// "True/Completed" -> {"True", "Completed"}.
std::pair<std::string, std::string> Split(const std::string& summary) {
  auto slash = summary.find('/');
  if (slash == std::string::npos) return {summary, ""};
  return {summary.substr(0, slash), summary.substr(slash + 1)};
}

bool Finished(const std::string& summary) {
  auto status = Split(summary).first;
  return status == "True" || status == "False";
}

std::string Seconds(std::chrono::milliseconds d) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.1fs", static_cast<double>(d.count()) / 1000.0);
  return buf;
}

std::string Join(const std::vector<std::string>& items, const char* separator) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : separator) + i;
  return s;
}

std::string OutcomeOf(const std::string& summary) {
  if (!Finished(summary)) return "unfinished";
  const std::string reason = Split(summary).second;
  if (summary == kSucceeded) return "succeeded";
  if (reason == "ProcessFailed") return "failed-by-exit";
  if (reason == "DeadlineExceeded") return "deadline";
  if (reason == "Cancelled") return "cancelled";
  if (IsOutageReason(reason)) return "failed-by-outage";
  return "other";
}

std::string Label(const JobPlan& p, const JobFacts& f) {
  std::string s = p.name + " (" + BackendName(p.backend) + ", " + KindName(p.kind);
  if (!f.uid.empty()) s += ", uid " + f.uid;
  return s + ")";
}

std::string ExitText(const std::optional<int>& code) {
  return code ? std::to_string(*code) : "none";
}

}  // namespace

Truth TruthOf(const JobPlan& job, const ProcessRecord& process) {
  switch (job.kind) {
    case Kind::kExit0:
      return {{kSucceeded}, 0, "the task exits 0"};
    case Kind::kExit3:
      return {{kProcessFailed}, 3, "the task exits 3"};
    case Kind::kDeadline:
      return {{kDeadlineExceeded}, std::nullopt, "the task outlives activeDeadlineSeconds"};
    case Kind::kCancel:
      return {{kCancelled}, std::nullopt, "the task runs until it is stopped"};
    case Kind::kDelete:
      return {{}, std::nullopt, "the Job was deleted"};
    case Kind::kCancelRace:
      if (!process.known) {
        return {{kSucceeded, kCancelled},
                std::nullopt,
                "cancelled about when it exits 0; the backend's record is incomplete"};
      }
      if (process.exited && process.exitCode == 0 && !process.stopRequestedBeforeEnd) {
        return {{kSucceeded}, 0, "the backend recorded that the process exited 0 before the stop"};
      }
      if (process.exited && process.exitCode == 0) {
        return {{kSucceeded, kCancelled},
                std::nullopt,
                "the backend recorded that the process exited 0 while it was being stopped"};
      }
      return {{kCancelled},
              std::nullopt,
              process.exited ? "the backend recorded that the process was stopped (exit code " +
                                   std::to_string(process.exitCode) + ")"
                             : "the backend recorded that the process never ran"};
  }
  return {};
}

bool IsOutageReason(const std::string& reason) {
  return !reason.empty() && reason != "Completed" && reason != "ProcessFailed" &&
         reason != "DeadlineExceeded" && reason != "Cancelled";
}

Verdict Judge(const Plan& plan, const std::vector<JobFacts>& facts, const RoundLog& log) {
  Verdict v;
  auto violation = [&v](std::string text) { v.violations.push_back(std::move(text)); };

  for (const auto& p : log.setupProblems) violation("round: " + p);
  // The round must have done what it set out to do, or it proves nothing.
  int plannedKills = 0;
  for (const auto& d : plan.disruptions) {
    if (d.type == Disruption::Type::kKillReplica) {
      ++plannedKills;
      continue;
    }
    const std::string what =
        d.type == Disruption::Type::kRestartDockerd ? "dockerd" : "kube-apiserver";
    auto r = std::find_if(log.restarts.begin(), log.restarts.end(),
                          [&](const RestartRecord& x) { return x.what == what; });
    if (r == log.restarts.end()) {
      violation("round: " + what + " was never restarted");
    } else if (!r->ok) {
      violation("round: restarting " + what + " failed: " + r->error);
    }
  }
  if (plannedKills > 0 && log.kills.empty()) violation("round: no replica was ever killed");
  for (const auto& e : log.exits) {
    if (!e.killedByRound && e.signal != 0) {
      violation("replica " + std::to_string(e.replica) + " (pid " + std::to_string(e.pid) +
                ") died of signal " + std::to_string(e.signal) + " at " + Seconds(e.at) +
                " without being killed by the round");
    }
  }
  for (const auto& j : log.cleanupStuck) {
    violation("cleanup: " + j + " still exists after its deletion: its finalizer was not removed");
  }
  for (const auto& o : log.cleanupLeftovers) violation("cleanup: left on the backend: " + o);

  if (facts.size() != plan.jobs.size()) {
    violation("round: facts for " + std::to_string(facts.size()) + " of " +
              std::to_string(plan.jobs.size()) + " Jobs");
    return v;
  }
  for (size_t i = 0; i < facts.size(); ++i) {
    const JobPlan& p = plan.jobs[i];
    const JobFacts& f = facts[i];
    const std::string label = Label(p, f);
    if (f.uid.empty()) {
      violation(label + ": the round could not create it");
      continue;
    }
    v.executionsPerUid[f.executionsCreated]++;
    if (f.resultUnknownPolls > 0) ++v.sawResultUnknown;
    if (f.acted) (f.stateWhenActed == "Running" ? v.actedWhileRunning : v.actedBeforeStart)++;
    if (f.executionsCreated > 1) {
      violation(label + ": " + std::to_string(f.executionsCreated) +
                " backend executions were created for one Job UID (" + Join(f.createdIds, ", ") +
                ")");
    }
    const bool actionPlanned =
        p.kind == Kind::kCancel || p.kind == Kind::kCancelRace || p.kind == Kind::kDelete;
    if (actionPlanned && !f.acted) {
      violation(label + ": the round never got to " +
                (p.kind == Kind::kDelete ? "delete" : "cancel") + " it");
    }

    if (p.kind == Kind::kDelete) {
      if (f.exists) {
        v.outcomes["unfinished"]++;
        violation(label + ": deleted (while " + f.stateWhenActed +
                  ") but still in the API: deletionTimestamp " + (f.deleting ? "set" : "unset") +
                  ", finalizers [" + Join(f.finalizers, ", ") + "], Succeeded " + f.succeeded);
      } else {
        v.outcomes["deleted"]++;
      }
      if (f.executionsLeft > 0) {
        violation(label + ": deleted, yet " + std::to_string(f.executionsLeft) +
                  " backend execution(s) with its UID label remain");
      }
      continue;
    }

    if (!f.exists) {
      v.outcomes["unfinished"]++;
      violation(label + ": no longer in the API although nobody deleted it");
      continue;
    }
    // The backend lost the exit status (ProcessRecord::exitStatusLost) and the Job says so.
    const bool lostByBackend = f.process.exitStatusLost && f.succeeded == "Unknown/ResultUnknown";
    const std::string outcome = lostByBackend ? "result-lost-by-backend" : OutcomeOf(f.succeeded);
    v.outcomes[outcome]++;
    const Truth truth = TruthOf(p, f.process);
    if (p.kind == Kind::kCancelRace) {
      if (!f.process.known) {
        ++v.raceUnverified;
      } else if (f.process.exited && f.process.exitCode == 0) {
        ++(f.process.stopRequestedBeforeEnd ? v.raceTied : v.raceWonByProcess);
      } else {
        ++v.raceWonByCancel;
      }
    }
    const std::string reason = Split(f.succeeded).second;
    if (f.process.exitStatusLost) {
      // Its true result is unknown to everyone: the Job must say so, and claim no result.
      ++v.exitStatusLost;
      if (!lostByBackend) {
        violation(label + ": the backend lost the task's exit status (" + f.process.detail +
                  "), but the Job says " + (f.succeeded.empty() ? "nothing" : f.succeeded) +
                  " exit code " + ExitText(f.exitCode) + " \"" + f.message +
                  "\" instead of Unknown/ResultUnknown");
      }
      continue;
    }
    if (!Finished(f.succeeded)) {
      violation(label + ": not finished at the end of the round: Succeeded " +
                (f.succeeded.empty() ? "absent" : f.succeeded) +
                (reason == "ResultUnknown" ? " (stuck in ResultUnknown)" : "") + " \"" + f.message +
                "\"" + (f.process.detail.empty() ? "" : "; backend record: " + f.process.detail));
      continue;
    }
    if (std::find(truth.acceptable.begin(), truth.acceptable.end(), f.succeeded) ==
        truth.acceptable.end()) {
      violation(label + ": ended " + f.succeeded + " exit code " + ExitText(f.exitCode) + " \"" +
                f.message + "\" at " + f.completionTime + ", but its true result is " +
                Join(truth.acceptable, " or ") + " (" + truth.why + ")" +
                (f.process.detail.empty() ? "" : "; backend record: " + f.process.detail) +
                (IsOutageReason(reason) ? ": a Job failed by an outage" : ""));
    } else if (truth.exitCode && f.succeeded != kCancelled && f.exitCode != truth.exitCode) {
      violation(label + ": ended " + f.succeeded + " with exit code " + ExitText(f.exitCode) +
                ", but the process exited " + std::to_string(*truth.exitCode) + " (" + truth.why +
                ")");
    }
    if ((p.kind == Kind::kExit0 || p.kind == Kind::kExit3) && f.process.known && f.process.exited &&
        f.process.exitCode != p.exitCode) {
      violation(label + ": the backend recorded exit code " + std::to_string(f.process.exitCode) +
                " for a task that exits " + std::to_string(p.exitCode) +
                " (the execution was stopped or replaced)");
    }
    const bool needsExecution =
        reason == "Completed" || reason == "ProcessFailed" || reason == "DeadlineExceeded";
    if (f.executionsCreated == 0 && (f.scheduled || !f.references.empty() || needsExecution)) {
      violation(label + ": the status says an execution ran (Scheduled " +
                (f.scheduled ? "True" : "not True") + ", references [" + Join(f.references, ", ") +
                "], " + f.succeeded + ") but the backend never created one");
    }
    if (p.backend == Backend::kDocker && f.createdIds.size() == 1 && !f.references.empty() &&
        std::find(f.references.begin(), f.references.end(), f.createdIds[0]) ==
            f.references.end()) {
      violation(label + ": status.execution.references [" + Join(f.references, ", ") +
                "] do not name the container that was created (" + f.createdIds[0] + ")");
    }
    if (f.activeLeft > 0) {
      violation(label + ": finished " + f.succeeded + ", yet its execution still runs on the " +
                BackendName(p.backend) + " backend");
    }
  }
  return v;
}

std::string FormatReport(const Plan& plan, const std::vector<JobFacts>& facts, const RoundLog& log,
                         const Verdict& verdict) {
  std::ostringstream out;
  const size_t n = plan.jobs.size();
  out << "chaos round: seed " << plan.seed << " (replay: make chaos CHAOS_SEED=" << plan.seed
      << " CHAOS_JOBS=" << n << "), namespace " << log.ns << ", " << Seconds(log.duration)
      << " from the first leader (the times below count from then)\n";

  std::map<std::string, int> kinds;
  int docker = 0;
  for (const auto& j : plan.jobs) {
    kinds[KindName(j.kind)]++;
    if (j.backend == Backend::kDocker) ++docker;
  }
  out << "jobs: " << n << " (docker " << docker << ", kubernetes " << n - docker << "):";
  for (const auto& [k, c] : kinds) out << " " << k << " " << c;
  out << "\n";

  std::map<std::string, int> roles;
  for (const auto& k : log.kills) roles[k.role]++;
  out << "kills: " << log.kills.size() << " SIGKILLs of leader-elected replicas (leader "
      << roles["leader"] << ", standby " << roles["standby"] << ", unknown " << roles["unknown"]
      << ")";
  for (const auto& k : log.kills) {
    out << (&k == &log.kills.front() ? ": " : ", ") << Seconds(k.at) << " replica " << k.replica
        << " " << k.role;
  }
  out << "\n";
  int killed = 0, byThemselves = 0;
  std::map<std::string, int> how;
  for (const auto& e : log.exits) {
    if (e.killedByRound) {
      ++killed;
      continue;
    }
    ++byThemselves;
    how[e.signal != 0 ? "signal " + std::to_string(e.signal)
                      : "exit code " + std::to_string(e.exitCode)]++;
  }
  out << "replica exits: " << log.exits.size() << " (" << killed << " killed by the round, "
      << byThemselves << " by themselves";
  for (const auto& [h, c] : how) out << "; " << h << " x" << c;
  out << "), replica starts: " << log.replicaStarts << "\n";

  out << "restarts: " << log.restarts.size();
  for (const auto& r : log.restarts) {
    out << (&r == &log.restarts.front() ? ": " : ", ") << r.what << " at " << Seconds(r.at)
        << " down " << Seconds(r.downtime) << (r.ok ? "" : " FAILED: " + r.error);
    for (const auto& repair : r.repairs) out << " (" << repair << ")";
  }
  out << "\n";

  out << "outcomes:";
  for (const char* o : {"succeeded", "failed-by-exit", "deadline", "cancelled", "deleted",
                        "failed-by-outage", "result-lost-by-backend", "unfinished", "other"}) {
    auto it = verdict.outcomes.find(o);
    out << " " << o << " " << (it == verdict.outcomes.end() ? 0 : it->second);
  }
  out << "\n";
  out << "cancel races: won by the process " << verdict.raceWonByProcess << ", by the cancel "
      << verdict.raceWonByCancel << ", exit 0 while being stopped " << verdict.raceTied
      << ", unverified " << verdict.raceUnverified << "; cancels and deletes while running "
      << verdict.actedWhileRunning << ", before the process started " << verdict.actedBeforeStart
      << "\n";
  out << "executions per Job UID:";
  const char* separator = " ";
  for (const auto& [e, c] : verdict.executionsPerUid) {
    out << separator << (e < 0 ? std::string("unknown") : std::to_string(e)) << " -> " << c
        << (c == 1 ? " Job" : " Jobs");
    separator = ", ";
  }
  out << "\n";
  out << "ResultUnknown seen on " << verdict.sawResultUnknown << " Jobs; exit status lost by "
      << "the backend " << verdict.exitStatusLost << "; pod watch gaps " << log.podWatchGaps
      << "; docker event stream reconnects " << log.dockerEventReconnects
      << "; batch Job creations refused as AlreadyExists " << log.batchCreateConflicts << "\n";
  out << "settled: " << (log.settled ? "yes" : "no") << "; cleanup: "
      << (log.cleanupStuck.empty() && log.cleanupLeftovers.empty()
              ? "every Job deleted through the controller, nothing left"
              : "see violations")
      << "\n";

  out << "\n  job                 uid       result                  exit  execs  acted\n";
  for (size_t i = 0; i < n && i < facts.size(); ++i) {
    const auto& p = plan.jobs[i];
    const auto& f = facts[i];
    const std::string result =
        !f.exists ? (p.kind == Kind::kDelete ? "(deleted)" : "(gone)") : f.succeeded;
    const std::string executions =
        f.executionsCreated < 0 ? "?" : std::to_string(f.executionsCreated);
    const std::string acted = f.acted ? "while " + f.stateWhenActed : "";
    char line[256];
    snprintf(line, sizeof(line), "  %-19s %-9s %-23s %-5s %-6s %s\n", p.name.c_str(),
             f.uid.substr(0, 8).c_str(), result.c_str(), ExitText(f.exitCode).c_str(),
             executions.c_str(), acted.c_str());
    out << line;
  }
  out << "\n";
  if (verdict.ok()) {
    out << "verdict: PASS (no violation)\n";
  } else {
    out << "verdict: FAIL, " << verdict.violations.size() << " violation(s):\n";
    for (const auto& s : verdict.violations) out << "  - " << s << "\n";
  }
  return out.str();
}

}  // namespace ayatori::chaos
