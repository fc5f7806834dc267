#!/usr/bin/env bash
# make bench: runs the benchmark programs of bench/ that need only a control plane, dockerd and
# one controller (bench/docker: the Docker path vs docker run --rm), each printing its ratio
# against a baseline measured in the same run, and names the make target of each other one
# (bench-kubernetes, bench-failover, bench-flood, bench-scale, bench-startup, bench-opensandbox;
# `bench.sh plan` prints that list alone). It starts what they need the way hack/demo.sh does, in
# directories of its own (never the demo's or the tests'), and stops exactly what it started when
# it ends, also on failure or Ctrl-C:
#   - a control plane (hack/testenv/testenv.sh up api, TESTENV_DIR=$BENCH/testenv)
#   - a dockerd (hack/dockerd.sh up, AYATORI_DOCKERD_DIR=$BENCH/dockerd) with the local images
#   - the CRDs, a Docker JobClass "bench-docker" and ayatori-controller from the build directory
#
#   BUILD_DIR=build           where the binaries are (make bench builds first)
#   AYATORI_BENCH_DIR=...     working directory, default /tmp/ayatori-bench
#   AYATORI_BENCH_JOBS=50     measured runs per side
#   AYATORI_BENCH_LOG_LEVEL   the controller's --log-level (default info; debug for timing analysis,
#                             at some cost in latency); its log stays in $AYATORI_BENCH_DIR
#   AYATORI_BENCH_ARGS        extra flags for the benchmark programs (e.g. --verbose)
#   AYATORI_BENCH_KEEP=1      leave everything running afterwards (then: hack/bench.sh down)
#   QUEUED=1                  also the queued variant: Kueue beside the control plane
#                             (testenv.sh kueue-up; kueue-down at the end), the controller with
#                             --kueue, and bench/docker then runs AYATORI_BENCH_JOBS unqueued and
#                             as many queued Jobs (a ClusterQueue with room for all of them):
#                             writes per queued Job (Job and Workload, <= 9), create->started p50
#                             queued vs unqueued (<= 1.5x). Not in the default run: Kueue is built
#                             once per machine (testenv.sh build-kueue: Go, minutes of CPU) and the
#                             phase adds two rounds of one-at-a-time Jobs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BENCH=${AYATORI_BENCH_DIR:-/tmp/ayatori-bench}
CONTROLLER=$BUILD/cmd/ayatori-controller/ayatori-controller
JOBS=${AYATORI_BENCH_JOBS:-50}
export TESTENV_DIR=$BENCH/testenv AYATORI_DOCKERD_DIR=$BENCH/dockerd

log() { printf 'bench: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

queued() { [ "${QUEUED:-}" = 1 ]; }

stop_controller() {
  local p
  [ -f "$BENCH/controller.pid" ] || return 0
  p=$(cat "$BENCH/controller.pid")
  if kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  fi
  rm -f "$BENCH/controller.pid"
}

# Stops only what this script started (each piece records that it did).
down() {
  stop_controller
  if [ -f "$BENCH/own-kueue" ]; then
    "$ROOT/hack/testenv/testenv.sh" kueue-down || true
    rm -f "$BENCH/own-kueue"
  fi
  if [ -f "$BENCH/own-dockerd" ]; then
    "$ROOT/hack/dockerd.sh" down || true
    rm -f "$BENCH/own-dockerd"
  fi
  if [ -f "$BENCH/own-testenv" ]; then
    "$ROOT/hack/testenv/testenv.sh" down || true
    rm -f "$BENCH/own-testenv"
  fi
}

start_controller() {
  local kueue=()
  stop_controller
  ! queued || kueue=(--kueue)
  setsid nohup "$CONTROLLER" --kubeconfig="$KUBECONFIG" --metrics-address=127.0.0.1:0 \
    --docker-endpoint="$DOCKER_HOST" --log-format=json "${kueue[@]}" \
    --log-level="${AYATORI_BENCH_LOG_LEVEL:-info}" >>"$BENCH/controller.log" 2>&1 </dev/null &
  echo $! >"$BENCH/controller.pid"
  for _ in $(seq 300); do
    grep -q '"msg":"controller ready"' "$BENCH/controller.log" 2>/dev/null && return 0
    kill -0 "$(cat "$BENCH/controller.pid")" 2>/dev/null ||
      { tail -n 20 "$BENCH/controller.log" >&2; die "ayatori-controller exited"; }
    sleep 0.1
  done
  die "ayatori-controller did not become ready within 30s (log: $BENCH/controller.log)"
}

up() {
  [ -x "$CONTROLLER" ] || die "$CONTROLLER is missing: run make bench (it builds first)"
  mkdir -p "$BENCH"
  : >"$BENCH/controller.log"

  log "control plane in $TESTENV_DIR"
  touch "$BENCH/own-testenv"
  "$ROOT/hack/testenv/testenv.sh" up api >"$BENCH/testenv.log" 2>&1 ||
    { cat "$BENCH/testenv.log" >&2; die "the control plane did not start"; }
  # shellcheck disable=SC1091
  source "$TESTENV_DIR/env.sh"
  KUBECTL=$TESTENV_BIN/kubectl
  if queued; then
    log "Kueue beside the control plane (testenv.sh kueue-up)"
    touch "$BENCH/own-kueue"
    "$ROOT/hack/testenv/testenv.sh" kueue-up >"$BENCH/kueue-up.log" 2>&1 ||
      { cat "$BENCH/kueue-up.log" >&2; die "Kueue did not start"; }
  fi

  log "dockerd in $AYATORI_DOCKERD_DIR"
  touch "$BENCH/own-dockerd"
  "$ROOT/hack/dockerd.sh" up >"$BENCH/dockerd-up.log" 2>&1 ||
    { cat "$BENCH/dockerd-up.log" >&2; die "dockerd did not start"; }
  # shellcheck disable=SC1091
  source "$AYATORI_DOCKERD_DIR/env.sh"

  log "CRDs, JobClass bench-docker, ayatori-controller"
  "$KUBECTL" apply -f "$ROOT/config/crd/" >/dev/null
  KUBECTL=$KUBECTL "$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"
  # The controller's namespace: it keeps its backend snapshot ConfigMaps there (--namespace).
  "$KUBECTL" create namespace ayatori-system --dry-run=client -o yaml |
    "$KUBECTL" apply -f - >/dev/null
  "$KUBECTL" apply -f - >/dev/null <<EOF
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: DockerExecutionParameters
metadata:
  name: bench-docker
spec:
  endpoint: $DOCKER_HOST
  networkMode: none
  pullPolicy: IfNotPresent
---
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: JobClass
metadata:
  name: bench-docker
spec:
  controllerName: execution.ayatori.ddupan.top/docker
  parametersRef:
    group: execution.ayatori.ddupan.top
    kind: DockerExecutionParameters
    name: bench-docker
EOF
  start_controller
}

# The port of the running controller's /metrics, from its log.
metrics_port() {
  grep '"msg":"serving metrics and health"' "$BENCH/controller.log" | tail -n 1 |
    python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["port"])'
}

