#!/usr/bin/env bash
# A real node for the Kubernetes backend: kubelet + containerd + runc + CNI on this machine,
# registered to a running test control plane (the e2e tier of hack/testenv/testenv.sh, found
# through TESTENV_DIR like testenv.sh), beside kwok's fake node.
#
#   realnode.sh build   build (or find in the cache) the kubelet: testenv.sh build node
#   realnode.sh up      start containerd and the kubelet; node "127.0.0.1" Ready; writes env.sh
#   realnode.sh down    delete the node's pods, stop what `up` started, clean every host path
#   realnode.sh env     print the env.sh of the running node
#   realnode.sh logs    tail the kubelet's and containerd's logs
#
# What runs (docs/development.md "The real node"):
#   - Debian's containerd 1.6 and runc (hack/install-deps.sh), an instance of its own: socket,
#     root, state and runc root under $RN, never the system's /run/containerd/containerd.sock;
#   - CNI bridge + host-local (Debian's containernetworking-plugins) on the bridge rn-br0,
#     192.0.2.128/25 (TEST-NET-1), pods on 192.0.2.200-250, no NAT: nothing leaves the machine;
#   - images ayatori.local/busybox:1 and the sandbox image ayatori.local/pause:1, written as
#     docker-archive tarballs from the busybox root filesystem of hack/images/build.sh and
#     imported: nothing is pulled from anywhere;
#   - the kubelet from the test environment's cache (same version as kube-apiserver), named
#     127.0.0.1 (its InternalIP: pods/log and exec reach it on loopback), with the taint
#     ayatori.test/real-node:NoSchedule and the label ayatori.test/node=real, so that only pods
#     that ask for it (nodeSelector + toleration) land here and kwok's fake node keeps the others.
#
# One real node per machine: the kubelet hard-codes /var/lib/kubelet/device-plugins/ and
# /var/log/containers/. `up` takes the lock $REALNODE_LOCK (waiting up to REALNODE_LOCK_WAIT
# seconds); the daemons it starts inherit it, so it is free again once they are all gone.
# Needs root, cgroup v1 or v2 with cgroupfs (no systemd here), overlayfs.
set -euo pipefail

T=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TD=${TESTENV_DIR:-/tmp/ayatori-testenv-$(id -u)}
RN=${REALNODE_DIR:-$TD/realnode}
LOCK=${REALNODE_LOCK:-/tmp/ayatori-realnode.lock}
NODE=127.0.0.1
SUBNET=192.0.2.128/25
GATEWAY=192.0.2.129
POD_FIRST=192.0.2.200
POD_LAST=192.0.2.250
BRIDGE=rn-br0
CGROUP=realnode
TAINT=ayatori.test/real-node
LABEL=ayatori.test/node
BUSYBOX_IMAGE=ayatori.local/busybox:1
PAUSE_IMAGE=ayatori.local/pause:1
RUNC=${REALNODE_RUNC:-/usr/sbin/runc}
# Another containerd (e.g. a 2.x built from the module proxy, to compare: docs/development.md):
# its binary, and the folder of its own containerd-shim-runc-v2, which must come first in PATH
# (Debian's 1.6 shim fails under containerd 2: "io.containerd.runc.v2: type with url ...").
CONTAINERD=${REALNODE_CONTAINERD_BIN:-containerd}
SHIM_DIR=${REALNODE_SHIM_DIR:-}
CNI_BIN=${REALNODE_CNI_BIN:-/usr/lib/cni}
DAEMON_DIR=$RN
# shellcheck source=hack/lib/daemons.sh
source "$T/../lib/daemons.sh"

