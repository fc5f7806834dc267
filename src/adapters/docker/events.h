// Event-driven observation: one thread per engine reads the /events stream, filtered to
// containers that carry the Job UID label, and calls notify(namespace, name) for changes (start,
// die, oom, destroy, ...). When the engine goes away it notifies every Job it knows of (so the
// controller sees them Unknown), reconnects with backoff, and on reconnect lists the labelled
// containers and notifies them all (so nothing that happened meanwhile is missed).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "adapters/docker/engine.h"

namespace ayatori::adapters::docker {

using NotifyFn = std::function<void(const std::string& namespace_, const std::string& name)>;

class EventWatcher {
 public:
  EventWatcher(std::shared_ptr<EngineClient> client, NotifyFn notify,
               std::chrono::milliseconds maxBackoff);
  ~EventWatcher();
  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  void Stop();

 private:
  void Run();
  Status ListAndNotify();
  void NotifyKnown();
  void HandleEvent(std::string_view line);
  bool WaitFor(std::chrono::milliseconds d);  // false when stopping

  std::shared_ptr<EngineClient> client_;
  NotifyFn notify_;
  std::chrono::milliseconds maxBackoff_;
  // Jobs with a container on this engine, by UID; touched only by the watcher thread.
  std::map<std::string, std::pair<std::string, std::string>> known_;
  StreamStop streamStop_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ayatori::adapters::docker
