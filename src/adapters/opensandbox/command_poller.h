// The poller of the OpenSandbox adapter (opensandbox_adapter.h): one thread for every task command
// that Ensure or Observe saw running. Each is checked after `firstPoll`, then at doubling
// intervals up to its maxInterval (the class's pollIntervalSeconds); at the longest interval its
// sandbox is checked too, so that a server outage is seen while the command runs. A command that
// stopped, or that cannot be read, is handed to the controller (notify), whose Observe then says
// what happened: the poller decides nothing about a Job.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/opensandbox/client.h"
#include "kube/http.h"

namespace ayatori::adapters::opensandbox {

// A running task command and where to ask about it.
struct PolledCommand {
  std::string ns, name;  // the Job's, for notify
  std::string commandId;
  ExecdTarget execd;
  // The sandbox and the server that reports on it.
  std::string sandboxId;
  std::string endpoint;
  SensitiveString apiKey;
  std::shared_ptr<kube::HttpTransport> transport;
  std::chrono::milliseconds maxInterval{0};
};

class CommandPoller {
 public:
  using Notify = std::function<void(const std::string& ns, const std::string& name)>;

  CommandPoller(ClientTimeouts timeouts, std::chrono::milliseconds firstPoll)
      : timeouts_(timeouts), firstPoll_(firstPoll) {}
  ~CommandPoller() { Stop(); }
  CommandPoller(const CommandPoller&) = delete;
  CommandPoller& operator=(const CommandPoller&) = delete;

  // Starts the thread (once; a second Start keeps the first notify).
  void Start(Notify notify);
  // Joins the thread; watched commands are kept for a later Start.
  void Stop();
  // Polls `command` for the Job `uid` from now on, unless that command is polled already.
  void Watch(const std::string& uid, PolledCommand command);
  // Stops polling the Job `uid`'s command (it stopped, or the Job is gone).
  void Forget(const std::string& uid);

 private:
  struct Entry {
    PolledCommand command;
    std::chrono::milliseconds interval{0};
    std::chrono::steady_clock::time_point next;
  };
  void Loop();
  // The commands due now, copied out; `next` becomes the earliest time one is due otherwise.
  std::vector<std::pair<std::string, Entry>> TakeDue(std::chrono::steady_clock::time_point now,
                                                     std::chrono::steady_clock::time_point& next);
  // Whether the command stopped or cannot be read (or, at the longest interval, its sandbox).
  bool Changed(const Entry& entry) const;
  // Drops the changed ones, backs off the others; returns the Jobs to notify.
  std::vector<std::pair<std::string, std::string>> Settle(
      const std::vector<std::pair<std::string, bool>>& results);

  const ClientTimeouts timeouts_;
  const std::chrono::milliseconds firstPoll_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  Notify notify_;
  std::thread thread_;
  std::map<std::string, Entry> entries_;  // by Job UID
};

}  // namespace ayatori::adapters::opensandbox
