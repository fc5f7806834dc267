// The OpenSandbox adapter against FakeOpenSandbox: each failure point of Ensure (an answer lost
// after the server acted, a request refused before it, a restart between the run and the status
// write), error shapes and framings the real stack does not produce on demand, and the mapping of
// what the server says. The same behaviour on the real server: opensandbox_e2e_test.cc. The
// poller's and the output's own cases: command_poller_test.cc, command_output_test.cc.
#include "adapters/opensandbox/opensandbox_adapter.h"

#include <gtest/gtest.h>

#include "adapters/opensandbox/descriptor.h"
#include "adapters/registry.h"
#include "api/quantity.h"
#include "test/adapters/opensandbox/fake_opensandbox_fixture.h"
#include "test/support/wait.h"

namespace ayatori::adapters::opensandbox {
namespace {

using nlohmann::json;
using testing::FakeOpenSandbox;
using Fault = FakeOpenSandbox::Fault;
using std::chrono::milliseconds;

using OpenSandboxAdapterTest = testing::FakeOpenSandboxTest;
using testing::kApiKey;

TEST_F(OpenSandboxAdapterTest, EnsureCreatesOneSandboxRunsTheTaskAndNamesBoth) {
  auto r = Request();
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning) << Describe(o);
  ASSERT_EQ(o.references.size(), 2u);
  EXPECT_EQ(o.references[0].type, "Sandbox");
  EXPECT_EQ(o.references[1].type, "Command");
  EXPECT_EQ(fake_->SandboxCount(), 1);
  EXPECT_EQ(fake_->TaskStarts(), 1);
  EXPECT_EQ(fake_->LastCreateBody()["metadata"]["execution.ayatori.ddupan.top/job-uid"],
            r.job.metadata.uid);
  // The API key goes to the lifecycle API only, never to a sandbox's execd.
  for (const auto& req : fake_->Requests()) {
    bool hasKey = false;
    for (const auto& [k, v] : req.headers) hasKey |= (k == "OPEN-SANDBOX-API-KEY" && v == kApiKey);
    EXPECT_EQ(hasKey, req.url.rfind(FakeOpenSandbox::kServer, 0) == 0) << req.url;
  }
  // A second Ensure with the references adopts; without them too (found by the UID metadata).
  auto withRefs = r;
  withRefs.job.status.execution = api::ExecutionStatus{"opensandbox", o.references};
  EXPECT_EQ(adapter_->Ensure(withRefs).references, o.references);
  EXPECT_EQ(NewAdapter()->Ensure(r).references, o.references);
  EXPECT_EQ(fake_->SandboxCount(), 1);
  EXPECT_EQ(fake_->TaskStarts(), 1);
}

// Fault point 1: the create answer is lost after the server created the sandbox.
TEST_F(OpenSandboxAdapterTest, ALostCreateAnswerIsFoundByTheUidNotCreatedAgain) {
  auto r = Request();
  fake_->Inject(Fault::Lose("POST", "/v1/sandboxes", ""));
  Observation first = adapter_->Ensure(r);
  EXPECT_EQ(first.phase, ExecutionPhase::kUnknown) << Describe(first);
  EXPECT_TRUE(first.references.empty());
  EXPECT_EQ(fake_->SandboxCount(), 1);
  Observation retry = NewAdapter()->Ensure(r);
  ASSERT_EQ(retry.phase, ExecutionPhase::kRunning) << Describe(retry);
  EXPECT_EQ(fake_->SandboxCount(), 1);
  EXPECT_EQ(fake_->TaskStarts(), 1);
}

// Fault point 2: the process dies between create and run (the run never reached execd).
TEST_F(OpenSandboxAdapterTest, ARunThatNeverReachedExecdIsStartedByTheRetry) {
  auto r = Request();
  fake_->Inject(Fault::Refuse("POST", "/command", "set -C"));
  Observation first = adapter_->Ensure(r);
  EXPECT_EQ(first.phase, ExecutionPhase::kUnknown) << Describe(first);
  EXPECT_EQ(fake_->TaskStarts(), 0);
  Observation retry = NewAdapter()->Ensure(r);
  ASSERT_EQ(retry.phase, ExecutionPhase::kRunning) << Describe(retry);
  EXPECT_EQ(fake_->TaskStarts(), 1);
}

// Fault point 3: the run answer is lost after execd started the task.
TEST_F(OpenSandboxAdapterTest, ALostRunAnswerIsFoundAgainThroughTheMarker) {
  auto r = Request();
  fake_->Inject(Fault::Lose("POST", "/command", "set -C"));
  Observation first = adapter_->Ensure(r);
  EXPECT_EQ(first.phase, ExecutionPhase::kUnknown) << Describe(first);
  ASSERT_EQ(fake_->TaskStarts(), 1);
  Observation retry = NewAdapter()->Ensure(r);
  ASSERT_EQ(retry.phase, ExecutionPhase::kRunning) << Describe(retry);
  ASSERT_EQ(retry.references.size(), 2u);
  auto cmd = fake_->GetCommand(retry.references[1].id);
  ASSERT_TRUE(cmd.has_value());
  EXPECT_NE(cmd->content.find("set -C"), std::string::npos) << "adopted the task's command";
  EXPECT_EQ(fake_->TaskStarts(), 1);
}

// Fault point 4: the controller dies after Ensure, before the status write.
TEST_F(OpenSandboxAdapterTest, EnsureAfterALostStatusWriteAdoptsTheSameCommand) {
  auto r = Request();
  Observation first = adapter_->Ensure(r);
  ASSERT_EQ(first.phase, ExecutionPhase::kRunning) << Describe(first);
  fake_->FinishCommand(first.references[1].id, 4, "exit status 4");
  Observation retry = NewAdapter()->Ensure(r);
  EXPECT_EQ(retry.phase, ExecutionPhase::kFailed) << Describe(retry);
  EXPECT_EQ(retry.exitCode, 4);
  EXPECT_EQ(retry.references, first.references);
  EXPECT_EQ(fake_->TaskStarts(), 1);
}

// The marker names a command execd does not know (execd restarted): ResultUnknown, no re-run.
TEST_F(OpenSandboxAdapterTest, AStartedTaskWhoseCommandIsForgottenIsUnknownNeverRunAgain) {
  auto r = Request();
  fake_->Inject(Fault::Lose("POST", "/command", "set -C"));
  adapter_->Ensure(r);
  fake_->ForgetCommands();
  Observation retry = NewAdapter()->Ensure(r);
  EXPECT_EQ(retry.phase, ExecutionPhase::kUnknown) << Describe(retry);
  EXPECT_EQ(retry.reason, kReasonCommandNotIdentified);
  EXPECT_EQ(fake_->TaskStarts(), 1);
}

TEST_F(OpenSandboxAdapterTest, ASecondStartRefusedByTheGuardIsNotTheTasksResult) {
  auto r = Request();
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.references.size(), 2u);
  // A command POSTed twice: the fake applies the guard like the shell would.
  kube::HttpRequest again;
  again.method = "POST";
  again.url = std::string("http://") + FakeOpenSandbox::kExecdHost + "/command";
  again.body = json{{"command", TaskCommand(r)}, {"background", true}}.dump();
  ASSERT_TRUE(fake_->Stream(again, {}, [](std::string_view) { return true; }).ok());
  // The refused command is the one that exited with the guard's code.
  std::string newest;
  for (int i = 1; i < 100; ++i) {
    char id[33];
    snprintf(id, sizeof(id), "%032d", i);
    if (auto c = fake_->GetCommand(id); c && c->exitCode == kGuardExitCode) newest = id;
  }
  ASSERT_FALSE(newest.empty());
  auto key = KeyOf(r);
  key.references = {o.references[0], {kCommandReferenceType, newest}};
  Observation dup = adapter_->Observe(key);
  EXPECT_EQ(dup.phase, ExecutionPhase::kUnknown) << Describe(dup);
  EXPECT_EQ(dup.reason, kReasonCommandNotIdentified);
  EXPECT_EQ(fake_->TaskStarts(), 1);
}

