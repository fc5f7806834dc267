// One chaos round against a running e2e control plane (hack/testenv/testenv.sh up e2e) and a
// running project dockerd (hack/dockerd.sh up): two leader-elected ayatori-controller replicas,
// the Jobs of a Plan on the Docker and the Kubernetes backends, SIGKILLs of the replicas,
// one restart each of dockerd and kube-apiserver; then the facts of every Job, the verdict
// (verdict.h) and a report. `make chaos` (hack/chaos.sh, main.cc) and the e2e test
// chaos_e2e_test.cc run it; docs/chaos.md describes what is checked and how.
//
// A replica that exits for any reason is started again a second later, as a Deployment would.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ayatori/status.h"
#include "test/chaos/plan.h"
#include "test/chaos/verdict.h"

namespace ayatori::chaos {

struct RoundOptions {
  int jobs = 40;
  uint64_t seed = 0;  // 0: a random one (reported, to replay the round)
  // TESTENV_DIR of the e2e control plane: its env.sh (kubeconfig, binaries, audit log) and the
  // script that restarts its kube-apiserver.
  std::string testenvDir;
  // AYATORI_DOCKERD_DIR of the dockerd the Docker Jobs run on; the round kills and restarts it.
  std::string dockerdDir;
  std::string sourceDir;         // the repository: hack/ scripts and config/crd/
  std::string controllerBinary;  // ayatori-controller
  std::string runDir;            // the replicas' logs (replica-0.log, replica-1.log)
  std::string dockerImage = "ayatori.local/busybox:1";  // hack/images/build.sh builds it
  // How long, after the last disruption, the Jobs may take to finish.
  std::chrono::seconds settleTimeout{180};
  // Progress lines while the round runs; may be empty.
  std::function<void(const std::string&)> progress;
};

struct RoundResult {
  Plan plan;
  std::vector<JobFacts> facts;  // parallel to plan.jobs
  RoundLog log;
  Verdict verdict;
  std::string report;  // FormatReport
};

// Runs one round. A round that could not be set up at all (no control plane, no dockerd, no
// CRDs) is an error; everything after that ends in the verdict.
StatusOr<RoundResult> RunRound(const RoundOptions& options);

}  // namespace ayatori::chaos
