#include "manager/manager.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <thread>

#include "ayatori/clock.h"
#include "obs/log.h"

namespace ayatori::manager {

StopRequests::~StopRequests() {
  if (signalFd_ >= 0) close(signalFd_);
  if (eventFd_ >= 0) close(eventFd_);
}

Status StopRequests::Open() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signalFd_ = signalfd(-1, &signals, SFD_CLOEXEC);
  eventFd_ = eventfd(0, EFD_CLOEXEC);
  if (signalFd_ < 0 || eventFd_ < 0) {
    return {StatusCode::kInternal, std::string("signalfd/eventfd: ") + std::strerror(errno)};
  }
  return Status::Ok();
}

void StopRequests::Request(int exitCode, const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    if (!requested_) {
      requested_ = true;
      exitCode_ = exitCode;
      reason_ = reason;
    }
  }
  uint64_t one = 1;
  [[maybe_unused]] auto n = write(eventFd_, &one, sizeof(one));
}

int StopRequests::Wait(std::string* reason) {
  std::array<pollfd, 2> fds{pollfd{signalFd_, POLLIN, 0}, pollfd{eventFd_, POLLIN, 0}};
  while (poll(fds.data(), fds.size(), -1) < 0) {
    if (errno != EINTR) {
      *reason = std::string("poll: ") + std::strerror(errno);
      return 1;
    }
  }
  if (fds[1].revents != 0) {
    std::lock_guard lock(mu_);
    *reason = reason_;
    return exitCode_;
  }
  signalfd_siginfo info{};
  [[maybe_unused]] auto n = read(signalFd_, &info, sizeof(info));
  *reason = std::string("signal ") + sigabbrev_np(static_cast<int>(info.ssi_signo));
  return kExitStopped;
}

namespace {

// Blocks until `stop` is requested.
void WaitUntilStopped(const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait(lock, stop, [] { return false; });
}

}  // namespace

StatusOr<std::unique_ptr<Manager>> Manager::New(ManagerOptions options) {
  if (!options.healthAddress.empty() && options.metrics == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "manager: a health address needs a metrics registry");
  }
  if (!options.exitNow) options.exitNow = [](int exitCode) { _exit(exitCode); };
  std::unique_ptr<Manager> manager(new Manager(std::move(options)));
  // Before any thread starts: the stop signals are then blocked in every thread.
  if (Status s = manager->stopRequests_.Open(); !s.ok()) return s;
  return manager;
}

Manager::Manager(ManagerOptions options) : options_(std::move(options)) {}

Manager::~Manager() = default;

Status Manager::EnableLeaderElection(kube::LeaderElectionConfig config, KubeClient& client) {
  if (Status s = kube::LeaderElector::Validate(config); !s.ok()) return s;
  leaderElection_ = std::move(config);
  leaseClient_ = &client;
  leading_ = false;
  return Status::Ok();
}

void Manager::Add(Runnable& runnable, RunnableOptions options) {
  entries_.push_back({&runnable, options});
}

void Manager::RequestStop(int exitCode, const std::string& reason) {
  stopRequests_.Request(exitCode, reason);
}

std::vector<Manager::Entry> Manager::Entries(bool needsLeadership) const {
  std::vector<Entry> selected;
  for (const Entry& e : entries_) {
    if (e.options.needsLeadership == needsLeadership) selected.push_back(e);
  }
  return selected;
}

bool Manager::StartAll(const std::vector<Entry>& entries, const std::stop_token& stop,
                       std::vector<Entry>* started) {
  for (const Entry& e : entries) {
    started->push_back(e);
    Status s = e.runnable->Start(stop);
    if (s.ok()) continue;
    // Cancelled: the process or the term is ending anyway, which is no failure of its own.
    if (s.code() != StatusCode::kCancelled) {
      const std::string name = e.runnable->Name();
      obs::Error(name + " did not start; exiting",
                 {{"error", s.ToString()}, {"exitCode", e.options.exitCodeOnFailure}});
      RequestStop(e.options.exitCodeOnFailure, "the " + name + " did not start");
    }
    return false;
  }
  return true;
}