// Host networking with two live sandboxes: the endpoint reaches the other Job's execd. The task
// refuses to start there, and so does the probe of a retry.
TEST_F(OpenSandboxAdapterTest, ACommandThatReachesAnotherJobsSandboxDoesNotStartTheTask) {
  auto r = Request();
  fake_->SetForeign(true);
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.references.size(), 2u) << Describe(o);
  Observation seen = adapter_->Observe(KeyOf(r, o));
  EXPECT_EQ(seen.phase, ExecutionPhase::kFailed) << Describe(seen);
  EXPECT_EQ(seen.reason, kReasonBackendRejected);
  EXPECT_NE(seen.message.find("another Job's sandbox"), std::string::npos) << seen.message;
  EXPECT_EQ(fake_->TaskStarts(), 0);
  Observation retry = NewAdapter()->Ensure(r);  // no references: probes first
  EXPECT_EQ(retry.phase, ExecutionPhase::kFailed) << Describe(retry);
  EXPECT_EQ(fake_->TaskStarts(), 0);
}

TEST_F(OpenSandboxAdapterTest, CreateErrorsMapToReasonsAndNeverHideAnOutageAsAFailure) {
  auto r = Request();
  fake_->Inject(
      Fault::Http("POST", "/v1/sandboxes", 422,
                  R"({"detail":[{"loc":["body","timeout"],"msg":"Input should be >= 60"}]})"));
  Observation bad = adapter_->Ensure(r);
  EXPECT_EQ(bad.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(bad.reason, kReasonBackendRejected);
  EXPECT_NE(bad.message.find("body.timeout: Input should be >= 60"), std::string::npos)
      << bad.message;
  fake_->Inject(
      Fault::Http("POST", "/v1/sandboxes", 500,
                  R"({"code":"DOCKER::SANDBOX_IMAGE_PULL_FAILED","message":"pull failed"})"));
  EXPECT_EQ(adapter_->Ensure(r).reason, kReasonImagePullFailed);
  fake_->Inject(Fault::Http("POST", "/v1/sandboxes", 503, "upstream down"));
  EXPECT_EQ(adapter_->Ensure(r).phase, ExecutionPhase::kUnknown);
  fake_->SetServerDown(true);
  Observation down = adapter_->Ensure(r);
  EXPECT_EQ(down.phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(down.reason, kReasonBackendUnreachable);
  EXPECT_EQ(fake_->SandboxCount(), 0);
}

// A server that quotes what it was sent: the Secret value forwarded in env and the API key the
// controller read come back in its errors, and must not go up in any answer.
TEST_F(OpenSandboxAdapterTest, SecretValuesTheServerQuotesAreRedactedInEveryAnswer) {
  auto r = Request();
  r.resolvedEnv = {{"PW", SensitiveString("TOPSECRET-42")}};
  const std::string quoted = std::string("refused env PW=TOPSECRET-42 with key ") + kApiKey;
  auto clean = [](const std::string& message) {
    return message.find("TOPSECRET-42") == std::string::npos &&
           message.find(kApiKey) == std::string::npos &&
           message.find("[redacted]") != std::string::npos;
  };
  fake_->Inject(Fault::Http("POST", "/v1/sandboxes", 422, quoted));
  Observation refused = adapter_->Ensure(r);
  EXPECT_TRUE(clean(refused.message)) << refused.message;

  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(fake_->SandboxCount(), 1) << Describe(o);
  const ExecutionKey key = KeyOf(r, o);
  fake_->Inject(Fault::Http("GET", "/v1/sandboxes", 500, quoted));
  Observation observed = adapter_->Observe(key);
  EXPECT_TRUE(clean(observed.message)) << observed.message;
  fake_->Inject(Fault::Http("GET", "/v1/sandboxes", 500, quoted));
  Observation cancelled = adapter_->Cancel(key);
  EXPECT_TRUE(clean(cancelled.message)) << cancelled.message;
  fake_->Inject(Fault::Http("GET", "/v1/sandboxes", 500, quoted));
  Status deleted = adapter_->Delete(key);
  EXPECT_FALSE(deleted.ok());
  EXPECT_TRUE(clean(deleted.message())) << deleted.message();
  fake_->Inject(Fault::Http("GET", "/v1/sandboxes", 500, quoted));
  Status streamed = adapter_->StreamLogs(key, {}, [](std::string_view) { return true; });
  EXPECT_FALSE(streamed.ok());
  EXPECT_TRUE(clean(streamed.message())) << streamed.message();
}

TEST_F(OpenSandboxAdapterTest, ObserveMapsSandboxAndCommandFacts) {
  auto r = Request();
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.references.size(), 2u);
  const std::string sandbox = o.references[0].id, command = o.references[1].id;
  auto key = KeyOf(r, o);
  EXPECT_EQ(adapter_->Observe(key).phase, ExecutionPhase::kRunning);

  fake_->SetServerDown(true);
  EXPECT_EQ(adapter_->Observe(key).reason, kReasonBackendUnreachable);
  fake_->SetServerDown(false);

  fake_->FinishCommand(command, -1, "signal: killed");
  Observation killed = adapter_->Observe(key);
  EXPECT_EQ(killed.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(killed.exitCode, 137);
  EXPECT_TRUE(killed.startedAt && killed.finishedAt);

  fake_->ForgetCommands();
  EXPECT_EQ(adapter_->Observe(key).reason, kReasonCommandLost);

  fake_->SetSandboxState(sandbox, "Failed");
  EXPECT_EQ(adapter_->Observe(key).reason, kReasonSandboxFailed);

  fake_->SetSandboxState(sandbox, "Running");
  fake_->SetSandboxExpiresAt(sandbox, "2000-01-01T00:00:00Z");
  adapter_->Observe(key);  // the adapter learns the expiry
  fake_->RemoveSandbox(sandbox);
  Observation expired = adapter_->Observe(key);
  EXPECT_EQ(expired.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(expired.reason, kReasonSandboxExpired);
  Observation gone = NewAdapter()->Observe(key);
  EXPECT_EQ(gone.reason, kReasonSandboxGone) << "without a remembered expiry";
}

TEST_F(OpenSandboxAdapterTest, DataPrefixedFramesAndAStreamCutAfterItsEventsAreRead) {
  fake_->SetStreamStyle(/*dataPrefix=*/true, /*cutAfterEvents=*/true);
  Observation o = adapter_->Ensure(Request());
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning) << Describe(o);
  EXPECT_EQ(o.references.size(), 2u);
}

TEST_F(OpenSandboxAdapterTest, AnEndpointWithAPathIsUsedAsTheExecdBase) {
  fake_->SetEndpoint("fake-execd:40123/proxy/44772");
  Observation o = adapter_->Ensure(Request());
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning) << Describe(o);
  bool sawProxyPath = false;
  for (const auto& req : fake_->Requests()) {
    sawProxyPath |= req.url == "http://fake-execd:40123/proxy/44772/command";
  }
  EXPECT_TRUE(sawProxyPath);
}

TEST_F(OpenSandboxAdapterTest, CancelInterruptsDeletesAndConfirmsThenDeleteIsIdempotent) {
  auto r = Request();
  Observation o = adapter_->Ensure(r);
  Observation c = adapter_->Cancel(KeyOf(r, o));
  EXPECT_EQ(c.phase, ExecutionPhase::kCancelled) << Describe(c);
  EXPECT_EQ(c.exitCode, 143);
  EXPECT_EQ(fake_->SandboxCount(), 0);
  EXPECT_EQ(adapter_->Cancel(KeyOf(r, o)).phase, ExecutionPhase::kAbsent);
  EXPECT_TRUE(adapter_->Delete(KeyOf(r, o)).ok());
  EXPECT_TRUE(adapter_->Delete(KeyOf(r, o)).ok());
}

// Cancel between the sandbox create and the run (no command known): the sandbox found by the UID
// is deleted, and the task never starts.
TEST_F(OpenSandboxAdapterTest, CancelBeforeTheTaskStartedDeletesTheSandbox) {
  auto r = Request();
  fake_->Inject(Fault::Refuse("POST", "/command", "set -C"));
  ASSERT_EQ(adapter_->Ensure(r).phase, ExecutionPhase::kUnknown);
  ASSERT_EQ(fake_->SandboxCount(), 1);
  Observation c = NewAdapter()->Cancel(KeyOf(r));
  EXPECT_EQ(c.phase, ExecutionPhase::kCancelled) << Describe(c);
  EXPECT_EQ(fake_->SandboxCount(), 0);
  auto cancelled = r;
  cancelled.job.spec.desiredState = api::DesiredState::kCancelled;
  EXPECT_EQ(adapter_->Ensure(cancelled).phase, ExecutionPhase::kAbsent);
  EXPECT_EQ(fake_->TaskStarts(), 0);
}

TEST_F(OpenSandboxAdapterTest, CancelOfAFinishedCommandReportsItsResult) {
  auto r = Request();
  Observation o = adapter_->Ensure(r);
  fake_->FinishCommand(o.references[1].id, 0);
  EXPECT_EQ(adapter_->Cancel(KeyOf(r, o)).phase, ExecutionPhase::kSucceeded);
}

TEST_F(OpenSandboxAdapterTest, ACancelledJobGetsNoSandbox) {
  auto r = Request();
  r.job.spec.desiredState = api::DesiredState::kCancelled;
  EXPECT_EQ(adapter_->Ensure(r).phase, ExecutionPhase::kAbsent);
  EXPECT_EQ(fake_->SandboxCount(), 0);
}

// Issue 26: the controller's namespace is checked at every call too, so that parameters edited
// after acceptance cannot have the API key read from another namespace; the key is not read.
TEST_F(OpenSandboxAdapterTest, AnApiKeyOutsideTheSecretNamespaceIsNeverRead) {
  int reads = 0;
  OpenSandboxAdapterOptions opts;
  opts.transport = fake_;
  opts.apiKey = [&reads](const api::SecretKeyReference&) -> StatusOr<SensitiveString> {
    ++reads;
    return SensitiveString(kApiKey);
  };
  opts.execdReadyTimeout = milliseconds(50);
  opts.secretNamespace = "ayatori-system";
  OpenSandboxAdapter adapter(opts);
  ExecutionRequest r = Request();  // the key is in namespace "s"
  Observation o = adapter.Ensure(r);
  EXPECT_NE(o.phase, ExecutionPhase::kRunning) << Describe(o);
  EXPECT_NE(o.message.find("spec.apiKeySecretRef names Secret \"s/k\", outside the controller's "
                           "namespace ayatori-system"),
            std::string::npos)
      << Describe(o);
  EXPECT_EQ(reads, 0);
  EXPECT_EQ(fake_->SandboxCount(), 0);
  r.parameters["spec"]["allowCrossNamespaceSecretRefs"] = true;
  o = adapter.Ensure(r);
  EXPECT_EQ(o.phase, ExecutionPhase::kRunning) << Describe(o);
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(fake_->SandboxCount(), 1);
}

TEST_F(OpenSandboxAdapterTest, ValidateRefusesUnenforceableParametersAndUnmatchedPullSecrets) {
  auto r = Request();
  EXPECT_TRUE(adapter_->Validate(r).ok());
  auto extra = r;
  extra.parameters["spec"]["gpu"] = "1";
  EXPECT_FALSE(adapter_->Validate(extra).ok());
  // The default AcceptanceRefusal (opensandbox_adapter.h says why it is not overridden).
  EXPECT_EQ(adapter_->AcceptanceRefusal(r), std::nullopt);
  auto refused = adapter_->AcceptanceRefusal(extra);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->reason, Refusal::kBackendRejected) << refused->message;
  auto secret = r;
  secret.imagePullConfigs = {SensitiveString(R"({"auths":{"other.io":{"auth":"dTpw"}}})")};
  EXPECT_FALSE(adapter_->Validate(secret).ok());
}

