#!/usr/bin/env bash
# make demo / make demo-down: the spec's example Job through Ayatori on Docker, on a bare machine.
#   demo.sh up     start (or reuse) a control plane, dockerd, the CRDs, a default Docker JobClass
#                  and the controller, serving the Job log API on the demo's own control plane
#                  (as make demo-install does: config/logs-api, hack/logs-api-cert.sh, the
#                  controller in a network namespace); run the example Job; print its status
#                  and output
#   demo.sh down   stop what `up` started (only that, by pid)
#   KUEUE=1        queueing through Kueue too (README.md, "Queueing through Kueue"): Kueue
#                  (testenv.sh build-kueue, kueue-up) with its visibility API served through
#                  kube-apiserver, a ClusterQueue capping the demo's engine at KUEUE_PODS (2)
#                  tasks and a LocalQueue "demo" in namespace ci; the controller runs with
#                  --kueue; the example Job and four more name the queue, so some wait (Queued)
# make demo-kubernetes / make demo-kubernetes-down: the Kubernetes backend (batch/v1 Jobs) on the
# e2e control plane, whose node is simulated by kwok (pods run and exit as their env says):
#   demo.sh up-kubernetes     a Job that succeeds, one that fails with exit code 3 and one cancelled
#                             while it runs; prints their status and the batch Jobs behind them.
#                             NODE=real: on a real node instead (kubelet + containerd,
#                             hack/testenv/realnode.sh; root), the Jobs' pods run and print;
#                             NODE=kwok: on kwok's node; unset: the real node when it can come
#                             up within 60 s (root, the local control plane, the kubelet already
#                             built by make test-realnode or NODE=real), else kwok's
#   demo.sh down-kubernetes
# make demo-opensandbox / make demo-opensandbox-down: the OpenSandbox backend: the real
# opensandbox-server (hack/opensandbox/opensandbox.sh) on the project's dockerd, one sandbox at a
# time (host networking, docs/opensandbox.md):
#   demo.sh up-opensandbox    a Job that succeeds (with its output), one that fails with exit code
#                             3 and one cancelled while it runs
#   demo.sh down-opensandbox
# make demo-install / make demo-install-down: the install path as a platform team and a Job
# author meet it (docs/install.md "Try it on this machine"), on the test control plane:
#   demo.sh up-install        the controller image; dist/install.yaml applied; the controller run
#                             with its ServiceAccount's token (in a network namespace, serving the
#                             Job log API); then an ordinary user without Docker access runs Jobs,
#                             reads their logs with kubectl ayatori and is refused by the
#                             confirm-backend-lost admission policy, and a Job that reads a
#                             Secret the user may not get is refused (ayatori-job-references)
#   demo.sh down-install
# With KUBECONFIG pointing at a reachable cluster, that cluster is used instead of a local one
# (not by up-install, which needs the test control plane's front proxy and certificate user).
#
# `up` prepares what it needs itself, and only that: the Debian packages, the CMake target
# demo-binaries (ayatori-controller and kubectl-ayatori, not the tests) and the control plane's
# api tier (etcd, kube-apiserver, kubectl; the e2e tier's kube-controller-manager, kube-scheduler
# and kwok are not built). Each phase prints one "[k/N]" line saying what it does or waits for;
# a second `up` finds everything built and running and only runs the example Job again.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case ${1:-} in
  *install) DEMO=${AYATORI_DEMO_DIR:-/tmp/ayatori-demo-install} ;;
  *kubernetes) DEMO=${AYATORI_DEMO_DIR:-/tmp/ayatori-demo-kubernetes} ;;
  *opensandbox) DEMO=${AYATORI_DEMO_DIR:-/tmp/ayatori-demo-opensandbox} ;;
  *) DEMO=${AYATORI_DEMO_DIR:-/tmp/ayatori-demo} ;;
