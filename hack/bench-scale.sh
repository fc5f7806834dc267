#!/usr/bin/env bash
# Benchmark: a fresh ayatori-controller syncing N finished Jobs on the Kubernetes backend (each
# with its batch Job and pod), against kube-controller-manager syncing the same batch Jobs and pods
# (see bench/scale/scale_bench.cc). Starts an e2e-tier test control plane of its own, runs one Job
# through the real controller, kube-controller-manager and kwok (the template the bench clones),
# stops those (the clones are written whole; nothing may act on them half-written), runs
# bench/scale/scale_bench, prints its table, and stops only what it started.
#
#   hack/bench-scale.sh [--n=10000] [other scale_bench flags]     (make bench-scale N=100000)
#
# Environment:
#   AYATORI_BUILD_DIR   build tree with ayatori-controller and scale_bench (default: build; both
#                       are built there if missing)
#   BENCH_DIR           working directory (default /tmp/ayatori-bench-scale-<uid>): control plane,
#                       logs, etcd's data.
#   BENCH_SCALE_VIA     etcd (default): the clones are written straight into etcd, from the bytes
#                       kube-apiserver stored for the template (it stores JSON here:
#                       --storage-media-type=application/json); api: through kube-apiserver, 6
#                       requests per Job (12-21 Jobs/s on this machine: hours for 100,000).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${AYATORI_BUILD_DIR:-$ROOT/build}
DIR=${BENCH_DIR:-/tmp/ayatori-bench-scale-$(id -u)}
export TESTENV_DIR=$DIR/testenv
# On disk, not /dev/shm as the tests have it: at 100,000 Jobs etcd's data is 3.4 GiB, memory that
# kube-apiserver (~12 GiB) and kube-controller-manager (~4 GiB) need on a 24 GiB machine.
export TESTENV_ETCD_DIR=$DIR/etcd
TESTENV=$ROOT/hack/testenv/testenv.sh
CONTROLLER=$BUILD/cmd/ayatori-controller/ayatori-controller
BENCH=$BUILD/bench/scale/scale_bench
NS=scale-bench
VIA=${BENCH_SCALE_VIA:-etcd}
case "$VIA" in
  etcd) export TESTENV_APISERVER_FLAGS=--storage-media-type=application/json ;;
  api) ;;
  *) echo "bench-scale: BENCH_SCALE_VIA must be etcd or api, not '$VIA'" >&2; exit 2 ;;
esac

log() { printf 'bench-scale: %s\n' "$*" >&2; }

if [ ! -x "$CONTROLLER" ] || [ ! -x "$BENCH" ]; then
  log "building ayatori-controller and scale_bench in $BUILD"
  [ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja >/dev/null
  cmake --build "$BUILD" --target ayatori-controller scale_bench
fi

controller_pid=""
cleanup() {
  local rc=$?
  if [ -n "$controller_pid" ]; then
    kill -TERM "$controller_pid" 2>/dev/null || true
    wait "$controller_pid" 2>/dev/null || true
  fi
  # What scale_bench started, should it have been stopped before it stopped them.
  pkill -TERM -f -- "--kubeconfig=$TESTENV_DIR/kubeconfig" 2>/dev/null || true
  "$TESTENV" down || true
  exit "$rc"
}
trap cleanup EXIT INT TERM

mkdir -p "$DIR"
log "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
log "starting the e2e control plane in $TESTENV_DIR"
"$TESTENV" up e2e
# shellcheck disable=SC1091
source "$TESTENV_DIR/env.sh"

kubectl apply -f "$ROOT/config/crd/" >/dev/null
"$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"  # Established, served, admitted
kubectl create namespace ayatori-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: KubernetesExecutionParameters
metadata: {name: scale-bench}
spec: {}
---
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: JobClass
metadata: {name: scale-bench}
spec:
  controllerName: execution.ayatori.ddupan.top/kubernetes
  parametersRef: {group: execution.ayatori.ddupan.top, kind: KubernetesExecutionParameters, name: scale-bench}
YAML
# The pod needs the namespace's default ServiceAccount (kube-controller-manager makes it).
for _ in $(seq 100); do kubectl -n "$NS" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.2; done

log "the template: one Job through ayatori-controller, kube-controller-manager and kwok"
"$CONTROLLER" --kubeconfig="$KUBECONFIG" --metrics-address=127.0.0.1:0 --log-format=json \
  >"$DIR/controller-template.log" 2>&1 &
controller_pid=$!
kubectl apply -f - >/dev/null <<YAML
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: Job
metadata: {name: scale-template, namespace: $NS}
spec:
  jobClassName: scale-bench
  task:
    image: busybox:1.36
    command: ["/bin/true"]
    env: [{name: TESTENV_RUN_FOR, value: 1s}]
YAML
kubectl -n "$NS" wait --for=condition=Succeeded --timeout=120s job.execution.ayatori.ddupan.top/scale-template >/dev/null
kill -TERM "$controller_pid"
wait "$controller_pid" 2>/dev/null || true
controller_pid=""

# kube-controller-manager, kube-scheduler and kwok stop while the clones are written; the bench
# starts kube-controller-manager again, with the same command line, once they all exist.
tr '\0' '\n' <"/proc/$(cat "$TESTENV_DIR/pids/kube-controller-manager")/cmdline" | tr '\n' '\0' >"$DIR/kcm.cmdline"
for n in kwok kube-scheduler kube-controller-manager; do
  p=$(cat "$TESTENV_DIR/pids/$n")
  kill -TERM "$p" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  rm -f "$TESTENV_DIR/pids/$n"
done

rc=0
via=()
[ "$VIA" = etcd ] && via=(--etcd="$TESTENV_ETCD")
"$BENCH" --kubeconfig="$KUBECONFIG" --controller="$CONTROLLER" --namespace="$NS" "${via[@]}" \
  --template=scale-template --log-dir="$DIR" --kcm-cmdline="$DIR/kcm.cmdline" \
  --apiserver-pid="$(cat "$TESTENV_DIR/pids/kube-apiserver")" \
  --etcd-pid="$(cat "$TESTENV_DIR/pids/etcd")" "$@" || rc=$?
log "etcd data: $(du -sh "$TESTENV_ETCD_DIR" | cut -f1); load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$rc"