// Issue 25: every request to the server and to execd asks for an unencoded body and carries a
// bound on what is read.
TEST_F(OpenSandboxAdapterTest, EveryRequestIsBoundedAndAsksForNoCompression) {
  auto r = Request();
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning) << Describe(o);
  fake_->FinishCommand(o.references[1].id, 0, "", "hi\n");
  EXPECT_EQ(adapter_->Observe(KeyOf(r, o)).phase, ExecutionPhase::kSucceeded);
  ASSERT_TRUE(adapter_->Logs(KeyOf(r, o), 100).ok());
  const auto requests = fake_->Requests();
  ASSERT_GE(requests.size(), 5u);
  for (const auto& req : requests) {
    EXPECT_TRUE(req.identityEncoding) << req.method << " " << req.url;
    EXPECT_EQ(req.maxBodyBytes, kMaxJsonBodyBytes) << req.method << " " << req.url;
  }
}

// A body past the bound (a transport that does not enforce it, here the fake) is not taken: the
// command's state is unknown, never decided from a truncated answer.
TEST_F(OpenSandboxAdapterTest, AnOversizedAnswerIsRefusedNotRead) {
  auto r = Request();
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning) << Describe(o);
  fake_->Inject(FakeOpenSandbox::Fault::Http("GET", "/command/status/", 200,
                                             R"({"running": false, "exit_code": 0, "pad": ")" +
                                                 std::string(kMaxJsonBodyBytes, 'x') + "\"}"));
  Observation seen = adapter_->Observe(KeyOf(r, o));
  EXPECT_EQ(seen.phase, ExecutionPhase::kUnknown) << Describe(seen);
  EXPECT_NE(seen.message.find("exceeds"), std::string::npos) << seen.message;
}