esac
BUILD=${BUILD_DIR:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac  # written into env.sh: absolute
CONTROLLER=$BUILD/cmd/ayatori-controller/ayatori-controller
PLUGIN=$BUILD/cmd/kubectl-ayatori/kubectl-ayatori
export TESTENV_DIR=$DEMO/testenv AYATORI_DOCKERD_DIR=$DEMO/dockerd
export AYATORI_OPENSANDBOX_DIR=$DEMO/opensandbox
STEP=0
TOTAL=10
KUEUE=${KUEUE:-}
KUEUE_PODS=2

# One line per phase: its number, the seconds since the start, what it does or waits for.
step() {
  STEP=$((STEP + 1))
  printf '\n\033[1m[%d/%d] (%ds) %s\033[0m\n' "$STEP" "$TOTAL" "$SECONDS" "$*"
}
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

# build_binaries TARGET...: configures the build tree if it has none (the flags of `make
# configure`, AYATORI_CMAKE_FLAGS) and builds only these targets, saying how many steps are left.
build_binaries() {
  local left
  if [ ! -f "$BUILD/build.ninja" ]; then
    # shellcheck disable=SC2086 # the flags are words
    cmake -S "$ROOT" -B "$BUILD" ${AYATORI_CMAKE_FLAGS:--G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAYATORI_WERROR=ON -DAYATORI_LINE_TABLES_ONLY=ON} >/dev/null
  fi
  left=$(ninja -C "$BUILD" -n "$@" | grep -c '^\[' || true)
  if [ "$left" -eq 0 ]; then
    echo "up to date in $BUILD"
  else
    echo "$left build steps (compiling and linking, no tests) in $BUILD"
    cmake --build "$BUILD" --target "$@"
  fi
}

# The pinned Go binaries of the test control plane's tier, built once per machine into
# ~/.cache/ayatori/testenv (hack/testenv/testenv.sh). On a fresh machine they are the longest part
# of the demo, so start_control_plane_build runs that build in the background (its module
# downloads and serial links overlap the C++ build) and wait_control_plane_build waits for it,
# saying every minute that it still does. An `up` that fails meanwhile stops it (EXIT trap).
CP_BUILD_PID=
CP_BUILD_LOG=
start_control_plane_build() {
  local tier=$1 bin
  bin=$("$ROOT/hack/testenv/testenv.sh" bindir)
  if [ -f "$bin/.$tier-complete" ]; then
    echo "cached in $bin"
    return
  fi
  mkdir -p "$DEMO"
  CP_BUILD_LOG=$DEMO/control-plane-build.log
  echo "not cached yet: building them with Go into $bin, in the background (log: $CP_BUILD_LOG)"
  setsid -w "$ROOT/hack/testenv/testenv.sh" build "$tier" >"$CP_BUILD_LOG" 2>&1 </dev/null &
  CP_BUILD_PID=$!
  trap stop_control_plane_build EXIT
}

stop_control_plane_build() {
  if [ -n "$CP_BUILD_PID" ] && kill -0 "$CP_BUILD_PID" 2>/dev/null; then
    kill -TERM -- "-$CP_BUILD_PID" 2>/dev/null || true  # its process group: go and its compilers
  fi
}

wait_control_plane_build() {
  local s=0 rc=0
  if [ -z "$CP_BUILD_PID" ]; then
    echo "cached"
    return
  fi
  while kill -0 "$CP_BUILD_PID" 2>/dev/null; do
    sleep 1
    s=$((s + 1))
    [ $((s % 60)) -ne 0 ] || echo "  ... still building the control plane with Go (waited $((s / 60)) min so far)"
  done
  wait "$CP_BUILD_PID" || rc=$?
  CP_BUILD_PID=
  trap - EXIT
  if [ "$rc" -ne 0 ]; then
    tail -n 30 "$CP_BUILD_LOG" >&2
    die "building the control plane failed (exit code $rc; log $CP_BUILD_LOG)"
  fi
  echo "built ($(tail -n 1 "$CP_BUILD_LOG"))"
}

kube() { "$KUBECTL" "$@"; }

# The admission policies of config/policy, as install.yaml has them: only
# ayatori:backend-lost-confirmers may confirm a lost backend, and a Job may reference only the
# Secrets and ConfigMaps its author may get (ayatori-job-references; docs/api.md).
apply_policies() {
  kube apply -k "$ROOT/config/policy" >/dev/null
  echo "admission policies of config/policy applied (ayatori-confirm-backend-lost, ayatori-job-references)"
}

# use_cluster [api|e2e]: the test control plane tier to start when none is reachable.
use_cluster() {
  local tier=${1:-api}
  mkdir -p "$DEMO"
  # The kubectl built with the test control plane (same version as its apiserver).
  KUBECTL="$("$ROOT/hack/testenv/testenv.sh" bindir)/kubectl"
  if [ -n "${KUBECONFIG:-}" ] && [ ! -f "$DEMO/own-cluster" ] && "$KUBECTL" version >/dev/null 2>&1; then
    echo "using the cluster of KUBECONFIG=$KUBECONFIG"
    echo "export KUBECONFIG=$KUBECONFIG" >"$DEMO/kube.env"
    return
  fi
  if [ -f "$TESTENV_DIR/env.sh" ] && (source "$TESTENV_DIR/env.sh" && kubectl version >/dev/null 2>&1); then
    echo "reusing the local control plane in $TESTENV_DIR"
  else
    "$ROOT/hack/testenv/testenv.sh" up "$tier"
  fi
  touch "$DEMO/own-cluster"
  # shellcheck disable=SC1091
  source "$TESTENV_DIR/env.sh"
  KUBECTL=$TESTENV_BIN/kubectl
  echo "export KUBECONFIG=$KUBECONFIG PATH=$TESTENV_BIN:\$PATH" >"$DEMO/kube.env"
}

# start_controller [flags...]: (re)starts the controller with --kubeconfig and these flags; the
# words of LAUNCH (e.g. ip netns exec NAME) go before it.
LAUNCH=()
start_controller() {
  local pidfile=$DEMO/controller.pid
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "controller already running (pid $(cat "$pidfile")), restarting it on the current build"
    kill -TERM "$(cat "$pidfile")"
    for _ in $(seq 100); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.1; done
  fi
  [ -x "$CONTROLLER" ] || die "controller binary $CONTROLLER is missing: run make build"
  setsid nohup "${LAUNCH[@]}" "$CONTROLLER" --kubeconfig="$KUBECONFIG" --metrics-address=127.0.0.1:0 \
    --log-format=json "$@" >"$DEMO/controller.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 100); do
    grep -q '"msg":"controller ready"' "$DEMO/controller.log" 2>/dev/null && break
    kill -0 "$(cat "$pidfile")" 2>/dev/null || { tail -n 20 "$DEMO/controller.log" >&2; die "controller exited"; }
    sleep 0.1
  done
  echo "controller pid $(cat "$pidfile"), log $DEMO/controller.log"
}

# prepare_binaries [demo]: the first four phases of up and up-install: the Debian packages
# (only the demo's with "demo"), the control plane's api tier built with Go in the background
# while the C++ of demo-binaries compiles, then the wait for the Go build.
prepare_binaries() {
  step "Debian packages (hack/install-deps.sh${1:+ $1} installs the missing ones)"
  "$ROOT/hack/install-deps.sh" "$@"

  step "control-plane binaries etcd, kube-apiserver and kubectl (Go)"
  start_control_plane_build api

  step "building ayatori-controller and kubectl-ayatori (CMake target demo-binaries)"
  build_binaries demo-binaries

  step "waiting for the control-plane binaries"
  wait_control_plane_build
}

up() {
  [ "$KUEUE" != 1 ] || TOTAL=11
  prepare_binaries demo

  step "Kubernetes control plane: starting etcd and kube-apiserver, waiting for /readyz"
  use_cluster

  step "dockerd (no bridge network) in $AYATORI_DOCKERD_DIR: waiting for /_ping; the demo image"
  "$ROOT/hack/dockerd.sh" up
  # shellcheck disable=SC1091
  source "$AYATORI_DOCKERD_DIR/env.sh"
  # No registry is reachable: the image is assembled locally (dockerd.sh up does it too).
  "$ROOT/hack/images/build.sh"

  step "installing the CRDs (waiting until they are Established, served and admitted), the default JobClass (Docker) and the Job log API"
  kube apply -f "$ROOT/config/crd/" >/dev/null
  KUBECTL=$KUBECTL "$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"  # Established, served, admitted
  # The controller's namespace: it keeps its backend snapshot ConfigMaps there (--namespace).
  kube create namespace ayatori-system --dry-run=client -o yaml | kube apply -f - >/dev/null
  kube get crd -o name | grep execution.ayatori.ddupan.top
  kube apply -f "$ROOT/config/samples/dockerexecutionparameters.yaml" \
    -f "$ROOT/config/samples/jobclass-docker.yaml"
  apply_policies
  # The Job log API of config/logs-api, as install.yaml has it (APIService, Service, RBAC, the
  # log readers' ClusterRole) with its serving certificate: on the demo's own control plane only,
  # whose kube-apiserver is set up for API aggregation (hack/testenv/testenv.sh); a cluster of
  # KUBECONFIG cannot reach a controller that runs on this machine.
  if [ -f "$DEMO/own-cluster" ]; then
    kube apply -k "$ROOT/config/logs-api" >/dev/null
    logs_api_cert
  fi

  local queue_flags=()
  if [ "$KUEUE" = 1 ]; then
    step "Kueue (KUEUE=1): built once per machine (Go), started beside the control plane; a ClusterQueue of $KUEUE_PODS pods for the demo's Docker engine, LocalQueue ci/demo"
    kueue_up
    queue_flags=(--kueue)
  fi

  step "starting ayatori-controller (serving the Job log API), waiting for \"controller ready\" in its log"
  if [ -f "$DEMO/own-cluster" ]; then
    logs_api_network
    start_controller --docker-endpoint="$DOCKER_HOST" "${LOGS_API_FLAGS[@]}" "${queue_flags[@]}"
    wait_logs_api
  else
    start_controller --docker-endpoint="$DOCKER_HOST"
  fi

  step "creating the example Job (config/samples/job.yaml) with its Secret and ConfigMap"
  kube create namespace ci --dry-run=client -o yaml | kube apply -f - >/dev/null
  kube apply -f "$ROOT/config/samples/secret-example-token.yaml" \
    -f "$ROOT/config/samples/configmap-example-config.yaml"
  JOB=$(sed 's#image: .*#image: ayatori.local/busybox:1#' "$ROOT/config/samples/job.yaml" |
    queue_label | kube create -f - -o name)
  echo "created $JOB"
  local name=${JOB##*/}
  [ "$KUEUE" != 1 ] || queued_jobs

  step "waiting for $name to succeed (kubectl ayatori wait)"
  if ! "$PLUGIN" wait -n ci --timeout=120s "$name"; then
    "$PLUGIN" describe -n ci "$name" || true
    tail -n 30 "$DEMO/controller.log"
    die "$JOB did not succeed"
  fi
  echo
  "$PLUGIN" get -n ci "$name" -o wide
  [ "$KUEUE" != 1 ] || wait_queued_jobs
  echo
  echo "status:"
  kube get -n ci "$JOB" -o jsonpath='{.status}' | python3 -m json.tool
  echo
  echo "output of the task:"
  # Through the Job log API when the cluster serves it (docs/kubectl-ayatori.md#logs), else from
  # the container (a cluster of KUBECONFIG, which cannot reach the controller's log API).
  if ! "$PLUGIN" logs -n ci "$name" 2>/dev/null; then
    local uid
    uid=$(kube get -n ci "$JOB" -o jsonpath='{.metadata.uid}')
    docker logs "ayatori-$uid"
    echo "(read with docker logs: this cluster does not serve the Job log API for kubectl ayatori logs)"
  fi
  cat "$DEMO/kube.env" "$AYATORI_DOCKERD_DIR/env.sh" >"$DEMO/env.sh"
  echo "export PATH=$(dirname "$PLUGIN"):\$PATH" >>"$DEMO/env.sh"
  echo
  echo "demo is up after ${SECONDS}s. Try:  source $DEMO/env.sh && kubectl ayatori get -A"
}

# Kueue for KUEUE=1 (docs/development.md, "Kueue in the test environment"): started beside the
# demo's own control plane (testenv.sh kueue-up; a cluster of KUBECONFIG has its own Kueue), its
# visibility API served through kube-apiserver, and the demo's queue: a ResourceFlavor for the
# demo's Docker engine, a ClusterQueue with room for KUEUE_PODS tasks on it and the LocalQueue
# "demo" of namespace ci.
kueue_up() {
  [ -f "$DEMO/own-cluster" ] || die "KUEUE=1 needs the demo's own control plane (unset KUBECONFIG)"
  "$ROOT/hack/testenv/testenv.sh" kueue-up  # builds Kueue first when it is not cached (build-kueue)
  kueue_visibility
  kube create namespace ci --dry-run=client -o yaml | kube apply -f - >/dev/null
  kube apply -f - <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: demo-docker}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: demo}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, pods]
    flavors:
    - name: demo-docker
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: memory, nominalQuota: 16Gi}
      - {name: pods, nominalQuota: $KUEUE_PODS}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: demo, namespace: ci}
