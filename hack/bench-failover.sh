#!/usr/bin/env bash
# Benchmark: failover and resync of leader-elected ayatori-controller replicas (see
# bench/failover/failover_bench.cc): SIGKILL of the leader, graceful SIGTERM handover, and a
# restarted replica re-observing 10000 finished Jobs. Starts an API-tier test control plane of its
# own (etcd, kube-apiserver), installs the CRDs, runs bench/failover/failover_bench, prints its
# table, and stops only what it started.
#
#   hack/bench-failover.sh [--resync-jobs=10000] [other failover_bench flags]
#
# Environment:
#   AYATORI_BUILD_DIR   build tree with ayatori-controller-test and failover_bench (default: build;
#                       both are built there if missing)
#   BENCH_DIR           working directory (default /tmp/ayatori-bench-failover-<uid>): control
#                       plane, controller logs
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${AYATORI_BUILD_DIR:-$ROOT/build}
DIR=${BENCH_DIR:-/tmp/ayatori-bench-failover-$(id -u)}
export TESTENV_DIR=$DIR/testenv
export TESTENV_ETCD_DIR=/dev/shm/ayatori-bench-failover-$(printf %s "$DIR" | sha256sum | cut -c1-12)
TESTENV=$ROOT/hack/testenv/testenv.sh
CONTROLLER=$BUILD/test/ayatori-controller-test  # the controller with the in-process test backend
BENCH=$BUILD/bench/failover/failover_bench

log() { printf 'bench-failover: %s\n' "$*" >&2; }

if [ ! -x "$CONTROLLER" ] || [ ! -x "$BENCH" ]; then
  log "building ayatori-controller and failover_bench in $BUILD"
  [ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja >/dev/null
  cmake --build "$BUILD" --target ayatori-controller-test failover_bench
fi

cleanup() {
  local rc=$?
  "$TESTENV" down || true
  exit "$rc"
}
trap cleanup EXIT INT TERM

mkdir -p "$DIR"
log "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
log "starting the API-tier control plane in $TESTENV_DIR"
"$TESTENV" up api
# shellcheck disable=SC1091
source "$TESTENV_DIR/env.sh"
kubectl apply -f "$ROOT/config/crd/" >/dev/null
"$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"  # Established, served, admitted
# The replicas' namespace: the Lease and their backend snapshot ConfigMaps live there.
kubectl create namespace ayatori-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null

"$BENCH" --kubeconfig="$KUBECONFIG" --controller="$CONTROLLER" --log-dir="$DIR" "$@"