TEST(EventStreamParserTest, AFrameLongerThanTheBoundIsDroppedNotBuffered) {
  EventStreamParser parser(1024);
  EXPECT_EQ(parser
                .Feed(R"({"type":"init","text":"a"})"
                      "\n\n")
                .size(),
            1u);
  const std::string piece(100, 'x');
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(parser.Feed(piece).empty());
    EXPECT_LE(parser.buffered(), 1024u);
  }
  EXPECT_TRUE(parser.overflowed());
  EXPECT_TRUE(parser
                  .Feed(R"({"type":"execution_complete"})"
                        "\n\n")
                  .empty())
      << "nothing after the overflow is believed";
  EXPECT_EQ(parser.buffered(), 0u);
}

TEST(EventStreamParserTest, FramesSplitAnywhereAreJoined) {
  EventStreamParser parser;
  const std::string stream = "{\"type\":\"init\",\"text\":\"a\"}\n\n{\"type\":\"ping\"}\n\n";
  std::vector<nlohmann::json> events;
  for (char c : stream) {
    for (auto& e : parser.Feed(std::string_view(&c, 1))) events.push_back(std::move(e));
  }
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["type"], "ping");
}

// Issue 25: an event stream whose frame never ends is dropped with a clear error.
TEST_F(OpenSandboxAdapterTest, AnEndlessEventFrameEndsTheRunWithAClearError) {
  ServerClient client(*fake_, FakeOpenSandbox::kServer, SensitiveString(""), {});
  fake_->Inject(FakeOpenSandbox::Fault::Http(
      "POST", "/command", 200, "{\"type\":\"init\",\"text\":\"" + std::string(2 << 20, 'a')));
  auto id =
      client.RunBackground({std::string("http://") + FakeOpenSandbox::kExecdHost, {}}, "echo hi");
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("longer than 1048576 bytes"), std::string::npos)
      << id.status().ToString();
}

