#include "logapi/capped_slots.h"

#include <gtest/gtest.h>

namespace ayatori::logapi {
namespace {

using Outcome = CappedSlots::Outcome;

TEST(CappedSlots, AHolderAtItsCapIsRefusedWhileOthersStillTake) {
  CappedSlots slots(3, 2);
  EXPECT_EQ(slots.TryTake("a").outcome, Outcome::kTaken);
  CappedSlots::Take second = slots.TryTake("a");
  EXPECT_EQ(second.outcome, Outcome::kTaken);
  EXPECT_EQ(second.held, 2);
  EXPECT_EQ(second.heldByHolder, 2);
  CappedSlots::Take third = slots.TryTake("a");
  EXPECT_EQ(third.outcome, Outcome::kHolderFull);
  EXPECT_EQ(third.heldByHolder, 2);
  EXPECT_EQ(slots.TryTake("b").outcome, Outcome::kTaken);
  EXPECT_EQ(slots.held(), 3);
}

TEST(CappedSlots, TheTotalCapHoldsAcrossHoldersAndReleasesFreeSlots) {
  CappedSlots slots(2, 2);
  ASSERT_EQ(slots.TryTake("a").outcome, Outcome::kTaken);
  ASSERT_EQ(slots.TryTake("b").outcome, Outcome::kTaken);
  CappedSlots::Take refused = slots.TryTake("c");
  EXPECT_EQ(refused.outcome, Outcome::kTotalFull);
  EXPECT_EQ(refused.held, 2);
  EXPECT_EQ(refused.heldByHolder, 0);
  EXPECT_EQ(slots.Release("a"), 1);
  EXPECT_EQ(slots.TryTake("c").outcome, Outcome::kTaken);
  EXPECT_EQ(slots.held(), 2);
}

TEST(CappedSlots, ReleasingWhatWasNeverTakenChangesNothing) {
  CappedSlots slots(2, 1);
  ASSERT_EQ(slots.TryTake("a").outcome, Outcome::kTaken);
  EXPECT_EQ(slots.Release("b"), 1);
  EXPECT_EQ(slots.Release("a"), 0);
  EXPECT_EQ(slots.Release("a"), 0);
  EXPECT_EQ(slots.held(), 0);
  EXPECT_EQ(slots.TryTake("a").outcome, Outcome::kTaken);
}

}  // namespace
}  // namespace ayatori::logapi
