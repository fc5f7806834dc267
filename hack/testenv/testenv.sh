#!/usr/bin/env bash
# The real test control plane: etcd + kube-apiserver (tier "api"), plus kube-controller-manager,
# kube-scheduler and kwok (tier "e2e"), all built from pinned versions through the Go module proxy.
# Tier "node" only builds: the e2e tier's binaries and the kubelet of the real node that
# realnode.sh joins to a running e2e tier.
#
#   testenv.sh build [api|e2e|node]  build (or find in the cache) the binaries of a tier
#   testenv.sh up [api|e2e]      start the tier on 127.0.0.1, write a kubeconfig and env.sh
#   testenv.sh env               print the env.sh of the running control plane
#   testenv.sh down              stop only the processes this script started, by pid
#   testenv.sh stop-apiserver [--kill]     stop only kube-apiserver (TERM; --kill: SIGKILL, a crash)
#   testenv.sh start-apiserver             start it again: same port, certificates, tokens, etcd
#   testenv.sh restart-apiserver [--kill]  both: an outage of the API alone (etcd and the e2e
#                                          components keep running and reconnect)
#   testenv.sh logs              tail the component logs
#   testenv.sh bindir            print the cache directory of the binaries
#   testenv.sh build-helm        build (or find in the cache) the Helm v4 CLI (charts/ayatori's tests)
#   testenv.sh helm              print the path of the cached helm binary (built or not)
#   testenv.sh build-kueue       build (or find in the cache) Kueue, pinned in hack/testenv/kueue/
#   testenv.sh kueue-up          install Kueue's CRDs and webhooks and start it beside the running
#                                control plane (either tier); its pid in $D/pids/kueue
#                                (TESTENV_KUEUE_QPS / TESTENV_KUEUE_BURST: its client limits,
#                                default Kueue's own 20 / 30)
#   testenv.sh kueue-down        stop it by pid and remove its webhooks, CRDs and objects
#   testenv.sh kueue-kill        SIGKILL only the Kueue manager (a crash): its CRDs, webhooks and
#                                objects stay, and with the webhooks unanswered Workload writes fail
#   testenv.sh kueue-start       start the manager again after kueue-kill (same ports, config)
#
# It is set up for API aggregation (request-header CA front-proxy-ca.crt, proxy client
# certificate front-proxy-client, --enable-aggregator-routing): APIServices reach their Service's
# endpoints directly (TESTENV_FRONT_PROXY_CA in env.sh).
# kube-apiserver keeps an audit log (JSON lines in $D/logs/audit.log, TESTENV_AUDIT_LOG in env.sh)
# of the create and delete requests for batch/v1 Jobs: a record that survives restarts of the
# apiserver, from which the chaos run (test/chaos/) counts the executions made per Ayatori Job.
# It also records every request of the ServiceAccounts of the namespace ayatori-system (the
# controller installed from dist/install.yaml), with its response code: test/install/ reads it to
# prove that the shipped RBAC denies none of them.
#
# The admission plugin OwnerReferencesPermissionEnforcement is on, as in clusters that enforce
# it: an ownerReference with blockOwnerDeletion needs "update" on the owner's finalizers.
#
# Binaries live outside the repository in ~/.cache/ayatori/testenv/<key>/bin, key = hash of the
# tools modules, the Go version and the link flags: built once per machine, reused by every clone.
set -euo pipefail

T=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
D=${TESTENV_DIR:-/tmp/ayatori-testenv-$(id -u)}
PKI=$D/pki
KC=$D/kubeconfig
ETCD_DATA=${TESTENV_ETCD_DIR:-/dev/shm/ayatori-etcd-$(printf %s "$D" | sha256sum | cut -c1-12)}
# KUBE_VERSION (MAJOR.MINOR) picks the Kubernetes of the control plane: the default is the pin
# of k8s/go.mod; another supported version has a module of its own in k8s-MAJOR.MINOR/ (the
# versions docs/install.md's table lists as tested), built into a cache directory of its own.
KMOD=$T/k8s
if [ -n "${KUBE_VERSION:-}" ] && [ -d "$T/k8s-$KUBE_VERSION" ]; then
  KMOD=$T/k8s-$KUBE_VERSION