spec: {clusterQueue: demo}
EOF
  kube wait --for=condition=Active clusterqueue/demo --timeout=60s >/dev/null
  echo "ClusterQueue demo is Active (pods: $KUEUE_PODS)"
}

# Kueue's visibility API (the queue positions kubectl ayatori shows) through kube-apiserver, as
# Kueue's install has it: APIService v1beta2.visibility.kueue.x-k8s.io -> Service
# kueue-system/visibility-server. Its endpoint may not be a loopback address, so a relay on the
# host end of the demo's veth pair forwards to the loopback port that kueue-up gave Kueue's
# visibility server (in its config.yaml). Kueue's serving certificate names 127.0.0.1 only, hence
# insecureSkipTLSVerify (traffic of this machine only; an install has a caBundle).
KUEUE_VISIBILITY_PORT=8082
kueue_visibility() {
  local config=$TESTENV_DIR/kueue/root/config.yaml port
  port=$(sed -n 's/^visibilityServer:.*bindPort: *\([0-9]*\).*/\1/p' "$config")
  [ -n "$port" ] || die "no visibilityServer bindPort in $config"
  make_netns
  RELAY_ARGS=("$NETNS_HOST_IP" "$KUEUE_VISIBILITY_PORT" 127.0.0.1 "$port")
  start_relay relay-kueue
  kube apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: kueue-system}
