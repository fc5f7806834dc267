#include "test/kubectl-ayatori/shell_completion.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "test/support/process.h"
#include "test/support/testenv.h"

namespace ayatori::plugin::testing {

namespace {

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path == nullptr ? "" : path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// The shell's program and arguments that load `script` and complete `words` (bash and zsh take
// them as positional arguments, appended by the caller), printing one candidate per line.
std::vector<std::string> Harness(const std::string& shell, const std::string& script,
                                 const std::string& pluginDir,
                                 const std::vector<std::string>& words) {
  if (shell == "bash") {
    return {"bash", "-c",
            "PATH=" + pluginDir + ":$PATH\n" + script +
                "\nCOMP_WORDS=(kubectl-ayatori \"$@\"); COMP_CWORD=$#\n"
                "_kubectl_ayatori\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n",
            "bash"};
  }
  if (shell == "zsh") {
    // The completion system proper (compinit, compdef) registers the function; compadd works
    // only inside a completion widget, so a stand-in prints the array it is handed, a tab and
    // "nospace" after a candidate added without a space after it (-S '').
    return {"zsh", "-f", "-c",
            "PATH=" + pluginDir + ":$PATH\nautoload -U compinit && compinit -u -D\n" + script +
                "\n[[ $_comps[kubectl-ayatori] == _kubectl_ayatori ]] || "
                "{ print -u2 'compdef did not register _kubectl_ayatori'; exit 1 }\n"
                "compadd() {\n"
                "  local suffix=''\n"
                "  [[ $1 == -S ]] && { suffix=$'\\tnospace'; shift 2 }\n"
                "  [[ $1 == -a ]] && for c in \"${(@P)2}\"; do print -r -- \"$c$suffix\"; done\n"
                "}\n"
                "words=(kubectl-ayatori \"$@\"); CURRENT=$(( $# + 1 ))\n_kubectl_ayatori\n",
            "zsh"};
  }
  // fish completes a command line as a user typed it: its words joined by spaces, in the
  // script (fish would parse words such as -n given as its own arguments as its options).
  std::string line = "kubectl-ayatori";
  for (const auto& w : words) line += " " + w;
  return {"fish", "-N", "-c",
          "set -x PATH " + pluginDir + " $PATH\n" + script + "\ncomplete -C '" + line + "'\n"};
}

}  // namespace

ShellCompletion CompleteIn(const std::string& shell, const std::vector<std::string>& words) {
  ShellCompletion result;
  if (!OnPath(shell)) {
    result.error = shell + " is not installed: install the Debian package " + shell +
                   " (hack/install-deps.sh does)";
    return result;
  }
  const std::string pluginDir =
      ayatori::testing::RequiredEnv("AYATORI_BINARY_DIR") + "/cmd/kubectl-ayatori";
  auto script = ayatori::testing::RunProcess({pluginDir + "/kubectl-ayatori", "completion", shell});
  if (script.exitCode != 0) {
    result.error = "kubectl-ayatori completion " + shell + ": " + script.err;
    return result;
  }
  std::vector<std::string> argv = Harness(shell, script.out, pluginDir, words);
  if (shell != "fish") argv.insert(argv.end(), words.begin(), words.end());
  auto run = ayatori::testing::RunProcess(argv);
  if (run.exitCode != 0) {
    result.error = shell + " exited with " + std::to_string(run.exitCode) + ": " + run.err;
    return result;
  }
  for (const std::string& line : ayatori::testing::Lines(run.out)) {
    // fish appends "\tdescription" when there is one; the zsh harness "\tnospace"
    const size_t tab = line.find('\t');
    const std::string candidate = line.substr(0, tab);
    if (candidate.empty()) continue;
    result.candidates.push_back(candidate);
    if (tab != std::string::npos && line.substr(tab + 1) == "nospace") {
      result.noSpace.push_back(candidate);
    }
  }
  return result;
}

}  // namespace ayatori::plugin::testing
