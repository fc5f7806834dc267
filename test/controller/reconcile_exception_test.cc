// The exception barrier around each reconcile round (JobController::Worker): a round that throws
// is logged and counted, its Job is retried with the workqueue's exponential backoff, and the
// worker goes on with the next Jobs. One worker, so a worker ended by the exception would leave
// every later Job unreconciled.
#include <gtest/gtest.h>

#include <sstream>

#include "obs/log.h"
#include "test/controller/fake_api_controller.h"
#include "test/support/wait.h"

namespace ayatori::controller {
namespace {

using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)
using ayatori::testing::Eventually;
using testing::FakeAdapter;
using testing::FakeApiController;
using testing::JobClassJson;
using testing::JobJson;

constexpr auto kBaseDelay = 100ms;

ControllerOptions OneWorker() {
  ControllerOptions o;
  o.workers = 1;
  o.queue.baseDelay = kBaseDelay;
  o.queue.maxDelay = 10s;
  return o;
}

TEST(ReconcileExceptionTest, AThrowingRoundIsRetriedWithBackoffAndTheWorkerGoesOn) {
  std::ostringstream logs;
  obs::ConfigureLogging(obs::LogLevel::kInfo, obs::LogFormat::kJson, &logs);
  FakeApiController env(OneWorker());
  env.adapter().ThrowFor("boom", FakeAdapter::Throw::kJsonTypeError);
  env.adapter().ThrowFor("boom-int", FakeAdapter::Throw::kNonStdException);
  ASSERT_TRUE(env.Create(kJobClasses, JobClassJson("test")).ok());
  ASSERT_TRUE(env.Create(kJobs, JobJson("team-a", "boom", "test")).ok());
  ASSERT_TRUE(env.Create(kJobs, JobJson("team-a", "boom-int", "test")).ok());
  ASSERT_TRUE(env.Create(kJobs, JobJson("team-a", "fine", "test")).ok());
  ASSERT_TRUE(env.Start().ok());

  // The one worker survives both kinds of exception: the other Job is accepted, and so is one
  // created after several failed rounds.
  EXPECT_TRUE(Eventually([&] { return env.Accepted("team-a", "fine") == "True"; }, 10s));
  ASSERT_TRUE(Eventually([&] { return env.adapter().Validations("boom").size() >= 5; }, 20s));
  ASSERT_TRUE(Eventually([&] { return env.adapter().Validations("boom-int").size() >= 3; }, 20s));
  ASSERT_TRUE(env.Create(kJobs, JobJson("team-a", "later", "test")).ok());
  EXPECT_TRUE(Eventually([&] { return env.Accepted("team-a", "later") == "True"; }, 10s));

  // Retried with the per-Job exponential backoff (100 ms, 200 ms, 400 ms, ...), not at once.
  auto calls = env.adapter().Validations("boom");
  for (size_t i = 1; i < 5; ++i) {
    auto gap = calls[i] - calls[i - 1];
    EXPECT_GE(gap, kBaseDelay * (1 << (i - 1)))
        << "retry " << i << " came after "
        << std::chrono::duration_cast<std::chrono::milliseconds>(gap).count() << " ms";
  }
  EXPECT_GE(env.Counter("ayatori_reconcile_panics_total"), 8);
  EXPECT_EQ(env.Accepted("team-a", "boom"), "");  // the throwing rounds wrote nothing

  env.Stop();  // no worker writes to `logs` any more
  obs::ConfigureLogging(obs::LogLevel::kInfo, obs::LogFormat::kJson, &std::cerr);
  const std::string text = logs.str();
  EXPECT_NE(text.find(R"("msg":"reconcile threw; retrying with backoff")"), std::string::npos);
  EXPECT_NE(text.find(R"("name":"boom")"), std::string::npos) << text;
  EXPECT_NE(text.find("type_error.302"), std::string::npos) << text;
  EXPECT_NE(text.find("not a std::exception"), std::string::npos) << text;
}

}  // namespace
}  // namespace ayatori::controller
