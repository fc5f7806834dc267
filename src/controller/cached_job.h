// What the Job cache keeps per Job: the compact projection (CompactJobForCache), deflated, plus
// the facts that the cache's readers need without inflating it: the derived state for the
// jobs-by-state gauge, and for a Job that needs resolution what it waits on (WaitTargets in
// controller/resolver.h), which the Job informer's index of waiting Jobs reads.
//
// Why not the api::Job itself: the struct alone is 1.4 KiB (dozens of std::string and
// std::optional members, most of them empty) and a running Job's strings add about 1.2 KiB. Its
// JSON is ~1.5 KiB and deflates, against a preset dictionary of the keys and values every Job
// shares, to a few hundred bytes. A worker inflates one entry per reconcile round (tens of
// microseconds, next to the API requests of that round); the watch deflates one per event.
//
//   auto entry = CachedJob::Encode(CompactJobForCache(job));   // in the informer's decoder
//   StatusOr<api::Job> job = entry->Decode();                  // in a worker
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/types.h"
#include "ayatori/status.h"
#include "statemachine/statemachine.h"

namespace ayatori::controller {

class CachedJob {
 public:
  // `taskComplete`: job.spec.task is the Job's whole task (CompactJobForCache says).
  static StatusOr<CachedJob> Encode(const api::Job& job, bool taskComplete = false);
  // The Job as it was encoded (api::ToJson / api::JobFromJson round trip).
  StatusOr<api::Job> Decode() const;

  statemachine::State state() const { return state_; }
  bool needsResolution() const { return needsResolution_; }
  // Whether the encoded Job's spec.task is whole, or a compact projection of it.
  bool taskComplete() const { return taskComplete_; }
  // Empty unless needsResolution(): accepted and finished Jobs wait on nothing.
  const std::vector<std::string>& waitsOn() const { return waitsOn_; }
  size_t encodedBytes() const { return deflated_.size(); }

 private:
  std::string deflated_;
  std::vector<std::string> waitsOn_;
  uint32_t inflatedBytes_ = 0;
  statemachine::State state_ = statemachine::State::kResolving;
  bool needsResolution_ = false;
  bool taskComplete_ = false;
};

}  // namespace ayatori::controller
