#!/usr/bin/env bash
# Benchmark: a fresh ayatori-controller taking over 10000 Jobs and 10000 Secrets (see
# bench/startup/startup_bench.cc). Starts an API-tier test control plane of its own (etcd,
# kube-apiserver), installs the CRDs, runs bench/startup/startup_bench, prints its table, and stops
# only what it started.
#
#   hack/bench-startup.sh [--jobs=10000] [--secrets=10000] [other startup_bench flags]
#
# Environment:
#   AYATORI_BUILD_DIR    build tree with ayatori-controller-test and startup_bench (default: build;
#                        both are built there if missing)
#   BENCH_DIR            working directory (default /tmp/ayatori-bench-startup-<uid>): control
#                        plane, controller logs
#   BASELINE_CONTROLLER  another ayatori-controller-test binary to measure the same way (e.g.
#                        built from an older commit; before test/ayatori-controller-test existed,
#                        the product binary took --enable-test-adapter instead)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${AYATORI_BUILD_DIR:-$ROOT/build}
DIR=${BENCH_DIR:-/tmp/ayatori-bench-startup-$(id -u)}
export TESTENV_DIR=$DIR/testenv
export TESTENV_ETCD_DIR=/dev/shm/ayatori-bench-startup-$(printf %s "$DIR" | sha256sum | cut -c1-12)
TESTENV=$ROOT/hack/testenv/testenv.sh
CONTROLLER=$BUILD/test/ayatori-controller-test  # the controller with the in-process test backend
BENCH=$BUILD/bench/startup/startup_bench

log() { printf 'bench-startup: %s\n' "$*" >&2; }

if [ ! -x "$CONTROLLER" ] || [ ! -x "$BENCH" ]; then
  log "building ayatori-controller and startup_bench in $BUILD"
  [ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja >/dev/null
  cmake --build "$BUILD" --target ayatori-controller-test startup_bench
fi

cleanup() {
  local rc=$?
  "$TESTENV" down || true
  exit "$rc"
}
trap cleanup EXIT INT TERM

mkdir -p "$DIR"
log "starting the API-tier control plane in $TESTENV_DIR"
"$TESTENV" up api
# shellcheck disable=SC1091
source "$TESTENV_DIR/env.sh"
kubectl apply -f "$ROOT/config/crd/" >/dev/null
"$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"  # Established, served, admitted
# The controller's namespace: its backend snapshot ConfigMaps live there (without it the test
# backend's Jobs never start and the cluster never settles).
kubectl create namespace ayatori-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null

args=(--kubeconfig="$KUBECONFIG" --controller="$CONTROLLER" --log-dir="$DIR")
[ -z "${BASELINE_CONTROLLER:-}" ] || args+=(--baseline="$BASELINE_CONTROLLER")
"$BENCH" "${args[@]}" "$@"
