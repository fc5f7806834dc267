#!/usr/bin/env bash
# Benchmark: a flood of maximal waiting Jobs (issue 26): the controller's peak RSS against its
# memory limit, and ordinary Jobs' create -> started latency in another namespace against the same
# run without the flood (see bench/flood/flood_bench.cc). Starts an API-tier test control plane of
# its own (etcd, kube-apiserver), installs the CRDs, runs bench/flood/flood_bench with the real
# ayatori-controller on its in-process test backend, prints its table, and stops only what it
# started.
#
#   hack/bench-flood.sh [--jobs=2000] [--ordinary=100] [other flood_bench flags]
#
# Environment:
#   AYATORI_BUILD_DIR   build tree with ayatori-controller-test and flood_bench (default: build; both
#                       are built there if missing)
#   BENCH_DIR           working directory (default /tmp/ayatori-bench-flood-<uid>): control plane,
#                       controller log, etcd's data (on disk: 2,000 maximal Jobs stored twice,
#                       as created and with their status, are ~2 GiB, over etcd's default quota,
#                       which is raised here to 8 GiB)
#   BENCH_FINALIZER_POLICY=0  leave out config/finalizer-policy (the controller then patches the
#                       cleanup finalizer into every Job, flood Jobs included)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${AYATORI_BUILD_DIR:-$ROOT/build}
DIR=${BENCH_DIR:-/tmp/ayatori-bench-flood-$(id -u)}
export TESTENV_DIR=$DIR/testenv
export TESTENV_ETCD_DIR=$DIR/etcd
export TESTENV_ETCD_FLAGS=--quota-backend-bytes=8589934592
TESTENV=$ROOT/hack/testenv/testenv.sh
CONTROLLER=$BUILD/test/ayatori-controller-test  # the controller with the in-process test backend
BENCH=$BUILD/bench/flood/flood_bench

log() { printf 'bench-flood: %s\n' "$*" >&2; }

if [ ! -x "$CONTROLLER" ] || [ ! -x "$BENCH" ]; then
  log "building ayatori-controller and flood_bench in $BUILD"
  [ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja >/dev/null
  cmake --build "$BUILD" --target ayatori-controller-test flood_bench
fi

cleanup() {
  local rc=$?
  "$TESTENV" down || true
  rm -rf "$TESTENV_ETCD_DIR"
  exit "$rc"
}
trap cleanup EXIT INT TERM

mkdir -p "$DIR"
rm -rf "$TESTENV_ETCD_DIR"  # a fresh cluster: the flood's namespaces start empty
log "starting the API-tier control plane in $TESTENV_DIR"
"$TESTENV" up api
# shellcheck disable=SC1091
source "$TESTENV_DIR/env.sh"
kubectl apply -f "$ROOT/config/crd/" >/dev/null
"$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"  # Established, served, admitted
# As config/default installs it (and hack/bench-kubernetes.sh): new Jobs get the cleanup finalizer
# at creation, so the controller does not write each flood Job once more to add it.
if [ "${BENCH_FINALIZER_POLICY:-1}" != 0 ]; then
  kubectl apply -k "$ROOT/config/finalizer-policy" >/dev/null
  # A new policy takes effect within seconds: wait until a server-side dry run shows it.
  probe='{"apiVersion":"execution.ayatori.ddupan.top/v1alpha1","kind":"Job","metadata":{"name":"probe","namespace":"default"},"spec":{"task":{"image":"busybox"}}}'
  for i in $(seq 150); do
    f=$(printf %s "$probe" | kubectl create --dry-run=server -o 'jsonpath={.metadata.finalizers}' -f - 2>/dev/null || true)
    case $f in *job-cleanup*) break ;; esac
    [ "$i" -lt 150 ] || { log "the finalizer policy did not take effect within 30 s"; exit 1; }
    sleep 0.2  # polling the policy's effect: no event says it took effect
  done
  log "config/finalizer-policy installed: new Jobs get the cleanup finalizer at creation"
fi
# The machine may be shared: the load goes with the figures.
log "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
"$BENCH" --kubeconfig="$KUBECONFIG" --controller="$CONTROLLER" --log-dir="$DIR" "$@" || rc=$?
log "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$rc"
