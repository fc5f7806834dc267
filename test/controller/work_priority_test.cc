// WorkPriority: the order in which the Job controller's workqueue hands out Jobs (controller.h).
// The queue's mechanics (levels, moves up, delayed keys) are in test/kube/workqueue_test.cc.
#include <gtest/gtest.h>

#include "controller/controller.h"
#include "statemachine/statemachine.h"

namespace ayatori::controller {
namespace {

using statemachine::State;

TEST(WorkPriorityTest, StartsFirstThenNewJobsThenEverythingElse) {
  EXPECT_EQ(WorkPriority(State::kStarting), 0);
  EXPECT_EQ(WorkPriority(State::kResolving), 1);
  EXPECT_EQ(WorkPriority(State::kQueued), 1);
  EXPECT_EQ(WorkPriority(State::kScheduling), 1);
  for (State s : {State::kRunning, State::kCancelling, State::kResultUnknown, State::kSucceeded,
                  State::kFailed, State::kCancelled, State::kDeleting}) {
    EXPECT_EQ(WorkPriority(s), kWorkPriorityLevels - 1) << statemachine::StateName(s);
  }
}

}  // namespace
}  // namespace ayatori::controller
