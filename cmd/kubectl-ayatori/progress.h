// What `wait` and `run --wait` print while they wait: a line per change of the Job's derived state
// (the state machine's DeriveState, as get's STATE column), with the local time it was seen:
//
//   12:00:01 Resolving (NoDefaultJobClass)
//   12:00:03 Running
//   12:00:05 Succeeded (exit 0)
//
// On a terminal the current line also carries a spinner, redrawn in place by a thread of its
// own; piped, only whole lines are written (test/kubectl-ayatori/progress_test.cc).
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>

#include "api/types.h"
#include "ayatori/clock.h"
#include "statemachine/statemachine.h"

namespace ayatori::plugin {

// "12:00:05 Succeeded (exit 0)": the clock text, the state and what explains it (the reason
// when it adds to the state's name; the exit code once known).
std::string ProgressLine(const std::string& clockText, const api::Job& job);
// "HH:MM:SS" of `t` in the local time zone.
std::string ClockText(std::chrono::system_clock::time_point t);
// The spinner's n-th frame.
const char* SpinnerFrame(size_t n);

class Progress {
 public:
  // terminal: `out` is a terminal, so the spinner runs.
  Progress(std::ostream& out, bool terminal, const Clock& clock);
  ~Progress();  // Finish()
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Prints a line when the Job's derived state (or its explanation) differs from the last one.
  void Observe(const api::Job& job);
  // Ends the current line and stops the spinner; safe to call twice.
  void Finish();

 private:
  void Spin(const std::stop_token& stop);

  std::ostream& out_;
  const bool terminal_;
  const Clock& clock_;
  std::mutex mu_;
  std::string explained_;  // the line without its time, to tell a change
  std::string current_;    // the line on screen (terminal)
  bool finished_ = false;
  std::jthread spinner_;
};

}  // namespace ayatori::plugin
