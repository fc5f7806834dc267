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
#   CREATOR_QPS, CREATOR_BURST         client limits of the program creating the Jobs (both
#                                      sides); default: kube-controller-manager's, like the controller
#   CONTROLLER_WORKERS  --workers of the controller (default: its own default)
#   CONTROLLER_LOG_LEVEL  (default info)
#   BENCH_FINALIZER_POLICY=0  leave out config/finalizer-policy (the MutatingAdmissionPolicy that
#                         adds the cleanup finalizer at creation; installed by default, as
#                         config/default does): the controller then patches the finalizer in
#   NODE=real             the pods run on a real node (kubelet + containerd,
#                         hack/testenv/realnode.sh; root) instead of kwok's: both sides' pods
#                         select it, print a line and exit, and the report adds create->finished
#                         against native with its target (<= 1.2x)
#   QUEUED=1              also a third side, "queued": the Ayatori side's Jobs through Kueue
#                         (testenv.sh kueue-up after the control plane, kueue-down at the end;
#                         the controller runs with --kueue for all sides), a ClusterQueue with room
#                         for every Job at once; reports the controller's writes per queued Job
#                         (Job and Workload, target <= 9) and create->started p50/p99 queued vs
#                         unqueued (target p50 <= 1.5x). Not in the default run: Kueue is built
#                         once per machine (testenv.sh build-kueue, Go, minutes) and the side adds
#                         a round of N Jobs and its warm-up.
#   KUEUE_QPS, KUEUE_BURST  Kueue's client limits with QUEUED=1; default: the controller's, as
#                         kube-controller-manager's (Kueue's own default is 20 / 30)
#   BENCH_MALLOC_TRIM=1   also report the controllers' RSS after gdb made them call malloc_trim(0)
#                         (memory glibc keeps from freed JSON documents is then returned)
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
  [ "${QUEUED:-}" != 1 ] || "$TESTENV" kueue-down || true
  "$TESTENV" down || true
  exit "$rc"
}
trap cleanup EXIT INT TERM

mkdir -p "$DIR"
log "starting the e2e control plane in $TESTENV_DIR"
"$TESTENV" up e2e
real_node=()
params_spec="{}"
if [ "${NODE:-}" = real ]; then
  "$TESTENV" build node
  "$ROOT/hack/testenv/realnode.sh" up
  params_spec='{nodeSelector: {ayatori.test/node: real}, tolerations: [{key: ayatori.test/real-node, operator: Exists, effect: NoSchedule}]}'
  real_node=(--image=ayatori.local/busybox:1 --node-selector=ayatori.test/node=real
    --toleration=ayatori.test/real-node --command="echo bench")
fi
# shellcheck disable=SC1091
source "$TESTENV_DIR/env.sh"

kcm_pid=$(cat "$TESTENV_DIR/pids/kube-controller-manager")
kcm_flag() { tr '\0' '\n' <"/proc/$kcm_pid/cmdline" | sed -n "s/^--$1=//p"; }
KCM_QPS=$(kcm_flag kube-api-qps)
KCM_BURST=$(kcm_flag kube-api-burst)
QPS=${CONTROLLER_QPS:-${KCM_QPS:-20}}
BURST=${CONTROLLER_BURST:-${KCM_BURST:-30}}
CQPS=${CREATOR_QPS:-${KCM_QPS:-20}}
CBURST=${CREATOR_BURST:-${KCM_BURST:-30}}

sides=() kueue_flag=""
if [ "${QUEUED:-}" = 1 ]; then
  kueue_flag=--kueue
  export TESTENV_KUEUE_QPS=${KUEUE_QPS:-$QPS} TESTENV_KUEUE_BURST=${KUEUE_BURST:-$BURST}
  log "starting Kueue beside the control plane (testenv.sh kueue-up; qps $TESTENV_KUEUE_QPS burst $TESTENV_KUEUE_BURST)"
  "$TESTENV" kueue-up
  case " $* " in *" --sides="*) ;; *) sides=(--sides=native,ayatori,queued) ;; esac
fi

kubectl apply -f "$ROOT/config/crd/" >/dev/null
"$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"  # Established, served, admitted
if [ "${BENCH_FINALIZER_POLICY:-1}" != 0 ]; then
  kubectl apply -k "$ROOT/config/finalizer-policy" >/dev/null
  # A new policy takes effect within seconds: wait until a server-side dry run shows it.
  probe='{"apiVersion":"execution.ayatori.ddupan.top/v1alpha1","kind":"Job","metadata":{"name":"probe","namespace":"default"},"spec":{"task":{"image":"busybox"}}}'
  for i in $(seq 150); do
    f=$(printf %s "$probe" | kubectl create --dry-run=server -o 'jsonpath={.metadata.finalizers}' -f - 2>/dev/null || true)
    case $f in *job-cleanup*) break ;; esac
    [ "$i" -lt 150 ] || { log "the finalizer policy did not take effect within 30 s"; exit 1; }
    sleep 0.2
  done
  log "config/finalizer-policy installed: new Jobs get the cleanup finalizer at creation"
