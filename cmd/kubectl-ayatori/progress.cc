#include "progress.h"

#include <array>
#include <condition_variable>
#include <ctime>

#include "format.h"

namespace ayatori::plugin {

namespace {

// Clears the terminal line the cursor is on (carriage return, erase to end of line).
constexpr const char* kClearLine = "\r\033[K";
constexpr std::chrono::milliseconds kSpinnerPeriod{100};

// The line without its time: the state and what explains it.
std::string Explained(const api::Job& job) {
  api::Job undeleted = job;
  undeleted.metadata.deletionTimestamp.reset();  // as FinishedExitCode: the outcome it reached
  const statemachine::State state = statemachine::DeriveState(undeleted);
  const std::string name = statemachine::StateName(state);
  std::string detail = StateReason(undeleted, state);
  if (detail == name) detail.clear();
  if (statemachine::IsTerminal(state) && job.status.result && job.status.result->exitCode) {
    detail += (detail.empty() ? "" : ", ") + std::string("exit ") +
              std::to_string(*job.status.result->exitCode);
  }
  return detail.empty() ? name : name + " (" + detail + ")";
}

}  // namespace

std::string ProgressLine(const std::string& clockText, const api::Job& job) {
  return clockText + " " + Explained(job);
}

std::string ClockText(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm local{};
  localtime_r(&seconds, &local);
  std::array<char, 16> text{};
  std::strftime(text.data(), text.size(), "%H:%M:%S", &local);
  return text.data();
}

const char* SpinnerFrame(size_t n) {
  static constexpr std::array<const char*, 4> kFrames = {"|", "/", "-", "\\"};
  return kFrames.at(n % kFrames.size());
}

Progress::Progress(std::ostream& out, bool terminal, const Clock& clock)
    : out_(out), terminal_(terminal), clock_(clock) {
  if (terminal_) spinner_ = std::jthread([this](const std::stop_token& stop) { Spin(stop); });
}

Progress::~Progress() { Finish(); }

void Progress::Observe(const api::Job& job) {
  std::string explained = Explained(job);
  std::lock_guard lock(mu_);
  if (finished_ || explained == explained_) return;
  explained_ = std::move(explained);
  const std::string line = ClockText(clock_.Now()) + " " + explained_;
  if (!terminal_) {
    out_ << line << "\n";
  } else {
    if (!current_.empty()) out_ << kClearLine << current_ << "\n";
    current_ = line;
    out_ << current_ << " " << SpinnerFrame(0);
  }
  out_.flush();
}

void Progress::Finish() {
  if (spinner_.joinable()) {
    spinner_.request_stop();
    spinner_.join();
  }
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (terminal_ && !current_.empty()) {
    out_ << kClearLine << current_ << "\n";
    out_.flush();
  }
}

void Progress::Spin(const std::stop_token& stop) {
  std::mutex sleepMu;
  std::condition_variable_any wake;
  for (size_t frame = 1; !stop.stop_requested(); ++frame) {
    {
      std::unique_lock sleepLock(sleepMu);
      wake.wait_for(sleepLock, stop, kSpinnerPeriod, [] { return false; });
    }
    if (stop.stop_requested()) return;
    std::lock_guard lock(mu_);
    if (current_.empty()) continue;
    out_ << kClearLine << current_ << " " << SpinnerFrame(frame);
    out_.flush();
  }
}

}  // namespace ayatori::plugin
