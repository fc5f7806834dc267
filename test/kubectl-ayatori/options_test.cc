// Flag parsing of kubectl-ayatori (cmd/kubectl-ayatori/options.h): kubectl's flags in any
// position, run's words after --, durations, and usage errors that exit 2 and say what to do.
#include "options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "commands.h"

namespace ayatori::plugin {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

Invocation Parse(const std::vector<std::string>& args) {
  ParseOutcome o = ParseArgs(args);
  EXPECT_TRUE(o.invocation.has_value()) << o.err;
  return o.invocation.value_or(Invocation{});
}

ParseOutcome ParseFails(const std::vector<std::string>& args) {
  ParseOutcome o = ParseArgs(args);
  EXPECT_FALSE(o.invocation.has_value());
  EXPECT_EQ(o.exitCode, kExitUsage);
  EXPECT_THAT(o.err, HasSubstr("kubectl ayatori --help"));
  return o;
}

TEST(ParseArgsTest, GetTakesKubectlFlagsAnywhere) {
  Invocation inv = Parse({"-n", "ci", "get", "-o", "wide", "-l", "team=a", "--kubeconfig", "/k"});
  EXPECT_EQ(inv.verb, Verb::kGet);
  EXPECT_EQ(inv.namespace_, "ci");
  EXPECT_EQ(inv.output, "wide");
  EXPECT_EQ(inv.selector, "team=a");
  EXPECT_EQ(inv.kubeconfig, "/k");
  EXPECT_TRUE(inv.name.empty());
  inv = Parse({"get", "job-1", "--namespace=ci", "--output=json", "--context", "kind"});
  EXPECT_EQ(inv.name, "job-1");
  EXPECT_EQ(inv.namespace_, "ci");
  EXPECT_EQ(inv.output, "json");
  EXPECT_EQ(inv.context, "kind");
  EXPECT_TRUE(Parse({"get", "-A"}).allNamespaces);
  EXPECT_FALSE(Parse({"get"}).watch);
  EXPECT_TRUE(Parse({"get", "-w"}).watch);
  EXPECT_TRUE(Parse({"get", "job-1", "--watch", "-o", "name"}).watch);
}

TEST(ParseArgsTest, RunCollectsFlagsAndWordsAfterDoubleDash) {
  Invocation inv =
      Parse({"run",   "hello", "--image", "busybox", "--class",  "docker", "--env",      "A=1",
             "--env", "B=x=y", "--cpu",   "500m",    "--memory", "64Mi",   "--deadline", "1h30m",
             "--ttl", "10m",   "--wait",  "--",      "echo",     "-n",     "--image",    "hi"});
  EXPECT_EQ(inv.verb, Verb::kRun);
  EXPECT_EQ(inv.name, "hello");
  EXPECT_EQ(inv.image, "busybox");
  EXPECT_EQ(inv.jobClass, "docker");
  EXPECT_THAT(inv.env, ElementsAre(Pair("A", "1"), Pair("B", "x=y")));
  EXPECT_EQ(inv.cpu, "500m");
  EXPECT_EQ(inv.memory, "64Mi");
  EXPECT_EQ(inv.deadlineSeconds, 5400);
  EXPECT_EQ(inv.ttlSeconds, 600);
  EXPECT_TRUE(inv.wait);
  EXPECT_FALSE(inv.logs);
  EXPECT_FALSE(inv.command);
  EXPECT_THAT(inv.words, ElementsAre("echo", "-n", "--image", "hi"));
  inv = Parse({"run", "x", "--image", "i", "--logs", "--command", "--", "/bin/sh", "-c", "true"});
  EXPECT_TRUE(inv.logs);
  EXPECT_TRUE(inv.wait);  // --logs implies --wait
  EXPECT_TRUE(inv.command);
}

TEST(ParseArgsTest, OtherVerbs) {
  EXPECT_EQ(Parse({"describe", "j"}).verb, Verb::kDescribe);
  EXPECT_EQ(Parse({"cancel", "j"}).verb, Verb::kCancel);
  Invocation wait = Parse({"wait", "j", "--timeout", "90s"});
  EXPECT_EQ(wait.verb, Verb::kWait);
  EXPECT_EQ(wait.timeout, std::chrono::seconds(90));
  EXPECT_FALSE(Parse({"wait", "j"}).timeout.has_value());
  Invocation confirm = Parse({"confirm-lost", "j", "--yes", "--reason", "node burned"});
  EXPECT_EQ(confirm.verb, Verb::kConfirmLost);
  EXPECT_TRUE(confirm.yes);
  EXPECT_EQ(confirm.reason, "node burned");
  EXPECT_TRUE(Parse({"confirm-lost", "j", "-y"}).yes);
  Invocation logs = Parse({"logs", "-f", "j", "--tail", "20", "--since", "5m"});
  EXPECT_EQ(logs.verb, Verb::kLogs);
  EXPECT_TRUE(logs.follow);
  EXPECT_EQ(logs.tailLines, 20);
  EXPECT_EQ(logs.sinceSeconds, 300);
}

TEST(ParseArgsTest, UiServesLoopbackOnAFreePortByDefault) {
  Invocation ui = Parse({"ui", "-n", "ci"});
  EXPECT_EQ(ui.verb, Verb::kUi);
  EXPECT_EQ(ui.namespace_, "ci");
  EXPECT_EQ(ui.port, 0);
  EXPECT_EQ(ui.address, "127.0.0.1");
  EXPECT_FALSE(ui.noBrowser);
  ui = Parse({"ui", "-A", "--port", "8080", "--address", "::1", "--no-browser"});
  EXPECT_TRUE(ui.allNamespaces);
  EXPECT_EQ(ui.port, 8080);
  EXPECT_EQ(ui.address, "::1");
  EXPECT_TRUE(ui.noBrowser);
  EXPECT_THAT(ParseFails({"ui", "--port", "70000"}).err, HasSubstr("--port"));
  EXPECT_THAT(ParseFails({"ui", "-A", "-n", "ci"}).err, HasSubstr("-n and -A cannot be combined"));
}

TEST(ParseArgsTest, DeleteTakesNamesAllOrASelector) {
  Invocation inv = Parse({"delete", "a", "b", "-n", "ci"});
  EXPECT_EQ(inv.verb, Verb::kDelete);
  EXPECT_THAT(inv.names, ElementsAre("a", "b"));
  EXPECT_EQ(inv.namespace_, "ci");
  EXPECT_TRUE(Parse({"delete", "--all"}).all);
  EXPECT_EQ(Parse({"delete", "-l", "team=ci"}).selector, "team=ci");
}

TEST(ParseArgsTest, VersionWithOrWithoutTheCluster) {
  Invocation inv = Parse({"version"});
  EXPECT_EQ(inv.verb, Verb::kVersion);
  EXPECT_FALSE(inv.clientOnly);
  EXPECT_EQ(inv.controllerNamespace, "ayatori-system");
  EXPECT_TRUE(Parse({"version", "--client"}).clientOnly);
  EXPECT_EQ(Parse({"version", "--controller-namespace", "ops"}).controllerNamespace, "ops");
}

TEST(ParseArgsTest, UsageErrorsSayWhatIsWrong) {
  EXPECT_THAT(ParseFails({}).err, HasSubstr("subcommand"));
  EXPECT_THAT(ParseFails({"frobnicate"}).err, HasSubstr("frobnicate"));
  EXPECT_THAT(ParseFails({"get", "-o", "xml"}).err,
              HasSubstr("--output \"xml\" is not supported: use one of json, yaml, name, wide, "
                        "jsonpath=TEMPLATE"));
  EXPECT_THAT(ParseFails({"get", "-o", "jsonpath={.items[?(@.x)]}"}).err,
              HasSubstr("a filter [?(@.x)] in \"{.items[?(@.x)]}\" is not supported"));
  EXPECT_EQ(Parse({"get", "-o", "jsonpath={.metadata.name}"}).output, "jsonpath={.metadata.name}");
  EXPECT_EQ(Parse({"get", "-o", "name"}).output, "name");
  EXPECT_THAT(ParseFails({"describe"}).err, HasSubstr("name"));
  EXPECT_THAT(ParseFails({"delete"}).err,
              HasSubstr("delete takes Job names, --all or -l SELECTOR (one of them)"));
  EXPECT_THAT(ParseFails({"delete", "a", "--all"}).err, HasSubstr("one of them"));
  EXPECT_THAT(ParseFails({"delete", "--all", "-l", "a=b"}).err, HasSubstr("one of them"));
  EXPECT_THAT(ParseFails({"run", "x"}).err, HasSubstr("--image"));
  EXPECT_THAT(ParseFails({"run", "x", "--image", "i", "--env", "NOVALUE"}).err,
              HasSubstr("--env \"NOVALUE\" must be NAME=VALUE"));
  EXPECT_THAT(ParseFails({"run", "x", "--image", "i", "--cpu", "lots"}).err, HasSubstr("--cpu"));
  EXPECT_THAT(ParseFails({"run", "x", "--image", "i", "--deadline", "10 minutes"}).err,
              HasSubstr("--deadline \"10 minutes\" is not a duration"));
  EXPECT_THAT(ParseFails({"run", "x", "--image", "i", "--command"}).err,
              HasSubstr("--command needs the command after --"));
  EXPECT_THAT(ParseFails({"get", "-A", "j"}).err, HasSubstr("-A"));
  EXPECT_THAT(ParseFails({"get", "-A", "-n", "x"}).err, HasSubstr("-n and -A"));
  EXPECT_THAT(ParseFails({"wait", "j", "--timeout", "0s"}).err, HasSubstr("must be positive"));
}

TEST(ParseArgsTest, HelpExitsZeroOnStdout) {
  ParseOutcome o = ParseArgs({"--help"});
  EXPECT_FALSE(o.invocation.has_value());
  EXPECT_EQ(o.exitCode, 0);
  EXPECT_THAT(o.out, HasSubstr("confirm-lost"));
  EXPECT_TRUE(o.err.empty());
}

TEST(ParseDurationFlagTest, Forms) {
  EXPECT_EQ(ParseDurationFlag("--t", "600").value(), std::chrono::seconds(600));
  EXPECT_EQ(ParseDurationFlag("--t", "2h").value(), std::chrono::seconds(7200));
  EXPECT_EQ(ParseDurationFlag("--t", "1m30s").value(), std::chrono::seconds(90));
  EXPECT_EQ(ParseDurationFlag("--t", "1000ms").value(), std::chrono::seconds(1))
      << "the grammar the controller's flags take too";
  for (const char* bad : {"", "m", "1h30", "1d", "-5s", "0", "1.5h", "0s", "1500ms"}) {
    EXPECT_FALSE(ParseDurationFlag("--t", bad).ok()) << bad;
  }
  EXPECT_THAT(ParseDurationFlag("--t", "1500ms").status().message(),
              HasSubstr("--t \"1500ms\" must be a whole number of seconds"));
  EXPECT_THAT(ParseDurationFlag("--t", "1d").status().message(),
              HasSubstr("--t \"1d\" is not a duration: unknown unit at \"d\""));
}

TEST(LogPathTest, NamesTheSubresourceAndItsQuery) {
  EXPECT_EQ(LogPath("ci", "j", {}),
            "/apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/ci/jobs/j/log");
  EXPECT_EQ(LogPath("ci", "j", {true, 10, 60}),
            "/apis/logs.execution.ayatori.ddupan.top/v1alpha1/namespaces/ci/jobs/j/log"
            "?follow=true&tailLines=10&sinceSeconds=60");
}

}  // namespace
}  // namespace ayatori::plugin
