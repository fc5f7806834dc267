// Runs a program with an argv (no shell) and captures what it printed; for integration tests that
// drive kubectl, docker or the controller binary as a user would.
#pragma once

#include <sstream>
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

// What a program printed, line by line (no trailing empty line).
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The whitespace-separated words of one line (a column of kubectl-style output each).
inline std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace ayatori::testing
