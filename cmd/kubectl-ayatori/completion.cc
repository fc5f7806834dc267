#include "completion.h"

#include <algorithm>

namespace ayatori::plugin {

namespace {

// The flags that take a value (the word after them is not a command or a Job).
bool TakesValue(const std::string& flag) {
  static const std::vector<std::string> kBoolean = {
      "-A", "--all-namespaces", "-w",    "--watch",  "--command", "--wait", "--logs", "-y", "--yes",
      "-f", "--follow",         "--all", "--client", "-h",        "--help"};
  return std::find(kBoolean.begin(), kBoolean.end(), flag) == kBoolean.end();
}

std::vector<std::string> WithPrefix(const std::vector<std::string>& all,
                                    const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& s : all) {
    if (s.starts_with(prefix)) out.push_back(s);
  }
  return out;
}

}  // namespace

std::vector<std::string> CompletionCandidates(const std::vector<CommandSpec>& commands,
                                              const std::vector<std::string>& words,
                                              const JobNameLister& jobNames) {
  const std::string partial = words.empty() ? "" : words.back();
  const CommandSpec* verb = nullptr;
  JobNameQuery query;
  std::string previous;
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& w = words[i];
    if (!previous.empty()) {
      if (previous == "-n" || previous == "--namespace") query.namespace_ = w;
      if (previous == "--kubeconfig") query.kubeconfig = w;
      if (previous == "--context") query.context = w;
      previous.clear();
      continue;
    }
    if (w.starts_with("-")) {
      if (w.find('=') == std::string::npos && TakesValue(w)) previous = w;
      continue;
    }
    if (verb == nullptr) {
      for (const auto& c : commands) {
        if (c.name == w) verb = &c;
      }
    }
  }
  if (previous == "-o" || previous == "--output") {
    return WithPrefix({"json", "yaml", "name", "wide", "jsonpath="}, partial);
  }
  if (!previous.empty()) return {};  // a flag's value: nothing to offer
  if (partial.starts_with("-")) {
    std::vector<std::string> flags;
    if (verb != nullptr) {
      flags = verb->flags;
    } else {
      flags = {"--kubeconfig", "--context", "-n", "--namespace", "-h", "--help"};
    }
    return WithPrefix(flags, partial);
  }
  if (verb == nullptr) {
    std::vector<std::string> names;
    names.reserve(commands.size());
    for (const auto& c : commands) names.push_back(c.name);
    return WithPrefix(names, partial);
  }
  if (verb->name == "completion") return WithPrefix({"bash", "zsh", "fish"}, partial);
  if (!verb->takesJobName || !jobNames) return {};
  return WithPrefix(jobNames(query), partial);
}

std::string CompletionAnswer(const std::vector<std::string>& candidates) {
  std::string out;
  for (const auto& c : candidates) out += c + "\n";
  return out + ":4\n";  // cobra's ShellCompDirectiveNoFileComp
}

StatusOr<std::string> CompletionScript(const std::string& shell) {
  // Each script hands the words typed so far to `kubectl-ayatori __complete` and drops its last
  // line (the directive).
  if (shell == "bash") {
    return std::string(
        R"(# bash completion for kubectl-ayatori: source <(kubectl-ayatori completion bash)
_kubectl_ayatori() {
  local IFS=$'\n'
  COMPREPLY=($(kubectl-ayatori __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null | sed '$d'))
  if [[ ${#COMPREPLY[@]} -eq 0 && "$cur" != "" ]]; then COMPREPLY=(); fi
  [[ "${COMPREPLY[0]}" == *= ]] && compopt -o nospace 2>/dev/null
  return 0
}
complete -F _kubectl_ayatori kubectl-ayatori
)");
  }
  if (shell == "zsh") {
    return std::string(R"(#compdef kubectl-ayatori
# zsh completion for kubectl-ayatori: source <(kubectl-ayatori completion zsh)
_kubectl_ayatori() {
  local -a candidates
  candidates=("${(@f)$(kubectl-ayatori __complete "${(@)words[2,CURRENT]}" 2>/dev/null | sed '$d')}")
  candidates=(${candidates:#})
  # "jsonpath=" takes its template right after the "=": no space after it (bash: compopt nospace)
  local -a spaced nospace
  spaced=(${candidates:#*=})
  nospace=(${(M)candidates:#*=})
  compadd -a spaced
  compadd -S '' -a nospace
}
if [ "$funcstack[1]" = "_kubectl_ayatori" ]; then _kubectl_ayatori "$@"; else compdef _kubectl_ayatori kubectl-ayatori; fi
)");
  }
  if (shell == "fish") {
    return std::string(
        R"(# fish completion for kubectl-ayatori: kubectl-ayatori completion fish | source
function __kubectl_ayatori_complete
    set -l words (commandline -opc)[2..-1] (commandline -ct)
    kubectl-ayatori __complete $words 2>/dev/null | sed '$d'
end
complete -c kubectl-ayatori -f -a '(__kubectl_ayatori_complete)'
)");
  }
  return Status(StatusCode::kInvalidArgument,
                "completion: unknown shell \"" + shell + "\": use one of bash, zsh, fish");
}

}  // namespace ayatori::plugin