elif [ -n "${KUBE_VERSION:-}" ] &&
  [ "$(awk '$1 == "k8s.io/kubernetes" {print $2}' "$T/k8s/go.mod" | cut -d. -f1,2)" != "v$KUBE_VERSION" ]; then
  printf 'testenv: KUBE_VERSION=%s is not a tested version (hack/testenv/k8s*/go.mod: %s)\n' "$KUBE_VERSION" \
    "$(cd "$T" && ls -d k8s k8s-* | tr '\n' ' ')" >&2
  exit 2
fi
K8S=$(awk '$1 == "k8s.io/kubernetes" {print $2}' "$KMOD/go.mod")
K8S_MINOR=$(echo "$K8S" | cut -d. -f2)
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-modcacherw

LDF="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDF+=" -X $p.gitVersion=$K8S -X $p.gitMajor=1 -X $p.gitMinor=$K8S_MINOR -X $p.gitTreeState=clean"
  LDF+=" -X $p.buildDate=2026-01-01T00:00:00Z"
done

log() { printf 'testenv: %s\n' "$*" >&2; }
DAEMON_DIR=$D
# shellcheck source=hack/lib/daemons.sh
source "$T/../lib/daemons.sh"

bindir() {
  if [ -n "${TESTENV_BIN:-}" ]; then echo "$TESTENV_BIN"; return; fi
  local key
  # The control plane's own modules only: helm (below) has its own cache, so that a new Helm
  # version does not rebuild kube-apiserver.
  key=$( (cat "$T/etcd/go.mod" "$KMOD/go.mod" "$T/kwok/go.mod" "$T/etcd/go.sum" "$KMOD/go.sum" \
    "$T/kwok/go.sum"; go version; echo "$LDF") |
    sha256sum | cut -c1-16)
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/ayatori/testenv/$key/bin"
}

# The Helm CLI, pinned in hack/testenv/helm/go.mod, in a cache of its own keyed by that module
# and the Go version: ~/.cache/ayatori/helm/<key>/bin/helm.
# `helm version` says the pinned version (Helm's Makefile sets it the same way).
helm_ldflags() {
  local v
  v=$(awk '$1 == "helm.sh/helm/v4" {print $2}' "$T/helm/go.mod")
  echo "-s -w -X helm.sh/helm/v4/internal/version.version=$v"
}

helm_path() {
  if [ -n "${TESTENV_HELM:-}" ]; then echo "$TESTENV_HELM"; return; fi
  local key
  key=$( (cat "$T/helm/go.mod" "$T/helm/go.sum"; go version; echo "$(helm_ldflags)") |
    sha256sum | cut -c1-16)
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/ayatori/helm/$key/bin/helm"
}

build_helm() {
  local helm
  helm=$(helm_path)
  if [ ! -x "$helm" ]; then
    command -v go >/dev/null || { log "go is not installed; it is needed to build helm"; exit 1; }
    log "building helm into $(dirname "$helm") (once per machine: a few CPU-minutes)"
    mkdir -p "$(dirname "$helm")"
    # Built beside its final name and renamed: an interrupted build leaves no half binary.
    (cd "$T/helm" && go build -trimpath -ldflags "$(helm_ldflags)" -o "$helm.partial" helm.sh/helm/v4/cmd/helm)
    mv "$helm.partial" "$helm"
  fi
  log "helm ready: $helm"
}

# Kueue (docs/development.md, "Kueue in the test environment"), pinned in hack/testenv/kueue/go.mod,
# in the control plane's cache directory; its mark holds the hash of that module and the link flags,
# so a new pin builds again. Link flags as Kueue's Makefile sets them (its version package).
kueue_version() { awk '$1 == "sigs.k8s.io/kueue" {print $2}' "$T/kueue/go.mod"; }

kueue_ldflags() {
  local v
  v=$(kueue_version)
  echo "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$v -X sigs.k8s.io/kueue/pkg/version.BuildDate=2026-01-01T00:00:00Z"
}

