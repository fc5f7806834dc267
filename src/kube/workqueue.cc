#include "kube/workqueue.h"

#include <algorithm>

namespace ayatori::kube {

Workqueue::Workqueue(const Clock& clock, WorkqueueOptions options)
    : clock_(clock), options_(options) {}

void Workqueue::AddLocked(const std::string& key) {
  if (shuttingDown_) return;
  if (!dirty_.insert(key).second) return;   // already queued (or queued to re-run after Done)
  if (processing_.count(key) != 0) return;  // re-queued by Done()
  queue_.push_back(key);
  cv_.notify_one();
}

void Workqueue::Add(const std::string& key) {
  std::lock_guard lock(mu_);
  AddLocked(key);
}

void Workqueue::AddAfter(const std::string& key, std::chrono::nanoseconds delay) {
  std::lock_guard lock(mu_);
  if (shuttingDown_) return;
  if (delay <= std::chrono::nanoseconds(0)) {
    AddLocked(key);
    return;
  }
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

size_t Workqueue::PromoteDueLocked(std::chrono::steady_clock::time_point now) {
  size_t n = 0;
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    std::string key = std::move(waiting_.begin()->second);
    waiting_.erase(waiting_.begin());
    waitingDue_.erase(key);
    AddLocked(key);
    ++n;
  }
  return n;
}

size_t Workqueue::PromoteDue() {
  std::lock_guard lock(mu_);
  size_t n = PromoteDueLocked(clock_.SteadyNow());
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
    PromoteDueLocked(clock_.SteadyNow());
    if (!queue_.empty()) break;
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
  Item item{std::move(queue_.front()), false};
  queue_.pop_front();
  processing_.insert(item.key);
  dirty_.erase(item.key);
  return item;
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
    queue_.push_back(key);
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
  return queue_.size();
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
