#include "run.h"

#include <spawn.h>
#include <sys/wait.h>

#include <csignal>
#include <ostream>

#include "server.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): posix_spawnp's environment

namespace ayatori::plugin::ui {

namespace {

// xdg-open URL, without waiting for the browser (it may run as long as the session).
bool OpenBrowser(const std::string& url) {
  pid_t pid = 0;
  std::string program = "xdg-open";
  std::string arg = url;
  char* argv[] = {program.data(), arg.data(), nullptr};
  return posix_spawnp(&pid, program.c_str(), nullptr, nullptr, argv, environ) == 0;
}

}  // namespace

int RunUi(const Invocation& inv, const std::string& ns, KubeClient& client,
          const PathStreamer& streamer, std::ostream& out, std::ostream& err) {
  // Blocked before any server thread starts, so that only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto token = NewToken();
  if (!token.ok()) {
    err << "error: " << token.status().message() << "\n";
    return kExitError;
  }
  ServerOptions options;
  options.address = inv.address;
  options.port = inv.port;
  options.namespace_ = ns;
  options.allNamespaces = inv.allNamespaces;
  Server server(client, streamer, options, *token);
  if (Status started = server.Start(); !started.ok()) {
    err << "error: " << started.message() << "\n";
    return kExitError;
  }
  out << "Serving the Jobs of "
      << (inv.allNamespaces ? std::string("every namespace") : "namespace " + ns)
      << " on this machine only. Open (the URL holds your session's secret; do not share it):\n"
      << "  " << server.Url() << "\nPress Ctrl-C to stop.\n";
  out.flush();
  if (!inv.noBrowser && !OpenBrowser(server.Url())) {
    err << "note: no browser was opened (xdg-open is not available): open the URL above\n";
  }
  int received = 0;
  sigwait(&signals, &received);
  server.Stop();
  // Reap an xdg-open that has already ended; a running one is left to init.
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  return kExitOk;
}

}  // namespace ayatori::plugin::ui