---
apiVersion: v1
kind: Service
metadata: {name: visibility-server, namespace: kueue-system}
spec: {ports: [{name: https, port: 443, targetPort: $KUEUE_VISIBILITY_PORT, protocol: TCP}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: visibility-server, namespace: kueue-system}
subsets: [{addresses: [{ip: $NETNS_HOST_IP}], ports: [{name: https, port: $KUEUE_VISIBILITY_PORT}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: visibility-server-demo
  namespace: kueue-system
  labels: {kubernetes.io/service-name: visibility-server}
addressType: IPv4
endpoints: [{addresses: ["$NETNS_HOST_IP"], conditions: {ready: true}}]
ports: [{name: https, port: $KUEUE_VISIBILITY_PORT, protocol: TCP}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta2.visibility.kueue.x-k8s.io}
spec:
  group: visibility.kueue.x-k8s.io
  version: v1beta2
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: visibility-server, namespace: kueue-system, port: 443}
EOF
  kube wait --for=condition=Available --timeout=60s \
    apiservice/v1beta2.visibility.kueue.x-k8s.io >/dev/null
  echo "APIService v1beta2.visibility.kueue.x-k8s.io is Available (Kueue's visibility API)"
}

# A Job manifest on stdin, with (KUEUE=1) the label that queues it in LocalQueue demo.
queue_label() {
  if [ "$KUEUE" = 1 ]; then
    sed 's#^metadata:$#metadata:\n  labels: {kueue.x-k8s.io/queue-name: demo}#'
  else
    cat
  fi
}

# KUEUE=1: four more Jobs of LocalQueue demo that run a few seconds each. With the example Job
# they ask for more than the ClusterQueue's KUEUE_PODS tasks, so some wait (Queued) until one
# ends; kubectl ayatori get shows them once the controller has gated each (an Admitted condition),
# and describe the last one's place in the queue.
QUEUED_JOBS=(queued-1 queued-2 queued-3 queued-4)
queued_jobs() {
  local job
  kube delete -n ci ajob "${QUEUED_JOBS[@]}" --ignore-not-found --wait=true >/dev/null
  for job in "${QUEUED_JOBS[@]}"; do
    queue_label <<EOF | kube create -f - -o name
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: Job
metadata:
  name: $job
  namespace: ci
spec:
  jobClassName: default
  task: {image: ayatori.local/busybox:1, command: [/bin/sh, -c, "sleep 4; echo $job done"]}
EOF
    kube wait -n ci --timeout=60s "ajob/$job" \
      --for=jsonpath='{.status.conditions[?(@.type=="Admitted")].type}'=Admitted >/dev/null
  done
  echo
  echo "kubectl ayatori get -n ci (LocalQueue demo runs $KUEUE_PODS at a time):"
  "$PLUGIN" get -n ci
  echo "kubectl ayatori describe -n ci $job:"
  "$PLUGIN" describe -n ci "$job" | grep -E '^(State|  Why|Queue):'
}

# KUEUE=1: waits for the queued Jobs, showing the queue move on when the first one ends.
wait_queued_jobs() {
  local job
  "$PLUGIN" wait -n ci --timeout=120s "${QUEUED_JOBS[0]}" >/dev/null ||
    die "${QUEUED_JOBS[0]} did not succeed"
  # The first of the queue then, once the controller marked queued-1's Workload Finished.
  kube wait -n ci --timeout=60s "ajob/${QUEUED_JOBS[2]}" \
    --for=jsonpath='{.status.conditions[?(@.type=="Admitted")].status}'=True >/dev/null
  echo
  echo "kubectl ayatori get -n ci (${QUEUED_JOBS[0]} is done: ${QUEUED_JOBS[2]} was admitted):"
  "$PLUGIN" get -n ci
  for job in "${QUEUED_JOBS[@]}"; do
    "$PLUGIN" wait -n ci --timeout=120s "$job" >/dev/null || die "$job did not succeed"
  done
  echo
  echo "kubectl ayatori get -n ci (all done, at most $KUEUE_PODS at a time):"
  "$PLUGIN" get -n ci
}

# kubernetes_job NAME ENV [SCRIPT]: a Job of the kubernetes JobClass running `sh -c SCRIPT`
# (default: echo NAME); on kwok's node the stages read TESTENV_* from the container's env.
kubernetes_job() {
  local name=$1 env=$2 script=${3:-echo $1}
  kube create -n ci -o name -f - <<EOF
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: Job
metadata: {name: $name}
spec:
  jobClassName: kubernetes
  task:
    image: ayatori.local/busybox:1
    command: [/bin/sh, -c, "$script"]
    env: $env
EOF
}

# The node make demo-kubernetes runs its pods on: NODE (real or kwok) if set; else the real node
# when it can come up within 60 s here (root, the local control plane, the kubelet already in the
# cache: building it takes minutes), else kwok's simulated node.
demo_node() {
  case "${NODE:-}" in
    real | kwok) echo "$NODE"; return ;;
    "") ;;
    *) echo "NODE=$NODE: expected real or kwok (or unset)" >&2; exit 1 ;;
  esac
  if [ "$(id -u)" = 0 ] && [ -f "$DEMO/own-cluster" ] &&
    [ -x "$("$ROOT/hack/testenv/testenv.sh" bindir)/kubelet" ]; then
    echo real
  else
    echo kwok
  fi
}

up_kubernetes() {
  TOTAL=10
  step "Debian packages (hack/install-deps.sh installs the missing ones)"
  "$ROOT/hack/install-deps.sh"

  step "control-plane binaries of the e2e tier (etcd, kube-apiserver, kubectl, kube-controller-manager, kube-scheduler, kwok)"
  start_control_plane_build e2e

  step "building ayatori-controller and kubectl-ayatori (CMake target demo-binaries)"
  build_binaries demo-binaries

  step "waiting for the control-plane binaries"
  wait_control_plane_build

  step "Kubernetes control plane with kube-controller-manager, kube-scheduler and kwok"
  use_cluster e2e
  # The real node's pods: the class selects it (its label, its taint).
  local placement="" node
  node=$(demo_node) || exit 1
  if [ "$node" = real ]; then
    [ -f "$DEMO/own-cluster" ] || { echo "NODE=real needs the local control plane, not KUBECONFIG's cluster" >&2; exit 1; }
    "$ROOT/hack/testenv/testenv.sh" build node
    if [ "${NODE:-}" = real ]; then
      "$ROOT/hack/testenv/realnode.sh" up
    elif ! timeout 60 "$ROOT/hack/testenv/realnode.sh" up; then
      echo "the real node did not come up within 60 s (hack/testenv/realnode.sh logs); the Jobs run on kwok's node"
      "$ROOT/hack/testenv/realnode.sh" down || true
      node=kwok
    fi
  fi
  if [ "$node" = real ]; then
    placement="  nodeSelector: {ayatori.test/node: real}
  tolerations: [{key: ayatori.test/real-node, operator: Exists, effect: NoSchedule}]"
  else
    echo "the Jobs' pods run on kwok's node (simulated: they print nothing); NODE=real for a real one"
  fi

  step "installing the CRDs and the kubernetes JobClass"
  kube apply -f "$ROOT/config/crd/" >/dev/null
  KUBECTL=$KUBECTL "$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"  # Established, served, admitted
  # The controller's namespace: it keeps its backend snapshot ConfigMaps there (--namespace).
  kube create namespace ayatori-system --dry-run=client -o yaml | kube apply -f - >/dev/null
  # Not config/samples/kubernetesexecutionparameters.yaml: its gVisor RuntimeClass, PriorityClass,
  # service account and node pool do not exist on the simulated node.
  kube apply -f - <<EOF
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: KubernetesExecutionParameters
metadata: {name: demo}
spec:
  extraLabels: {example.com/demo: kubernetes}
  imagePullFailureTimeoutSeconds: 60
$placement
---
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: JobClass
metadata: {name: kubernetes}
spec:
  controllerName: execution.ayatori.ddupan.top/kubernetes
  parametersRef: {group: execution.ayatori.ddupan.top, kind: KubernetesExecutionParameters, name: demo}
  resources:
    defaults:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: "1", memory: 256Mi}
