#!/usr/bin/env bash
# make bench-opensandbox: a trivial task through Ayatori on OpenSandbox vs the same task through
# the official Python SDK, on one real opensandbox-server, alternating (bench/opensandbox/
# bench_opensandbox.py prints p50/p99 and their ratio). Starts, in directories of its own, a
# control plane (hack/testenv/testenv.sh up api), a dockerd (hack/dockerd.sh), the OpenSandbox
# stack (hack/opensandbox/opensandbox.sh), the CRDs, a JobClass and ayatori-controller, and stops
# exactly those when it ends, also on failure or Ctrl-C.
#
#   BUILD_DIR=build                  where the binaries are (make bench-opensandbox builds first)
#   AYATORI_BENCH_DIR=...            working directory, default /tmp/ayatori-bench-opensandbox
#   AYATORI_BENCH_JOBS=20            measured runs per side (after 2 warm-up runs)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BENCH=${AYATORI_BENCH_DIR:-/tmp/ayatori-bench-opensandbox}
CONTROLLER=$BUILD/cmd/ayatori-controller/ayatori-controller
STANDIN=$BUILD/test/opensandbox/execd_standin
JOBS=${AYATORI_BENCH_JOBS:-20}
export TESTENV_DIR=$BENCH/testenv AYATORI_DOCKERD_DIR=$BENCH/dockerd
export AYATORI_OPENSANDBOX_DIR=$BENCH/opensandbox

log() { printf 'bench-opensandbox: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

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

down() {
  stop_controller
  [ ! -f "$BENCH/own-opensandbox" ] || { "$ROOT/hack/opensandbox/opensandbox.sh" down || true; }
  [ ! -f "$BENCH/own-dockerd" ] || { "$ROOT/hack/dockerd.sh" down || true; }
  [ ! -f "$BENCH/own-testenv" ] || { "$ROOT/hack/testenv/testenv.sh" down || true; }
  rm -f "$BENCH"/own-*
}

up() {
  [ -x "$CONTROLLER" ] || die "$CONTROLLER is missing: run make bench-opensandbox (it builds first)"
  [ -x "$STANDIN" ] || die "$STANDIN is missing: run make bench-opensandbox (it builds first)"
  mkdir -p "$BENCH"
  : >"$BENCH/controller.log"
  log "control plane in $TESTENV_DIR"
  touch "$BENCH/own-testenv"
  "$ROOT/hack/testenv/testenv.sh" up api >"$BENCH/testenv.log" 2>&1 ||
    { cat "$BENCH/testenv.log" >&2; die "the control plane did not start"; }
  # shellcheck disable=SC1091
  source "$TESTENV_DIR/env.sh"
  KUBECTL=$TESTENV_BIN/kubectl
  log "dockerd in $AYATORI_DOCKERD_DIR"
  touch "$BENCH/own-dockerd"
  "$ROOT/hack/dockerd.sh" up >"$BENCH/dockerd-up.log" 2>&1 ||
    { cat "$BENCH/dockerd-up.log" >&2; die "dockerd did not start"; }
  # shellcheck disable=SC1091
  source "$AYATORI_DOCKERD_DIR/env.sh"
  log "opensandbox-server in $AYATORI_OPENSANDBOX_DIR"
  touch "$BENCH/own-opensandbox"
  AYATORI_EXECD_STANDIN=$STANDIN "$ROOT/hack/opensandbox/opensandbox.sh" up \
    >"$BENCH/opensandbox-up.log" 2>&1 ||
    { cat "$BENCH/opensandbox-up.log" >&2; die "the OpenSandbox stack did not start"; }
  # shellcheck disable=SC1091
  source "$AYATORI_OPENSANDBOX_DIR/env.sh"

  log "CRDs, JobClass bench-opensandbox, ayatori-controller"
  "$KUBECTL" apply -f "$ROOT/config/crd/" >/dev/null
  KUBECTL=$KUBECTL "$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"
  "$KUBECTL" create namespace ayatori-system --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
  "$KUBECTL" -n ayatori-system create secret generic bench-opensandbox-key \
    --from-literal=api-key="$AYATORI_OSB_API_KEY" --dry-run=client -o yaml |
    "$KUBECTL" apply -f - >/dev/null
  "$KUBECTL" apply -f - >/dev/null <<EOF
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: OpenSandboxExecutionParameters
metadata: {name: bench-opensandbox}
spec:
  endpoint: http://$AYATORI_OSB_DOMAIN/v1
  insecure: true   # plain HTTP to the loopback-only bench server
  apiKeySecretRef: {namespace: ayatori-system, name: bench-opensandbox-key, key: api-key}
---
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: JobClass
metadata: {name: bench-opensandbox}
spec:
  controllerName: execution.ayatori.ddupan.top/opensandbox
  parametersRef: {group: execution.ayatori.ddupan.top, kind: OpenSandboxExecutionParameters, name: bench-opensandbox}
  resources:
    defaults:
      requests: {cpu: 500m, memory: 256Mi}
      limits: {cpu: 500m, memory: 256Mi}
EOF
  setsid nohup "$CONTROLLER" --kubeconfig="$KUBECONFIG" --metrics-address=127.0.0.1:0 \
    --log-format=json --log-level=info >>"$BENCH/controller.log" 2>&1 </dev/null &
  echo $! >"$BENCH/controller.pid"
  for _ in $(seq 300); do
    grep -q '"msg":"controller ready"' "$BENCH/controller.log" 2>/dev/null && return 0
    kill -0 "$(cat "$BENCH/controller.pid")" 2>/dev/null ||
      { tail -n 20 "$BENCH/controller.log" >&2; die "ayatori-controller exited"; }
    sleep 0.1
  done
  die "ayatori-controller did not become ready within 30s"
}

trap down EXIT
up
"$AYATORI_OSB_VENV/bin/python" "$ROOT/bench/opensandbox/bench_opensandbox.py" \
  --kubeconfig="$KUBECONFIG" --namespace="bench-opensandbox-$(date +%s)" \
  --job-class=bench-opensandbox --jobs="$JOBS"
