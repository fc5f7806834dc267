// Shell completion: `completion bash|zsh|fish` prints a script that asks the plugin itself
// (`kubectl-ayatori __complete WORDS... PARTIAL`) for the candidates, so the commands, flags and
// output formats are completed from the one flag table (options.cc) and Job names from the
// cluster. __complete answers as cobra's __complete does (a candidate a line, then ":4"), which
// is also what kubectl asks a `kubectl_complete-ayatori` program on PATH for `kubectl ayatori
// <TAB>` (docs/kubectl-ayatori.md, "completion").
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ayatori/status.h"

namespace ayatori::plugin {

// A command and the flags it takes (the connection flags included), from the flag table.
struct CommandSpec {
  std::string name;
  std::vector<std::string> flags;  // "-n", "--namespace", ...
  bool takesJobName = false;       // its positional argument is an existing Job
};

// Where the Job names come from: the namespace, kubeconfig and context found on the command
// line so far ("" when absent).
struct JobNameQuery {
  std::string namespace_, kubeconfig, context;
};
using JobNameLister = std::function<std::vector<std::string>(const JobNameQuery&)>;

// The candidates for the last of `words` (the word being completed, "" for a new one), given
// the words before it (without the program's name).
std::vector<std::string> CompletionCandidates(const std::vector<CommandSpec>& commands,
                                              const std::vector<std::string>& words,
                                              const JobNameLister& jobNames);

// `__complete`'s answer: the candidates a line each, then cobra's directive ":4" (no file names).
std::string CompletionAnswer(const std::vector<std::string>& candidates);

// The script for `shell` (bash, zsh or fish) completing the command `kubectl-ayatori`.
StatusOr<std::string> CompletionScript(const std::string& shell);

}  // namespace ayatori::plugin
