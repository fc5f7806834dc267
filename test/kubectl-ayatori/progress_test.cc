// wait's progress (cmd/kubectl-ayatori/progress.h): a line per derived state with the time it was
// seen, nothing for an update that changes nothing shown, and the spinner only on a terminal.
#include "progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "api/json.h"
#include "kube/testing/fake_clock.h"

namespace ayatori::plugin {
namespace {

using ::testing::HasSubstr;

const api::Time kT = api::ParseTime("2026-12-01T12:00:00Z").value();

api::Job JobWith(std::vector<api::Condition> conditions) {
  api::Job job;
  job.metadata.name = "j";
  job.spec.task.image = "busybox";
  job.status.conditions = std::move(conditions);
  return job;
}

api::Condition Cond(const char* type, api::ConditionStatus status, const char* reason) {
  return {type, status, reason, "", 1, kT};
}

const api::Condition kAccepted = Cond("Accepted", api::ConditionStatus::kTrue, "Valid");
const api::Condition kScheduled = Cond("Scheduled", api::ConditionStatus::kTrue, "BackendCreated");

api::Job Resolving() {
  return JobWith({Cond("Accepted", api::ConditionStatus::kFalse, "NoDefaultJobClass")});
}
api::Job Running() {
  api::Job job = JobWith(
      {kAccepted, kScheduled, Cond("Succeeded", api::ConditionStatus::kUnknown, "Running")});
  job.status.startTime = kT;
  return job;
}
api::Job Failed(int32_t exitCode) {
  api::Job job = JobWith(
      {kAccepted, kScheduled, Cond("Succeeded", api::ConditionStatus::kFalse, "ProcessFailed")});
  job.status.startTime = kT;
  job.status.completionTime = kT;
  job.status.result = api::JobResult{exitCode, "ProcessFailed"};
  return job;
}

TEST(ProgressLineTest, StateThenWhatExplainsIt) {
  EXPECT_EQ(ProgressLine("12:00:01", Resolving()), "12:00:01 Resolving (NoDefaultJobClass)");
  EXPECT_EQ(ProgressLine("12:00:03", Running()), "12:00:03 Running");  // the reason says no more
  EXPECT_EQ(ProgressLine("12:00:05", Failed(7)), "12:00:05 Failed (ProcessFailed, exit 7)");
  api::Job succeeded = Running();
  succeeded.status.conditions[2] = Cond("Succeeded", api::ConditionStatus::kTrue, "Completed");
  succeeded.status.result = api::JobResult{0, "Completed"};
  EXPECT_EQ(ProgressLine("12:00:05", succeeded), "12:00:05 Succeeded (Completed, exit 0)");
  // A finished Job being deleted (TTL) shows the outcome it reached, as wait's exit code does.
  api::Job deleting = Failed(7);
  deleting.metadata.deletionTimestamp = kT;
  EXPECT_EQ(ProgressLine("12:00:06", deleting), "12:00:06 Failed (ProcessFailed, exit 7)");
}

TEST(ClockTextTest, LocalHoursMinutesSeconds) {
  EXPECT_THAT(ClockText(std::chrono::system_clock::now()),
              ::testing::MatchesRegex("[0-2][0-9]:[0-5][0-9]:[0-6][0-9]"));
}

TEST(ProgressTest, PipedALinePerChangeAndNoSpinner) {
  kube::testing::FakeClock clock;
  std::ostringstream out;
  {
    Progress progress(out, false, clock);
    progress.Observe(Resolving());
    progress.Observe(Resolving());  // a status write that changes nothing shown
    clock.Advance(std::chrono::seconds(2));
    progress.Observe(Running());
    progress.Observe(Running());
    progress.Observe(Failed(7));
    progress.Finish();
    progress.Observe(Running());  // after Finish: nothing
  }
  const std::string t0 = ClockText(clock.Now() - std::chrono::seconds(2));
  const std::string t1 = ClockText(clock.Now());
  EXPECT_EQ(out.str(), t0 + " Resolving (NoDefaultJobClass)\n" + t1 + " Running\n" + t1 +
                           " Failed (ProcessFailed, exit 7)\n");
}

TEST(ProgressTest, OnATerminalTheCurrentLineSpinsAndEndsWhole) {
  kube::testing::FakeClock clock;
  std::ostringstream out;
  Progress progress(out, true, clock);
  progress.Observe(Resolving());
  progress.Observe(Running());
  progress.Finish();
  const std::string text = out.str();
  const std::string t = ClockText(clock.Now());
  // Each state ends as a whole line once the next one came; the spinner frame is redrawn in
  // place (carriage return, erase line) and never left behind.
  EXPECT_THAT(text, HasSubstr(t + " Resolving (NoDefaultJobClass) " + SpinnerFrame(0)));
  EXPECT_THAT(text, HasSubstr("\r\033[K" + t + " Resolving (NoDefaultJobClass)\n"));
  EXPECT_THAT(text, ::testing::EndsWith("\r\033[K" + t + " Running\n"));
  EXPECT_NE(std::string(SpinnerFrame(0)), SpinnerFrame(1));
  EXPECT_EQ(std::string(SpinnerFrame(0)), SpinnerFrame(4));
}

}  // namespace
}  // namespace ayatori::plugin
