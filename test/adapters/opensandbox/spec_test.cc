// The pure half of the OpenSandbox adapter: parameters, validation, the create body, the guarded
// command and its probe, and what server and execd answers mean.
#include "adapters/opensandbox/spec.h"

#include <gtest/gtest.h>

#include "api/quantity.h"
#include "base/base64.h"

namespace ayatori::adapters::opensandbox {
namespace {

using nlohmann::json;

json Params(const json& spec = json::object()) {
  json s = {{"endpoint", "http://127.0.0.1:8080/v1"}};
  s.update(spec);
  return {{"apiVersion", "execution.ayatori.ddupan.top/v1alpha1"},
          {"kind", "OpenSandboxExecutionParameters"},
          {"metadata", {{"name", "p"}}},
          {"spec", s}};
}

ExecutionRequest Request() {
  ExecutionRequest r;
  r.job.metadata.namespace_ = "ci";
  r.job.metadata.name = "hello";
  r.job.metadata.uid = "1f0c9a2e-1234-4bcd-9abc-0123456789ab";
  r.job.spec.task.image = "ayatori-test/workload:1";
  r.job.spec.task.command = {"/bin/sh", "-c", "echo hi"};
  r.parameters = Params();
  return r;
}

OpenSandboxExecutionParameters Parsed(const json& p) {
  auto r = ParseParameters(p);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : OpenSandboxExecutionParameters{};
}

TEST(OpenSandboxSpecTest, ParametersAreDecodedWithDefaultsAndTrailingSlashesDropped) {
  auto p = Parsed(Params({{"endpoint", "http://h:1/v1/"}, {"useServerProxy", true}}));
  EXPECT_EQ(p.endpoint, "http://h:1/v1");
  EXPECT_TRUE(p.useServerProxy);
  EXPECT_EQ(p.sandboxTimeoutMarginSeconds, 300);
  EXPECT_EQ(p.pollIntervalSeconds, 2);
}

// Pinned at acceptance (Adapter::PinnedParameters): the server and the route to execd, as the
// adapter uses them; and they read back as the same parameters once laid over a parameters
// object that has since changed, or over none at all (the object was deleted).
TEST(OpenSandboxSpecTest, PinsTheEndpointAndTheExecdRouteAndReadsThemBack) {
  const auto pinned = PinnedFields(Params({{"endpoint", "http://127.0.0.1:8080/v1/"},
                                           {"useServerProxy", true},
                                           {"sandboxTimeoutSeconds", 120},
                                           {"extraMetadata", {{"team", "a"}}},
                                           {"allowCrossNamespaceSecretRefs", true}}));
  EXPECT_EQ(pinned, (std::map<std::string, std::string>{{"endpoint", "http://127.0.0.1:8080/v1"},
                                                        {"useServerProxy", "true"}}));
  EXPECT_EQ(PinnedFields(Params()).at("useServerProxy"), "false");
  // Parameters Validate refuses pin nothing (the Job is not accepted).
  EXPECT_TRUE(PinnedFields(Params({{"endpoint", "ftp://x"}})).empty());
  EXPECT_TRUE(PinnedFields(json(nullptr)).empty());

  auto edited = WithPinnedParameters(
      Params({{"endpoint", "http://127.0.0.1:9999/v1"}, {"pollIntervalSeconds", 7}}), pinned);
  auto p = Parsed(edited);
  EXPECT_EQ(p.endpoint, "http://127.0.0.1:8080/v1");
  EXPECT_TRUE(p.useServerProxy);
  EXPECT_EQ(p.pollIntervalSeconds, 7);  // not pinned: the current object's value
  auto deleted = Parsed(WithPinnedParameters(json::object(), pinned));
  EXPECT_EQ(deleted.endpoint, "http://127.0.0.1:8080/v1");
  EXPECT_TRUE(deleted.useServerProxy);
  EXPECT_EQ(deleted.pollIntervalSeconds, 2);
  auto off = Parsed(
      WithPinnedParameters(Params({{"useServerProxy", true}}), {{"useServerProxy", "false"}}));
  EXPECT_FALSE(off.useServerProxy);
  auto bad = ParseParameters(WithPinnedParameters(Params(), {{"useServerProxy", "yes"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("must be true or false"), std::string::npos);
}

TEST(OpenSandboxSpecTest, UnknownParameterFieldsAreRefusedNotIgnored) {
  auto r = ParseParameters(Params({{"networkPolicy", {{"defaultAction", "deny"}}}}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("spec.networkPolicy is not supported"), std::string::npos)
      << r.status().message();
  for (const auto& field : EnforcedParameterFields()) {
    EXPECT_NE(Params().dump().size(), 0u) << field;  // each listed field decodes (below)
  }
  EXPECT_TRUE(ParseParameters(Params({{"sandboxTimeoutSeconds", 60},
                                      {"sandboxTimeoutMarginSeconds", 1},
                                      {"pollIntervalSeconds", 3},
                                      {"useServerProxy", false},
                                      {"extraMetadata", {{"team", "a"}}},
                                      {"allowCrossNamespaceSecretRefs", true}}))
                  .ok());
  EXPECT_FALSE(ParseParameters(json(nullptr)).ok());
  EXPECT_FALSE(ParseParameters(Params({{"endpoint", "ftp://x"}})).ok());
}

TEST(OpenSandboxSpecTest, ValidateRefusesWhatTheServerWouldRejectOrSilentlyIgnore) {
  auto r = Request();
  EXPECT_TRUE(ValidateRequest(r, Parsed(r.parameters)).ok());

  auto noCommand = Request();
  noCommand.job.spec.task.command.clear();
  EXPECT_NE(ValidateRequest(noCommand, Parsed(r.parameters)).message().find("command"),
            std::string::npos);

  auto tinyCpu = Request();
  tinyCpu.resources.limits.cpu = api::Quantity::MustParse("5m");
  EXPECT_FALSE(ValidateRequest(tinyCpu, Parsed(r.parameters)).ok());
  auto tinyMemory = Request();
  tinyMemory.resources.limits.memory = api::Quantity::MustParse("1Mi");
  EXPECT_FALSE(ValidateRequest(tinyMemory, Parsed(r.parameters)).ok());

  EXPECT_FALSE(ValidateRequest(r, Parsed(Params({{"sandboxTimeoutSeconds", 30}}))).ok());
  EXPECT_FALSE(
      ValidateRequest(r, Parsed(Params({{"extraMetadata", {{"opensandbox.io/x", "y"}}}}))).ok());
  EXPECT_FALSE(
      ValidateRequest(
          r, Parsed(Params({{"extraMetadata", {{"execution.ayatori.ddupan.top/a", "y"}}}})))
          .ok());
  EXPECT_FALSE(
      ValidateRequest(r, Parsed(Params({{"extraMetadata", {{"team", "has space"}}}}))).ok());
  EXPECT_FALSE(
      ValidateRequest(r, Parsed(Params({{"extraMetadata", {{"team", std::string(64, 'a')}}}})))
          .ok());
  EXPECT_TRUE(
      ValidateRequest(r, Parsed(Params({{"extraMetadata", {{"example.com/team", "a.b-c"}}}})))
          .ok());
}

TEST(OpenSandboxSpecTest, SandboxTimeoutIsTheDeadlinePlusTheMarginAtLeastSixty) {
  auto r = Request();
  auto p = Parsed(Params({{"sandboxTimeoutSeconds", 3600}, {"sandboxTimeoutMarginSeconds", 30}}));
  EXPECT_EQ(SandboxTimeoutSeconds(r, p), 3600);
  r.job.spec.activeDeadlineSeconds = 600;
  EXPECT_EQ(SandboxTimeoutSeconds(r, p), 630);
  r.job.spec.activeDeadlineSeconds = 5;
  EXPECT_EQ(SandboxTimeoutSeconds(r, p), 60);
  auto none = Request();
  EXPECT_EQ(SandboxTimeoutSeconds(none, Parsed(Params())), std::nullopt);
}

TEST(OpenSandboxSpecTest, CreateBodyCarriesImageEnvLimitsMetadataAndTimeout) {
  auto r = Request();
  r.job.spec.task.env.push_back({"LITERAL", std::string("v"), std::nullopt});
  api::EnvVar secret;
  secret.name = "TOKEN";
  r.job.spec.task.env.push_back(secret);
  r.resolvedEnv.push_back({"TOKEN", SensitiveString("s3cr3t")});
  r.resources.limits.cpu = api::Quantity::MustParse("1.5");
  r.resources.limits.memory = api::Quantity::MustParse("256Mi");
  r.resources.requests.cpu = api::Quantity::MustParse("100m");
  r.job.spec.activeDeadlineSeconds = 100;
  auto p = Parsed(Params({{"extraMetadata", {{"team", "platform"}}}}));
  auto body = BuildCreateBody(r, p, ImageAuth{"u", SensitiveString("pw")});
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ((*body)["image"], json({{"uri", "ayatori-test/workload:1"},
                                    {"auth", {{"username", "u"}, {"password", "pw"}}}}));
  EXPECT_EQ((*body)["entrypoint"], json({"tail", "-f", "/dev/null"}));
  EXPECT_EQ((*body)["timeout"], 400);
  EXPECT_EQ((*body)["resourceLimits"], json({{"cpu", "1500m"}, {"memory", "268435456"}}));
  EXPECT_FALSE(body->contains("resourceRequests"));
  EXPECT_EQ((*body)["env"]["LITERAL"], "v");
  EXPECT_EQ((*body)["env"]["TOKEN"], "s3cr3t");
  EXPECT_EQ((*body)["env"]["AYATORI_JOB_UID"], r.job.metadata.uid);
  EXPECT_EQ((*body)["metadata"], json({{"team", "platform"},
                                       {"execution.ayatori.ddupan.top/job-uid", r.job.metadata.uid},
                                       {"execution.ayatori.ddupan.top/job-namespace", "ci"},
                                       {"execution.ayatori.ddupan.top/job-name", "hello"}}));
  // No deadline, no sandboxTimeoutSeconds: manual cleanup.
  auto plain = BuildCreateBody(Request(), Parsed(Params()), std::nullopt);
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE((*plain)["timeout"].is_null());
  EXPECT_FALSE((*plain)["image"].contains("auth"));
}

TEST(OpenSandboxSpecTest, ALongJobNameIsLeftOutOfTheMetadataTheUidIsAlwaysThere) {
  auto r = Request();
  r.job.metadata.name = std::string(100, 'a');
  auto m = SandboxMetadata(r, Parsed(Params()));
  for (const auto& [k, v] : m) EXPECT_NE(k, "execution.ayatori.ddupan.top/job-name");
  EXPECT_EQ(m.front().first, "execution.ayatori.ddupan.top/job-uid");
}

std::string DockerConfig(const std::string& registry, const std::string& user,
                         const std::string& password) {
  return json{{"auths", {{registry, {{"auth", base::Base64Encode(user + ":" + password)}}}}}}
      .dump();
}

TEST(OpenSandboxSpecTest, ImageAuthComesFromTheMatchingEntryNeverAnonymousWhenNoneMatches) {
  auto r = Request();
  r.job.spec.task.image = "127.0.0.1:5000/team/app:1";
  EXPECT_EQ(SelectImageAuth(r).value(), std::nullopt) << "no Secrets: anonymous";
  r.imagePullConfigs = {SensitiveString(DockerConfig("127.0.0.1:5000", "bob", "pw"))};
  auto a = SelectImageAuth(r);
  ASSERT_TRUE(a.ok() && a->has_value()) << a.status().ToString();
  EXPECT_EQ((*a)->username, "bob");
  EXPECT_EQ((*a)->password.reveal(), "pw");
  r.imagePullConfigs = {SensitiveString(DockerConfig("other.example.com", "bob", "pw"))};
  auto none = SelectImageAuth(r);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message().find("pw"), std::string::npos);
}

TEST(OpenSandboxSpecTest, ShellQuoteSurvivesQuotesAndSpecials) {
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
}

TEST(OpenSandboxSpecTest, TaskCommandQuotesEveryWordAndGuardsWithTheMarker) {
  auto r = Request();
  r.job.spec.task.command = {"/bin/echo", "it's"};
  r.job.spec.task.args = {"$HOME"};
  r.job.spec.task.workingDir = "/w d";
  const std::string cmd = TaskCommand(r);
  const std::string marker = ShellQuote(MarkerPath(r.job.metadata.uid));
  EXPECT_EQ(cmd.find("if [ \"$AYATORI_JOB_UID\" != '" + r.job.metadata.uid + "' ]; then echo"), 0u)
      << cmd;
  EXPECT_NE(cmd.find("exit " + std::to_string(kForeignSandboxExitCode)), std::string::npos);
  EXPECT_NE(cmd.find("if (set -C; : >" + marker + ") 2>/dev/null; then "), std::string::npos)
      << cmd;
  EXPECT_NE(cmd.find("cd -- '/w d' || exit 126; exec '/bin/echo' 'it'\\''s' '$HOME'; fi;"),
            std::string::npos)
      << cmd;
  EXPECT_NE(cmd.find("exit " + std::to_string(kGuardExitCode)), std::string::npos);
  EXPECT_NE(ProbeCommand(r.job.metadata.uid).find(marker), std::string::npos);
}

TEST(OpenSandboxSpecTest, ProbeOutputNamesTheCommandFromItsOutputFile) {
  EXPECT_EQ(ParseProbeOutput("absent").kind, ProbeResult::Kind::kAbsent);
  EXPECT_EQ(ParseProbeOutput("foreign").kind, ProbeResult::Kind::kForeign);
  auto started = ParseProbeOutput("started:/tmp/0123456789abcdef0123456789abcdef.output\n");
  EXPECT_EQ(started.kind, ProbeResult::Kind::kStarted);
  EXPECT_EQ(started.commandId, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(ParseProbeOutput("started:\n").kind, ProbeResult::Kind::kStartedUnidentified);
  EXPECT_EQ(ParseProbeOutput("started:/dev/pts/0\n").kind, ProbeResult::Kind::kStartedUnidentified);
  EXPECT_EQ(ParseProbeOutput("garbage").kind, ProbeResult::Kind::kMalformed);
}

TEST(OpenSandboxSpecTest, SandboxStatesMapToPhases) {
  auto state = [](const char* s) { return json{{"id", "x"}, {"status", {{"state", s}}}}; };
  EXPECT_FALSE(ObservationFromSandbox(state("Running")).has_value());
  EXPECT_FALSE(ObservationFromSandbox(state("Paused")).has_value());
  EXPECT_EQ(ObservationFromSandbox(state("Pending"))->phase, ExecutionPhase::kPending);
  auto failed = ObservationFromSandbox(
      {{"status", {{"state", "Failed"}, {"reason", "CONTAINER_EXITED_ERROR"}, {"message", "m"}}}});
  EXPECT_EQ(failed->phase, ExecutionPhase::kFailed);
  EXPECT_EQ(failed->reason, kReasonSandboxFailed);
  EXPECT_NE(failed->message.find("CONTAINER_EXITED_ERROR"), std::string::npos);
  EXPECT_EQ(ObservationFromSandbox(state("Terminated"))->phase, ExecutionPhase::kFailed);
  auto odd = ObservationFromSandbox(state("Hibernating"));
  EXPECT_EQ(odd->phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(odd->reason, kReasonUnexpectedState);
}

TEST(OpenSandboxSpecTest, CommandStatusMapsToPhasesExitCodesAndTimes) {
  auto running = ObservationFromCommandStatus(
      json::parse(R"({"id":"a","running":true,"started_at":"2026-01-02T03:04:05.123456789Z"})"));
  EXPECT_EQ(running.phase, ExecutionPhase::kRunning);
  ASSERT_TRUE(running.startedAt.has_value());
  auto ok = ObservationFromCommandStatus(json::parse(
      R"({"running":false,"exit_code":0,"started_at":"2026-01-02T03:04:05Z","finished_at":"2026-01-02T03:04:09+00:00"})"));
  EXPECT_EQ(ok.phase, ExecutionPhase::kSucceeded);
  EXPECT_EQ(ok.exitCode, 0);
  ASSERT_TRUE(ok.finishedAt && ok.startedAt);
  EXPECT_EQ(*ok.finishedAt - *ok.startedAt, std::chrono::seconds(4));
  auto three = ObservationFromCommandStatus(
      json::parse(R"({"running":false,"exit_code":3,"error":"exit status 3"})"));
  EXPECT_EQ(three.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(three.reason, kReasonProcessFailed);
  EXPECT_EQ(three.exitCode, 3);
  // The same words on every adapter (src/adapters/task_messages.h).
  EXPECT_EQ(ok.message, "The task exited with code 0");
  EXPECT_EQ(three.message, "The task exited with code 3");
  auto killed = ObservationFromCommandStatus(
      json::parse(R"({"running":false,"exit_code":-1,"error":"signal: killed"})"));
  EXPECT_EQ(killed.phase, ExecutionPhase::kFailed);
  EXPECT_EQ(killed.exitCode, 137);
  auto term = ObservationFromCommandStatus(
      json::parse(R"({"running":false,"exit_code":-1,"error":"signal: terminated"})"));
  EXPECT_EQ(term.exitCode, 143);
  auto noStart = ObservationFromCommandStatus(json::parse(
      R"({"running":false,"exit_code":255,"error":"fork/exec /bin/sh: no such file or directory"})"));
  EXPECT_EQ(noStart.reason, kReasonStartFailed);
  EXPECT_EQ(noStart.message,
            "The task could not start: fork/exec /bin/sh: no such file or directory");
  auto broken = ObservationFromCommandStatus(json::parse(R"({"running":false})"));
  EXPECT_EQ(broken.phase, ExecutionPhase::kUnknown);
  EXPECT_EQ(ObservationFromCommandStatus(json::parse("[]")).phase, ExecutionPhase::kUnknown);
}

TEST(OpenSandboxSpecTest, ErrorsOfBothShapesAreReadable) {
  EXPECT_EQ(
      ErrorMessage(404, R"({"code":"DOCKER::SANDBOX_NOT_FOUND","message":"Sandbox x not found."})"),
      "HTTP 404: DOCKER::SANDBOX_NOT_FOUND: Sandbox x not found.");
  EXPECT_EQ(ErrorCode(R"({"code":"DOCKER::SANDBOX_NOT_FOUND"})"), "DOCKER::SANDBOX_NOT_FOUND");
  EXPECT_EQ(
      ErrorMessage(422, R"({"detail":[{"loc":["body","timeout"],"msg":"Input should be >= 60"}]})"),
      "HTTP 422: body.timeout: Input should be >= 60");
  EXPECT_EQ(ErrorMessage(502, "<html>bad gateway</html>"), "HTTP 502: <html>bad gateway</html>");
  EXPECT_EQ(ErrorCode("not json"), "");
}

TEST(OpenSandboxSpecTest, EndpointsMayCarryAPathAndHeaders) {
  EXPECT_EQ(ExecdBaseUrl(json{{"endpoint", "127.0.0.1:44772"}}).value(), "http://127.0.0.1:44772");
  // Bridge networking: execd's own proxy route behind a published port.
  EXPECT_EQ(ExecdBaseUrl(json{{"endpoint", "10.0.0.5:40123/proxy/44772"}}).value(),
            "http://10.0.0.5:40123/proxy/44772");
  EXPECT_EQ(ExecdBaseUrl(json{{"endpoint", "127.0.0.1:8080/sandboxes/abc/proxy/44772/"}}).value(),
            "http://127.0.0.1:8080/sandboxes/abc/proxy/44772");
  EXPECT_FALSE(ExecdBaseUrl(json::object()).ok());
  auto h = EndpointHeaders(json{{"endpoint", "x"}, {"headers", {{"X-Token", "t"}}}});
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0], std::make_pair(std::string("X-Token"), std::string("t")));
}

}  // namespace
}  // namespace ayatori::adapters::opensandbox
