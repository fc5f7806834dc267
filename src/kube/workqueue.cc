#include "kube/workqueue.h"

#include <algorithm>

namespace ayatori::kube {

Workqueue::Workqueue(const Clock& clock, WorkqueueOptions options)
    : clock_(clock),
      options_(std::move(options)),
      queues_(static_cast<size_t>(std::max(1, options_.priorityLevels))) {}

int Workqueue::LevelOf(const std::string& key) const {
  if (!options_.priority) return 0;
  return std::clamp(options_.priority(key), 0, static_cast<int>(queues_.size()) - 1);
}

void Workqueue::AddLocked(const std::string& key, int level) {
  if (shuttingDown_) return;
  if (!dirty_.insert(key).second) {
    // Already queued, or to be queued again after Done(): a lower level moves it up.
    auto it = level_.find(key);
    if (it == level_.end() || level >= it->second) return;
    it->second = level;
    if (processing_.count(key) == 0) PushLocked(key, level);
    return;
  }
  level_[key] = level;
  if (processing_.count(key) != 0) return;  // re-queued by Done()
  PushLocked(key, level);
  ++ready_;
  cv_.notify_one();
}

void Workqueue::PushLocked(const std::string& key, int level) {
  Level& l = queues_[static_cast<size_t>(level)];
  std::string share = options_.shareOf ? options_.shareOf(key) : std::string();
  auto& fifo = l.byShare[share];
  if (fifo.empty()) l.turns.push_back(std::move(share));
  fifo.push_back(key);
}

std::optional<std::string> Workqueue::PopLocked() {
  for (size_t level = 0; level < queues_.size(); ++level) {
    Level& l = queues_[level];
    while (!l.turns.empty()) {
      std::string share = std::move(l.turns.front());
      l.turns.pop_front();
      auto fifo = l.byShare.find(share);
      std::optional<std::string> live;
      while (!live && !fifo->second.empty()) {
        std::string key = std::move(fifo->second.front());
        fifo->second.pop_front();
        auto it = level_.find(key);
        if (it == level_.end() || it->second != static_cast<int>(level) ||
            processing_.count(key) != 0) {
          continue;  // left behind by a move up, or handed out already
        }
        level_.erase(it);
        dirty_.erase(key);
        --ready_;
        live = std::move(key);
      }
      // The share's next key waits for its next turn, behind every other share's.
      if (fifo->second.empty()) {
        l.byShare.erase(fifo);
      } else {
        l.turns.push_back(std::move(share));
      }
      if (live) return live;
    }
  }
  return std::nullopt;
}

void Workqueue::Add(const std::string& key) {
  const int level = LevelOf(key);
  std::lock_guard lock(mu_);
  AddLocked(key, level);
}

void Workqueue::AddAfter(const std::string& key, std::chrono::nanoseconds delay) {
  if (delay <= std::chrono::nanoseconds(0)) {
    Add(key);
    return;
  }
  std::lock_guard lock(mu_);
  if (shuttingDown_) return;
  auto due =
      clock_.SteadyNow() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
  auto it = waitingDue_.find(key);
  if (it != waitingDue_.end()) {
    if (it->second <= due) return;  // the earlier time wins
    auto range = waiting_.equal_range(it->second);
    for (auto w = range.first; w != range.second; ++w) {
      if (w->second == key) {
        waiting_.erase(w);
        break;
      }
    }
    it->second = due;
  } else {
    waitingDue_.emplace(key, due);
  }
  waiting_.emplace(due, key);
  // Blocked Get() calls must re-compute how long to sleep.
  cv_.notify_all();
}

std::chrono::nanoseconds Workqueue::BackoffFor(int failures) const {
  // base * 2^failures without overflow: stop doubling once past the cap.
  std::chrono::nanoseconds d = options_.baseDelay;
  for (int i = 0; i < failures && d < options_.maxDelay; ++i) d *= 2;
  return std::min(d, options_.maxDelay);
}

void Workqueue::AddRateLimited(const std::string& key) {
  std::chrono::nanoseconds delay;
  {
    std::lock_guard lock(mu_);
    int& f = failures_[key];
    delay = BackoffFor(f);
    ++f;
  }
  AddAfter(key, delay);
}

void Workqueue::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int Workqueue::NumRequeues(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

std::chrono::nanoseconds Workqueue::NextBackoff(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return BackoffFor(it == failures_.end() ? 0 : it->second);
}

size_t Workqueue::PromoteDueLocked(std::unique_lock<std::mutex>& lock) {
  std::vector<std::string> due;
  const auto now = clock_.SteadyNow();
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    due.push_back(std::move(waiting_.begin()->second));
    waiting_.erase(waiting_.begin());
    waitingDue_.erase(due.back());
  }
  if (due.empty()) return 0;
  // The level is asked now, not at AddAfter: what the key's next round does may have changed
  // while it waited. Asked outside the lock, like Add's.
  std::vector<int> levels;
  levels.reserve(due.size());
  if (options_.priority) {
    lock.unlock();
    for (const std::string& key : due) levels.push_back(LevelOf(key));
    lock.lock();
  } else {
    levels.assign(due.size(), 0);
  }
  for (size_t i = 0; i < due.size(); ++i) AddLocked(due[i], levels[i]);
  return due.size();
}

size_t Workqueue::PromoteDue() {
  std::unique_lock lock(mu_);
  size_t n = PromoteDueLocked(lock);
  if (n > 0) cv_.notify_all();
  return n;
}

std::optional<std::chrono::steady_clock::time_point> Workqueue::NextDueLocked() const {
  if (waiting_.empty()) return std::nullopt;
  return waiting_.begin()->first;
}

std::optional<Workqueue::Item> Workqueue::GetFor(std::chrono::nanoseconds timeout) {
  const auto giveUp = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  std::unique_lock lock(mu_);
  for (;;) {
    PromoteDueLocked(lock);
    if (auto key = PopLocked()) {
      processing_.insert(*key);
      return Item{std::move(*key), false};
    }
    if (shuttingDown_) return Item{"", true};
    // Sleep until the earliest delayed key is due (per the Clock), an add, or the timeout.
    auto wakeAt = giveUp;
    if (auto due = NextDueLocked()) {
      auto untilDue = *due - clock_.SteadyNow();
      wakeAt = std::min(wakeAt, std::chrono::steady_clock::now() + untilDue);
    }
    if (std::chrono::steady_clock::now() >= giveUp) return std::nullopt;
    cv_.wait_until(lock, wakeAt);
  }
}

Workqueue::Item Workqueue::Get() {
  for (;;) {
    if (auto item = GetFor(std::chrono::hours(24))) return *item;
  }
}

void Workqueue::Done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) != 0) {
    auto level = level_.find(key);
    PushLocked(key, level == level_.end() ? 0 : level->second);
    ++ready_;
    cv_.notify_one();
  }
}

void Workqueue::ShutDown() {
  std::lock_guard lock(mu_);
  shuttingDown_ = true;
  waiting_.clear();
  waitingDue_.clear();
  cv_.notify_all();
}

bool Workqueue::ShuttingDown() const {
  std::lock_guard lock(mu_);
  return shuttingDown_;
}

size_t Workqueue::Len() const {
  std::lock_guard lock(mu_);
  return ready_;
}

size_t Workqueue::WaitingLen() const {
  std::lock_guard lock(mu_);
  return waiting_.size();
}

size_t Workqueue::ProcessingLen() const {
  std::lock_guard lock(mu_);
  return processing_.size();
}

}  // namespace ayatori::kube
