// CommandPoller (src/adapters/opensandbox/command_poller.h) on FakeOpenSandbox: a running command
// is polled and handed over once it stops, or once its sandbox is gone; and the adapter hands it
// the commands it sees running.
#include "adapters/opensandbox/command_poller.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "test/adapters/opensandbox/fake_opensandbox_fixture.h"
#include "test/support/wait.h"

namespace ayatori::adapters::opensandbox {
namespace {

using std::chrono::milliseconds;
using testing::FakeOpenSandbox;

class CommandPollerTest : public testing::FakeOpenSandboxTest {
 protected:
  // A running task command on the fake (started by the adapter, which has no poller running).
  PolledCommand Running() {
    Observation o = adapter_->Ensure(Request());
    EXPECT_EQ(o.phase, ExecutionPhase::kRunning) << Describe(o);
    EXPECT_EQ(o.references.size(), 2u);
    PolledCommand c;
    c.ns = "ci";
    c.name = "hello";
    c.sandboxId = o.references.at(0).id;
    c.commandId = o.references.at(1).id;
    c.execd = ExecdTarget{std::string("http://") + FakeOpenSandbox::kExecdHost, {}};
    c.endpoint = FakeOpenSandbox::kServer;
    c.apiKey = SensitiveString(testing::kApiKey);
    c.transport = fake_;
    c.maxInterval = milliseconds(20);
    return c;
  }
  int StatusReads(const std::string& commandId) const {
    int n = 0;
    for (const auto& r : fake_->Requests()) {
      n += r.url.find("/command/status/" + commandId) != std::string::npos ? 1 : 0;
    }
    return n;
  }
  void StartRecording() {
    poller_.Start([this](const std::string& ns, const std::string& name) {
      std::lock_guard lock(mu_);
      notified_.push_back(ns + "/" + name);
    });
  }
  std::vector<std::string> Notified() {
    std::lock_guard lock(mu_);
    return notified_;
  }

  CommandPoller poller_{ClientTimeouts{}, milliseconds(5)};
  std::mutex mu_;
  std::vector<std::string> notified_;
};

TEST_F(CommandPollerTest, ARunningCommandIsPolledAndHandedOverOnceItStops) {
  PolledCommand c = Running();
  const std::string id = c.commandId;
  StartRecording();
  poller_.Watch(Request().job.metadata.uid, c);
  poller_.Watch(Request().job.metadata.uid, c);  // the same command: polled once
  const int before = StatusReads(id);
  ASSERT_TRUE(ayatori::testing::Eventually([&] { return StatusReads(id) >= before + 3; },
                                           std::chrono::seconds(5), milliseconds(5)));
  EXPECT_TRUE(Notified().empty()) << "a running command was handed over";
  fake_->FinishCommand(id, 0);
  ASSERT_TRUE(ayatori::testing::Eventually([&] { return !Notified().empty(); },
                                           std::chrono::seconds(5), milliseconds(5)));
  poller_.Stop();
  EXPECT_EQ(Notified(), std::vector<std::string>{"ci/hello"});
}

// At the longest interval the sandbox is checked too: a server that lost it is seen while the
// command (as execd says) still runs.
TEST_F(CommandPollerTest, ACommandWhoseSandboxIsGoneIsHandedOver) {
  PolledCommand c = Running();
  fake_->RemoveSandbox(c.sandboxId);
  StartRecording();
  poller_.Watch(Request().job.metadata.uid, c);
  EXPECT_TRUE(ayatori::testing::Eventually([&] { return !Notified().empty(); },
                                           std::chrono::seconds(5), milliseconds(5)));
  EXPECT_TRUE(fake_->GetCommand(c.commandId)->running);
}

// Through the adapter: Ensure hands the running command to the poller that Start started.
TEST_F(CommandPollerTest, TheAdapterNotifiesWhenTheCommandStops) {
  std::mutex mu;
  std::vector<std::string> notified;
  OpenSandboxAdapterOptions opts = Options();
  opts.firstPoll = milliseconds(5);
  opts.maxPoll = milliseconds(20);
  OpenSandboxAdapter adapter(opts);
  ASSERT_TRUE(adapter
                  .Start([&](const std::string& ns, const std::string& name) {
                    std::lock_guard lock(mu);
                    notified.push_back(ns + "/" + name);
                  })
                  .ok());
  Observation o = adapter.Ensure(Request());
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning);
  fake_->FinishCommand(o.references[1].id, 0);
  const bool seen = ayatori::testing::Eventually(
      [&] {
        std::lock_guard lock(mu);
        return !notified.empty();
      },
      std::chrono::seconds(5), milliseconds(5));
  adapter.Stop();
  ASSERT_TRUE(seen) << "no notify within 5 s";
  EXPECT_EQ(notified.front(), "ci/hello");
}

}  // namespace
}  // namespace ayatori::adapters::opensandbox
