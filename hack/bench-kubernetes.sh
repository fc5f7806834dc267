#!/usr/bin/env bash
# Benchmark: N Ayatori Jobs on the Kubernetes backend vs N native batch/v1 Jobs, on one e2e-tier
# test control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok) of its
# own. Starts the control plane and ayatori-controller, runs bench/kubernetes/kubernetes_bench,
# prints its table, and stops only what it started.
#
#   hack/bench-kubernetes.sh [--n=1000] [--sides=native,ayatori] [other kubernetes_bench flags]
#
# Environment:
#   AYATORI_BUILD_DIR   build tree with ayatori-controller and kubernetes_bench (default: build;
#                       both targets are built there if missing)
#   BENCH_DIR           working directory (default /tmp/ayatori-bench-<uid>): control plane,
#                       controller log
#   CONTROLLER_QPS, CONTROLLER_BURST   default: kube-controller-manager's --kube-api-qps/-burst
#   CONTROLLER_WORKERS  --workers of the controller (default: its own default)
#   CONTROLLER_LOG_LEVEL  (default info)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${AYATORI_BUILD_DIR:-$ROOT/build}
DIR=${BENCH_DIR:-/tmp/ayatori-bench-$(id -u)}
export TESTENV_DIR=$DIR/testenv
export TESTENV_ETCD_DIR=/dev/shm/ayatori-bench-$(printf %s "$DIR" | sha256sum | cut -c1-12)
TESTENV=$ROOT/hack/testenv/testenv.sh
CONTROLLER=$BUILD/cmd/ayatori-controller/ayatori-controller
BENCH=$BUILD/bench/kubernetes/kubernetes_bench

log() { printf 'bench-kubernetes: %s\n' "$*" >&2; }

if [ ! -x "$CONTROLLER" ] || [ ! -x "$BENCH" ]; then
  log "building ayatori-controller and kubernetes_bench in $BUILD"
  [ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja >/dev/null
  cmake --build "$BUILD" --target ayatori-controller kubernetes_bench
fi

controller_pid=""
cleanup() {
  local rc=$?
  if [ -n "$controller_pid" ]; then
    kill -TERM "$controller_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$controller_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$controller_pid" 2>/dev/null || true
    wait "$controller_pid" 2>/dev/null || true
  fi
  "$TESTENV" down || true
  exit "$rc"
}
trap cleanup EXIT INT TERM

mkdir -p "$DIR"
log "starting the e2e control plane in $TESTENV_DIR"
"$TESTENV" up e2e
# shellcheck disable=SC1091
source "$TESTENV_DIR/env.sh"

kcm_pid=$(cat "$TESTENV_DIR/pids/kube-controller-manager")
kcm_flag() { tr '\0' '\n' <"/proc/$kcm_pid/cmdline" | sed -n "s/^--$1=//p"; }
KCM_QPS=$(kcm_flag kube-api-qps)
KCM_BURST=$(kcm_flag kube-api-burst)
QPS=${CONTROLLER_QPS:-${KCM_QPS:-20}}
BURST=${CONTROLLER_BURST:-${KCM_BURST:-30}}

kubectl apply -f "$ROOT/config/crd/" >/dev/null
kubectl wait --for=condition=established --timeout=60s -f "$ROOT/config/crd/" >/dev/null
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: KubernetesExecutionParameters
metadata: {name: kubernetes-bench}
spec: {}
---
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: JobClass
metadata: {name: kubernetes-bench}
spec:
  controllerName: execution.ayatori.ddupan.top/kubernetes
  parametersRef: {group: execution.ayatori.ddupan.top, kind: KubernetesExecutionParameters, name: kubernetes-bench}
EOF

flags=(--kubeconfig="$KUBECONFIG" --qps="$QPS" --burst="$BURST" --metrics-address=127.0.0.1:0
  --log-format=json --log-level="${CONTROLLER_LOG_LEVEL:-info}")
[ -z "${CONTROLLER_WORKERS:-}" ] || flags+=(--workers="$CONTROLLER_WORKERS")
log "starting ayatori-controller ${flags[*]:1}"
"$CONTROLLER" "${flags[@]}" >"$DIR/controller.log" 2>&1 &
controller_pid=$!
port=""
for _ in $(seq 300); do
  if grep -q '"msg":"controller ready"' "$DIR/controller.log" 2>/dev/null; then
    port=$(sed -n 's/.*"msg":"serving metrics and health","port":\([0-9]*\).*/\1/p' \
      "$DIR/controller.log" | head -n1)
    [ -n "$port" ] || port=$(grep '"serving metrics and health"' "$DIR/controller.log" |
      python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["port"])')
    break
  fi
  kill -0 "$controller_pid" 2>/dev/null || { cat "$DIR/controller.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { log "the controller did not become ready"; cat "$DIR/controller.log" >&2; exit 1; }

"$BENCH" --kubeconfig="$KUBECONFIG" --qps="$QPS" --burst="$BURST" \
  --controller-pid="$controller_pid" --controller-metrics="127.0.0.1:$port" --kcm-pid="$kcm_pid" \
  --controller-flags="--qps=$QPS --burst=$BURST${CONTROLLER_WORKERS:+ --workers=$CONTROLLER_WORKERS}" \
  --kcm-flags="--kube-api-qps=$KCM_QPS --kube-api-burst=$KCM_BURST" "$@"
