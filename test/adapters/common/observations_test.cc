#include "adapters/common/observations.h"

#include <gtest/gtest.h>

namespace ayatori::adapters {
namespace {

TEST(ObservationsTest, EachFactorySetsItsPhaseReasonAndMessageOnly) {
  struct Case {
    Observation o;
    ExecutionPhase phase;
    std::string reason, message;
  } cases[] = {
      {Absent(), ExecutionPhase::kAbsent, "", ""},
      {Pending(), ExecutionPhase::kPending, "", ""},
      {Pending("ImagePulling", "pulling"), ExecutionPhase::kPending, "ImagePulling", "pulling"},
      {Running(), ExecutionPhase::kRunning, "", ""},
      {Failed(kReasonBackendRejected, "no"), ExecutionPhase::kFailed, "BackendRejected", "no"},
      {Cancelled("stopped"), ExecutionPhase::kCancelled, "", "stopped"},
      {Unknown("CommandLost", "gone"), ExecutionPhase::kUnknown, "CommandLost", "gone"},
      {Unreachable("down"), ExecutionPhase::kUnknown, "BackendUnreachable", "down"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(c.o.phase, c.phase) << c.reason;
    EXPECT_EQ(c.o.reason, c.reason);
    EXPECT_EQ(c.o.message, c.message);
    EXPECT_FALSE(c.o.exitCode.has_value());
    EXPECT_FALSE(c.o.startedAt.has_value());
    EXPECT_TRUE(c.o.references.empty());
    EXPECT_FALSE(c.o.ended);
  }
}

}  // namespace
}  // namespace ayatori::adapters