log() { printf 'realnode: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

kubectl_() { "$BIN/kubectl" --kubeconfig="$TD/kubeconfig" "$@"; }
ctr_() { ctr -a "$RN/containerd/containerd.sock" -n k8s.io "$@"; }

control_plane() {
  [ -f "$TD/env.sh" ] || die "no test control plane in $TD (run: TESTENV_DIR=$TD testenv.sh up e2e)"
  # shellcheck disable=SC1091
  source "$TD/env.sh"
  BIN=$TESTENV_BIN
  PKI=$TD/pki
  [ -f "$PKI/apiserver-kubelet-client.crt" ] ||
    die "the control plane in $TD predates the real node (no apiserver-kubelet-client.crt): restart it"
}

preflight() {
  local m
  [ "$(id -u)" = 0 ] || die "needs root (cgroups, mounts, network namespaces)"
  for m in "$CONTAINERD" ctr "$RUNC" "$CNI_BIN/bridge" "$CNI_BIN/host-local" "$CNI_BIN/loopback" ip openssl; do
    command -v "$m" >/dev/null ||
      die "$m is missing (hack/install-deps.sh installs containerd, runc, containernetworking-plugins)"
  done
  # The bridge's addresses must be free: no route for the subnet itself (another bridge) and no
  # address of this machine among the gateway and the pods' range. Narrower routes inside the
  # subnet are fine: the test network namespaces' /32 pairs (test/support/netns.cc,
  # 192.0.2.130-199) and the demos' (192.0.2.251-254) sit there beside the bridge. A wider
  # connected route, such as this machine's 192.0.2.0/24 on eth0, loses to the bridge's /25.
  local a used
  used=$(ip -4 route show exact "$SUBNET")
  for a in $(ip -4 -o addr show to "$SUBNET" | awk '{print $4}'); do
    a=${a%/*}
    if [ "$a" = "$GATEWAY" ] || { [ "${a##*.}" -ge "${POD_FIRST##*.}" ] && [ "${a##*.}" -le "${POD_LAST##*.}" ]; }; then
      used+=" address $a"
    fi
  done
  [ -z "$used" ] || die "the real node's pod network $SUBNET ($GATEWAY, $POD_FIRST-$POD_LAST) is in use on this machine: $used"
}

certs() {
  mkdir -p "$RN/pki"
  (
    cd "$RN/pki"
    # leaf NAME SUBJECT EXTENSIONS: signed by the control plane's CA.
    leaf() {
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr"
      printf '%b\n' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
        -CAserial "$RN/pki/ca.srl" -days 3650 -extfile "$1.ext" -out "$1.crt"
    }
    # The kubelet's client identity: the Node authorizer knows it by system:node:<name>.
    leaf node "/O=system:nodes/CN=system:node:$NODE" 'extendedKeyUsage=clientAuth'
    # Its serving certificate: kube-apiserver checks it (--kubelet-certificate-authority).
    leaf serving "/CN=$NODE" "subjectAltName=IP:$NODE\nextendedKeyUsage=serverAuth"
  ) 2>/dev/null
  local b="base64 -w0"
  cat >"$RN/node.kubeconfig" <<EOF
apiVersion: v1
kind: Config
current-context: node
clusters:
- name: testenv
  cluster: {server: "$TESTENV_API", certificate-authority-data: $($b "$PKI/ca.crt")}
users:
- name: node
  user: {client-certificate-data: $($b "$RN/pki/node.crt"), client-key-data: $($b "$RN/pki/node.key")}
contexts:
- name: node
  context: {cluster: testenv, user: node}
EOF
  chmod 600 "$RN/node.kubeconfig"
}

# cgroup v1: one folder per controller (cpuset needs its cpus and mems); v2: one folder.
cgroups() {
  local c
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    mkdir -p "/sys/fs/cgroup/$CGROUP"
    return
  fi
  for c in /sys/fs/cgroup/*/; do
    [ -L "${c%/}" ] || [ "${c%/}" = /sys/fs/cgroup/unified ] || mkdir -p "$c$CGROUP"
  done
  cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$CGROUP/cpuset.cpus"
  cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$CGROUP/cpuset.mems"
}

containerd_config() {
  mkdir -p "$RN/containerd" "$RN/cni/net.d"
  # restrict_oom_score_adj: the CRI asks for oom_score_adj -998 for sandboxes, which a root
  # without CAP_SYS_RESOURCE (some VMs and containers) cannot set: runc then fails with "can't
  # get final child's PID from pipe". netns_mounts_under_state_dir and the runc Root keep the
  # network namespaces and runc's state under $RN rather than in host-wide /run folders.
  cat >"$RN/containerd/config.toml" <<EOF
version = 2
root = "$RN/containerd/root"
state = "$RN/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$RN/containerd/containerd.sock"
[ttrpc]
  address = "$RN/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$RUNC"
        Root = "$RN/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$RN/cni/net.d"
EOF
  # ipMasq false: no NAT rule, pods reach only this machine.
  cat >"$RN/cni/net.d/10-realnode.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "realnode", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": false,
   "ipam": {"type": "host-local", "dataDir": "$RN/cni/ipam",
            "ranges": [[{"subnet": "$SUBNET", "gateway": "$GATEWAY",
                         "rangeStart": "$POD_FIRST", "rangeEnd": "$POD_LAST"}]]}}]}
