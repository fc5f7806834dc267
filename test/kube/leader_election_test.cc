#include "kube/leader_election.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "base/time.h"
#include "kube/resource.h"
#include "kube/testing/fake_clock.h"
#include "kube/testing/fake_kube_client.h"
#include "test/support/wait.h"

namespace ayatori::kube {
namespace {

using namespace std::chrono_literals;
using ayatori::testing::Eventually;
using ayatori::testing::HoldsFor;
using testing::FakeKubeClient;

// One candidate running on its own thread, with what its callbacks saw. `work`, when given, runs
// in onStartedLeading after the counters are updated.
struct Candidate {
  Candidate(KubeClient& client, const std::string& id, bool release = true,
            const Clock& clock = SystemClock::Instance(),
            std::function<void(std::stop_token)> work = nullptr) {
    LeaderElectionConfig c;
    c.leaseNamespace = "kube-system";
    c.leaseName = "ayatori";
    c.identity = id;
    c.leaseDuration = 1000ms;
    c.renewDeadline = 600ms;
    c.retryPeriod = 100ms;
    c.releaseOnCancel = release;
    c.onStartedLeading = [this, work = std::move(work)](const std::stop_token& t) {
      leadingToken = t;
      ++started;
      if (work) work(t);
    };
    c.onStoppedLeading = [this] {
      stoppedAt = std::chrono::steady_clock::now();
      ++stopped;
    };
    c.log = [](const std::string&) {};
    elector = std::make_unique<LeaderElector>(client, clock, c);
  }
  void Start() {
    thread = std::jthread([this](const std::stop_token& st) { elector->Run(st); });
  }
  void Stop() {
    thread.request_stop();
    thread.join();
  }
  std::unique_ptr<LeaderElector> elector;
  std::atomic<int> started{0}, stopped{0};
  std::atomic<std::chrono::steady_clock::time_point> stoppedAt{};
  std::stop_token leadingToken;
  std::jthread thread;
};

// Writes `identity` into the Lease as its holder, as a replica that believed it expired would.
Status TakeOver(FakeKubeClient& fake, const std::string& identity) {
  auto lease = fake.Get(LeasesResource(), "kube-system", "ayatori");
  if (!lease.ok()) return lease.status();
  (*lease)["spec"]["holderIdentity"] = identity;
  return fake.Update(LeasesResource(), "kube-system", *lease, {}).status();
}

// Blocks until `stop` is requested.
void WaitUntilStopped(const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait(lock, stop, [] { return false; });
}

// A one-shot gate a test opens; Wait() blocks until then.
class Gate {
 public:
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// FakeKubeClient whose Lease updates can be made to hang, as a request to an API server that no
// longer answers does until the client's timeout.
class FakeHangingLeaseUpdates final : public KubeClient {
 public:
  explicit FakeHangingLeaseUpdates(FakeKubeClient& inner) : inner_(inner) {}
  void Hang() {
    std::lock_guard lock(mu_);
    hanging_ = true;
  }
  void Unhang() {
    {
      std::lock_guard lock(mu_);
      hanging_ = false;
    }
    cv_.notify_all();
  }
  int Hung() const {
    std::lock_guard lock(mu_);
    return hung_;
  }

  StatusOr<nlohmann::json> Get(const ResourceRef& ref, std::string_view ns,
                               std::string_view name) override {
    return inner_.Get(ref, ns, name);
  }
  StatusOr<ObjectList> List(const ResourceRef& ref, std::string_view ns,
                            const ListOptions& options) override {
    return inner_.List(ref, ns, options);
  }
  StatusOr<nlohmann::json> Create(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override {
    return inner_.Create(ref, ns, object, options);
  }
  StatusOr<nlohmann::json> Update(const ResourceRef& ref, std::string_view ns,
                                  const nlohmann::json& object,
                                  const WriteOptions& options) override {
    if (ref.GroupResource() == LeasesResource().GroupResource()) {
      std::unique_lock lock(mu_);
      if (hanging_) ++hung_;
      cv_.wait(lock, [this] { return !hanging_; });
    }
    return inner_.Update(ref, ns, object, options);
  }
  StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref, std::string_view ns,
                                        const nlohmann::json& object,
                                        const WriteOptions& options) override {
    return inner_.UpdateStatus(ref, ns, object, options);
  }
  StatusOr<nlohmann::json> Patch(const ResourceRef& ref, std::string_view ns, std::string_view name,
                                 PatchType type, const nlohmann::json& patch,
                                 const PatchOptions& options) override {
    return inner_.Patch(ref, ns, name, type, patch, options);
  }
  Status Delete(const ResourceRef& ref, std::string_view ns, std::string_view name,
                const DeleteOptions& options) override {
    return inner_.Delete(ref, ns, name, options);
  }
  Status Watch(const ResourceRef& ref, std::string_view ns, const WatchOptions& options,
               std::stop_token stop, const WatchHandler& handler) override {
    return inner_.Watch(ref, ns, options, std::move(stop), handler);
  }

