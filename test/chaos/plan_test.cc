#include "test/chaos/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace ayatori::chaos {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

std::string Describe(const Plan& p) {
  std::string s;
  for (const auto& j : p.jobs) {
    s += j.name + "@" + std::to_string(j.createAt.count()) + "/" + std::to_string(j.runSeconds) +
         "/" + std::to_string(j.actAfter.count()) + (j.actEarly ? "e" : "") + " ";
  }
  for (const auto& d : p.disruptions) {
    s += std::string(DisruptionName(d.type)) + "@" + std::to_string(d.at.count()) + "/" +
         (d.leader ? "leader/" : "standby/") + std::to_string(d.replica) + "/" +
         std::to_string(d.downtime.count()) + " ";
  }
  return s;
}

TEST(ChaosPlan, TheSameSeedGivesTheSamePlan) {
  EXPECT_EQ(Describe(MakePlan(40, 12345)), Describe(MakePlan(40, 12345)));
  EXPECT_NE(Describe(MakePlan(40, 12345)), Describe(MakePlan(40, 12346)));
  EXPECT_EQ(MakePlan(40, 12345).seed, 12345u);
}

TEST(ChaosPlan, EveryKindRunsOnBothBackendsFromTwelveJobs) {
  for (int n : {12, 16, 40}) {
    Plan p = MakePlan(n, 99);
    ASSERT_EQ(p.jobs.size(), static_cast<size_t>(n));
    std::map<Backend, std::set<Kind>> kinds;
    std::map<Backend, int> perBackend;
    for (const auto& j : p.jobs) {
      kinds[j.backend].insert(j.kind);
      perBackend[j.backend]++;
    }
    EXPECT_EQ(kinds[Backend::kDocker].size(), 6u) << n;
    EXPECT_EQ(kinds[Backend::kKubernetes].size(), 6u) << n;
    EXPECT_EQ(perBackend[Backend::kDocker], (n + 1) / 2) << n;
    EXPECT_EQ(perBackend[Backend::kKubernetes], n / 2) << n;
  }
}

TEST(ChaosPlan, JobsHaveUniqueNamesAndAreCreatedInOrderWithinTheWindow) {
  Plan p = MakePlan(40, 7);
  std::set<std::string> names;
  std::chrono::milliseconds previous{-1};
  for (const auto& j : p.jobs) {
    EXPECT_TRUE(names.insert(j.name).second) << j.name;
    EXPECT_LE(j.name.size(), 63u);
    EXPECT_GT(j.createAt, previous) << j.name;
    EXPECT_LT(j.createAt, p.creationWindow) << j.name;
    previous = j.createAt;
  }
  EXPECT_EQ(p.creationWindow, 30s);  // 40 x 750 ms
  EXPECT_EQ(MakePlan(4, 7).creationWindow, 20s);
}

TEST(ChaosPlan, TaskTimingFitsEachKind) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    for (const auto& j : MakePlan(24, seed).jobs) {
      switch (j.kind) {
        case Kind::kExit0:
        case Kind::kExit3:
          EXPECT_GE(j.runSeconds, 2);
          EXPECT_LE(j.runSeconds, 8);
          EXPECT_EQ(j.exitCode, j.kind == Kind::kExit3 ? 3 : 0);
          break;
        case Kind::kDeadline:
          EXPECT_EQ(j.runSeconds, 0) << "a deadline Job must outlive its deadline";
          EXPECT_GE(j.activeDeadlineSeconds, 2);
          EXPECT_LE(j.activeDeadlineSeconds, 5);
          break;
        case Kind::kCancelRace:
          EXPECT_GE(j.runSeconds, 2);
          EXPECT_LE(j.actAfter, std::chrono::seconds(j.runSeconds));
          EXPECT_FALSE(j.actEarly);
          EXPECT_EQ(j.exitCode, 0);
          break;
        case Kind::kCancel:
        case Kind::kDelete:
          EXPECT_EQ(j.runSeconds, 0) << "cancelled and deleted Jobs must run until then";
          EXPECT_LE(j.actAfter, j.actEarly ? 2s : 5s);
          break;
      }
    }
  }
}

TEST(ChaosPlan, DockerdThenTheApiserverGoDownOnceWhileReplicasAreKilled) {
  long leaderKills = 0, allKills = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    Plan p = MakePlan(16, seed);
    std::vector<Disruption> dockerd, apiserver;
    int kills = 0;
    std::chrono::milliseconds previous{0};
    for (const auto& d : p.disruptions) {
      EXPECT_GE(d.at, previous) << "sorted by time";
      previous = d.at;
      EXPECT_LT(d.at, p.chaosWindow);
      switch (d.type) {
        case Disruption::Type::kKillReplica:
          ++kills;
          EXPECT_TRUE(d.replica == 0 || d.replica == 1);
          break;
        case Disruption::Type::kRestartDockerd:
          dockerd.push_back(d);
          break;
        case Disruption::Type::kRestartApiserver:
          apiserver.push_back(d);
          break;
      }
    }
    ASSERT_EQ(dockerd.size(), 1u);
    for (const auto& d : p.disruptions) {
      if (d.type != Disruption::Type::kKillReplica) continue;
      EXPECT_FALSE(d.at + kLeaderSettles > apiserver[0].at &&
                   d.at < apiserver[0].at + apiserver[0].downtime + 3s)
          << "a kill at " << d.at.count() << " ms: the apiserver outage must meet a leader";
    }
    leaderKills += std::count_if(
        p.disruptions.begin(), p.disruptions.end(),
        [](const Disruption& d) { return d.type == Disruption::Type::kKillReplica && d.leader; });
    allKills += kills;
    ASSERT_EQ(apiserver.size(), 1u);
    EXPECT_GE(kills, 2) << seed;
    EXPECT_GE(dockerd[0].downtime, 3s);
    EXPECT_GE(apiserver[0].downtime, 5s) << "longer than the 4 s lease: the leader loses it";
    EXPECT_GE(apiserver[0].at, dockerd[0].at + dockerd[0].downtime + 3s) << "one outage at a time";
    EXPECT_LE(apiserver[0].at + apiserver[0].downtime, p.chaosWindow);
    EXPECT_LT(dockerd[0].at, p.creationWindow) << "while Jobs are being created";
  }
  // Mostly the leader: killing it is what makes the standby take over.
  EXPECT_GT(leaderKills * 100 / allKills, 55);
  EXPECT_LT(leaderKills * 100 / allKills, 80);
}

TEST(ChaosPlan, AtLeastOneJob) {
  EXPECT_EQ(MakePlan(0, 1).jobs.size(), 1u);
  EXPECT_EQ(MakePlan(-5, 1).jobs.size(), 1u);
}

TEST(ChaosPlan, RandomSeedsAreNeverZero) {
  for (int i = 0; i < 100; ++i) EXPECT_NE(RandomSeed(), 0u);
}

}  // namespace
}  // namespace ayatori::chaos
