// The parts of ayatori-controller as Runnables of the Manager (manager/manager.h): each wraps
// one component, which keeps its own interface and knows nothing of the Manager.
#pragma once

#include <string>

#include "controller/controller.h"
#include "kube/events.h"
#include "logapi/server.h"
#include "manager/manager.h"

namespace ayatori::manager {

// The Job controller: informers, workers and adapters (JobController::Start starts the adapters
// once the informers synced). Added with needsLeadership: it works only while this replica leads.
class ControllerRunnable final : public Runnable {
 public:
  explicit ControllerRunnable(controller::JobController& controller) : controller_(controller) {}
  std::string Name() const override { return "controller"; }
  Status Start(const std::stop_token& stop) override { return controller_.Start(stop); }
  void Stop() override { controller_.Stop(); }
  bool Ready() const override { return controller_.Ready(); }
  void Abandon() override { controller_.StopTakingWork(); }

 private:
  controller::JobController& controller_;
};

// The Job log API, on every replica (a standby serves logs too: the Service spreads requests
// over all of them).
class LogApiRunnable final : public Runnable {
 public:
  // `address`: the server's bind address, for the log line.
  LogApiRunnable(logapi::LogApiServer& server, std::string address)
      : server_(server), address_(std::move(address)) {}
  std::string Name() const override { return "log API"; }
  Status Start(const std::stop_token& stop) override;
  void Stop() override { server_.Stop(); }

 private:
  logapi::LogApiServer& server_;
  std::string address_;
};

// The Event recorder: nothing to start; at its stop, after the controller's (it is added before
// the leader runnables, so it stops after them), the Events still buffered are written, for 5 s
// at most.
class EventFlushRunnable final : public Runnable {
 public:
  explicit EventFlushRunnable(kube::EventRecorder& events) : events_(events) {}
  std::string Name() const override { return "Event recorder"; }
  Status Start(const std::stop_token& /*stop*/) override { return Status::Ok(); }
  void Stop() override;

 private:
  kube::EventRecorder& events_;
};

}  // namespace ayatori::manager
