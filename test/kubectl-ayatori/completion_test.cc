// Shell completion (cmd/kubectl-ayatori/completion.h): the candidates for each position from the
// flag table, Job names from the namespace typed, and each shell's script run by that shell.
#include "completion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "options.h"
#include "test/kubectl-ayatori/shell_completion.h"
#include "test/support/process.h"

namespace ayatori::plugin {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

std::vector<std::string> Candidates(const std::vector<std::string>& words,
                                    JobNameQuery* asked = nullptr) {
  return CompletionCandidates(CommandSpecs(), words, [&](const JobNameQuery& q) {
    if (asked != nullptr) *asked = q;
    return std::vector<std::string>{"hello", "hello-2", "other"};
  });
}

TEST(CompletionCandidatesTest, CommandsFlagsAndValuesFromTheFlagTable) {
  const auto all = Candidates({""});
  for (const char* verb : {"get", "describe", "run", "delete", "cancel", "wait", "confirm-lost",
                           "logs", "version", "completion"}) {
    EXPECT_THAT(all, Contains(verb));
  }
  EXPECT_THAT(all, Not(Contains("__complete")));
  EXPECT_THAT(Candidates({"de"}), ElementsAre("describe", "delete"));
  EXPECT_THAT(Candidates({"-n", "ci", "ge"}), ElementsAre("get"));
  EXPECT_THAT(Candidates({"get", "--w"}), ElementsAre("--watch"));
  EXPECT_THAT(Candidates({"get", "-"}), Contains("--namespace"));  // connection flags too
  EXPECT_THAT(Candidates({"run", "x", "--im"}), ElementsAre("--image"));
  EXPECT_THAT(Candidates({"get", "-o", "j"}), ElementsAre("json", "jsonpath="));
  EXPECT_THAT(Candidates({"completion", ""}), ElementsAre("bash", "zsh", "fish"));
  EXPECT_THAT(Candidates({"run", "x", "--image", ""}), IsEmpty());  // a flag's value
}

TEST(CompletionCandidatesTest, JobNamesOfTheNamespaceTyped) {
  JobNameQuery asked;
  EXPECT_THAT(Candidates({"logs", "-n", "ci", "--context", "kind", "hel"}, &asked),
              ElementsAre("hello", "hello-2"));
  EXPECT_EQ(asked.namespace_, "ci");
  EXPECT_EQ(asked.context, "kind");
  EXPECT_THAT(Candidates({"--kubeconfig", "/k", "delete", "hello", ""}, &asked),
              ElementsAre("hello", "hello-2", "other"));
  EXPECT_EQ(asked.kubeconfig, "/k");
  for (const char* verb : {"get", "describe", "cancel", "wait", "confirm-lost"}) {
    EXPECT_THAT(Candidates({verb, "o"}), ElementsAre("other")) << verb;
  }
  EXPECT_THAT(Candidates({"run", "h"}), IsEmpty());  // run names a new Job
  EXPECT_THAT(Candidates({"version", ""}), IsEmpty());
}

TEST(CompletionAnswerTest, ALineEachThenCobrasDirective) {
  EXPECT_EQ(CompletionAnswer({"get", "delete"}), "get\ndelete\n:4\n");
  EXPECT_EQ(CompletionAnswer({}), ":4\n");
}

TEST(CompletionScriptTest, EveryShellAsksThePluginAndUnknownShellsAreRefused) {
  for (const char* shell : {"bash", "zsh", "fish"}) {
    auto script = CompletionScript(shell);
    ASSERT_TRUE(script.ok()) << shell;
    EXPECT_THAT(*script, ::testing::HasSubstr("kubectl-ayatori __complete")) << shell;
  }
  EXPECT_THAT(CompletionScript("tcsh").status().message(),
              ::testing::HasSubstr("unknown shell \"tcsh\": use one of bash, zsh, fish"));
}

// Each script as its shell runs it: bash, zsh and fish load it and offer, through the built
// plugin, the commands that start with a partial word, a command's flags and an option's values.
// A shell that is not installed fails the test (naming its package): it is not skipped.
class ShellCompletionTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::vector<std::string> Complete(const std::vector<std::string>& words) {
    auto got = testing::CompleteIn(GetParam(), words);
    EXPECT_EQ(got.error, "");
    return got.candidates;
  }
};

TEST_P(ShellCompletionTest, CommandsFlagsAndValuesComeBack) {
  EXPECT_THAT(Complete({"de"}), UnorderedElementsAre("describe", "delete"));
  EXPECT_THAT(Complete({"get", "--wa"}), ElementsAre("--watch"));
  EXPECT_THAT(Complete({"-n", "ci", "logs", "--fo"}), ElementsAre("--follow"));
  EXPECT_THAT(Complete({"get", "-o", "y"}), ElementsAre("yaml"));
  EXPECT_THAT(Complete({"completion", ""}), UnorderedElementsAre("bash", "zsh", "fish"));
  EXPECT_THAT(Complete({"ver"}), ElementsAre("version"));
}

// zsh adds "jsonpath=" without a space after it, so that the template follows the "=".
TEST(ZshCompletionTest, JsonpathIsAddedWithoutASpace) {
  auto got = testing::CompleteIn("zsh", {"get", "-o", "js"});
  EXPECT_EQ(got.error, "");
  EXPECT_THAT(got.candidates, UnorderedElementsAre("json", "jsonpath="));
  EXPECT_THAT(got.noSpace, ElementsAre("jsonpath="));
}

std::string ShellName(const ::testing::TestParamInfo<std::string>& shell) { return shell.param; }

INSTANTIATE_TEST_SUITE_P(Shells, ShellCompletionTest, ::testing::Values("bash", "zsh", "fish"),
                         ShellName);

TEST(CompletionScriptTest, BashParsesIt) {
  auto parsed = ayatori::testing::RunProcess({"bash", "-n"}, CompletionScript("bash").value());
  EXPECT_EQ(parsed.exitCode, 0) << parsed.err;
}

TEST(CompletionScriptTest, ZshParsesIt) {
  auto parsed = ayatori::testing::RunProcess({"zsh", "-n"}, CompletionScript("zsh").value());
  EXPECT_EQ(parsed.exitCode, 0) << parsed.err;
}

TEST(CompletionScriptTest, FishParsesIt) {
  auto parsed =
      ayatori::testing::RunProcess({"fish", "--no-execute"}, CompletionScript("fish").value());
  EXPECT_EQ(parsed.exitCode, 0) << parsed.err;
}

}  // namespace
}  // namespace ayatori::plugin
