// The Manager's order (src/manager/manager.h): runnables start in the order they were added, those
// of every replica before the leader ones, and stop in the reverse order; a runnable that fails to
// start stops the rest and sets the exit code; a stop signal stops everything gracefully; with
// leader election the leader runnables stop before the Lease is released, and a lost Lease
// abandons them and ends the process at once.
#include "manager/manager.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/resource.h"
#include "kube/testing/fake_kube_client.h"
#include "test/support/wait.h"

namespace ayatori::manager {
namespace {

using ::ayatori::testing::Eventually;
using namespace std::chrono_literals;

// What the fake runnables did, in order: "start:a", "stop:a".
class FakeJournal {
 public:
  void Record(const std::string& entry) {
    std::lock_guard lock(mu_);
    entries_.push_back(entry);
  }
  std::vector<std::string> Entries() const {
    std::lock_guard lock(mu_);
    return entries_;
  }
  bool Has(const std::string& entry) const {
    auto all = Entries();
    return std::find(all.begin(), all.end(), entry) != all.end();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> entries_;
};

// A runnable that records its Start and Stop; it can fail its Start, or wait in it for `stop`
// (as the Job controller waits for its informers to sync).
class FakeRunnable final : public Runnable {
 public:
  enum class OnStart { kSucceed, kFail, kWaitForStop };

  FakeRunnable(FakeJournal& journal, std::string name, OnStart onStart = OnStart::kSucceed)
      : journal_(journal), name_(std::move(name)), onStart_(onStart) {}
  std::string Name() const override { return name_; }
  Status Start(const std::stop_token& stop) override {
    journal_.Record("start:" + name_);
    switch (onStart_) {
      case OnStart::kSucceed:
        return Status::Ok();
      case OnStart::kFail:
        return {StatusCode::kInternal, name_ + " cannot start"};
      case OnStart::kWaitForStop: {
        std::mutex mu;
        std::condition_variable_any cv;
        std::unique_lock lock(mu);
        cv.wait(lock, stop, [] { return false; });
        return {StatusCode::kCancelled, "stopped while starting"};
      }
    }
    return Status::Ok();
  }
  void Stop() override {
    journal_.Record("stop:" + name_);
    if (onStop) onStop();
  }
  void Abandon() override { journal_.Record("abandon:" + name_); }

  std::function<void()> onStop;  // runs after the stop is recorded

