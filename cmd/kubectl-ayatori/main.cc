// kubectl-ayatori: a kubectl plugin (`kubectl ayatori ...` when on PATH) to run and inspect
// execution.ayatori.ddupan.top Jobs. Reference: docs/kubectl-ayatori.md.
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "kube/config.h"
#include "kube/rest_client.h"
#include "options.h"

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
  return plugin::Execute(inv, ns, *client, streamer, {std::cout, std::cerr, std::cin});
}