// Issue 25: plain HTTP to the server needs insecure: true, at acceptance and at every call.
TEST_F(OpenSandboxAdapterTest, PlainHttpWithoutInsecureIsRefused) {
  auto r = Request();
  r.parameters["spec"].erase("insecure");
  const auto refused = RefusedAtAcceptance(Descriptor(), "sb", r.parameters, {}, r.job);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->reason, "InsecureEndpoint");
  EXPECT_NE(refused->message.find("spec.insecure: true"), std::string::npos) << refused->message;
  EXPECT_EQ(refused->message.find("fake-server"), std::string::npos)
      << "the endpoint is backend configuration: " << refused->message;
  Observation o = adapter_->Ensure(r);
  EXPECT_NE(o.phase, ExecutionPhase::kRunning) << Describe(o);
  EXPECT_NE(o.message.find("InsecureEndpoint"), std::string::npos) << Describe(o);
  EXPECT_EQ(fake_->SandboxCount(), 0);
  EXPECT_TRUE(fake_->Requests().empty()) << "nothing was sent in plain HTTP";

  r.parameters["spec"]["insecure"] = true;
  EXPECT_EQ(RefusedAtAcceptance(Descriptor(), "sb", r.parameters, {}, r.job), std::nullopt);
  r.parameters["spec"]["insecure"] = false;
  r.parameters["spec"]["endpoint"] = "https://sandbox.example.com/v1";
  EXPECT_EQ(RefusedAtAcceptance(Descriptor(), "sb", r.parameters, {}, r.job), std::nullopt);
}

