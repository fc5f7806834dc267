// ayatori-chaos: one chaos round (test/chaos/runner.h) against a running e2e control plane and
// dockerd; prints the progress, then the report, and exits 0 when no guarantee was violated, 1
// when one was, 2 when the round could not run. `make chaos` (hack/chaos.sh) starts the services
// and runs it; docs/chaos.md explains the round.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "test/chaos/runner.h"

namespace {

std::string EnvOr(const char* name, const std::string& otherwise) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : otherwise;
}

}  // namespace

int main(int argc, char** argv) {
  using ayatori::chaos::RoundOptions;
  RoundOptions o;
  o.testenvDir = EnvOr("TESTENV_DIR", "");
  o.dockerdDir = EnvOr("AYATORI_DOCKERD_DIR", "");
  int settleSeconds = 180;
  CLI::App app{
      "ayatori-chaos: Jobs on the Docker and Kubernetes backends while controller "
      "replicas are killed and dockerd and kube-apiserver restart"};
  app.add_option("--jobs", o.jobs, "number of Jobs, half on each backend")
      ->check(CLI::Range(1, 1000));
  app.add_option("--seed", o.seed, "seed of the plan (0: a random one, printed)");
  app.add_option("--testenv-dir", o.testenvDir,
                 "TESTENV_DIR of the running e2e control plane (default: $TESTENV_DIR)")
      ->required(o.testenvDir.empty());
  app.add_option("--dockerd-dir", o.dockerdDir,
                 "AYATORI_DOCKERD_DIR of the running dockerd (default: $AYATORI_DOCKERD_DIR)")
      ->required(o.dockerdDir.empty());
  app.add_option("--source-dir", o.sourceDir, "the repository (hack/, config/crd/)")->required();
  app.add_option("--controller", o.controllerBinary, "the ayatori-controller binary")->required();
  app.add_option("--run-dir", o.runDir, "where the replicas' logs go")->required();
  app.add_option("--image", o.dockerImage, "image of the Docker Jobs (needs /bin/sh and sleep)");
  app.add_option("--settle-timeout", settleSeconds,
                 "seconds the Jobs may take to finish after the last disruption")
      ->check(CLI::Range(10, 3600));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  o.settleTimeout = std::chrono::seconds(settleSeconds);
  const auto start = std::chrono::steady_clock::now();
  o.progress = [start](const std::string& line) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[%6.1fs] %s\n", s, line.c_str());
    std::fflush(stdout);
  };

  auto result = ayatori::chaos::RunRound(o);
  if (!result.ok()) {
    std::cerr << "ayatori-chaos: the round could not run: " << result.status().ToString() << "\n";
    return 2;
  }
  std::cout << "\n" << result->report << std::flush;
  return result->verdict.ok() ? 0 : 1;
}
