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
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "adapters/docker/engine.h"

namespace ayatori::adapters::docker {

using NotifyFn = std::function<void(const std::string& namespace_, const std::string& name)>;

// A change of a container that carries the Job UID label, from one line of /events.
struct ContainerEvent {
  std::string action;  // one of the actions after which the execution's state may differ
  std::string uid;     // the Job's, from the container's labels
  std::string namespace_;
  std::string name;
};

// nullopt for a line that is no such change: not JSON, not a container event, an action that
// changes nothing (exec_start, attach, ...), or a container without the Job UID label.
std::optional<ContainerEvent> ParseContainerEvent(std::string_view line);

// Decoder of the /events stream: one JSON object per line, arriving in pieces that split lines
// anywhere. Pure: no I/O (test/adapters/docker/events_test.cc, fuzz/docker_events_fuzzer.cc).
class EventStreamDecoder {
 public:
  explicit EventStreamDecoder(std::function<void(ContainerEvent&&)> onEvent)
      : onEvent_(std::move(onEvent)) {}
  // Hands every container change among the complete lines so far to onEvent.
  void Feed(std::string_view data);

 private:
  std::function<void(ContainerEvent&&)> onEvent_;
  std::string pending_;    // bytes of an incomplete line
  bool skipping_ = false;  // inside a line longer than kMaxEventLineBytes: dropped up to its end
};

// An event line longer than this is dropped unread (a container's labels, which events carry,
// are the image author's to choose); the state change it reported is still seen by Observe.
inline constexpr size_t kMaxEventLineBytes = size_t{1} << 20;

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
  void HandleEvent(const ContainerEvent& event);
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
