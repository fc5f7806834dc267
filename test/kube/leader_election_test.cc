#include "kube/leader_election.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "kube/resource.h"
#include "kube/testing/fake_kube_client.h"
#include "kube/time_format.h"
#include "test/support/wait.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;
using ayatori::testing::Eventually;
using ayatori::testing::HoldsFor;
using testing::FakeKubeClient;

// One candidate running on its own thread, with what its callbacks saw.
struct Candidate {
  Candidate(KubeClient& client, const std::string& id, bool release = true) {
    LeaderElectionConfig c;
    c.leaseNamespace = "kube-system";
    c.leaseName = "ayatori";
    c.identity = id;
    c.leaseDuration = 1000ms;
    c.renewDeadline = 600ms;
    c.retryPeriod = 100ms;
    c.releaseOnCancel = release;
    c.onStartedLeading = [this](std::stop_token t) {
      ++started;
      leadingToken = t;
    };
    c.onStoppedLeading = [this] { ++stopped; };
    c.log = [](const std::string&) {};
    elector = std::make_unique<LeaderElector>(client, SystemClock::Instance(), c);
  }
  void Start() {
    thread = std::jthread([this](std::stop_token st) { elector->Run(st); });
  }
  void Stop() {
    thread.request_stop();
    thread.join();
  }
  std::unique_ptr<LeaderElector> elector;
  std::atomic<int> started{0}, stopped{0};
  std::stop_token leadingToken;
  std::jthread thread;
};

LeaseRecord ReadLease(FakeKubeClient& fake) {
  auto lease = fake.Peek(LeasesResource(), "kube-system", "ayatori");
  return lease ? LeaseRecordFromJson(*lease) : LeaseRecord{};
}

TEST(LeaderElectionTest, ValidateRejectsInconsistentDurations) {
  LeaderElectionConfig c;
  c.leaseNamespace = "ns";
  c.leaseName = "l";
  c.identity = "me";
  EXPECT_TRUE(LeaderElector::Validate(c).ok());
  c.renewDeadline = c.leaseDuration;
  EXPECT_FALSE(LeaderElector::Validate(c).ok());
  c.renewDeadline = 10s;
  c.retryPeriod = 10s;
  EXPECT_FALSE(LeaderElector::Validate(c).ok());
  c.retryPeriod = 2s;
  c.identity.clear();
  EXPECT_FALSE(LeaderElector::Validate(c).ok());
}

TEST(LeaderElectionTest, ASingleCandidateCreatesTheLeaseAndLeads) {
  FakeKubeClient fake;
  Candidate a(fake, "a");
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader(); }, 5s));
  EXPECT_EQ(a.started, 1);
  LeaseRecord r = ReadLease(fake);
  EXPECT_EQ(r.holderIdentity, "a");
  EXPECT_EQ(r.leaseDurationSeconds, 1);
  EXPECT_EQ(r.leaseTransitions, 0);
  EXPECT_TRUE(ParseTime(r.acquireTime).has_value());
  // It keeps renewing.
  std::string firstRenew = r.renewTime;
  ASSERT_TRUE(Eventually([&] { return ReadLease(fake).renewTime != firstRenew; }, 5s));
  EXPECT_EQ(ReadLease(fake).acquireTime, r.acquireTime);
  a.Stop();
  EXPECT_EQ(a.stopped, 1);
  EXPECT_TRUE(a.leadingToken.stop_requested());
  EXPECT_EQ(ReadLease(fake).holderIdentity, "");  // released
}

TEST(LeaderElectionTest, TwoCandidatesNeverLeadAtOnceAndReleaseHandsOverAtOnce) {
  FakeKubeClient fake;
  Candidate a(fake, "a"), b(fake, "b");
  a.Start();
  b.Start();
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader() || b.elector->IsLeader(); }, 5s));
  ASSERT_TRUE(
      HoldsFor([&] { return !(a.elector->IsLeader() && b.elector->IsLeader()); }, 1500ms, 5ms))
      << "both candidates lead";
  Candidate& leader = a.elector->IsLeader() ? a : b;
  Candidate& follower = a.elector->IsLeader() ? b : a;
  EXPECT_EQ(ReadLease(fake).holderIdentity, leader.elector->ObservedLeader());
  auto stoppedAt = std::chrono::steady_clock::now();
  leader.Stop();
  ASSERT_TRUE(Eventually([&] { return follower.elector->IsLeader(); }, 5s));
  // Released: no need to wait out the 1 s lease.
  EXPECT_LT(std::chrono::steady_clock::now() - stoppedAt, 600ms);
  EXPECT_EQ(ReadLease(fake).leaseTransitions, 1);
  follower.Stop();
}

TEST(LeaderElectionTest, ACrashedLeadersLeaseIsTakenAfterItExpires) {
  FakeKubeClient fake;
  Candidate a(fake, "a", /*release=*/false);
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader(); }, 5s));
  Candidate b(fake, "b");
  b.Start();
  ASSERT_TRUE(Eventually([&] { return b.elector->ObservedLeader() == "a"; }, 5s));
  a.Stop();  // stops renewing without releasing, like a crash
  EXPECT_EQ(ReadLease(fake).holderIdentity, "a");
  auto stoppedAt = std::chrono::steady_clock::now();
  ASSERT_TRUE(Eventually([&] { return b.elector->IsLeader(); }, 5s));
  auto took = std::chrono::steady_clock::now() - stoppedAt;
  EXPECT_GE(took, 300ms);   // not before the lease could have expired...
  EXPECT_LT(took, 1500ms);  // ...and soon after (lease 1 s + a retry period)
  b.Stop();
}

TEST(LeaderElectionTest, LeaderStepsDownWhenAnotherHolderAppears) {
  FakeKubeClient fake;
  Candidate a(fake, "a");
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader(); }, 5s));
  auto lease = *fake.Get(LeasesResource(), "kube-system", "ayatori");
  lease["spec"]["holderIdentity"] = "intruder";
  ASSERT_TRUE(fake.Update(LeasesResource(), "kube-system", lease, {}).ok());
  ASSERT_TRUE(Eventually([&] { return a.stopped == 1; }, 5s));
  EXPECT_TRUE(a.leadingToken.stop_requested());
  EXPECT_FALSE(a.elector->IsLeader());
  a.Stop();
  EXPECT_EQ(ReadLease(fake).holderIdentity, "intruder");  // not released: it was not ours
}

TEST(LeaderElectionTest, LeaderStepsDownWhenRenewalsFailPastTheDeadline) {
  FakeKubeClient fake;
  Candidate a(fake, "a");
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.elector->IsLeader(); }, 5s));
  auto failingSince = std::chrono::steady_clock::now();
  fake.FailNext("update", "leases.coordination.k8s.io",
                Status(StatusCode::kServerError, "etcd unavailable"), 1000000);
  ASSERT_TRUE(Eventually([&] { return a.stopped == 1; }, 5s));
  auto took = std::chrono::steady_clock::now() - failingSince;
  EXPECT_GE(took, 400ms);
  EXPECT_LT(took, 1000ms);  // before the 1 s lease could expire for the others
  fake.ClearFailures();
  // Once the API works again it campaigns and wins again.
  ASSERT_TRUE(Eventually([&] { return a.started == 2; }, 5s));
  a.Stop();
}

}  // namespace
}  // namespace ayatori::kube
