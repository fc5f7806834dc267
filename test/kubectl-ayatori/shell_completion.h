// Runs the plugin's completion script in a real bash, zsh or fish and returns what that shell
// offers: shared by the unit test (commands and flags) and the integration test (Job names from
// the test control plane).
#pragma once

#include <string>
#include <vector>

namespace ayatori::plugin::testing {

struct ShellCompletion {
  std::string error;  // "" when the shell ran; else why not (a missing shell names its package)
  std::vector<std::string> candidates;
  // The candidates inserted without a space after them (reported by zsh's harness only: bash's
  // compopt and fish's choice are not visible outside an interactive completion).
  std::vector<std::string> noSpace;
};

// Loads `kubectl-ayatori completion <shell>` (the built plugin's output) into `shell` and
// completes the command line `words` after `kubectl-ayatori` (the last word is the one being
// completed; "" for a new word). Words are plain tokens: no quotes or spaces. The built plugin
// is first on PATH, as the script calls `kubectl-ayatori __complete`.
ShellCompletion CompleteIn(const std::string& shell, const std::vector<std::string>& words);

}  // namespace ayatori::plugin::testing
