// Leader election on a real coordination.k8s.io/v1 Lease with short durations
// (lease 3 s, renew 2 s, retry 0.5 s).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/time.h"
#include "kube/leader_election.h"
#include "kube/resource.h"
#include "test/kube/integration_util.h"
#include "test/support/testenv.h"
#include "test/support/wait.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;
using ayatori::testing::Eventually;
using ayatori::testing::HoldsFor;

struct Replica {
  Replica(KubeClient& client, const std::string& ns, const std::string& lease,
          const std::string& id, bool release) {
    LeaderElectionConfig c;
    c.leaseNamespace = ns;
    c.leaseName = lease;
    c.identity = id;
    c.leaseDuration = 3s;
    c.renewDeadline = 2s;
    c.retryPeriod = 500ms;
    c.releaseOnCancel = release;
    c.onStartedLeading = [this](const std::stop_token&) { ++started; };
    c.onStoppedLeading = [this] { ++stopped; };
    c.log = [](const std::string&) {};
    EXPECT_TRUE(LeaderElector::Validate(c).ok());
    elector = std::make_unique<LeaderElector>(client, SystemClock::Instance(), c);
    thread = std::jthread([this](const std::stop_token& st) { elector->Run(st); });
  }
  void Stop() {
    thread.request_stop();
    thread.join();
  }
  bool leading() const { return elector->IsLeader(); }

  std::unique_ptr<LeaderElector> elector;
  std::atomic<int> started{0}, stopped{0};
  std::jthread thread;
};

class LeaderElectionIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = testing::Client(testing::AdminConfig());
    ns_ = testing::NewNamespace(*client_, "kube-lease");
  }
  void TearDown() override {
    if (client_ && !ns_.empty()) (void)client_->Delete(NamespacesResource(), "", ns_, {});
  }
  LeaseRecord Lease(const std::string& name) {
    auto l = client_->Get(LeasesResource(), ns_, name);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? LeaseRecordFromJson(*l) : LeaseRecord{};
  }

  std::unique_ptr<RestClient> client_;
  std::string ns_;
};

TEST_F(LeaderElectionIntegrationTest, TwoReplicasExactlyOneLeaderAndFailoverWithinTheLease) {
  auto ca = testing::Client(testing::AdminConfig());
  auto cb = testing::Client(testing::AdminConfig());
  Replica a(*ca, ns_, "ayatori", "replica-a", /*release=*/false);
  Replica b(*cb, ns_, "ayatori", "replica-b", /*release=*/false);
  ASSERT_TRUE(Eventually([&] { return a.leading() || b.leading(); }, 10s));
  // For a while: exactly one leads, and the Lease names it.
  ASSERT_TRUE(HoldsFor([&] { return a.leading() != b.leading(); }, 4s))
      << "exactly one replica must lead";
  Replica& leader = a.leading() ? a : b;
  Replica& other = a.leading() ? b : a;
  LeaseRecord r = Lease("ayatori");
  EXPECT_EQ(r.holderIdentity, &leader == &a ? "replica-a" : "replica-b");
  EXPECT_EQ(r.leaseDurationSeconds, 3);
  EXPECT_TRUE(base::ParseTime(r.renewTime).ok());
  EXPECT_EQ(other.started, 0);

  // The leader stops renewing (a crash: no release). The other takes over once the lease
  // expires, within the lease duration plus one retry period.
  auto stoppedAt = std::chrono::steady_clock::now();
  leader.Stop();
  ASSERT_TRUE(Eventually([&] { return other.leading(); }, 10s));
  auto failover = std::chrono::steady_clock::now() - stoppedAt;
  EXPECT_LT(failover, 3s + 1s)
      << "failover took " << std::chrono::duration_cast<std::chrono::milliseconds>(failover).count()
      << " ms";
  LeaseRecord after = Lease("ayatori");
  EXPECT_EQ(after.holderIdentity, &other == &a ? "replica-a" : "replica-b");
  EXPECT_EQ(after.leaseTransitions, r.leaseTransitions + 1);
  EXPECT_NE(after.acquireTime, r.acquireTime);
  other.Stop();
}

TEST_F(LeaderElectionIntegrationTest, ReleaseOnShutdownGivesImmediateTakeover) {
  auto ca = testing::Client(testing::AdminConfig());
  auto cb = testing::Client(testing::AdminConfig());
  Replica a(*ca, ns_, "release", "replica-a", /*release=*/true);
  ASSERT_TRUE(Eventually([&] { return a.leading(); }, 10s));
  Replica b(*cb, ns_, "release", "replica-b", /*release=*/true);
  ASSERT_TRUE(Eventually([&] { return b.elector->ObservedLeader() == "replica-a"; }, 10s));
  auto stoppedAt = std::chrono::steady_clock::now();
  a.Stop();
  EXPECT_EQ(a.stopped, 1);
  ASSERT_TRUE(Eventually([&] { return b.leading(); }, 10s));
  auto takeover = std::chrono::steady_clock::now() - stoppedAt;
  // Well under the 3 s lease: one retry period (0.5 s, jittered) is all it takes.
  EXPECT_LT(takeover, 1500ms);
  b.Stop();
  EXPECT_EQ(Lease("release").holderIdentity, "");
}

TEST_F(LeaderElectionIntegrationTest, LeaderStepsDownWhenItCannotRenew) {
  // The replica's credentials are revoked mid-term: it can no longer renew and must stop
  // leading within the renew deadline, before others could take over.
  char tmpl[] = "/tmp/ayatori-lease-token-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  auto writeToken = [&](const std::string& var) {
    std::ofstream(dir + "/token.new") << ayatori::testing::TestenvVar(var);
    std::filesystem::rename(dir + "/token.new", dir + "/token");
  };
  writeToken("TESTENV_TOKEN");
  RestConfig cfg = testing::TokenConfig("");
  cfg.bearerTokenFile = dir + "/token";
  auto c = testing::Client(cfg);
  Replica a(*c, ns_, "revoked", "replica-a", /*release=*/true);
  ASSERT_TRUE(Eventually([&] { return a.leading(); }, 10s));
  auto revokedAt = std::chrono::steady_clock::now();
  writeToken("TESTENV_USER_TOKEN");  // a user without RBAC on leases
  ASSERT_TRUE(Eventually([&] { return a.stopped == 1; }, 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - revokedAt, 3s);
  EXPECT_FALSE(a.leading());
  a.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ayatori::kube