void Manager::StopAll(std::vector<Entry>* started) {
  for (auto it = started->rbegin(); it != started->rend(); ++it) it->runnable->Stop();
  started->clear();
}

void Manager::Work(const std::stop_token& stop) {
  std::vector<Entry> started;
  if (StartAll(Entries(/*needsLeadership=*/true), stop, &started)) WaitUntilStopped(stop);
  StopAll(&started);
}

void Manager::OnStoppedLeading() {
  leading_ = false;
  if (stopping_) return;  // Run stops the work, then the elector releases the Lease
  // Lost: another replica may lead already. No further write may come from this one, and
  // stopping the work in order could wait on a hung reconcile, so hand out no more work and
  // end the process now; the Deployment restarts it as a standby.
  for (const Entry& e : Entries(/*needsLeadership=*/true)) e.runnable->Abandon();
  obs::Error("lost the lease; exiting", {{"exitCode", kExitLostLease}});
  options_.exitNow(kExitLostLease);
}

bool Manager::Ready() const {
  // A standby is ready (it is where it should be); a replica that works is ready once every
  // runnable can work.
  if (leaderElection_ && !leading_) return true;
  for (const Entry& e : entries_) {
    if (!e.runnable->Ready()) return false;
  }
  return true;
}

Status Manager::StartHealthServer() {
  if (options_.healthAddress.empty()) return Status::Ok();
  health_.Handle("/healthz", [] { return obs::HttpResponse{200, "text/plain", "ok\n"}; });
  health_.Handle("/readyz", [this] {
    return Ready() ? obs::HttpResponse{200, "text/plain", "ok\n"}
                   : obs::HttpResponse{503, "text/plain", "informers not synced\n"};
  });
  health_.Handle(
      "/metrics",
      [this] {
        obs::Registry& metrics = *options_.metrics;
        metrics.GetGauge(obs::metrics::kLeader).Set(leading_ ? 1 : 0);
        return obs::HttpResponse{200, "text/plain; version=0.0.4", metrics.Render()};
      },
      obs::Access::kLoopbackOnly);
  if (Status s = health_.Start(options_.healthAddress); !s.ok()) return s;
  healthPort_ = health_.port();
  obs::Info("serving metrics and health",
            {{"address", options_.healthAddress}, {"port", health_.port()}});
  return Status::Ok();
}

std::jthread Manager::StartElector() {
  kube::LeaderElectionConfig le = *leaderElection_;
  // The callbacks run on the elector's threads until Run joins it: they capture the Manager,
  // which outlives Run, never `le` itself.
  le.onStartedLeading = [this, identity = le.identity](const std::stop_token& term) {
    leading_ = true;
    obs::Info("became leader", {{"identity", identity}});
    Work(term);
  };
  le.onStoppedLeading = [this] { OnStoppedLeading(); };
  return std::jthread([client = leaseClient_, le = std::move(le)](const std::stop_token& stop) {
    kube::LeaderElector elector(*client, SystemClock::Instance(), le);
    elector.Run(stop);
  });
}

int Manager::Run() {
  std::vector<Entry> everyReplica;
  std::jthread work;
  if (Status s = StartHealthServer(); !s.ok()) {
    obs::Error("health and metrics server did not start; exiting",
               {{"error", s.ToString()}, {"exitCode", kExitUsage}});
    RequestStop(kExitUsage, "the health and metrics server did not start");
  } else if (StartAll(Entries(/*needsLeadership=*/false), {}, &everyReplica)) {
    // With leader election, the elector's thread; it starts a term's work on a thread of its
    // own, so that renewals go on while the leader runnables start.
    work = leaderElection_ ? StartElector()
                           : std::jthread([this](const std::stop_token& stop) { Work(stop); });
  }

  std::string reason;
  int exitCode = stopRequests_.Wait(&reason);
  obs::Info("shutting down", {{"reason", reason}});
  stopping_ = true;
  if (work.joinable()) {
    // Ends the term: the leader runnables stop, then the Lease is released (a standby takes it
    // at its next retry).
    work.request_stop();
    work.join();
  }
  StopAll(&everyReplica);
  health_.Stop();
  obs::Info("stopped", {{"exitCode", exitCode}});
  return exitCode;
}

}  // namespace ayatori::manager