EOF
}

images() {
  "$T/../images/build.sh" archive "$BUSYBOX_IMAGE" "$RN/images/busybox.tar" '{"Cmd":["/bin/sh"],"Env":["PATH=/bin"]}'
  # The sandbox: a sleep as PID 1 (containerd stops sandboxes with SIGKILL).
  "$T/../images/build.sh" archive "$PAUSE_IMAGE" "$RN/images/pause.tar" \
    '{"Entrypoint":["/bin/sleep","2147483647"],"Env":["PATH=/bin"]}'
  ctr_ images import "$RN/images/busybox.tar" >/dev/null
  ctr_ images import "$RN/images/pause.tar" >/dev/null
}

kubelet_config() {
  KP=$(port); HP=$(port)
  mkdir -p "$RN/kubelet"
  # Authentication by client certificate (kube-apiserver's kubelet client) or bearer token
  # checked by TokenReview; authorization by SubjectAccessReview: the kubelet's API is the
  # cluster's RBAC, not open to every local process. Image GC off: the imported images are all
  # there is.
  cat >"$RN/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $HP
tlsCertFile: $RN/pki/serving.crt
tlsPrivateKeyFile: $RN/pki/serving.key
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: $PKI/ca.crt}}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$RN/containerd/containerd.sock
podLogsDir: $RN/kubelet/pod-logs
volumePluginDir: $RN/kubelet/volume-plugins
maxPods: 30
resolvConf: ""
nodeStatusUpdateFrequency: 2s
syncFrequency: 10s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {}
enforceNodeAllocatable: []
makeIPTablesUtilChains: false
serializeImagePulls: false
registerWithTaints: [{key: $TAINT, value: "true", effect: NoSchedule}]
EOF
}