EOF
  apply_policies

  step "starting ayatori-controller"
  start_controller

  step "creating three Jobs: one succeeds, one exits 3, one runs until it is cancelled"
  kube create namespace ci --dry-run=client -o yaml | kube apply -f - >/dev/null
  kube delete -n ci ajob/k8s-succeeds ajob/k8s-fails ajob/k8s-cancelled --ignore-not-found \
    --wait=true >/dev/null
  if [ "$node" = real ]; then
    kubernetes_job k8s-succeeds '[]' 'echo hello from a real pod; id'
    kubernetes_job k8s-fails '[]' 'echo failing; exit 3'
    kubernetes_job k8s-cancelled '[]' 'trap \"exit 143\" TERM; while :; do sleep 1; done'
  else
    kubernetes_job k8s-succeeds '[{name: TESTENV_RUN_FOR, value: 2s}]'
    kubernetes_job k8s-fails '[{name: TESTENV_RUN_FOR, value: 1s}, {name: TESTENV_EXIT_CODE, value: "3"}]'
    kubernetes_job k8s-cancelled '[{name: TESTENV_RUN_FOR, value: 24h}]'
  fi

  step "waiting for the results; cancelling k8s-cancelled once it runs"
  kube wait -n ci --for=condition=Succeeded --timeout=120s ajob/k8s-succeeds
  kube wait -n ci --for=condition=Succeeded=False --timeout=120s ajob/k8s-fails
  kube wait -n ci --for=jsonpath='{.status.startTime}' --timeout=120s ajob/k8s-cancelled >/dev/null
  kube patch -n ci ajob/k8s-cancelled --type=merge -p '{"spec":{"desiredState":"Cancelled"}}'
  kube wait -n ci --for=condition=Succeeded=False --timeout=120s ajob/k8s-cancelled

  step "status"
  kube get -n ci ajob/k8s-succeeds ajob/k8s-fails ajob/k8s-cancelled
  echo
  for j in k8s-succeeds k8s-fails k8s-cancelled; do
    printf '%s: ' "$j"
    kube get -n ci "ajob/$j" -o jsonpath='{range .status.conditions[?(@.type=="Succeeded")]}Succeeded={.status} reason={.reason} message="{.message}"{end}{"\n"}'
  done
  echo
  # Ayatori reads the result from the pod's terminated state; the batch Job's own status follows
  # when kube-controller-manager gets to it (the cancelled one is deleted).
  local uid
  uid=$(kube get -n ci ajob/k8s-succeeds -o jsonpath='{.metadata.uid}')
  kube wait -n ci --for=condition=Complete --timeout=60s "job.batch/ayj-$uid" >/dev/null || true
  echo "the batch/v1 Jobs behind them (named ayj-<Ayatori Job uid>; the cancelled one is deleted):"
  kube get -n ci jobs.batch -o wide
  if [ "$node" = real ]; then
    echo
    echo "what k8s-succeeds printed on node 127.0.0.1 (kubectl logs through the real kubelet):"
    kube logs -n ci "job.batch/ayj-$uid" | sed 's/^/  /'
  fi
  cat "$DEMO/kube.env" >"$DEMO/env.sh"
  echo
  echo "demo is up. Try:  source $DEMO/env.sh && kubectl get ajob -n ci"
}

# osb_job NAME COMMAND: an OpenSandbox Job in namespace ci running `sh -c COMMAND` (COMMAND goes
# into a single-quoted YAML string: no single quotes in it).
osb_job() {
  kube apply -f - >/dev/null <<EOF
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: Job
metadata: {name: $1, namespace: ci}
spec:
  jobClassName: opensandbox
  task:
    image: ayatori-test/workload:1
    command: ["/bin/sh", "-c", '$2']
EOF
  echo "created ajob/$1"
}

# osb_show NAME: the Job's Succeeded condition, result and references.
osb_show() {
  kube get -n ci "ajob/$1" -o jsonpath='{.metadata.name}: {range .status.conditions[?(@.type=="Succeeded")]}Succeeded={.status} reason={.reason} message="{.message}"{end} exitCode={.status.result.exitCode}{"\n"}  references: {.status.execution.references}{"\n"}'
}

# osb_output NAME: what the Job's command printed, read from its sandbox's execd.
osb_output() {
  local sandbox command endpoint
  sandbox=$(kube get -n ci "ajob/$1" -o jsonpath='{.status.execution.references[?(@.type=="Sandbox")].id}')
  command=$(kube get -n ci "ajob/$1" -o jsonpath='{.status.execution.references[?(@.type=="Command")].id}')
  endpoint=$(curl -sf -H "OPEN-SANDBOX-API-KEY: $AYATORI_OSB_API_KEY" \
    "http://$AYATORI_OSB_DOMAIN/v1/sandboxes/$sandbox/endpoints/44772" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["endpoint"])')
  curl -sf "http://$endpoint/command/$command/logs?cursor=0"
}

# osb_finish NAME: deletes the Job and waits until its sandbox is gone (host networking: the next
# Job's sandbox may only start then).
osb_finish() {
  kube delete -n ci "ajob/$1" --wait=true >/dev/null
  for _ in $(seq 300); do
    [ -z "$(docker ps -q --filter label=opensandbox.io/id)" ] && return 0
    sleep 0.1
  done
  die "the sandbox of $1 was not removed"
}

