// Runs a program with an argv (no shell) and captures what it printed; for integration tests that
// drive kubectl, docker or the controller binary as a user would.
#pragma once

#include <string>
#include <vector>

namespace ayatori::testing {

struct ProcessResult {
  int exitCode = -1;  // -1 if the program could not be started or was killed by a signal
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH) with `input` on stdin; `extraEnv` entries are "NAME=value".
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input = "",
                         const std::vector<std::string>& extraEnv = {});

}  // namespace ayatori::testing
