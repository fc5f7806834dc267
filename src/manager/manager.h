// The Manager of one controller process, in the shape of controller-runtime's manager
// (sigs.k8s.io/controller-runtime/pkg/manager): it owns the stop requests (SIGTERM, SIGINT, or a
// part asking the process to end), the health and metrics server, leader election and the order
// in which the parts of the process start and stop. The parts are Runnables added before Run;
// each either runs on every replica (the log API, the Event recorder's flush) or only while this
// replica leads (the Job controller, whose Start starts the informers and the adapters).
//
// Start order (Run):
//   1. the health and metrics server (/healthz, /readyz, /metrics), when an address is set;
//   2. the runnables that run on every replica, in the order they were added;
//   3. the work: with leader election, the elector campaigns and each term starts the leader
//      runnables, in the order they were added, on the term's own thread (renewals go on while
//      they start); without it, a thread starts them at once.
// Stop order (after a signal, a RequestStop, or a runnable that failed to start): the reverse.
//   1. the work: the leader runnables stop in reverse order, then the Lease is released;
//   2. the runnables of every replica, in reverse order;
//   3. the health and metrics server.
// A runnable whose Start failed is stopped too (it may have started part of its work), and no
// runnable after it starts. A lost Lease is not a stop: the leader runnables are abandoned
// (Runnable::Abandon, no waiting on anything) and the process ends at once with kExitLostLease,
// because another replica may already lead (docs/operations.md, "Leader election").
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "ayatori/kube_client.h"
#include "ayatori/status.h"
#include "kube/leader_election.h"
#include "obs/http_server.h"
#include "obs/metrics.h"

namespace ayatori::manager {

// Exit codes (docs/operations.md, "Exit codes"). The Deployment restarts the container after
// any of them; the distinct codes say why in `kubectl get pod` and the pod's lastState.
inline constexpr int kExitStopped = 0;    // SIGTERM or SIGINT: work stopped, Lease released
inline constexpr int kExitUsage = 2;      // bad flag, kubeconfig or address; a part did not start
inline constexpr int kExitLostLease = 3;  // another holder, or no renewal within renewDeadline

// A part of the process that the Manager starts and stops.
class Runnable {
 public:
  virtual ~Runnable() = default;
  // For the log ("starting", "stopped", errors).
  virtual std::string Name() const = 0;
  // Starts and returns once started (a server bound, informers synced). `stop` is requested
  // when the process or the term ends meanwhile: Start should then return (kCancelled is not a
  // failure). Any other error stops the process with the exit code the runnable was added with.
  virtual Status Start(const std::stop_token& stop) = 0;
  // Stops; called once for every runnable whose Start was called, whatever it returned.
  virtual void Stop() = 0;
  // For /readyz: false while a started runnable cannot work yet (informers syncing).
  virtual bool Ready() const { return true; }
  // The Lease was lost and the process is about to end: do no further work, at once, without
  // waiting for anything. From the elector's thread.
  virtual void Abandon() {}
};

struct RunnableOptions {
  // Runs only while this replica leads (always, without leader election).
  bool needsLeadership = false;
  // The exit code of the process when Start fails.
  int exitCodeOnFailure = kExitUsage;
};

struct ManagerOptions {
  // "host:port" of /healthz, /readyz and /metrics (port 0 picks one; /metrics answers loopback
  // clients only); empty: no such server.
  std::string healthAddress;
  // Rendered at /metrics, with the ayatori_leader gauge. Required when healthAddress is set.
  obs::Registry* metrics = nullptr;
  // Ends the process after a lost Lease; tests replace it. Default: _exit.
  std::function<void(int exitCode)> exitNow;
};

// SIGTERM and SIGINT (through a signalfd; the signals are blocked in every thread) or a thread
// of this process asking to stop with an exit code (through an eventfd): what ends Run. One
// poll(2), no thread of its own.
class StopRequests {
 public:
  StopRequests() = default;
  ~StopRequests();
  StopRequests(const StopRequests&) = delete;
  StopRequests& operator=(const StopRequests&) = delete;

  // Blocks SIGTERM and SIGINT in this thread and so in every thread started later: call it
  // before any thread starts.
  Status Open();
  // From any thread; the first request's exit code and reason win.
  void Request(int exitCode, const std::string& reason);
  // Waits for a stop signal or a Request(); returns the exit code and sets `reason`.
  int Wait(std::string* reason);

 private:
  int signalFd_ = -1;
  int eventFd_ = -1;
  std::mutex mu_;
  bool requested_ = false;
  int exitCode_ = kExitStopped;
  std::string reason_;
};

class Manager {
 public:
  // Blocks SIGTERM and SIGINT (StopRequests::Open): call it before any thread of the process
  // starts.
  static StatusOr<std::unique_ptr<Manager>> New(ManagerOptions options);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Before Run: the leader runnables run only while this replica holds the Lease `config`
  // names, through `client` (which must outlive Run). The callbacks of `config` are the
  // Manager's. kInvalidArgument when the settings are inconsistent (LeaderElector::Validate).
  Status EnableLeaderElection(kube::LeaderElectionConfig config, KubeClient& client);
  // Before Run. The runnable must outlive the Manager's Run.
  void Add(Runnable& runnable, RunnableOptions options = {});
  // Starts everything (the order in this header), waits for a stop request, stops everything in
  // the reverse order and returns the exit code: kExitStopped after a signal, the code of a
  // RequestStop or of the runnable that failed to start. Once.
  int Run();
  // From any thread: ends Run with `exitCode` (the first request wins).
  void RequestStop(int exitCode, const std::string& reason);
  // The port of the health and metrics server once Run started it (0 before).
  int healthPort() const { return healthPort_.load(); }

 private:
  struct Entry {
    Runnable* runnable = nullptr;
    RunnableOptions options;
  };
  explicit Manager(ManagerOptions options);
  // Starts `entries` in order until one fails; `started` gets each one whose Start was called.
  // False after a failure (a stop was requested with its exit code).
  bool StartAll(const std::vector<Entry>& entries, const std::stop_token& stop,
                std::vector<Entry>* started);
  // The health and metrics server, when options_.healthAddress is set.
  Status StartHealthServer();
  static void StopAll(std::vector<Entry>* started);
  // One term's work (or the whole run's, without leader election): starts the leader runnables,
  // keeps them until `stop`, stops them.
  void Work(const std::stop_token& stop);
  // The elector's thread: each term runs Work.
  std::jthread StartElector();
  void OnStoppedLeading();
  bool Ready() const;
  std::vector<Entry> Entries(bool needsLeadership) const;

  ManagerOptions options_;
  std::optional<kube::LeaderElectionConfig> leaderElection_;
  KubeClient* leaseClient_ = nullptr;
  StopRequests stopRequests_;
  std::vector<Entry> entries_;
  obs::HttpServer health_;
  std::atomic<int> healthPort_{0};
  // Without leader election true from the start; with it, from the start of a term (runnables
  // still starting) until the term ends.
  std::atomic<bool> leading_{true};
  // Set before Run ends a term on purpose (a stop request), so that the end of the term is not
  // taken for a lost Lease.
  std::atomic<bool> stopping_{false};
};

}  // namespace ayatori::manager