up_opensandbox() {
  TOTAL=11
  step "Debian packages (hack/install-deps.sh installs the missing ones)"
  "$ROOT/hack/install-deps.sh"

  step "control-plane binaries etcd, kube-apiserver and kubectl (Go)"
  start_control_plane_build api

  step "building ayatori-controller, kubectl-ayatori and the execd stand-in of the sandboxes"
  build_binaries demo-binaries execd_standin

  step "waiting for the control-plane binaries"
  wait_control_plane_build

  step "Kubernetes control plane"
  use_cluster api

  step "dockerd and opensandbox-server 1.1.1 (its venv is built once per machine)"
  "$ROOT/hack/dockerd.sh" up
  # shellcheck disable=SC1091
  source "$AYATORI_DOCKERD_DIR/env.sh"
  # A second up reuses the running server: a new one (opensandbox.sh up starts afresh, on a new
  # port) would strand the Jobs of the first, whose class snapshot names the old endpoint, and
  # their deletion below would wait for it forever.
  if [ -f "$AYATORI_OPENSANDBOX_DIR/env.sh" ] &&
    (source "$AYATORI_OPENSANDBOX_DIR/env.sh" &&
      curl -sf --max-time 2 "http://$AYATORI_OSB_DOMAIN/health" >/dev/null); then
    echo "reusing the running opensandbox-server ($AYATORI_OPENSANDBOX_DIR)"
  else
    AYATORI_EXECD_STANDIN=$BUILD/test/opensandbox/execd_standin "$ROOT/hack/opensandbox/opensandbox.sh" up
  fi
  # shellcheck disable=SC1091
  source "$AYATORI_OPENSANDBOX_DIR/env.sh"

  step "installing the CRDs, the API key Secret and the opensandbox JobClass"
  kube apply -f "$ROOT/config/crd/" >/dev/null
  KUBECTL=$KUBECTL "$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"  # Established, served, admitted
  kube create namespace ayatori-system --dry-run=client -o yaml | kube apply -f - >/dev/null
  kube create namespace ci --dry-run=client -o yaml | kube apply -f - >/dev/null
  kube -n ayatori-system create secret generic opensandbox-api-key \
    --from-literal=api-key="$AYATORI_OSB_API_KEY" --dry-run=client -o yaml | kube apply -f - >/dev/null
  kube apply -f - <<EOF
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: OpenSandboxExecutionParameters
metadata: {name: demo}
spec:
  endpoint: http://$AYATORI_OSB_DOMAIN/v1
  insecure: true   # plain HTTP: the demo's server listens on 127.0.0.1 only
  apiKeySecretRef: {namespace: ayatori-system, name: opensandbox-api-key, key: api-key}
  pollIntervalSeconds: 1
  extraMetadata: {example.com/demo: opensandbox}
---
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: JobClass
metadata: {name: opensandbox}
spec:
  controllerName: execution.ayatori.ddupan.top/opensandbox
  parametersRef: {group: execution.ayatori.ddupan.top, kind: OpenSandboxExecutionParameters, name: demo}
  resources:
    defaults:
      requests: {cpu: 500m, memory: 256Mi}
      limits: {cpu: 500m, memory: 256Mi}
EOF
  apply_policies

  step "starting ayatori-controller"
  start_controller

  step "a Job that succeeds, with its output"
  kube delete -n ci ajob/osb-succeeds ajob/osb-fails ajob/osb-cancelled --ignore-not-found \
    --wait=true --timeout=120s >/dev/null
  osb_job osb-succeeds 'echo hello from $AYATORI_JOB_NAME in an OpenSandbox sandbox; uname -s'
  kube wait -n ci --for=condition=Succeeded --timeout=120s ajob/osb-succeeds >/dev/null
  osb_show osb-succeeds
  echo "  output:"
  osb_output osb-succeeds | sed 's/^/    /'
  osb_finish osb-succeeds

  step "a Job that exits 3"
  osb_job osb-fails 'echo about to fail >&2; exit 3'
  kube wait -n ci --for=condition=Succeeded=False --timeout=120s ajob/osb-fails >/dev/null
  osb_show osb-fails
  osb_finish osb-fails

  step "a Job cancelled while it runs"
  osb_job osb-cancelled 'sleep 3600'
  kube wait -n ci --for=jsonpath='{.status.startTime}' --timeout=120s ajob/osb-cancelled >/dev/null
  kube patch -n ci ajob/osb-cancelled --type=merge -p '{"spec":{"desiredState":"Cancelled"}}' >/dev/null
  kube wait -n ci --for=condition=Succeeded=False --timeout=120s ajob/osb-cancelled >/dev/null
  osb_show osb-cancelled
  echo "  sandboxes left: $(docker ps -q --filter label=opensandbox.io/id | wc -l)"
  cat "$DEMO/kube.env" >"$DEMO/env.sh"
  echo
  echo "demo is up. Try:  source $DEMO/env.sh && kubectl get ajob -n ci"
}

# The network namespace of a demo that serves the Job log API (make demo, make demo-install): the
# log API's Endpoints may not be a loopback address, so the controller serves it from a namespace
# of its own, on the inner end of a veth pair with TEST-NET-1 addresses (RFC 5737; above the range
# the e2e tests use, 192.0.2.130-199, and the real node's pods, 192.0.2.200-250). One per stack, so that the two can run side by side.
NETNS=
case ${1:-} in
  *install)
    NETNS=ayatori-demo-install VETH=aydemo
    NETNS_HOST_IP=192.0.2.252 NETNS_INNER_IP=192.0.2.253
    ;;
  up | down)
    NETNS=ayatori-demo VETH=aydemo0
    NETNS_HOST_IP=192.0.2.251 NETNS_INNER_IP=192.0.2.254
    ;;
esac
LOGS_API_PORT=8443

make_netns() {
  if ip netns list | grep -qw "$NETNS"; then
    echo "network namespace $NETNS exists"
    return
  fi
  ip netns add "$NETNS"
  ip link add "$VETH-host" type veth peer name "$VETH-inner"
  ip link set "$VETH-inner" netns "$NETNS"
  ip addr add "$NETNS_HOST_IP/32" peer "$NETNS_INNER_IP/32" dev "$VETH-host"
  ip link set "$VETH-host" up
  ip -n "$NETNS" addr add "$NETNS_INNER_IP/32" peer "$NETNS_HOST_IP/32" dev "$VETH-inner"
  ip -n "$NETNS" link set "$VETH-inner" up
  ip -n "$NETNS" link set lo up
  echo "network namespace $NETNS: $NETNS_INNER_IP inside, $NETNS_HOST_IP on the host (veth pair)"
}

# The Job log API in a demo, the pieces make demo and make demo-install share (the APIService,
# Service and RBAC of config/logs-api are applied before: by install.yaml, or by up):
#   logs_api_cert      the serving certificate: the Secret the Deployment mounts and the
#                      APIService's caBundle (the aggregator verifies the controller;
#                      docs/install.md "Job logs")
#   logs_api_network   the network namespace, the relays to kube-apiserver and the Service's
#                      endpoint; sets LAUNCH and LOGS_API_FLAGS for start_controller
#   wait_logs_api      until the aggregator reports the APIService Available
logs_api_cert() {
  KUBECTL=$KUBECTL "$ROOT/hack/logs-api-cert.sh" --apply "$DEMO/logs-api-pki" 2>&1 | sed 's/^/  /'
}