# One function per benchmark folder of bench/; each prints its own ratio.
bench_docker() {
  local queue=()
  ! queued || queue=(--queue=bench-queued --controller-metrics="127.0.0.1:$(metrics_port)")
  # shellcheck disable=SC2086  # AYATORI_BENCH_ARGS: extra flags, split on purpose
  "$BUILD/bench/docker/bench_docker" --kubeconfig="$KUBECONFIG" --jobs="$JOBS" \
    --namespace="bench-docker-$(date +%s)" --job-class=bench-docker "${queue[@]}" \
    ${AYATORI_BENCH_ARGS:-}
}

# The benchmarks of bench/ that need more than this script starts, each with its own make target
# (and script): make bench names them instead of running them.
declare -A OWN_TARGET=(
  [kubernetes]="make bench-kubernetes (Kubernetes adapter vs native batch/v1 Jobs; the e2e control plane: kube-controller-manager, kwok; N=10000 for the large run)"
  [failover]="make bench-failover (leader-elected replicas: SIGKILL of the leader, SIGTERM handover, a replica re-observing 10000 Jobs)"
  [scale]="make bench-scale (a fresh controller syncing N=10000 finished Kubernetes Jobs vs kube-controller-manager: time, RSS per Job, CPU)"
  [startup]="make bench-startup (a fresh controller taking over 10000 Jobs and 10000 Secrets: time to ready and to every Job reconciled)"
  [flood]="make bench-flood (N=2000 maximal Jobs waiting in one namespace: the controller's peak RSS vs its 256Mi limit, other namespaces' start latency vs a run without the flood)"
  [opensandbox]="make bench-opensandbox (OpenSandbox adapter vs the official Python SDK on the real opensandbox-server)"
)

# What make bench runs and what it does not, before anything starts.
plan() {
  local dir name
  for dir in "$ROOT"/bench/*/; do
    name=$(basename "$dir")
    [ -f "$dir/CMakeLists.txt" ] || continue
    if declare -F "bench_$name" >/dev/null; then
      log "bench/$name: runs now"
    elif [ -n "${OWN_TARGET[$name]:-}" ]; then
      log "bench/$name: run it with ${OWN_TARGET[$name]}"
    else
      die "bench/$name has no runner: add bench_$name to hack/bench.sh or its make target to OWN_TARGET"
    fi
  done
}

run() {
  local dir name ran=0 failed=0
  plan
  if [ -z "${AYATORI_BENCH_KEEP:-}" ]; then trap down EXIT; fi
  # The machine may be shared: the load goes with the figures.
  log "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  up
  for dir in "$ROOT"/bench/*/; do
    name=$(basename "$dir")
    [ -f "$dir/CMakeLists.txt" ] || continue
    declare -F "bench_$name" >/dev/null || continue  # plan named its make target
    if [ ! -x "$BUILD/bench/$name/bench_$name" ]; then
      log "bench/$name: $BUILD/bench/$name/bench_$name is not built; skipped"
      continue
    fi
    echo
    ran=$((ran + 1))
    "bench_$name" || { failed=$((failed + 1)); log "bench/$name failed (controller log: $BENCH/controller.log)"; }
  done
  log "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  [ "$ran" -gt 0 ] || die "no benchmark was run"
  [ "$failed" -eq 0 ]
}

case ${1:-run} in
  run) run ;;
  plan) plan ;;
  down) down ;;
  *) echo "usage: bench.sh [run|plan|down]" >&2; exit 2 ;;
esac
