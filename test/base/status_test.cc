#include "ayatori/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace ayatori {
namespace {

Status Fails(const std::string& why) { return Status(StatusCode::kNotFound, why); }
StatusOr<int> Number(int n) {
  if (n < 0) return Status(StatusCode::kInvalidArgument, "negative");
  return n;
}

Status TwoSteps(bool failFirst, int* reached) {
  RETURN_IF_ERROR(failFirst ? Fails("first") : Status::Ok());
  *reached = 1;
  RETURN_IF_ERROR(Number(-1));
  *reached = 2;
  return Status::Ok();
}

TEST(ReturnIfErrorTest, ReturnsTheFirstErrorOfAStatusOrAStatusOr) {
  int reached = 0;
  Status s = TwoSteps(true, &reached);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "first");
  EXPECT_EQ(reached, 0);
  s = TwoSteps(false, &reached);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reached, 1);
}

StatusOr<int> Sum(int a, int b) {
  ASSIGN_OR_RETURN(int x, Number(a));
  ASSIGN_OR_RETURN(const int y, Number(b));
  return x + y;
}

StatusOr<std::unique_ptr<int>> Boxed(int n) {
  std::unique_ptr<int> box;
  ASSIGN_OR_RETURN(int v, Number(n));
  ASSIGN_OR_RETURN(box, StatusOr<std::unique_ptr<int>>(std::make_unique<int>(v)));
  return box;
}

TEST(AssignOrReturnTest, DeclaresOrAssignsAndReturnsTheError) {
  EXPECT_EQ(Sum(2, 3).value(), 5);
  EXPECT_EQ(Sum(2, -3).status().message(), "negative");
  EXPECT_EQ(Sum(-2, 3).status().code(), StatusCode::kInvalidArgument);
  auto boxed = Boxed(7);
  ASSERT_TRUE(boxed.ok());
  EXPECT_EQ(**boxed, 7) << "a move-only value is moved, not copied";
  EXPECT_FALSE(Boxed(-1).ok());
}

}  // namespace
}  // namespace ayatori