 private:
  FakeJournal& journal_;
  std::string name_;
  OnStart onStart_;
};

std::unique_ptr<Manager> NewManager() {
  auto mgr = Manager::New({});  // no health server: the unit tier does no I/O
  EXPECT_TRUE(mgr.ok()) << mgr.status().ToString();
  return std::move(*mgr);
}

TEST(ManagerTest, StartsEveryReplicaRunnablesThenLeaderOnesAndStopsInReverse) {
  FakeJournal journal;
  FakeRunnable a(journal, "a"), b(journal, "b"), leader1(journal, "leader1"),
      leader2(journal, "leader2");
  auto mgr = NewManager();
  // Added interleaved: the runnables of every replica still start first.
  mgr->Add(a);
  mgr->Add(leader1, {.needsLeadership = true});
  mgr->Add(b);
  mgr->Add(leader2, {.needsLeadership = true});
  auto exitCode = std::async(std::launch::async, [&] { return mgr->Run(); });
  ASSERT_TRUE(Eventually([&] { return journal.Has("start:leader2"); }, 10s));
  EXPECT_EQ(journal.Entries(),
            (std::vector<std::string>{"start:a", "start:b", "start:leader1", "start:leader2"}));

  mgr->RequestStop(7, "test");
  ASSERT_EQ(exitCode.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(exitCode.get(), 7);
  EXPECT_EQ(journal.Entries(),
            (std::vector<std::string>{"start:a", "start:b", "start:leader1", "start:leader2",
                                      "stop:leader2", "stop:leader1", "stop:b", "stop:a"}));
}

TEST(ManagerTest, AFailingRunnableStopsTheOnesStartedAndStartsNoOther) {
  FakeJournal journal;
  FakeRunnable a(journal, "a"), failing(journal, "failing", FakeRunnable::OnStart::kFail),
      after(journal, "after"), leader(journal, "leader");
  auto mgr = NewManager();
  mgr->Add(a);
  mgr->Add(failing, {.exitCodeOnFailure = 9});
  mgr->Add(after);
  mgr->Add(leader, {.needsLeadership = true});
  auto exitCode = std::async(std::launch::async, [&] { return mgr->Run(); });
  ASSERT_EQ(exitCode.wait_for(10s), std::future_status::ready) << "the failure ended Run";
  EXPECT_EQ(exitCode.get(), 9);
  // The failing one is stopped too: it may have started part of its work.
  EXPECT_EQ(journal.Entries(),
            (std::vector<std::string>{"start:a", "start:failing", "stop:failing", "stop:a"}));
}

TEST(ManagerTest, AFailingLeaderRunnableStopsEverything) {
  FakeJournal journal;
  FakeRunnable a(journal, "a"), leader1(journal, "leader1"),
      failing(journal, "failing", FakeRunnable::OnStart::kFail), leader3(journal, "leader3");
  auto mgr = NewManager();
  mgr->Add(a);
  mgr->Add(leader1, {.needsLeadership = true});
  mgr->Add(failing, {.needsLeadership = true, .exitCodeOnFailure = 4});
  mgr->Add(leader3, {.needsLeadership = true});
  auto exitCode = std::async(std::launch::async, [&] { return mgr->Run(); });
  ASSERT_EQ(exitCode.wait_for(10s), std::future_status::ready) << "the failure ended Run";
  EXPECT_EQ(exitCode.get(), 4);
  EXPECT_EQ(journal.Entries(),
            (std::vector<std::string>{"start:a", "start:leader1", "start:failing", "stop:failing",
                                      "stop:leader1", "stop:a"}));
}

TEST(ManagerTest, AStopWhileARunnableStartsCancelsItWithoutTakingItForAFailure) {
  FakeJournal journal;
  FakeRunnable a(journal, "a"), syncing(journal, "syncing", FakeRunnable::OnStart::kWaitForStop);
  auto mgr = NewManager();
  mgr->Add(a);
  mgr->Add(syncing, {.needsLeadership = true, .exitCodeOnFailure = 4});
  auto exitCode = std::async(std::launch::async, [&] { return mgr->Run(); });
  ASSERT_TRUE(Eventually([&] { return journal.Has("start:syncing"); }, 10s));
  mgr->RequestStop(kExitStopped, "test");
  ASSERT_EQ(exitCode.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(exitCode.get(), kExitStopped) << "kCancelled is not the runnable's failure";
  EXPECT_EQ(journal.Entries(),
            (std::vector<std::string>{"start:a", "start:syncing", "stop:syncing", "stop:a"}));
}

TEST(ManagerTest, SigtermStopsEverythingInReverseOrderAndExitsZero) {
  FakeJournal journal;
  FakeRunnable a(journal, "a"), leader(journal, "leader");
  // New blocks SIGTERM in this thread and in the threads started after it (the signaller's and
  // the earlier tests'), so the signal waits for the Manager's signalfd instead of ending the
  // test.
  auto mgr = NewManager();
  mgr->Add(a);
  mgr->Add(leader, {.needsLeadership = true});
  std::thread signaller([&] {
    if (!Eventually([&] { return journal.Has("start:leader"); }, 10s)) {
      mgr->RequestStop(1, "the leader runnable did not start");
      return;
    }
    // To the process, as the kubelet sends it: every thread blocks SIGTERM (this test's threads
    // all started after New), so it waits for the Manager's signalfd.
    kill(getpid(), SIGTERM);
  });
  int exitCode = mgr->Run();
  signaller.join();
  EXPECT_EQ(exitCode, kExitStopped);
  EXPECT_EQ(journal.Entries(),
            (std::vector<std::string>{"start:a", "start:leader", "stop:leader", "stop:a"}));
}

kube::LeaderElectionConfig FakeLease() {
  kube::LeaderElectionConfig c;
  c.leaseNamespace = "kube-system";
  c.leaseName = "ayatori";
  c.identity = "replica-a";
  c.leaseDuration = 1000ms;
  c.renewDeadline = 600ms;
  c.retryPeriod = 100ms;
  c.log = [](const std::string&) {};
  return c;
}

std::string LeaseHolder(kube::testing::FakeKubeClient& fake) {
  auto lease = fake.Get(kube::LeasesResource(), "kube-system", "ayatori");
  if (!lease.ok()) return "<no lease>";
  return lease->value("/spec/holderIdentity"_json_pointer, std::string());
}

TEST(ManagerTest, WithLeaderElectionTheLeaderRunnablesStopBeforeTheLeaseIsReleased) {
  FakeJournal journal;
  FakeRunnable a(journal, "a"), leader(journal, "leader");
  kube::testing::FakeKubeClient fake;
  leader.onStop = [&] { journal.Record("holder at the leader's stop: " + LeaseHolder(fake)); };
  auto mgr = NewManager();
  ASSERT_TRUE(mgr->EnableLeaderElection(FakeLease(), fake).ok());
  mgr->Add(a);
  mgr->Add(leader, {.needsLeadership = true});
  auto exitCode = std::async(std::launch::async, [&] { return mgr->Run(); });
  ASSERT_TRUE(Eventually([&] { return journal.Has("start:leader"); }, 10s));
  EXPECT_EQ(LeaseHolder(fake), "replica-a");
  mgr->RequestStop(kExitStopped, "test");
  ASSERT_EQ(exitCode.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(exitCode.get(), kExitStopped);
  EXPECT_EQ(journal.Entries(),
            (std::vector<std::string>{"start:a", "start:leader", "stop:leader",
                                      "holder at the leader's stop: replica-a", "stop:a"}));
  EXPECT_EQ(LeaseHolder(fake), "") << "the Lease was not released";
}

TEST(ManagerTest, ALostLeaseAbandonsTheLeaderRunnablesAndEndsTheProcessAtOnce) {
  FakeJournal journal;
  FakeRunnable a(journal, "a"), leader(journal, "leader");
  kube::testing::FakeKubeClient fake;
  std::atomic<int> exitedWith{-1};
  ManagerOptions options;
  std::unique_ptr<Manager> mgr;
  // Stands in for _exit: records the code and lets Run return, as the process would end.
  options.exitNow = [&](int code) {
    exitedWith = code;
    mgr->RequestStop(code, "exited");
  };
  auto created = Manager::New(options);
  ASSERT_TRUE(created.ok());
  mgr = std::move(*created);
  ASSERT_TRUE(mgr->EnableLeaderElection(FakeLease(), fake).ok());
  mgr->Add(a);
  mgr->Add(leader, {.needsLeadership = true});
  auto exitCode = std::async(std::launch::async, [&] { return mgr->Run(); });
  ASSERT_TRUE(Eventually([&] { return journal.Has("start:leader"); }, 10s));

  // Another replica writes itself into the Lease: this one sees it at its next renewal.
  auto lease = fake.Get(kube::LeasesResource(), "kube-system", "ayatori");
  ASSERT_TRUE(lease.ok());
  (*lease)["spec"]["holderIdentity"] = "replica-b";
  ASSERT_TRUE(fake.Update(kube::LeasesResource(), "kube-system", *lease, {}).ok());
  ASSERT_TRUE(Eventually([&] { return exitedWith.load() != -1; }, 10s));
  EXPECT_EQ(exitedWith.load(), kExitLostLease);
  ASSERT_EQ(exitCode.wait_for(10s), std::future_status::ready);
  auto entries = journal.Entries();
  ASSERT_GE(entries.size(), 3u);
  // Abandoned before anything stopped: no orderly stop may wait on the work of a replica that no
  // longer leads.
  EXPECT_EQ(entries[2], "abandon:leader");
  EXPECT_EQ(LeaseHolder(fake), "replica-b") << "the other holder's Lease was overwritten";
}

TEST(ManagerTest, RefusesAHealthAddressWithoutMetrics) {
  ManagerOptions options;
  options.healthAddress = "127.0.0.1:0";
  auto mgr = Manager::New(options);
  ASSERT_FALSE(mgr.ok());
  EXPECT_NE(mgr.status().message().find("metrics"), std::string::npos);
}

}  // namespace
}  // namespace ayatori::manager
