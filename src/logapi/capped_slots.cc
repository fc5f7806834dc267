#include "logapi/capped_slots.h"

namespace ayatori::logapi {

CappedSlots::Take CappedSlots::TryTake(const std::string& holder) {
  std::lock_guard lock(mu_);
  auto it = byHolder_.find(holder);
  const int mine = it == byHolder_.end() ? 0 : it->second;
  if (held_ >= total_) return {Outcome::kTotalFull, held_, mine};
  if (mine >= perHolder_) return {Outcome::kHolderFull, held_, mine};
  ++held_;
  ++byHolder_[holder];
  return {Outcome::kTaken, held_, mine + 1};
}

int CappedSlots::Release(const std::string& holder) {
  std::lock_guard lock(mu_);
  if (auto it = byHolder_.find(holder); it != byHolder_.end()) {
    --held_;
    if (--it->second <= 0) byHolder_.erase(it);
  }
  return held_;
}

int CappedSlots::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

}  // namespace ayatori::logapi
