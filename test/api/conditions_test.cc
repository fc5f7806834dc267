#include "api/conditions.h"

#include <gtest/gtest.h>

#include <chrono>

namespace ayatori::api {
namespace {

using std::chrono::seconds;

const Time kT0{seconds(1'800'000'000)};
const Time kT1 = kT0 + seconds(30);
const Time kT2 = kT0 + seconds(90);

Condition Make(const char* type, ConditionStatus status, const char* reason, int64_t generation = 1,
               const char* message = "") {
  Condition c;
  c.type = type;
  c.status = status;
  c.reason = reason;
  c.message = message;
  c.observedGeneration = generation;
  return c;
}

TEST(ConditionsTest, NewConditionIsAppendedWithTransitionTimeNow) {
  std::vector<Condition> conditions;
  EXPECT_TRUE(
      SetCondition(conditions, Make(kConditionAccepted, ConditionStatus::kTrue, "Valid"), kT0));
  EXPECT_TRUE(SetCondition(conditions,
                           Make(kConditionSucceeded, ConditionStatus::kUnknown, "Pending"), kT1));
  ASSERT_EQ(conditions.size(), 2u);
  EXPECT_EQ(conditions[0].type, kConditionAccepted);
  EXPECT_EQ(conditions[0].lastTransitionTime, kT0);
  EXPECT_EQ(conditions[1].type, kConditionSucceeded);
  EXPECT_EQ(conditions[1].lastTransitionTime, kT1);
}

TEST(ConditionsTest, SameStatusKeepsTransitionTimeButUpdatesReasonAndMessage) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(SetCondition(conditions,
                           Make(kConditionSucceeded, ConditionStatus::kUnknown, "Pending"), kT0));
  EXPECT_TRUE(SetCondition(conditions,
                           Make(kConditionSucceeded, ConditionStatus::kUnknown, "Running", 1,
                                "the main process started"),
                           kT1));
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0].reason, "Running");
  EXPECT_EQ(conditions[0].message, "the main process started");
  EXPECT_EQ(conditions[0].lastTransitionTime, kT0);
}

TEST(ConditionsTest, StatusChangeMovesTransitionTime) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(SetCondition(conditions,
                           Make(kConditionSucceeded, ConditionStatus::kUnknown, "Running"), kT0));
  EXPECT_TRUE(SetCondition(conditions,
                           Make(kConditionSucceeded, ConditionStatus::kTrue, "Completed"), kT2));
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0].status, ConditionStatus::kTrue);
  EXPECT_EQ(conditions[0].reason, "Completed");
  EXPECT_EQ(conditions[0].lastTransitionTime, kT2);
}

TEST(ConditionsTest, ObservedGenerationIsUpdatedWithoutATransition) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(
      SetCondition(conditions, Make(kConditionAccepted, ConditionStatus::kTrue, "Valid", 1), kT0));
  EXPECT_TRUE(
      SetCondition(conditions, Make(kConditionAccepted, ConditionStatus::kTrue, "Valid", 2), kT1));
  EXPECT_EQ(conditions[0].observedGeneration, 2);
  EXPECT_EQ(conditions[0].lastTransitionTime, kT0);
}

TEST(ConditionsTest, IdenticalConditionIsNoChange) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(SetCondition(
      conditions, Make(kConditionScheduled, ConditionStatus::kTrue, "BackendCreated"), kT0));
  const std::vector<Condition> before = conditions;
  // A later `now` alone must not count as a change (no status write for nothing).
  EXPECT_FALSE(SetCondition(
      conditions, Make(kConditionScheduled, ConditionStatus::kTrue, "BackendCreated"), kT2));
  EXPECT_EQ(conditions, before);
}

TEST(ConditionsTest, FindRemoveAndQuery) {
  std::vector<Condition> conditions;
  ASSERT_TRUE(
      SetCondition(conditions, Make(kConditionAccepted, ConditionStatus::kTrue, "Valid"), kT0));
  ASSERT_TRUE(SetCondition(
      conditions, Make(kConditionSucceeded, ConditionStatus::kFalse, "ProcessFailed"), kT0));
  EXPECT_TRUE(IsConditionTrue(conditions, kConditionAccepted));
  EXPECT_FALSE(IsConditionTrue(conditions, kConditionSucceeded));
  EXPECT_FALSE(IsConditionTrue(conditions, kConditionScheduled));
  EXPECT_TRUE(IsConditionStatus(conditions, kConditionSucceeded, ConditionStatus::kFalse));
  EXPECT_FALSE(IsConditionStatus(conditions, kConditionScheduled, ConditionStatus::kUnknown));
  ASSERT_NE(FindCondition(conditions, kConditionSucceeded), nullptr);
  EXPECT_EQ(FindCondition(conditions, kConditionSucceeded)->reason, "ProcessFailed");
  EXPECT_EQ(FindCondition(conditions, kConditionScheduled), nullptr);

  EXPECT_TRUE(RemoveCondition(conditions, kConditionAccepted));
  EXPECT_FALSE(RemoveCondition(conditions, kConditionAccepted));
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0].type, kConditionSucceeded);
}

TEST(ConditionsTest, WireNames) {
  EXPECT_EQ(ToString(ConditionStatus::kTrue), "True");
  EXPECT_EQ(ToString(ConditionStatus::kFalse), "False");
  EXPECT_EQ(ToString(ConditionStatus::kUnknown), "Unknown");
  EXPECT_EQ(ToString(DesiredState::kRunning), "Running");
  EXPECT_EQ(ToString(DesiredState::kCancelled), "Cancelled");
}

// A JobClass's TTL policy on a Job's spec.ttlSecondsAfterFinished (docs/jobclass.md § TTL).
TEST(ApplyTtlPolicy, DefaultWhenUnsetCappedAtMaximum) {
  using T = std::optional<int32_t>;
  // No policy: the spec's value, unset kept unset (never deleted).
  EXPECT_EQ(ApplyTtlPolicy(T(), std::nullopt), T());
  EXPECT_EQ(ApplyTtlPolicy(T(5), std::nullopt), T(5));
  const TtlPolicy both{600, 3600};
  EXPECT_EQ(ApplyTtlPolicy(T(), both), T(600));
  EXPECT_EQ(ApplyTtlPolicy(T(0), both), T(0));
  EXPECT_EQ(ApplyTtlPolicy(T(3600), both), T(3600));
  EXPECT_EQ(ApplyTtlPolicy(T(3601), both), T(3600));
  EXPECT_EQ(ApplyTtlPolicy(T(2147483647), both), T(3600));
  const TtlPolicy defaultOnly{600, std::nullopt};
  EXPECT_EQ(ApplyTtlPolicy(T(), defaultOnly), T(600));
  EXPECT_EQ(ApplyTtlPolicy(T(86400), defaultOnly), T(86400));
  // A maximum alone also bounds a Job that asks for nothing ("keep forever" exceeds it).
  const TtlPolicy maximumOnly{std::nullopt, 3600};
  EXPECT_EQ(ApplyTtlPolicy(T(), maximumOnly), T(3600));
  EXPECT_EQ(ApplyTtlPolicy(T(10), maximumOnly), T(10));
  // A default above the maximum (the CRD refuses it) is capped all the same.
  EXPECT_EQ(ApplyTtlPolicy(T(), TtlPolicy{7200, 3600}), T(3600));
}

}  // namespace
}  // namespace ayatori::api
