// kubectl-ayatori: a kubectl plugin (`kubectl ayatori ...` when on PATH) to run and inspect
// execution.ayatori.ddupan.top Jobs. Reference: docs/kubectl-ayatori.md.
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "completion.h"
#include "format.h"
#include "kube/config.h"
#include "kube/rest_client.h"
#include "options.h"
#include "run.h"
#include "version_info.h"

namespace {

// Job names for completion, with the kubeconfig, context and namespace typed so far; nothing
// (never an error message in the middle of the user's command line) when they cannot be read.
std::vector<std::string> ListJobNames(const ayatori::plugin::JobNameQuery& query) {
  using namespace ayatori;  // NOLINT(google-build-using-namespace)
  kube::ConfigLoadOptions loadOptions;
  loadOptions.kubeconfigPath = query.kubeconfig;
  loadOptions.context = query.context;
  auto config = kube::LoadConfig(loadOptions);
  if (!config.ok()) return {};
  std::string ns = query.namespace_;
  if (ns.empty()) ns = config->namespace_.empty() ? "default" : config->namespace_;
  kube::RestClientOptions clientOptions;
  clientOptions.userAgent = "kubectl-ayatori";
  auto client = kube::RestClient::New(*config, clientOptions);
  return plugin::JobNames(*client, ns);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ayatori;  // NOLINT(google-build-using-namespace)
  // `kubectl ayatori logs -f x | head` must end quietly when head exits.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  plugin::ParseOutcome parsed = plugin::ParseArgs(args);
  std::cout << parsed.out;
  std::cerr << parsed.err;
  if (!parsed.invocation) return parsed.exitCode;
  const plugin::Invocation& inv = *parsed.invocation;
  if (inv.verb == plugin::Verb::kCompletion) {
    auto script = plugin::CompletionScript(inv.shell);
    if (!script.ok()) {
      std::cerr << "error: " << script.status().message() << "\n";
      return plugin::kExitUsage;
    }
    std::cout << *script;
    return plugin::kExitOk;
  }
  if (inv.verb == plugin::Verb::kComplete) {
    std::cout << plugin::CompletionAnswer(
        plugin::CompletionCandidates(plugin::CommandSpecs(), inv.words, ListJobNames));
    return plugin::kExitOk;
  }
  if (inv.verb == plugin::Verb::kVersion && inv.clientOnly) {
    std::cout << plugin::VersionLine("Client", kBuildVersion, kBuildCommit);
    return plugin::kExitOk;  // no kubeconfig needed
  }

  kube::ConfigLoadOptions loadOptions;
  loadOptions.kubeconfigPath = inv.kubeconfig;
  loadOptions.context = inv.context;
  auto config = kube::LoadConfig(loadOptions);
  if (!config.ok()) {
    std::cerr << "error: " << config.status().message()
              << "\nPoint --kubeconfig or KUBECONFIG at a valid kubeconfig file (kubectl config "
                 "view shows what kubectl loads)\n";
    return plugin::kExitError;
  }
  std::string ns = inv.namespace_;
  if (ns.empty()) ns = config->namespace_.empty() ? "default" : config->namespace_;

  kube::RestClientOptions clientOptions;
  clientOptions.userAgent = "kubectl-ayatori";
  clientOptions.qps = 20;
  clientOptions.burst = 40;
  auto client = kube::RestClient::New(*config, clientOptions);
  plugin::PathStreamer streamer = [&](std::string_view path, const std::stop_token& stop,
                                      const std::function<bool(std::string_view)>& onData) {
    return client->StreamPath(path, stop, onData);
  };
  if (inv.verb == plugin::Verb::kUi) {
    return plugin::ui::RunUi(inv, ns, *client, streamer, std::cout, std::cerr);
  }
  plugin::Io io{std::cout, std::cerr, std::cin};
  io.terminal = isatty(STDOUT_FILENO) == 1;  // the spinner, never into a pipe or file
  return plugin::Execute(inv, ns, *client, streamer, io);
}