kueue_key() { (cat "$T/kueue/go.mod" "$T/kueue/go.sum"; go version; kueue_ldflags) | sha256sum | cut -c1-16; }

build_kueue() {
  local bin key
  bin=$(bindir)
  key=$(kueue_key)
  if [ "$(cat "$bin/.kueue-complete" 2>/dev/null)" != "$key" ]; then
    command -v go >/dev/null || { log "go is not installed; it is needed to build kueue"; exit 1; }
    log "building kueue $(kueue_version) into $bin (once per machine: about 5 minutes on 2 cores)"
    mkdir -p "$bin"
    (cd "$T/kueue" && nice -n 19 go build -trimpath -ldflags "$(kueue_ldflags)" -o "$bin/kueue.partial" \
      sigs.k8s.io/kueue/cmd/kueue)
    mv "$bin/kueue.partial" "$bin/kueue"
    echo "$key" >"$bin/.kueue-complete"
  fi
  log "kueue ready: $bin/kueue"
}

# Each tier has a completeness mark written after its last binary, so an interrupted build is
# resumed rather than trusted.
build() {
  local tier=${1:-api} bin
  bin=$(bindir)
  mkdir -p "$bin"
  if [ ! -f "$bin/.api-complete" ]; then
    command -v go >/dev/null || { log "go is not installed; it is needed to build the control plane"; exit 1; }
    log "building etcd, kube-apiserver and kubectl into $bin (once per machine: about 8.5 CPU-minutes and 842 MB of Go modules)"
    (cd "$T/etcd" && go build -trimpath -o "$bin/etcd" go.etcd.io/etcd/server/v3)
    (cd "$KMOD" && go build -trimpath -ldflags "$LDF" -o "$bin/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl)
    touch "$bin/.api-complete"
  fi
  if [ "$tier" != api ] && [ ! -f "$bin/.e2e-complete" ]; then
    log "building kube-controller-manager, kube-scheduler and kwok into $bin"
    (cd "$KMOD" && go build -trimpath -ldflags "$LDF" -o "$bin/" \
      k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)
    (cd "$T/kwok" && go build -trimpath -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok)
    touch "$bin/.e2e-complete"
  fi
  # The real node's kubelet (hack/testenv/realnode.sh), from the same module as the control plane
  # so that its version is the apiserver's.
  if [ "$tier" = node ] && [ ! -f "$bin/.node-complete" ]; then
    log "building kubelet into $bin"
    (cd "$T/k8s" && go build -trimpath -ldflags "$LDF" -o "$bin/" k8s.io/kubernetes/cmd/kubelet)
    touch "$bin/.node-complete"
  fi
  log "binaries ready in $bin"
}

# wait_for NAME CMD...: CMD succeeds within 120 s, or the control plane stops (its files kept).
wait_for() {
  local n=$1
  shift
  wait_until "$n" 120 "$@" && return 0
  TESTENV_KEEP=1 down
  exit 1
}

# leaf NAME SUBJECT EXTENSIONS [CA]: a key and certificate signed by CA (default: ca).
leaf() {
  local ca=${4:-ca}
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr"
  printf '%b\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -days 3650 -extfile "$1.ext" -out "$1.crt"
}

certs() {
  mkdir -p "$PKI"
  (
    cd "$PKI"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj /CN=testenv-ca \
      -keyout ca.key -out ca.crt
    leaf apiserver /CN=kube-apiserver 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1\nextendedKeyUsage=serverAuth'
    leaf admin '/O=system:masters/CN=testenv-admin' 'extendedKeyUsage=clientAuth'
    leaf user '/O=testenv-users/CN=testenv-user' 'extendedKeyUsage=clientAuth'
    # kube-apiserver's identity towards kubelets (pods/log, exec): the real node's kubelet
    # (realnode.sh) authorizes it by SubjectAccessReview, as a member of system:masters.
    leaf apiserver-kubelet-client '/O=system:masters/CN=kube-apiserver-kubelet-client' 'extendedKeyUsage=clientAuth'
    # API aggregation: the front proxy's own CA (a separate one, as kubeadm makes it, so that
    # no ordinary client certificate can pass for the proxy) and its client certificate.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
      -subj /CN=testenv-front-proxy-ca -keyout front-proxy-ca.key -out front-proxy-ca.crt
    leaf front-proxy-client /CN=front-proxy-client 'extendedKeyUsage=clientAuth' front-proxy-ca
    openssl genrsa -out sa.key 2048
    openssl rsa -in sa.key -pubout -out sa.pub
  ) 2>/dev/null
  TOKEN=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
  USER_TOKEN=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
  {
    echo "$TOKEN,testenv-admin,admin,\"system:masters\""
    echo "$USER_TOKEN,testenv-token-user,token-user,\"testenv-users\""
  } >"$PKI/tokens.csv"
}

kubeconfig() {
  local b="base64 -w0"
  cat >"$KC" <<EOF
apiVersion: v1
kind: Config
current-context: testenv
clusters:
- name: testenv
  cluster:
    server: https://127.0.0.1:$AP
    certificate-authority-data: $($b "$PKI/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $($b "$PKI/admin.crt")
    client-key-data: $($b "$PKI/admin.key")
- name: admin-token
  user:
    token: $TOKEN
contexts:
- name: testenv
  context: {cluster: testenv, user: admin}
- name: testenv-token
  context: {cluster: testenv, user: admin-token}
EOF
  chmod 600 "$KC"
}

# What the audit log records: see the header.
audit_policy() {
  cat >"$D/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, delete]
  resources:
  - group: batch
    resources: [jobs]
- level: Metadata
  userGroups: ["system:serviceaccounts:ayatori-system"]
- level: None
EOF
}

# kube-apiserver on the ports in $D/ports (written by `up`): a restart keeps its address.
# The e2e tier admits pods as a cluster does: the ServiceAccount admission plugin refuses a pod
# whose service account does not exist (kube-controller-manager's serviceaccount-controller makes
# each namespace's "default"). The api tier runs no controllers, so it keeps the plugin off.
start_apiserver() {
  local bin disabled=ServiceAccount,TaintNodesByCondition extra=()
  bin=$(bindir)
  # TESTENV_APISERVER_FLAGS: more flags, space-separated (hack/bench-scale.sh stores JSON).
  read -ra extra <<<"${TESTENV_APISERVER_FLAGS:-}"
  # shellcheck disable=SC1091
  source "$D/ports"
  [ "${TIER:-api}" = e2e ] && disabled=TaintNodesByCondition
  # From 1.37 the endpoint reconciler (the Endpoints of the Service "kubernetes") refuses a
  # loopback --advertise-address, and the command fails; nothing here reads those Endpoints.
  [ "$K8S_MINOR" -ge 37 ] && extra=(--endpoint-reconciler-type=none "${extra[@]}")
  log "starting kube-apiserver on https://127.0.0.1:$AP"
  start kube-apiserver "$bin/kube-apiserver" --etcd-servers="http://127.0.0.1:$EP" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$AP" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --token-auth-file="$PKI/tokens.csv" \
    --service-account-issuer="https://127.0.0.1:$AP" --service-account-key-file="$PKI/sa.pub" \
    --service-account-signing-key-file="$PKI/sa.key" --service-cluster-ip-range=10.96.0.0/24 \
    --authorization-mode=Node,RBAC --allow-privileged=true \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key" --kubelet-certificate-authority="$PKI/ca.crt" \
    --disable-admission-plugins="$disabled" \
    --enable-admission-plugins=OwnerReferencesPermissionEnforcement \
    --enable-priority-and-fairness=false --profiling=false --v=1 \
    --audit-policy-file="$D/audit-policy.yaml" --audit-log-path="$D/logs/audit.log" \
    --audit-log-format=json \
    --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" \
    --requestheader-allowed-names=front-proxy-client --requestheader-username-headers=X-Remote-User \
    --requestheader-group-headers=X-Remote-Group --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$PKI/front-proxy-client.crt" \
    --proxy-client-key-file="$PKI/front-proxy-client.key" --enable-aggregator-routing=true \
    "${extra[@]}"
}

apiserver_ready() { curl -sf --cacert "$PKI/ca.crt" "https://127.0.0.1:$AP/readyz"; }

stop_apiserver() {
  [ -f "$D/ports" ] || { log "no control plane in $D (run: testenv.sh up)"; exit 1; }
  log "stopping kube-apiserver${1:+ ($1)}"
  stop_pid kube-apiserver "${1:-}"
}

# Unlike `up`, a failure leaves the rest of the control plane running.
resume_apiserver() {
  [ -f "$D/ports" ] || { log "no control plane in $D (run: testenv.sh up)"; exit 1; }
  if [ -f "$D/pids/kube-apiserver" ] && kill -0 "$(cat "$D/pids/kube-apiserver")" 2>/dev/null; then
    log "kube-apiserver is running already"
    return 0
  fi
  start_apiserver
  wait_until kube-apiserver 120 apiserver_ready || exit 1
  log "kube-apiserver is ready"
}

up() {
  local tier=${1:-api} bin
  down
  build "$tier"
  bin=$(bindir)
  mkdir -p "$D"/{logs,pids}
  # Before any of this tier's connections opens: the OpenSandbox tests need execd's port free
  # (hack/opensandbox/opensandbox.sh, "EXECD_PORT").
  "$T/../opensandbox/opensandbox.sh" reserve-port
  certs
  EP=$(port); PP=$(port); AP=$(port)
  log "starting etcd on 127.0.0.1:$EP"
  # TESTENV_ETCD_FLAGS: more flags, space-separated (hack/bench-flood.sh raises the quota).
  local etcd_extra=()
  read -ra etcd_extra <<<"${TESTENV_ETCD_FLAGS:-}"
  start etcd "$bin/etcd" --name=t --data-dir="$ETCD_DATA" --listen-client-urls="http://127.0.0.1:$EP" \
    --advertise-client-urls="http://127.0.0.1:$EP" --listen-peer-urls="http://127.0.0.1:$PP" \
    --initial-advertise-peer-urls="http://127.0.0.1:$PP" --initial-cluster="t=http://127.0.0.1:$PP" \
    --unsafe-no-fsync=true --log-level=warn "${etcd_extra[@]}"
  wait_for etcd curl -sf "http://127.0.0.1:$EP/health"
  echo "EP=$EP AP=$AP TIER=$tier" >"$D/ports"
  audit_policy
  start_apiserver
  wait_for kube-apiserver apiserver_ready
  kubeconfig
  if [ "$tier" = e2e ]; then
    KP=$(port); SP=$(port)
    log "starting kube-controller-manager, kube-scheduler and kwok"
    start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig="$KC" \
      --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
      --controllers=job-controller,ttl-after-finished-controller,garbage-collector-controller,namespace-controller,serviceaccount-controller \
      --leader-elect=false --bind-address=127.0.0.1 --secure-port="$KP" --kube-api-qps=100 --kube-api-burst=200
    start kube-scheduler "$bin/kube-scheduler" --kubeconfig="$KC" --authentication-kubeconfig="$KC" \
      --authorization-kubeconfig="$KC" --leader-elect=false --bind-address=127.0.0.1 --secure-port="$SP"
    wait_for kube-controller-manager curl -sfk "https://127.0.0.1:$KP/healthz"
    wait_for kube-scheduler curl -sfk "https://127.0.0.1:$SP/healthz"
    # Only the fake nodes (node.yaml's annotation): the real node's kubelet (realnode.sh) owns its
    # node and pods.
    HOME=$D start kwok "$bin/kwok" --kubeconfig="$KC" \
      --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake --node-ip=127.0.0.1 \
      --cidr=10.244.0.0/16 --config="$T/kwok-stages.yaml"
    "$bin/kubectl" --kubeconfig="$KC" apply -f "$T/node.yaml" >/dev/null
    # kwok makes the node Ready through the testenv-node-ready Stage (kwok-stages.yaml); a Stage
    # that does not render shows up in kwok's log.
    if ! "$bin/kubectl" --kubeconfig="$KC" wait --for=condition=Ready node/testenv-node-0 \
      --timeout=60s >/dev/null; then
      log "node testenv-node-0 did not become Ready; last lines of kwok's log:"
      tail -n 40 "$D/logs/kwok.log" | tr -d '\000' >&2  # kwok pads some errors with NULs
      TESTENV_KEEP=1 down
      exit 1
    fi
  fi
  cat >"$D/env.sh" <<EOF
export KUBECONFIG=$KC
export TESTENV_TIER=$tier
export TESTENV_API=https://127.0.0.1:$AP
export TESTENV_ETCD=http://127.0.0.1:$EP
export TESTENV_CA=$PKI/ca.crt
export TESTENV_TOKEN=$TOKEN
export TESTENV_USER_TOKEN=$USER_TOKEN
export TESTENV_CERT=$PKI/admin.crt
export TESTENV_KEY=$PKI/admin.key
export TESTENV_USER_CERT=$PKI/user.crt
export TESTENV_USER_KEY=$PKI/user.key
export TESTENV_BIN=$bin
export TESTENV_AUDIT_LOG=$D/logs/audit.log
export TESTENV_FRONT_PROXY_CA=$PKI/front-proxy-ca.crt
export PATH=$bin:\$PATH
EOF
  log "up ($tier): source $D/env.sh"
}

down() {
  local n
  # The real node joined to this control plane, if any (its state lives under $D).
  [ ! -d "$D/realnode" ] || TESTENV_DIR=$D "$T/realnode.sh" down
  # Kueue (kueue-up) first: a client of the apiserver; its objects go with etcd's data.
  for n in kueue kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop_pid "$n"
  done
  [ -n "${TESTENV_KEEP:-}" ] || rm -rf "$D" "$ETCD_DATA"
}

# Kueue beside the running control plane (docs/development.md, "Kueue in the test environment"):
# its CRDs from the pinned module's source, its admission webhooks as URL webhooks to 127.0.0.1
# with a serving certificate of its own CA, and the manager in a chroot under $D/kueue/root. The chroot is needed because Kueue v0.17.0 loads the
# certificates of its metrics and visibility servers from fixed paths
# (/etc/kueue/metrics/certs/tls.*, /visibility/tls.*) when it does not manage certificates itself,
# and its own certificate management would name only a cluster Service. It runs as the control
# plane's admin (system:masters): the test environment checks what Kueue does, not its RBAC.
KQ=$D/kueue

kueue_crds() {
  local dir
  dir=$(cd "$T/kueue" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue 2>/dev/null || true)
  if [ -z "$dir" ] || [ ! -d "$dir/config/components/crd/bases" ]; then
    (cd "$T/kueue" && go mod download sigs.k8s.io/kueue)
    dir=$(cd "$T/kueue" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
  fi
  echo "$dir/config/components/crd/bases"
}

kueue_certs() {
  mkdir -p "$KQ/pki"
  (
    cd "$KQ/pki"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
      -subj /CN=testenv-kueue-ca -keyout kueue-ca.key -out kueue-ca.crt
    leaf serving /CN=kueue-webhook 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth' kueue-ca
  ) 2>/dev/null
}

# The chroot: the binary (a hard link into the cache, a copy across file systems), the kubeconfig
# (certificates inline), the configuration and the three certificate directories.
kueue_root() {
  local r=$KQ/root bin d
  bin=$(bindir)
  mkdir -p "$r/tmp" "$r/etc/kueue/metrics/certs" "$r/visibility" "$r/webhook-certs"
  ln -f "$bin/kueue" "$r/kueue" 2>/dev/null || cp "$bin/kueue" "$r/kueue"
  cp "$KC" "$r/kubeconfig"
  for d in etc/kueue/metrics/certs visibility webhook-certs; do
    cp "$KQ/pki/serving.crt" "$r/$d/tls.crt"
    cp "$KQ/pki/serving.key" "$r/$d/tls.key"
  done
  cat >"$r/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health: {healthProbeBindAddress: "127.0.0.1:$KUEUE_HEALTH_PORT"}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: $KUEUE_WEBHOOK_PORT, certDir: /webhook-certs}
leaderElection: {leaderElect: false}
clientConnection: {qps: ${TESTENV_KUEUE_QPS:-20}, burst: ${TESTENV_KUEUE_BURST:-30}}
internalCertManagement: {enable: false}
visibilityServer: {bindAddress: 127.0.0.1, bindPort: $KUEUE_VISIBILITY_PORT}
integrations:
  frameworks: [batch/job]
  externalFrameworks: [Job.v1alpha1.execution.ayatori.ddupan.top]
EOF
}

# One webhook of Kueue's config/components/webhook/manifests.yaml: NAME KIND RESOURCES OPERATIONS
# CA (base64). A name starting with "m" is a mutating one.
kueue_webhook_entry() {
  local verb=validate
  [ "${1:0:1}" = m ] && verb=mutate
  cat <<EOF
- name: $1.kb.io
  clientConfig:
    url: https://127.0.0.1:$KUEUE_WEBHOOK_PORT/$verb-kueue-x-k8s-io-v1beta2-$2
    caBundle: $5
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  rules:
  - apiGroups: [kueue.x-k8s.io]
    apiVersions: [v1beta2]
    operations: [$4]
    resources: [$3]
EOF
}

# Workload, ClusterQueue, Cohort and ResourceFlavor and none of the others of Kueue's manifests:
# those would intercept the Kubernetes backend's batch Jobs and pods.
kueue_webhooks() {
  local ca
  ca=$(base64 -w0 "$KQ/pki/kueue-ca.crt")
  {
    printf 'apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n'
    printf 'metadata: {name: testenv-kueue}\nwebhooks:\n'
    kueue_webhook_entry mworkload workload workloads CREATE "$ca"
    kueue_webhook_entry mclusterqueue clusterqueue clusterqueues CREATE "$ca"
    kueue_webhook_entry mresourceflavor resourceflavor resourceflavors CREATE "$ca"
    printf -- '---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n'
    printf 'metadata: {name: testenv-kueue}\nwebhooks:\n'
    kueue_webhook_entry vworkload workload 'workloads, workloads/status' 'CREATE, UPDATE' "$ca"
    kueue_webhook_entry vclusterqueue clusterqueue clusterqueues 'CREATE, UPDATE' "$ca"
    kueue_webhook_entry vcohort cohort cohorts 'CREATE, UPDATE' "$ca"
    kueue_webhook_entry vresourceflavor resourceflavor resourceflavors 'CREATE, UPDATE' "$ca"
  } >"$KQ/webhooks.yaml"
}

kueue_ready() { curl -sf "http://127.0.0.1:$KUEUE_HEALTH_PORT/readyz"; }

kueue_up() {
  local kubectl crds
  [ -f "$D/env.sh" ] || { log "no control plane in $D (run: testenv.sh up)"; exit 1; }
  kueue_down
  build_kueue
  kubectl="$(bindir)/kubectl --kubeconfig=$KC"
  crds=$(kueue_crds)
  mkdir -p "$KQ" "$D/logs" "$D/pids"
  KUEUE_HEALTH_PORT=$(port) KUEUE_WEBHOOK_PORT=$(port) KUEUE_VISIBILITY_PORT=$(port)
  echo "KUEUE_HEALTH_PORT=$KUEUE_HEALTH_PORT" >"$KQ/ports"  # for kueue-start
  # Server-side: the Workload CRD (1.4 MB) does not fit client-side apply's annotation.
  log "installing Kueue's CRDs from $crds"
  $kubectl apply --server-side -f "$crds" >/dev/null
  $kubectl wait --for=condition=Established -f "$crds" --timeout=60s >/dev/null
  kueue_certs
  kueue_root
  kueue_webhooks
  $kubectl apply -f "$KQ/webhooks.yaml" >/dev/null
  log "starting kueue (webhooks on https://127.0.0.1:$KUEUE_WEBHOOK_PORT)"
  kueue_start_manager || { kueue_down; exit 1; }
}

# Starts the manager of a Kueue that kueue_up installed and waits until it is ready.
kueue_start_manager() {
  local t0 i
  t0=$(date +%s%N)
  # --kubeconfig as a flag: the visibility server takes its delegated-auth kubeconfig from it.
  start kueue chroot "$KQ/root" /kueue --config=/config.yaml --kubeconfig=/kubeconfig --zap-log-level=2
  for i in $(seq 300); do
    if kueue_ready >/dev/null 2>&1; then
      log "kueue is ready after $((($(date +%s%N) - t0) / 1000000)) ms (pid $(cat "$D/pids/kueue"), log $D/logs/kueue.log)"
      return 0
    fi
    kill -0 "$(cat "$D/pids/kueue")" 2>/dev/null || break
    sleep 0.2
  done
  log "kueue did not become ready within 60 s; last lines of its log:"
  tail -n 40 "$D/logs/kueue.log" >&2
  return 1
}

kueue_kill() { stop_pid kueue --kill; }

kueue_start() {
  [ -f "$KQ/ports" ] || { log "no Kueue installed in $D (run: testenv.sh kueue-up)"; exit 1; }
  # shellcheck disable=SC1091
  source "$KQ/ports"
  kueue_start_manager || exit 1
}

apiserver_reachable() {
  [ -f "$D/ports" ] && [ -f "$KC" ] || return 1
  # shellcheck disable=SC1091
  source "$D/ports"
  apiserver_ready >/dev/null 2>&1
}

# Removes the finalizers Kueue and its webhooks put on the objects of the kind $1 (a resource
# of Kueue's group), so that the deletion of its CRD does not wait for a Kueue that is gone.
kueue_strip_finalizers() {
  local ns name
  $kubectl get "$1" -A --no-headers -o custom-columns=NS:.metadata.namespace,N:.metadata.name \
    2>/dev/null | while read -r ns name; do
    [ "$ns" = "<none>" ] && ns=""
    $kubectl patch "$1" "$name" ${ns:+-n "$ns"} --type=merge \
      -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
  done
}

# Stops Kueue by its pid and removes what kueue_up made: the webhooks first (with Kueue gone they
# would refuse every write of its kinds), then the finalizers on its objects, then the CRDs (and
# with them every object of their kinds) and its directory.
kueue_down() {
  local kubectl crds r
  stop_pid kueue
  [ -d "$KQ" ] || return 0
  if apiserver_reachable; then
    kubectl="$(bindir)/kubectl --kubeconfig=$KC"
    crds=$(kueue_crds)
    $kubectl delete mutatingwebhookconfiguration,validatingwebhookconfiguration testenv-kueue \
      --ignore-not-found >/dev/null
    for r in $(cd "$crds" && ls | sed -n 's/^kueue.x-k8s.io_\(.*\)\.yaml$/\1.kueue.x-k8s.io/p'); do
      kueue_strip_finalizers "$r"
    done
    $kubectl delete -f "$crds" --ignore-not-found --timeout=60s >/dev/null
  fi
  rm -rf "$KQ"
}

case ${1:-} in
  build) build "${2:-api}" ;;
  up) up "${2:-api}" ;;
  env) cat "$D/env.sh" ;;
  down) down ;;
  stop-apiserver) stop_apiserver "${2:-}" ;;
  start-apiserver) resume_apiserver ;;
  restart-apiserver) stop_apiserver "${2:-}"; resume_apiserver ;;
  logs) tail -n 100 "$D"/logs/*.log ;;
  bindir) bindir ;;
  build-helm) build_helm ;;
  build-kueue) build_kueue ;;
  kueue-up) kueue_up ;;
  kueue-down) kueue_down ;;
  kueue-kill) kueue_kill ;;
  kueue-start) kueue_start ;;
  helm) helm_path ;;
  *) echo "usage: testenv.sh build|up [api|e2e] | env | down | stop-apiserver|start-apiserver|restart-apiserver [--kill] | logs | bindir | build-helm | helm | build-kueue | kueue-up | kueue-down | kueue-kill | kueue-start" >&2; exit 2 ;;
esac