 private:
  FakeKubeClient& inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool hanging_ = false;
  int hung_ = 0;
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
  // onStartedLeading runs on a thread of its own, soon after.
  ASSERT_TRUE(Eventually([&] { return a.started == 1; }, 5s));
  LeaseRecord r = ReadLease(fake);
  EXPECT_EQ(r.holderIdentity, "a");
  EXPECT_EQ(r.leaseDurationSeconds, 1);
  EXPECT_EQ(r.leaseTransitions, 0);
  EXPECT_TRUE(base::ParseTime(r.acquireTime).ok());
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
  ASSERT_TRUE(Eventually([&] { return a.started == 1; }, 5s));
  ASSERT_TRUE(TakeOver(fake, "intruder").ok());
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

// client-go runs OnStartedLeading in its own goroutine: work that takes long to start (an
// informer sync of up to a minute) must not keep the leader from renewing a 15 s lease, or
// another replica takes over while this one starts working.
TEST(LeaderElectionTest, WorkRunsOnItsOwnThreadWhileRenewalsGoOn) {
  FakeKubeClient fake;
  Candidate a(fake, "a", true, SystemClock::Instance(), WaitUntilStopped);
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.started == 1; }, 5s));
  const std::string firstRenew = ReadLease(fake).renewTime;
  // Longer than the 1 s lease, while the work still blocks in onStartedLeading.
  ASSERT_TRUE(Eventually([&] { return ReadLease(fake).renewTime != firstRenew; }, 5s))
      << "no renewal while the work runs";
  EXPECT_TRUE(HoldsFor([&] { return a.elector->IsLeader() && a.stopped == 0; }, 1500ms))
      << "the leader stepped down while its work was starting";
  EXPECT_EQ(ReadLease(fake).holderIdentity, "a");
  a.Stop();
  EXPECT_EQ(a.stopped, 1);
  EXPECT_EQ(ReadLease(fake).holderIdentity, "");
}

// A renewal that hangs (an API server that stopped answering, until the client's 30 s timeout)
// must not delay the end of the term past the renew deadline: after it the lease may expire for
// the other replicas.
TEST(LeaderElectionTest, AHangingRenewalEndsTheTermAtTheRenewDeadline) {
  FakeKubeClient fake;
  FakeHangingLeaseUpdates client(fake);
  Candidate a(client, "a");
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.started == 1; }, 5s));
  const auto hangFrom = std::chrono::steady_clock::now();
  client.Hang();
  ASSERT_TRUE(Eventually([&] { return a.stopped == 1; }, 5s));
  const auto took = a.stoppedAt.load() - hangFrom;
  EXPECT_LT(took, 600ms + 300ms)
      << "the term ended " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms after renewals started to hang";
  EXPECT_GE(client.Hung(), 1) << "the renewal never hung: the test proves nothing";
  EXPECT_TRUE(a.leadingToken.stop_requested());
  EXPECT_FALSE(a.elector->IsLeader());
  client.Unhang();
  a.Stop();
}

// A replica that lost its lease learns it at once (onStoppedLeading), even when its work does
// not return: the elector does not wait for the work first. Here the work only returns when the
// test lets it.
TEST(LeaderElectionTest, LossIsReportedBeforeTheWorkIsWaitedFor) {
  FakeKubeClient fake;
  Gate release;
  std::atomic<bool> workReturned{false};
  Candidate a(fake, "a", true, SystemClock::Instance(), [&](const std::stop_token&) {
    release.Wait();
    workReturned = true;
  });
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.started == 1; }, 5s));
  ASSERT_TRUE(TakeOver(fake, "intruder").ok());
  ASSERT_TRUE(Eventually([&] { return a.stopped == 1; }, 5s));
  EXPECT_FALSE(workReturned);
  EXPECT_FALSE(a.elector->IsLeader());
  release.Open();
  a.Stop();
  EXPECT_TRUE(workReturned);
  EXPECT_EQ(ReadLease(fake).holderIdentity, "intruder");
}

// On a requested stop the work ends before the Lease is released: the next leader never
// overlaps with this one's work.
TEST(LeaderElectionTest, OnStopTheWorkEndsBeforeTheLeaseIsReleased) {
  FakeKubeClient fake;
  std::string holderWhenWorkEnded;
  Candidate a(fake, "a", true, SystemClock::Instance(), [&](const std::stop_token& leading) {
    WaitUntilStopped(leading);
    holderWhenWorkEnded = ReadLease(fake).holderIdentity;
  });
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.started == 1; }, 5s));
  a.Stop();
  EXPECT_EQ(holderWhenWorkEnded, "a");
  EXPECT_EQ(ReadLease(fake).holderIdentity, "");
}

// Expiry is judged on the candidate's own clock, from when it first saw the record: the
// renewTime written by another machine's clock (here years old) is never trusted.
TEST(LeaderElectionTest, ExpiryIsMeasuredOnTheCandidatesOwnClock) {
  FakeKubeClient fake;
  nlohmann::json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                          {"kind", "Lease"},
                          {"metadata", {{"name", "ayatori"}, {"namespace", "kube-system"}}},
                          {"spec",
                           {{"holderIdentity", "a"},
                            {"leaseDurationSeconds", 1},
                            {"acquireTime", "2001-01-01T00:00:00.000000Z"},
                            {"renewTime", "2001-01-01T00:00:00.000000Z"}}}};
  ASSERT_TRUE(fake.Create(LeasesResource(), "kube-system", lease, {}).ok());
  testing::FakeClock clock;
  Candidate b(fake, "b", true, clock);
  b.Start();
  ASSERT_TRUE(Eventually([&] { return b.elector->ObservedLeader() == "a"; }, 5s));
  // Many retries, no time passing on b's clock: the lease stays a's.
  EXPECT_TRUE(HoldsFor([&] { return !b.elector->IsLeader(); }, 500ms));
  clock.Advance(1100ms);
  ASSERT_TRUE(Eventually([&] { return b.elector->IsLeader(); }, 5s));
  EXPECT_EQ(ReadLease(fake).holderIdentity, "b");
  EXPECT_EQ(ReadLease(fake).leaseTransitions, 1);
  b.Stop();
}

}  // namespace
}  // namespace ayatori::kube