fi
# The controller's namespace: it keeps its backend snapshot ConfigMaps there (--namespace).
kubectl create namespace ayatori-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: KubernetesExecutionParameters
metadata: {name: kubernetes-bench}
spec: $params_spec
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
[ -z "$kueue_flag" ] || flags+=("$kueue_flag")
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

rss_kib() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }
# RSS after malloc_trim(0) in the process (BENCH_MALLOC_TRIM=1 and gdb), else "-".
trimmed_rss_kib() {
  if [ -n "${BENCH_MALLOC_TRIM:-}" ] && command -v gdb >/dev/null; then
    gdb -p "$1" -batch -ex 'call (int) malloc_trim(0)' >/dev/null 2>&1 || true
    rss_kib "$1"
  else
    echo -
  fi
}
rss_empty=$(rss_kib "$controller_pid")
trim_empty=$(trimmed_rss_kib "$controller_pid")

rc=0
processes=ayatori-controller:$controller_pid
for n in kube-controller-manager kube-apiserver etcd kube-scheduler kwok kueue; do
  [ -f "$TESTENV_DIR/pids/$n" ] || continue  # kueue: QUEUED=1 only
  processes+=",$n:$(cat "$TESTENV_DIR/pids/$n")"
done
for n in kubelet containerd; do
  [ ! -f "$TESTENV_DIR/realnode/pids/$n" ] || processes+=",$n:$(cat "$TESTENV_DIR/realnode/pids/$n")"
done
"$BENCH" --kubeconfig="$KUBECONFIG" --qps="$CQPS" --burst="$CBURST" --processes="$processes" \
  --controller-pid="$controller_pid" --controller-metrics="127.0.0.1:$port" --kcm-pid="$kcm_pid" \
  --controller-flags="--qps=$QPS --burst=$BURST${CONTROLLER_WORKERS:+ --workers=$CONTROLLER_WORKERS}${kueue_flag:+ $kueue_flag}" \
  --kcm-flags="--kube-api-qps=$KCM_QPS --kube-api-burst=$KCM_BURST${kueue_flag:+; kueue qps $TESTENV_KUEUE_QPS burst $TESTENV_KUEUE_BURST}" "${real_node[@]}" "${sides[@]}" "$@" || rc=$?

trim_live=$(trimmed_rss_kib "$controller_pid")
# The cache without the garbage of the run: a fresh controller that lists the finished Jobs (and
# their batch Jobs and pods) and reconciles them once, against the fresh one with no Job above.
ayatori_jobs=$(kubectl get jobs.execution.ayatori.ddupan.top -A --no-headers 2>/dev/null | wc -l)
if [ "$ayatori_jobs" -gt 0 ]; then
  kill -TERM "$controller_pid"
  wait "$controller_pid" 2>/dev/null || true
  "$CONTROLLER" "${flags[@]}" >"$DIR/controller-restarted.log" 2>&1 &
  controller_pid=$!
  for _ in $(seq 600); do
    grep -q '"msg":"controller ready"' "$DIR/controller-restarted.log" 2>/dev/null && break
    sleep 0.1
  done
  port=$(sed -n 's/.*"msg":"serving metrics and health","port":\([0-9]*\).*/\1/p' \
    "$DIR/controller-restarted.log" | head -n1)
  # Idle: workqueue empty on three scrapes in a row, one second apart.
  idle=0
  for _ in $(seq 120); do
    depth=$(curl -sf "http://127.0.0.1:$port/metrics" | sed -n 's/^ayatori_workqueue_depth \([0-9.e+]*\)$/\1/p' || true)
    if [ "$depth" = 0 ]; then idle=$((idle + 1)); else idle=0; fi
    [ "$idle" -ge 3 ] && break
    sleep 1
  done
  rss_full=$(rss_kib "$controller_pid")
  trim_full=$(trimmed_rss_kib "$controller_pid")
  awk -v e="$rss_empty" -v f="$rss_full" -v n="$ayatori_jobs" 'BEGIN {
    printf "\nfresh controller RSS: %d KiB with no Job, %d KiB after syncing %d finished Jobs: %.2f KiB per cached Job (target <= 3)\n", e, f, n, (f - e) / n }'
  if [ "$trim_empty" != - ]; then
    awk -v e="$trim_empty" -v l="$trim_live" -v f="$trim_full" -v n="$ayatori_jobs" 'BEGIN {
      printf "after malloc_trim(0): %d KiB with no Job; %d KiB in the controller that ran the Jobs (%.2f KiB per Job, its warm-up and connection pools included); %d KiB in the fresh one (%.2f KiB per Job)\n", e, l, (l - e) / n, f, (f - e) / n }'
  fi
fi
exit "$rc"
