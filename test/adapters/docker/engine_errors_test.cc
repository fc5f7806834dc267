#include "adapters/docker/engine_errors.h"

#include <gtest/gtest.h>

#include "adapters/common/observations.h"

namespace ayatori::adapters::docker {
namespace {

// libcurl's detail names the engine's address, which the Job API never shows.
TEST(EngineUnreachableTest, KeepsTheKindOfFailureButNotTheAddress) {
  Observation o = EngineUnreachable(Status(
      StatusCode::kUnavailable, std::string(kTransportErrorPrefix) +
                                    "Couldn't connect to server (connect to 10.1.2.3 port 2376)"));
  EXPECT_EQ(o.phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(o.reason, kReasonBackendUnreachable);
  EXPECT_NE(o.message.find("Couldn't connect to server"), std::string::npos) << o.message;
  EXPECT_EQ(o.message.find("10.1.2.3"), std::string::npos) << o.message;

  // Any other error is the engine's own answer, kept whole.
  o = EngineUnreachable(Status(StatusCode::kServerError, "docker engine list containers: boom"));
  EXPECT_NE(o.message.find("boom"), std::string::npos) << o.message;
}

TEST(EngineErrorTest, A5xxIsAServerErrorAndQuotesTheEngine) {
  Status st = EngineError("inspect container", HttpResponse{503, R"({"message":"busy"})"});
  EXPECT_EQ(st.code(), StatusCode::kServerError);
  EXPECT_EQ(st.message(), "docker engine inspect container: busy");
  EXPECT_EQ(EngineError("stop container", HttpResponse{418, "teapot"}).code(),
            StatusCode::kInternal);
}

}  // namespace
}  // namespace ayatori::adapters::docker
