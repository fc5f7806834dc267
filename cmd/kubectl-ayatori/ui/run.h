// `kubectl ayatori ui` from the command line: starts the server (server.h), prints its URL,
// opens a browser unless --no-browser, and serves until SIGINT or SIGTERM.
#pragma once

#include <iosfwd>
#include <string>

#include "ayatori/kube_client.h"
#include "commands.h"
#include "options.h"

namespace ayatori::plugin::ui {

// The exit code: kExitOk after a signal, kExitError when the server cannot start.
int RunUi(const Invocation& inv, const std::string& ns, KubeClient& client,
          const PathStreamer& streamer, std::ostream& out, std::ostream& err);

}  // namespace ayatori::plugin::ui