TEST(OpenSandboxParameters, CaBundleIsPemForAnHttpsEndpointOnly) {
  const std::string pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  auto ok = ParseParameters(
      {{"spec", {{"endpoint", "https://sandbox.example.com/v1"}, {"caBundle", pem}}}});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->caBundle, pem);
  auto overHttp = ParseParameters(
      {{"spec",
        {{"endpoint", "http://127.0.0.1:8080/v1"}, {"caBundle", pem}, {"insecure", true}}}});
  ASSERT_FALSE(overHttp.ok());
  EXPECT_NE(overHttp.status().message().find("https://"), std::string::npos);
  auto notPem = ParseParameters(
      {{"spec", {{"endpoint", "https://sandbox.example.com/v1"}, {"caBundle", "hello"}}}});
  ASSERT_FALSE(notPem.ok());
  EXPECT_NE(notPem.status().message().find("PEM"), std::string::npos);
}

// Issue 25: the task runs as the profile's non-root ids (execd's uid/gid), root only when the
// class says so; a working directory is made for those ids first. What the sandbox create API
// cannot carry is refused, not dropped.
TEST_F(OpenSandboxAdapterTest, TheTaskRunsAsTheProfilesIdsAndItsWorkingDirIsMadeForThem) {
  auto r = Request();
  r.job.spec.task.workingDir = "/work space";
  Observation o = adapter_->Ensure(r);
  ASSERT_EQ(o.phase, ExecutionPhase::kRunning) << Describe(o);
  std::vector<json> commands;
  for (const auto& req : fake_->Requests()) {
    if (req.method == "POST" && req.url.ends_with("/command")) {
      commands.push_back(json::parse(req.body));
    }
  }
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0]["command"],
            "mkdir -p -- '/work space' && chown 65534:65534 -- '/work space'");
  EXPECT_FALSE(commands[0].contains("uid")) << "execd's own ids (root) make the directory";
  EXPECT_EQ(commands[1]["uid"], 65534);
  EXPECT_EQ(commands[1]["gid"], 65534);
  EXPECT_NE(commands[1]["command"].get<std::string>().find("set -C"), std::string::npos);

  auto root = Request();
  root.job.metadata.uid = "2f0c9a2e-1234-4bcd-9abc-0123456789ab";
  root.job.spec.task.workingDir = "/work";
  root.parameters["spec"]["securityProfile"] = {
      {"runAsUser", 0}, {"runAsGroup", 0}, {"runAsRoot", true}};
  const size_t before = fake_->Requests().size();
  ASSERT_EQ(adapter_->Ensure(root).phase, ExecutionPhase::kRunning);
  const auto requests = fake_->Requests();
  for (size_t i = before; i < requests.size(); ++i) {
    if (requests[i].method != "POST" || !requests[i].url.ends_with("/command")) continue;
    const json body = json::parse(requests[i].body);
    EXPECT_FALSE(body.contains("uid")) << body.dump();
    EXPECT_EQ(body["command"].get<std::string>().find("chown"), std::string::npos) << body.dump();
  }
}

