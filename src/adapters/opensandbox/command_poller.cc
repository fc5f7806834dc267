#include "adapters/opensandbox/command_poller.h"

#include <algorithm>

#include "base/url.h"

namespace ayatori::adapters::opensandbox {

using std::chrono::milliseconds;

void CommandPoller::Start(Notify notify) {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  notify_ = std::move(notify);
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void CommandPoller::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  notify_ = nullptr;
}

void CommandPoller::Watch(const std::string& uid, PolledCommand command) {
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(uid);
    if (it != entries_.end() && it->second.command.commandId == command.commandId) return;
    entries_[uid] =
        Entry{std::move(command), firstPoll_, std::chrono::steady_clock::now() + firstPoll_};
  }
  wake_.notify_all();
}

void CommandPoller::Forget(const std::string& uid) {
  std::lock_guard lock(mu_);
  entries_.erase(uid);
}

std::vector<std::pair<std::string, CommandPoller::Entry>> CommandPoller::TakeDue(
    std::chrono::steady_clock::time_point now, std::chrono::steady_clock::time_point& next) {
  std::vector<std::pair<std::string, Entry>> due;
  next = now + std::chrono::seconds(60);
  for (auto& [uid, e] : entries_) {
    if (e.next <= now) {
      due.emplace_back(uid, e);
    } else {
      next = std::min(next, e.next);
    }
  }
  return due;
}

bool CommandPoller::Changed(const Entry& entry) const {
  const PolledCommand& c = entry.command;
  ServerClient client(*c.transport, c.endpoint, c.apiKey, timeouts_);
  auto r = client.Execd(c.execd, "GET", "/command/status/" + base::PercentEncode(c.commandId), "",
                        milliseconds(5000));
  if (!r.ok() || r->status != 200) return true;
  auto doc = nlohmann::json::parse(r->body, nullptr, false);
  if (!(doc.is_object() && doc.value("running", false))) return true;
  if (entry.interval < c.maxInterval) return false;
  auto s =
      client.Call("GET", "/sandboxes/" + base::PercentEncode(c.sandboxId), "", milliseconds(5000));
  return !s.ok() || s->status != 200;
}

std::vector<std::pair<std::string, std::string>> CommandPoller::Settle(
    const std::vector<std::pair<std::string, bool>>& results) {
  std::vector<std::pair<std::string, std::string>> toNotify;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [uid, changed] : results) {
    auto it = entries_.find(uid);
    if (it == entries_.end()) continue;
    Entry& e = it->second;
    if (changed) {
      toNotify.emplace_back(e.command.ns, e.command.name);
      entries_.erase(it);
    } else {
      e.interval = std::min(e.interval * 2, e.command.maxInterval);
      e.next = now + e.interval;
    }
  }
  return toNotify;
}

void CommandPoller::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    std::chrono::steady_clock::time_point next;
    auto due = TakeDue(std::chrono::steady_clock::now(), next);
    if (due.empty()) {
      wake_.wait_until(lock, next);
      continue;
    }
    // The calls go out without the lock: Watch and Forget do not wait for a slow server.
    lock.unlock();
    std::vector<std::pair<std::string, bool>> results;  // uid, changed
    results.reserve(due.size());
    for (const auto& [uid, e] : due) results.emplace_back(uid, Changed(e));
    lock.lock();
    auto toNotify = Settle(results);
    auto notify = notify_;
    lock.unlock();
    if (notify) {
      for (const auto& [ns, name] : toNotify) notify(ns, name);
    }
    lock.lock();
  }
}

}  // namespace ayatori::adapters::opensandbox
