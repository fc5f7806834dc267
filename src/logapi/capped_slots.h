// Slots held at once under two caps, one over all holders and one per holder: the follows of the
// log API's users and the TLS handshakes of its client addresses (server.h, LogApiLimits).
#pragma once

#include <map>
#include <mutex>
#include <string>

namespace ayatori::logapi {

class CappedSlots {
 public:
  // Caps below 1 hold nothing (LogApiServer::Start refuses them first).
  CappedSlots(int total, int perHolder) : total_(total), perHolder_(perHolder) {}

  enum class Outcome { kTaken, kTotalFull, kHolderFull };
  struct Take {
    Outcome outcome;
    int held;          // in all, counting this one when taken
    int heldByHolder;  // by the holder, likewise
  };
  // A slot for `holder`, or which cap refused it (the total one first).
  Take TryTake(const std::string& holder);
  // Gives back a slot TryTake gave `holder`; the slots held in all afterwards.
  int Release(const std::string& holder);
  int held() const;

 private:
  const int total_;
  const int perHolder_;
  mutable std::mutex mu_;
  int held_ = 0;
  std::map<std::string, int> byHolder_;  // holders with at least one slot
};

}  // namespace ayatori::logapi
