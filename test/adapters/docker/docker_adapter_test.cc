// Unit tests of DockerAdapter's own decisions; its calls on a real engine are the e2e tests'
// (docker_e2e_test.cc, contract_test.cc).
#include "adapters/docker/docker_adapter.h"

#include <gtest/gtest.h>

#include "adapters/common/observations.h"
#include "api/quantity.h"
#include "fake_docker_engine.h"

namespace ayatori::adapters::docker {
namespace {

using nlohmann::json;
using testing::FakeDockerEngine;

ExecutionRequest Request(json spec = json::object()) {
  ExecutionRequest r;
  r.job.metadata.namespace_ = "ci";
  r.job.metadata.name = "hello-x";
  r.job.metadata.uid = "5cb0e2a4-1111-2222-3333-444455556666";
  r.job.spec.task.image = "ayatori.local/busybox:1";
  r.parameters = json{{"spec", std::move(spec)}};
  return r;
}

std::string Reason(const std::optional<Refusal>& refusal) {
  return refusal ? refusal->reason : "(accepted)";
}

// Parameters or a request Docker can never run are BackendRejected; Validate says the same as a
// status. None of these asks the engine.
TEST(DockerAdapterAcceptanceRefusalTest, WhatDockerCannotRunIsBackendRejected) {
  DockerAdapter adapter;
  EXPECT_EQ(adapter.AcceptanceRefusal(Request()), std::nullopt);
  EXPECT_TRUE(adapter.Validate(Request()).ok());

  auto tooSmall = Request();
  tooSmall.resources.limits.memory = api::Quantity::MustParse("1Mi");
  for (const ExecutionRequest& r :
       {Request({{"endpoint", "ftp://x:1"}}), Request({{"networkMode", "bridge"}}),
        Request({{"networkMode", "host"}}), tooSmall}) {
    auto refusal = adapter.AcceptanceRefusal(r);
    EXPECT_EQ(Reason(refusal), Refusal::kBackendRejected) << r.parameters.dump();
    Status validated = adapter.Validate(r);
    EXPECT_EQ(validated.code(), StatusCode::kInvalidArgument) << r.parameters.dump();
    if (refusal) {
      EXPECT_EQ(validated.message(), refusal->message);
    }
  }
}

// The descriptor sees only the parameters; the adapter also knows its own default endpoint, and
// refuses plain HTTP to it under the same reason.
TEST(DockerAdapterAcceptanceRefusalTest, PlainHttpToTheAdaptersDefaultEndpointIsInsecureEndpoint) {
  DockerAdapterOptions options;
  options.defaultEndpoint = "tcp://127.0.0.1:2375";
  DockerAdapter adapter(options);
  EXPECT_EQ(Reason(adapter.AcceptanceRefusal(Request())), kReasonInsecureEndpoint);
  EXPECT_EQ(adapter.Validate(Request()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(adapter.AcceptanceRefusal(Request({{"insecure", true}})), std::nullopt)
      << "insecure: true accepts it";
}

// A runtime the engine does not list: the class asks for an isolation this engine cannot give.
TEST(DockerAdapterAcceptanceRefusalTest, ARuntimeTheEngineDoesNotHaveIsNotEnforceable) {
  FakeDockerEngine engine;
  engine.Answer("GET /info", 200, R"({"Runtimes": {"runc": {}, "runc-alt": {}}})");
  DockerAdapter adapter;
  auto refusal =
      adapter.AcceptanceRefusal(Request({{"endpoint", engine.endpoint()}, {"runtime", "runsc"}}));
  ASSERT_EQ(Reason(refusal), Refusal::kNotEnforceable);
  EXPECT_NE(refusal->message.find("\"runsc\""), std::string::npos) << refusal->message;
  EXPECT_NE(refusal->message.find("runc, runc-alt"), std::string::npos) << refusal->message;
  EXPECT_EQ(refusal->message.find(engine.endpoint()), std::string::npos)
      << "never the engine's address: " << refusal->message;
  EXPECT_EQ(
      adapter.Validate(Request({{"endpoint", engine.endpoint()}, {"runtime", "runsc"}})).code(),
      StatusCode::kFailedPrecondition);

  EXPECT_EQ(adapter.AcceptanceRefusal(
                Request({{"endpoint", engine.endpoint()}, {"runtime", "runc-alt"}})),
            std::nullopt);
  EXPECT_EQ(engine.Count("GET /info"), 1) << "the runtime list is kept for a few seconds";
}

// An engine that cannot be asked now is no refusal: its create names the runtime and the engine
// refuses one it lacks then, never running the task under another.
TEST(DockerAdapterAcceptanceRefusalTest, AnEngineThatCannotBeAskedRefusesNothing) {
  FakeDockerEngine engine;
  engine.Answer("GET /info", 500, R"({"message": "busy"})");
  DockerAdapter adapter;
  EXPECT_EQ(
      adapter.AcceptanceRefusal(Request({{"endpoint", engine.endpoint()}, {"runtime", "runsc"}})),
      std::nullopt);
  EXPECT_EQ(engine.Count("GET /info"), 1);
}

}  // namespace
}  // namespace ayatori::adapters::docker
