// JobController's lifecycle on the in-memory FakeKubeClient: it starts once, a start whose
// informers cannot sync fails within the sync bound (and no later Start() pretends to work), a
// start can be cancelled while it waits for the sync, and Stop() is final.
#include <gtest/gtest.h>

#include <future>
#include <stop_token>

#include "adapters/registry.h"
#include "controller/controller.h"
#include "kube/testing/fake_kube_client.h"
#include "obs/metrics.h"
#include "test/support/wait.h"

namespace ayatori::controller {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)
using ayatori::testing::Eventually;
using kube::testing::FakeKubeClient;

constexpr const char* kJobs = "jobs.execution.ayatori.ddupan.top";

class StartStopTest : public ::testing::Test {
 protected:
  std::unique_ptr<JobController> NewController(std::chrono::milliseconds syncTimeout) {
    ControllerOptions options;
    options.workers = 1;
    options.syncTimeout = syncTimeout;
    return std::make_unique<JobController>(fake_, registry_, SystemClock::Instance(), metrics_,
                                           nullptr, options);
  }
  // Every list of Jobs is refused, as for a user that may not list them: the Job informer never
  // syncs.
  void ForbidListingJobs() {
    fake_.FailNext("list", kJobs, Status(StatusCode::kForbidden, "jobs is forbidden"), 1000000);
  }

  FakeKubeClient fake_;
  adapters::AdapterRegistry registry_;
  obs::Registry metrics_;
};

TEST_F(StartStopTest, StartsOnceAndStopIsFinal) {
  auto c = NewController(10s);
  ASSERT_TRUE(c->Start().ok());
  EXPECT_TRUE(c->Ready());
  Status again = c->Start();
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again.ToString();
  c->Stop();
  EXPECT_FALSE(c->Ready());
  Status afterStop = c->Start();
  EXPECT_EQ(afterStop.code(), StatusCode::kFailedPrecondition) << afterStop.ToString();
  EXPECT_FALSE(c->Ready());
  c->Stop();  // idempotent
}

TEST_F(StartStopTest, AStartThatCannotSyncFailsWithinTheBoundAndNoLaterStartPretends) {
  ForbidListingJobs();
  auto c = NewController(300ms);
  auto began = std::chrono::steady_clock::now();
  Status s = c->Start();
  auto took = std::chrono::steady_clock::now() - began;
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("jobs"), std::string::npos) << s.message();
  EXPECT_GE(took, 290ms);  // the bound, give or take the millisecond rounding of the waits
  EXPECT_LT(took, 2s);
  EXPECT_FALSE(c->Ready());
  // Once the list is allowed the informer could sync, but the instance is done: a second
  // Start() says so instead of returning OK with no worker.
  fake_.ClearFailures();
  Status again = c->Start();
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition) << again.ToString();
  EXPECT_FALSE(c->Ready());
  c->Stop();
}

TEST_F(StartStopTest, CancellingAStartThatWaitsForTheSyncEndsItAtOnce) {
  ForbidListingJobs();
  auto c = NewController(60s);
  std::stop_source cancel;
  auto started = std::async(std::launch::async, [&] { return c->Start(cancel.get_token()); });
  ASSERT_TRUE(Eventually([&] { return fake_.CountActions("list", kJobs) > 0; }, 5s));
  auto cancelledAt = std::chrono::steady_clock::now();
  cancel.request_stop();
  ASSERT_EQ(started.wait_for(2s), std::future_status::ready) << "Start() ignored the cancel";
  Status s = started.get();
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - cancelledAt, 2s);
  EXPECT_FALSE(c->Ready());
  c->Stop();
}

}  // namespace
}  // namespace ayatori::controller