node_ready() {
  [ "$(kubectl_ get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

up() {
  local t0 had
  t0=$(date +%s.%N)
  control_plane
  preflight
  [ -x "$BIN/kubelet" ] || "$T/testenv.sh" build node
  [ -x "$BIN/kubelet" ] || die "no kubelet in $BIN"
  exec 9>>"$LOCK"
  if ! flock -n 9; then
    log "another real node runs on this machine (lock $LOCK); waiting up to ${REALNODE_LOCK_WAIT:-1200}s"
    flock -w "${REALNODE_LOCK_WAIT:-1200}" 9 || die "the lock $LOCK stayed taken"
  fi
  down_locked
  mkdir -p "$RN"/{logs,pids,images}
  # Host folders the kubelet creates by fixed path: `down` removes them if `up` made them.
  for had in /var/lib/kubelet /var/log/containers; do
    [ -e "$had" ] || echo "$had" >>"$RN/created"
  done
  certs
  cgroups
  containerd_config
  log "starting containerd ($("$CONTAINERD" --version | awk '{print $3}'))"
  start containerd env PATH="${SHIM_DIR:+$SHIM_DIR:}$PATH" "$CONTAINERD" --config "$RN/containerd/config.toml"
  wait_until containerd 30 ctr_ version || { down_locked; exit 1; }
  images
  kubelet_config
  log "starting kubelet $("$BIN/kubelet" --version | awk '{print $2}') as node $NODE"
  start kubelet "$BIN/kubelet" --config="$RN/kubelet/config.yaml" --kubeconfig="$RN/node.kubeconfig" \
    --hostname-override="$NODE" --node-labels="$LABEL=real" --root-dir="$RN/kubelet/root" \
    --cert-dir="$RN/kubelet/pki" --v=1
  # The node object appears a moment after the start; `kubectl wait` would fail on NotFound.
  wait_until kubelet 60 node_ready || { down_locked; exit 1; }
  cat >"$RN/env.sh" <<EOF
export REALNODE_DIR=$RN
export REALNODE_NAME=$NODE
export REALNODE_LABEL=$LABEL=real
export REALNODE_TAINT=$TAINT
export REALNODE_IMAGE=$BUSYBOX_IMAGE
export REALNODE_CONTAINERD=$RN/containerd/containerd.sock
EOF
  log "node $NODE Ready in $(python3 -c "import time;print(round(time.time()-$t0,1))")s: source $RN/env.sh"
}

down() {
  exec 9>>"$LOCK"
  # Only a holder may clean: a node of another worktree is running otherwise.
  if ! flock -n 9; then
    if [ -f "$RN/pids/kubelet" ] || [ -f "$RN/pids/containerd" ]; then
      log "stopping the real node in $RN"
    else
      log "no real node of this state dir ($RN) runs; the lock is another's"
      return 0
    fi
  fi
  down_locked
}

# Stops and cleans everything `up` started or made, whatever state it is in.
down_locked() {
  local p l
  if [ -f "$RN/pids/kubelet" ] && [ -f "$TD/env.sh" ]; then
    control_plane
    # While the kubelet runs: it stops the pods' containers and CNI releases their addresses.
    kubectl_ delete pods -A --field-selector "spec.nodeName=$NODE" --grace-period=0 --force \
      --wait=false >/dev/null 2>&1 || true
    for _ in $(seq 50); do
      [ -z "$(kubectl_ get pods -A --field-selector "spec.nodeName=$NODE" -o name 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  stop_pid kubelet
  if [ -S "$RN/containerd/containerd.sock" ]; then
    for p in $(ctr_ tasks ls -q 2>/dev/null); do
      ctr_ tasks kill -s KILL "$p" >/dev/null 2>&1 || true
      ctr_ tasks delete -f "$p" >/dev/null 2>&1 || true
    done
    for p in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$p" >/dev/null 2>&1 || true; done
  fi
  stop_pid containerd
  if [ -f "$TD/env.sh" ] && [ -d "$RN" ]; then
    control_plane
    kubectl_ delete node "$NODE" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  fi
  # Shims left by a containerd killed with tasks running.
  for p in $(pgrep -f "containerd-shim-runc-v2 -namespace k8s.io -id .* -address $RN/" 2>/dev/null); do
    kill -KILL "$p" 2>/dev/null || true
  done
  if [ -d "$RN" ]; then
    findmnt -rn -o TARGET | grep "^$RN/" | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  fi
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link del "$BRIDGE"
  find /sys/fs/cgroup/*/"$CGROUP" /sys/fs/cgroup/"$CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null || true
  for l in /var/log/containers/*.log; do
    [ -L "$l" ] && case $(readlink "$l") in "$RN"/*) rm -f "$l" ;; esac
  done
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  if [ -f "$RN/created" ]; then
    while read -r p; do rm -rf "$p"; done <"$RN/created"
  fi
  rm -rf "$RN"
}

case ${1:-} in
  build) "$T/testenv.sh" build node ;;
  up) up ;;
  down) down ;;
  env) cat "$RN/env.sh" ;;
  logs) tail -n 100 "$RN"/logs/*.log ;;
  *) echo "usage: realnode.sh build|up|down|env|logs" >&2; exit 2 ;;
esac