LOGS_API_FLAGS=()
logs_api_network() {
  make_netns
  local apiport=${TESTENV_API##*:}
  RELAY_ARGS=("$NETNS_HOST_IP" "$apiport" 127.0.0.1 "$apiport")
  start_relay relay-host
  RELAY_ARGS=(127.0.0.1 "$apiport" "$NETNS_HOST_IP" "$apiport")
  start_relay relay-netns ip netns exec "$NETNS"
  # The Service of config/logs-api selects the Deployment's pods; with none, its endpoint is the
  # controller in the namespace (kube-apiserver refuses loopback endpoints).
  kube apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Endpoints
metadata: {name: ayatori-logs-api, namespace: ayatori-system}
subsets: [{addresses: [{ip: $NETNS_INNER_IP}], ports: [{name: https, port: $LOGS_API_PORT}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ayatori-logs-api-demo
  namespace: ayatori-system
  labels: {kubernetes.io/service-name: ayatori-logs-api}
addressType: IPv4
endpoints: [{addresses: ["$NETNS_INNER_IP"], conditions: {ready: true}}]
ports: [{name: https, port: $LOGS_API_PORT, protocol: TCP}]
EOF
  LAUNCH=(ip netns exec "$NETNS")
  LOGS_API_FLAGS=(--logs-api-bind="$NETNS_INNER_IP:$LOGS_API_PORT"
    --logs-api-tls-cert-file="$DEMO/logs-api-pki/tls.crt"
    --logs-api-tls-key-file="$DEMO/logs-api-pki/tls.key")
}

wait_logs_api() {
  kube wait --for=condition=Available --timeout=60s \
    apiservice/v1alpha1.logs.execution.ayatori.ddupan.top >/dev/null
  echo "APIService v1alpha1.logs.execution.ayatori.ddupan.top is Available"
}

# start_relay NAME [LAUNCH...]: a background hack/tcp_relay.py with the words of RELAY_ARGS,
# started by LAUNCH (e.g. ip netns exec NAME); its process group id goes to $DEMO/NAME.pid.
RELAY_ARGS=()
start_relay() {
  local name=$1
  shift
  if [ -f "$DEMO/$name.pid" ]; then
    kill -TERM -- "-$(cat "$DEMO/$name.pid")" 2>/dev/null || true  # the one of an earlier up
  fi
  setsid nohup "$@" python3 "$ROOT/hack/tcp_relay.py" "${RELAY_ARGS[@]}" \
    >"$DEMO/$name.log" 2>&1 </dev/null &
  echo $! >"$DEMO/$name.pid"
  # Listening before anything connects through it (the controller, started next, exits when its
  # first request is refused): tcp_relay.py prints "tcp_relay: LISTEN -> TARGET" once it listens.
  local i
  for i in $(seq 100); do
    grep -q '^tcp_relay: .* -> ' "$DEMO/$name.log" 2>/dev/null && return 0
    kill -0 "$(cat "$DEMO/$name.pid")" 2>/dev/null || { cat "$DEMO/$name.log" >&2; die "relay $name exited"; }
    sleep 0.1
  done
  die "relay $name did not listen within 10 s (log $DEMO/$name.log)"
}

# A kubeconfig for the controller with its ServiceAccount's token (TokenRequest), as a pod of the
# Deployment would have it mounted.
controller_kubeconfig() {
  local token ca
  token=$(kube create token ayatori-controller -n ayatori-system --duration=24h)
  ca=$(base64 -w0 "$TESTENV_CA")
  cat >"$DEMO/controller.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: demo, cluster: {server: "$TESTENV_API", certificate-authority-data: $ca}}]
users: [{name: ayatori-controller, user: {token: $token}}]
contexts: [{name: demo, context: {cluster: demo, user: ayatori-controller, namespace: ayatori-system}}]
current-context: demo
EOF
  chmod 600 "$DEMO/controller.kubeconfig"
}

# The Job author: the control plane's certificate user testenv-user (group testenv-users), with
# no access to Docker or to the controller's credentials.
user_kubeconfig() {
  local ca cert key
  ca=$(base64 -w0 "$TESTENV_CA")
  cert=$(base64 -w0 "$TESTENV_USER_CERT")
  key=$(base64 -w0 "$TESTENV_USER_KEY")
  cat >"$DEMO/user.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: demo, cluster: {server: "$TESTENV_API", certificate-authority-data: $ca}}]
users: [{name: testenv-user, user: {client-certificate-data: $cert, client-key-data: $key}}]
contexts: [{name: demo, context: {cluster: demo, user: testenv-user, namespace: team-a}}]
current-context: demo
EOF
  chmod 600 "$DEMO/user.kubeconfig"
}

as_user() { KUBECONFIG=$DEMO/user.kubeconfig "$@"; }

up_install() {
  TOTAL=12
  prepare_binaries

  step "Kubernetes control plane (etcd, kube-apiserver with API aggregation) and dockerd"
  unset KUBECONFIG
  use_cluster api
  "$ROOT/hack/dockerd.sh" up
  # shellcheck disable=SC1091
  source "$AYATORI_DOCKERD_DIR/env.sh"
  "$ROOT/hack/images/build.sh"

  step "the controller image (what make image does: hack/image.sh, no base image pulled)"
  AYATORI_BUILD_DIR=$BUILD "$ROOT/hack/image.sh" build
  docker image ls --format '  {{.Repository}}:{{.Tag}}  {{.Size}}' ayatori/controller

  step "dist/install.yaml (what make install-manifests writes), applied by the administrator"
  # --kube-version cluster: on a control plane older than 1.36 (KUBE_VERSION=1.34 make
  # demo-install) the features it does not serve are left out, with a message, as an administrator
  # of such a cluster would render them (docs/install.md, "Supported Kubernetes versions").
  KUBECTL=$KUBECTL "$ROOT/hack/install-manifests.sh" --kube-version cluster "$DEMO/install.yaml"
  kube apply --server-side -f "$DEMO/install.yaml" | sed 's/^/  /'
  KUBECTL=$KUBECTL "$ROOT/hack/wait-crds.sh" -f "$ROOT/config/crd/"  # Established, served, admitted
  kube apply -f "$ROOT/config/samples/dockerexecutionparameters.yaml" \
    -f "$ROOT/config/samples/jobclass-docker.yaml" | sed 's/^/  /'
  logs_api_cert
  # No kubelet runs here, so no pod of the Deployment starts: the controller runs beside the
  # cluster instead, with the Deployment's flags and its ServiceAccount's token (next step).
  echo "  (the Deployment's pods cannot start here: this control plane has no node)"

  step "the controller as ServiceAccount ayatori-system/ayatori-controller, serving the Job log API"
  logs_api_network
  controller_kubeconfig
  KUBECONFIG=$DEMO/controller.kubeconfig start_controller --leader-elect=true \
    --namespace=ayatori-system --leader-election-namespace=ayatori-system --workers=4 \
    --docker-endpoint="$DOCKER_HOST" "${LOGS_API_FLAGS[@]}"
  wait_logs_api

  step "an ordinary user (testenv-user) may run Jobs and read their logs in namespace team-a"
  kube create namespace team-a --dry-run=client -o yaml | kube apply -f - >/dev/null
  kube create role job-author -n team-a --verb=get,list,watch,create,delete,patch,update \
    --resource=jobs.execution.ayatori.ddupan.top --dry-run=client -o yaml | kube apply -f - >/dev/null
  kube create role event-reader -n team-a --verb=get,list,watch --resource=events \
    --dry-run=client -o yaml | kube apply -f - >/dev/null
  local role
  for role in job-author event-reader; do
    kube create rolebinding "$role" -n team-a --role="$role" --user=testenv-user \
      --dry-run=client -o yaml | kube apply -f - >/dev/null
  done
  kube create rolebinding job-log-reader -n team-a --clusterrole=ayatori-job-log-reader \
    --user=testenv-user --dry-run=client -o yaml | kube apply -f - >/dev/null
  user_kubeconfig
  echo "kubeconfig $DEMO/user.kubeconfig (certificate user testenv-user; no DOCKER_HOST)"
  as_user "$KUBECTL" auth can-i --list -n team-a | grep -E '^Resources|ayatori' | sed 's/^/  /'

  step "as that user: kubectl ayatori run --wait, logs, logs -f, get"
  as_user "$KUBECTL" delete -n team-a ajob/hello ajob/counter --ignore-not-found --wait=true >/dev/null
  (
    unset DOCKER_HOST
    export KUBECONFIG=$DEMO/user.kubeconfig
    set -x
    "$PLUGIN" run hello -n team-a --image ayatori.local/busybox:1 --wait -- echo hello from team-a
    "$PLUGIN" logs hello -n team-a
    "$PLUGIN" run counter -n team-a --image ayatori.local/busybox:1 --command -- \
      /bin/sh -c 'for i in 1 2 3; do echo count $i; sleep 1; done'
    "$PLUGIN" logs -f counter -n team-a
    "$PLUGIN" get -n team-a
  )

  step "as that user: setting the confirm-backend-lost annotation is refused (admission policy)"
  local out rc=0
  out=$(as_user "$KUBECTL" annotate -n team-a ajob/hello --overwrite \
    'execution.ayatori.ddupan.top/confirm-backend-lost=me: host gone' 2>&1) || rc=$?
  echo "  $out"
  [ "$rc" -ne 0 ] || die "the user was allowed to confirm a lost backend"
  echo "  (members of the group ayatori:backend-lost-confirmers or holders of the ClusterRole"
  echo "   ayatori-backend-lost-confirmer may: docs/operations.md, \"A Job is ResultUnknown\")"

  step "as that user: a Job that reads a Secret the user may not get is refused (admission policy)"
  # Issue 26: the administrator's Secret admin-only in team-a; the user may create Jobs there but
  # not get Secrets. The policy ayatori-job-references of install.yaml refuses the Job at creation.
  kube create secret generic admin-only -n team-a --from-literal=pw=admin-secret-value \
    --dry-run=client -o yaml | kube apply -f - >/dev/null
  as_user "$KUBECTL" delete -n team-a ajob/steal --ignore-not-found --wait=true >/dev/null
  rc=0
  out=$(as_user "$KUBECTL" create -f - 2>&1 <<'EOF'
apiVersion: execution.ayatori.ddupan.top/v1alpha1
kind: Job
metadata: {name: steal, namespace: team-a}
spec:
  task:
    image: ayatori.local/busybox:1
    command: [sh, -c, 'echo stolen=$PW']
    env:
    - name: PW
      valueFrom: {secretKeyRef: {name: admin-only, key: pw}}
EOF
  ) || rc=$?
  echo "  $out"
  [ "$rc" -ne 0 ] || die "the user created a Job that reads the Secret admin-only, which the user may not get"
  echo "  (a Job may reference only the Secrets and ConfigMaps its author may get: docs/api.md,"
  echo "   \"Admission policy\")"

  if grep -q '"code":403' "$DEMO/controller.log"; then
    grep '"code":403' "$DEMO/controller.log" | head -n 5 >&2
    die "the controller was denied a request with its ServiceAccount's RBAC"
  fi
  {
    cat "$DEMO/kube.env" "$AYATORI_DOCKERD_DIR/env.sh"
    echo "export PATH=$(dirname "$PLUGIN"):\$PATH"
  } >"$DEMO/env.sh"
  echo
  echo "demo-install is up after ${SECONDS}s. Try, as the Job author:"
  echo "  source $DEMO/env.sh && KUBECONFIG=$DEMO/user.kubeconfig kubectl ayatori get -n team-a"
}

# Stops the relays of logs_api_network and deletes its network namespace.
down_netns() {
  local name
  for name in relay-host relay-netns relay-kueue; do
    if [ -f "$DEMO/$name.pid" ]; then
      kill -TERM -- "-$(cat "$DEMO/$name.pid")" 2>/dev/null || true
    fi
  done
  if ip netns list | grep -qw "$NETNS"; then
    ip netns delete "$NETNS"  # the veth pair goes with it
    echo "network namespace $NETNS deleted"
  fi
}

down() {
  if [ -f "$DEMO/controller.pid" ]; then
    p=$(cat "$DEMO/controller.pid")
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    rm -f "$DEMO/controller.pid"
    echo "controller stopped"
  fi
  [ -z "$NETNS" ] || down_netns
  [ "${1:-}" != opensandbox ] || "$ROOT/hack/opensandbox/opensandbox.sh" down || true
  [ "${1:-}" = kubernetes ] || "$ROOT/hack/dockerd.sh" down || true
  if [ -f "$DEMO/own-cluster" ]; then
    if [ -d "$TESTENV_DIR/kueue" ]; then
      "$ROOT/hack/testenv/testenv.sh" kueue-down  # KUEUE=1
      echo "kueue stopped"
    fi
    "$ROOT/hack/testenv/testenv.sh" down
    echo "control plane stopped"
  fi
  rm -rf "$DEMO"
}

case ${1:-} in
  up) up ;;
  down) down ;;
  up-kubernetes) up_kubernetes ;;
  down-kubernetes) down kubernetes ;;
  up-opensandbox) up_opensandbox ;;
  down-opensandbox) down opensandbox ;;
  up-install) up_install ;;
  down-install) down install ;;
  *) echo "usage: demo.sh up|down|up-kubernetes|down-kubernetes|up-opensandbox|down-opensandbox|up-install|down-install" >&2; exit 2 ;;
esac
