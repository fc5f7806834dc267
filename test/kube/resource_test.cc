#include "kube/resource.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace ayatori::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(ParseNamespaceListTest, EmptyMeansNoNamespaceNamed) {
  auto none = ParseNamespaceList("");
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(*none, IsEmpty());
  auto blank = ParseNamespaceList("  ");
  ASSERT_TRUE(blank.ok());
  EXPECT_THAT(*blank, IsEmpty());
}

TEST(ParseNamespaceListTest, SplitsOnCommasInOrderAndTrimsSpaces) {
  auto list = ParseNamespaceList("team-a, team-b ,c0");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_THAT(*list, ElementsAre("team-a", "team-b", "c0"));
}

TEST(ParseNamespaceListTest, RefusesAnInvalidNameNamingIt) {
  for (const char* bad :
       {"team-a,Team-B", "team-a,team_b", "team-a,-b", "team-a,b-", "team-a,a/b", "team-a,a.b"}) {
    auto list = ParseNamespaceList(bad);
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_EQ(list.status().code(), StatusCode::kInvalidArgument);
    std::string name = std::string(bad).substr(std::string(bad).find(',') + 1);
    EXPECT_THAT(list.status().message(), HasSubstr("\"" + name + "\"")) << bad;
  }
  auto tooLong = ParseNamespaceList(std::string(64, 'a'));
  ASSERT_FALSE(tooLong.ok());
  EXPECT_THAT(tooLong.status().message(), HasSubstr("longer than 63"));
  EXPECT_TRUE(ParseNamespaceList(std::string(63, 'a')).ok());
}

TEST(ParseNamespaceListTest, RefusesEmptyEntriesAndDuplicates) {
  for (const char* bad : {"team-a,", ",team-a", "team-a,,team-b"}) {
    auto list = ParseNamespaceList(bad);
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_THAT(list.status().message(), HasSubstr("empty entry")) << bad;
  }
  auto twice = ParseNamespaceList("team-a,team-b,team-a");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("\"team-a\" is listed twice"));
}

}  // namespace
}  // namespace ayatori::kube
