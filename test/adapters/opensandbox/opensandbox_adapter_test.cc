// The OpenSandbox adapter against FakeOpenSandbox: each failure point of Ensure (an answer lost
// after the server acted, a request refused before it, a restart between the run and the status
// write), error shapes and framings the real stack does not produce on demand, and the mapping of
// what the server says. The same behaviour on the real server: opensandbox_e2e_test.cc.
#include "adapters/opensandbox/opensandbox_adapter.h"

#include <gtest/gtest.h>

#include "api/quantity.h"
#include "test/adapters/opensandbox/fake_opensandbox.h"
#include "test/support/wait.h"

namespace ayatori::adapters::opensandbox {
namespace {

using nlohmann::json;
using testing::FakeOpenSandbox;
using Fault = FakeOpenSandbox::Fault;
using std::chrono::milliseconds;

constexpr const char* kApiKey = "the-api-key-0123";

class OpenSandboxAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_ = std::make_shared<FakeOpenSandbox>();
    adapter_ = NewAdapter();
  }

  // A fresh adapter on the same fake server: a restarted controller.
  std::unique_ptr<OpenSandboxAdapter> NewAdapter() {
    OpenSandboxAdapterOptions o;
    o.transport = fake_;
    o.apiKey = [](const api::SecretKeyReference&) -> StatusOr<SensitiveString> {
      return SensitiveString(kApiKey);
    };
    o.execdReadyTimeout = milliseconds(50);
    return std::make_unique<OpenSandboxAdapter>(o);
  }

  static ExecutionRequest Request() {
    ExecutionRequest r;
    r.job.metadata.namespace_ = "ci";
    r.job.metadata.name = "hello";
    r.job.metadata.uid = "1f0c9a2e-1234-4bcd-9abc-0123456789ab";
    r.job.spec.task.image = "ayatori-test/workload:1";
    r.job.spec.task.command = {"/bin/sh", "-c", "echo hi"};
    r.resources.limits.cpu = api::Quantity::MustParse("500m");
    r.parameters = {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
                    {"kind", "OpenSandboxExecutionParameters"},
                    {"metadata", {{"name", "p"}}},
                    {"spec",
                     {{"endpoint", FakeOpenSandbox::kServer},
                      {"apiKeySecretRef", {{"namespace", "s"}, {"name", "k"}, {"key", "key"}}}}}};
    return r;
  }

  static ExecutionKey KeyOf(const ExecutionRequest& r, const Observation& o = {}) {
    ExecutionKey k;
    k.uid = r.job.metadata.uid;
    k.namespace_ = r.job.metadata.namespace_;
    k.name = r.job.metadata.name;
    k.references = o.references;
    k.parameters = r.parameters;
    return k;
  }

  static std::string Describe(const Observation& o) {
    return std::string(ExecutionPhaseName(o.phase)) + "/" + o.reason + " " + o.message;
  }

  std::shared_ptr<FakeOpenSandbox> fake_;
  std::unique_ptr<OpenSandboxAdapter> adapter_;
};

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

TEST_F(OpenSandboxAdapterTest, ThePollerNotifiesWhenTheCommandStops) {
  std::mutex mu;
  std::vector<std::string> notified;
  OpenSandboxAdapterOptions opts;
  opts.transport = fake_;
  opts.apiKey = [](const api::SecretKeyReference&) -> StatusOr<SensitiveString> {
    return SensitiveString(kApiKey);
  };
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

TEST_F(OpenSandboxAdapterTest, ValidateRefusesUnenforceableParametersAndUnmatchedPullSecrets) {
  auto r = Request();
  EXPECT_TRUE(adapter_->Validate(r).ok());
  auto extra = r;
  extra.parameters["spec"]["gpu"] = "1";
  EXPECT_FALSE(adapter_->Validate(extra).ok());
  auto secret = r;
  secret.imagePullConfigs = {SensitiveString(R"({"auths":{"other.io":{"auth":"dTpw"}}})")};
  EXPECT_FALSE(adapter_->Validate(secret).ok());
}

}  // namespace
}  // namespace ayatori::adapters::opensandbox