TEST(OpenSandboxParameters, RootNeedsRunAsRootAndTheRestOfTheProfileIsNotEnforceable) {
  auto p = [](const json& profile) {
    return json{
        {"metadata", {{"name", "p"}}},
        {"spec", {{"endpoint", "https://sandbox.example.com/v1"}, {"securityProfile", profile}}}};
  };
  auto root = ParseParameters(p({{"runAsUser", 0}}));
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.status().message().find("runAsRoot: true"), std::string::npos);
  auto ok = ParseParameters(p({{"runAsUser", 1000}, {"runAsGroup", 100}}));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->securityProfile.runAsUser, 1000);
  EXPECT_EQ(ParseParameters(p(json::object()))->securityProfile.runAsUser, 65534);

  api::Job job;
  job.spec.task.command = {"/bin/true"};
  EXPECT_EQ(RefusedAtAcceptance(Descriptor(), "sb", p({{"runAsUser", 1000}}), {}, job),
            std::nullopt);
  for (const char* field : {"readOnlyRootFilesystem", "pidsLimit", "addCapabilities"}) {
    auto refused = RefusedAtAcceptance(Descriptor(), "sb", p({{field, 1}}), {}, job);
    ASSERT_TRUE(refused.has_value()) << field;
    EXPECT_EQ(refused->reason, "NotEnforceable");
    EXPECT_NE(refused->message.find(std::string("spec.securityProfile.") + field),
              std::string::npos)
        << refused->message;
  }
}

}  // namespace
}  // namespace ayatori::adapters::opensandbox
