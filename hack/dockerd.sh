#!/usr/bin/env bash
# The project's own dockerd, apart from any system Docker: no bridge network (containers get
# network "none" or "host"), no iptables, its own socket, exec root and data root.
#
#   dockerd.sh up      start it (or reuse the one already running for this DIR), wait for /_ping,
#                      build the local test images (hack/images/build.sh), write DIR/env.sh
#   dockerd.sh down    remove its containers, stop it (TERM, KILL after a deadline), then kill the
#                      containerd shims (and their container processes) it left, by pid only
#   dockerd.sh kill    SIGKILL it without any cleanup: simulates a crash (containers keep running
#                      thanks to --live-restore and are found again by the next `up`)
#   dockerd.sh env     print DIR/env.sh (export DOCKER_HOST=unix://DIR/docker.sock)
#   dockerd.sh shim ID print the pid of the containerd shim of this DIR that holds container ID
#                      (tests kill it to make the engine lose a task's exit status)
#   dockerd.sh purge   down, then delete its data root (images included)
#
# AYATORI_DOCKERD_TLS=1 at `up` also serves the API on tcp://127.0.0.1:<free port> with mutual TLS
# (--tlsverify; a CA, server and client certificate are made in DIR/pki): env.sh then exports
# AYATORI_DOCKER_TLS_HOST and AYATORI_DOCKER_CERT_PATH (ca.pem, cert.pem, key.pem of a client).
#
# The engine has a second OCI runtime, runc-alt (runc under another name, for the tests of classes
# that name a runtime), and crun when /usr/bin/crun exists; env.sh exports
# AYATORI_DOCKER_ALT_RUNTIME=runc-alt.
#
# DIR is $AYATORI_DOCKERD_DIR (the CTest fixture passes a directory of the build tree), default
# /tmp/ayatori-dockerd-$(id -u). The data root lives outside DIR so that images survive between
# runs: /var/lib/ayatori-docker/<basename of DIR>-<hash of DIR>, one per DIR, so the tests of
# several build trees and the demo never share one; a second dockerd on a data root that a running
# dockerd uses fails with a clear message.
#
# --live-restore: a dockerd restart (or crash) does not kill running containers, so a Job that was
# running while its backend was unreachable is found afterwards with its true result.
set -euo pipefail

H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
D=${AYATORI_DOCKERD_DIR:-/tmp/ayatori-dockerd-$(id -u)}
mkdir -p "$D"
D=$(cd "$D" && pwd -P)
ROOT_BASE=${AYATORI_DOCKER_ROOT:-/var/lib/ayatori-docker}
DATA=$ROOT_BASE/$(basename "$D")-$(printf '%s' "$D" | sha256sum | cut -c1-10)
SOCK=$D/docker.sock
PIDFILE=$D/dockerd.pid
LOG=$D/dockerd.log
STOP_SECONDS=${AYATORI_DOCKERD_STOP_SECONDS:-30}
# The name of the second runtime registered with the engine (runc again): env.sh exports it.
ALT_RUNTIME=runc-alt

log() { printf 'dockerd.sh: %s\n' "$*" >&2; }
# What a restart found and did about a crash's leftovers: one line each, under a fixed prefix that
# the chaos runner (test/chaos/runner.cc) reports.
repair() { log "repair: $*"; }

ping() { curl -sf --max-time 2 --unix-socket "$SOCK" http://localhost/_ping >/dev/null 2>&1; }

# The pid of our dockerd if it is alive (and really a dockerd), else nothing.
running_pid() {
  local p
  [ -f "$PIDFILE" ] || return 0
  p=$(cat "$PIDFILE" 2>/dev/null || true)
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 0
  [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dockerd ] || return 0
  echo "$p"
}

# A dockerd (ours or not) that runs with our data root: dockerd does not lock its data root, and
# two of them on one would corrupt it.
data_root_user() {
  local f p
  for f in /proc/[0-9]*/cmdline; do
    p=${f#/proc/}
    p=${p%/cmdline}
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dockerd ] || continue
    if tr '\0' '\n' <"$f" 2>/dev/null | grep -qxF -- "--data-root=$DATA"; then
      echo "$p"
      return 0
    fi
  done
}

preflight() {
  [ "$(id -u)" -eq 0 ] || { log "dockerd needs root (it mounts overlays and creates cgroups)"; exit 1; }
  command -v dockerd >/dev/null || { log "dockerd is not installed (hack/install-deps.sh installs docker.io)"; exit 1; }
  # containerd's ttrpc socket is the longest path dockerd creates below DIR; unix sockets are
  # limited to 108 bytes.
  local longest="$D/exec/containerd/containerd.sock.ttrpc"
  if [ ${#longest} -ge 104 ]; then
    log "AYATORI_DOCKERD_DIR=$D is too long for unix socket paths (${#longest} >= 104 bytes)"
    exit 1
  fi
  if [ -d /sys/fs/cgroup/memory ]; then
    :  # cgroup v1 with the memory controller: memory limits and OOM detection work
  elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
    :  # cgroup v2 with the memory controller
  else
    log "warning: no memory cgroup controller found; memory limits will not be enforced"
  fi
}

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# CA, server (127.0.0.1) and client certificates for the TCP endpoint, made once per DIR.
tls_certs() {
  local pki=$D/pki
  [ -f "$pki/client/key.pem" ] && return 0
  mkdir -p "$pki/client"
  (
    cd "$pki"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
      -subj /CN=ayatori-dockerd-ca -keyout ca-key.pem -out ca.pem
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=dockerd \
      -keyout server-key.pem -out server.csr
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 3650 \
      -extfile server.ext -out server.pem
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=ayatori-client \
      -keyout client/key.pem -out client.csr
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 3650 \
      -extfile client.ext -out client/cert.pem
    cp ca.pem client/ca.pem
    chmod 600 ca-key.pem server-key.pem client/key.pem
  ) 2>/dev/null
}

up() {
  local p i tls_args=() stale_shims="" runtimes
  preflight
  p=$(running_pid)
  if [ -n "$p" ] && ping; then
    log "dockerd (pid $p) for $D is already running; reusing it"
  else
    p=$(data_root_user)
    if [ -n "$p" ]; then
      log "data root $DATA is in use by another dockerd (pid $p);"
      log "stop it first (AYATORI_DOCKERD_DIR=$D hack/dockerd.sh down), or use another AYATORI_DOCKERD_DIR"
      exit 1
    fi
    mkdir -p "$DATA" "$D/exec"
    rm -f "$SOCK" "$PIDFILE"
    # Never the host's /etc/docker/daemon.json. A second OCI runtime for the tests of classes that
    # name one (docs/security.md): runc under a second name (it proves the runtime is passed and
    # checked; it adds no isolation), and crun when installed (on cgroup v1 hybrid hosts crun
    # refuses to start containers: /work/shared/reference/runtimes.md).
    runtimes="\"$ALT_RUNTIME\": {\"path\": \"$(command -v runc || echo /usr/sbin/runc)\"}"
    if [ -x /usr/bin/crun ]; then runtimes="$runtimes, \"crun\": {\"path\": \"/usr/bin/crun\"}"; fi
    echo "{\"runtimes\": {$runtimes}}" >"$D/daemon.json"
    rm -f "$D/tls-port"
    if [ -n "${AYATORI_DOCKERD_TLS:-}" ]; then
      tls_certs
      port >"$D/tls-port"
      tls_args=(--tlsverify --tlscacert="$D/pki/ca.pem" --tlscert="$D/pki/server.pem"
        --tlskey="$D/pki/server-key.pem" --host="tcp://127.0.0.1:$(cat "$D/tls-port")")
    fi
    # Shims left by a dockerd that crashed: looked at again once the new one answers.
    stale_shims=$(shim_pids)
    log "starting dockerd on unix://$SOCK (data root $DATA)"
    setsid nohup dockerd --config-file="$D/daemon.json" --host="unix://$SOCK" \
      --data-root="$DATA" --exec-root="$D/exec" --pidfile="$PIDFILE" \
      --bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
      --live-restore --log-level=warn --log-opt max-size=10m --log-opt max-file=2 \
      "${tls_args[@]}" >"$LOG" 2>&1 </dev/null &
    p=$!
    for i in $(seq 600); do
      ping && break
      if ! kill -0 "$p" 2>/dev/null; then
        log "dockerd exited during startup; last lines of $LOG:"
        tail -n 30 "$LOG" >&2
        exit 1
      fi
      sleep 0.1
    done
    if ! ping; then
      log "dockerd (pid $p) did not answer /_ping within 60s; last lines of $LOG:"
      tail -n 30 "$LOG" >&2
      stop_pid "$p"
      exit 1
    fi
    clear_interrupted_starts "$stale_shims"
  fi
  cat >"$D/env.sh" <<EOF
export DOCKER_HOST=unix://$SOCK
export AYATORI_DOCKER_DATA_ROOT=$DATA
export AYATORI_DOCKER_ALT_RUNTIME=$ALT_RUNTIME
EOF
  if [ -f "$D/tls-port" ]; then
    echo "export AYATORI_DOCKER_TLS_HOST=tcp://127.0.0.1:$(cat "$D/tls-port")" >>"$D/env.sh"
    echo "export AYATORI_DOCKER_CERT_PATH=$D/pki/client" >>"$D/env.sh"
  fi
  if [ -z "${AYATORI_DOCKERD_SKIP_IMAGES:-}" ]; then
    DOCKER_HOST=unix://$SOCK "$H/images/build.sh"
  fi
  log "up: source $D/env.sh"
}

stop_pid() {
  local p=$1 i
  kill -TERM "$p" 2>/dev/null || return 0
  for i in $(seq $((STOP_SECONDS * 10))); do
    kill -0 "$p" 2>/dev/null || return 0
    sleep 0.1
  done
  log "dockerd (pid $p) did not stop within ${STOP_SECONDS}s; sending KILL"
  kill -KILL "$p" 2>/dev/null || true
}

# dockerd leaves mounts behind (its network namespace under the exec root; overlays of containers
# that a crash left running): unmount what lies below a directory before deleting it.
unmount_below() {
  local m
  awk -v p="$1/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
}

# The containerd shims of this DIR's engine (their -address is our containerd's socket). A shim
# outlives dockerd and containerd by design (live restore), and one holding the task of a start
# that a dockerd crash interrupted is never cleaned up by the engine: after `down`, nothing of ours
# may keep running.
shim_pids() {
  local f p sock="$D/exec/containerd/containerd.sock"
  for f in /proc/[0-9]*/cmdline; do
    p=${f#/proc/}
    p=${p%/cmdline}
    case "$(cat "/proc/$p/comm" 2>/dev/null)" in containerd-shim*) ;; *) continue ;; esac
    if tr '\0' '\n' <"$f" 2>/dev/null | grep -qxF -- "$sock"; then echo "$p"; fi
  done
}

# The container id a shim (pid $1) holds: the value of its -id argument.
shim_container_id() {
  tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | grep -A1 -x -- -id | tail -n 1 || true
}

shim_of() {
  local s
  for s in $(shim_pids); do
    if [ "$(shim_container_id "$s")" = "$1" ]; then
      echo "$s"
      return 0
    fi
  done
  log "no containerd shim of $D holds container $1"
  return 1
}

# Kills the shims of this DIR and the container processes below them (their children: a shim is
# the subreaper of its container), by pid.
kill_shims() {
  local shims s c i
  shims=$(shim_pids)
  [ -n "$shims" ] || return 0
  log "killing $(echo "$shims" | wc -w) containerd shim(s) left by dockerd: $(echo $shims)"
  for s in $shims; do
    for c in $(ps -o pid= --ppid "$s" 2>/dev/null); do kill -KILL "$c" 2>/dev/null || true; done
    kill -KILL "$s" 2>/dev/null || true
  done
  for i in $(seq 50); do
    [ -z "$(shim_pids)" ] && return 0
    sleep 0.1
  done
  log "warning: containerd shims still alive: $(echo $(shim_pids))"
}

# After a crash, what an engine restart must clear (docs/operations.md, "StartNotConfirmed"): the
# shim of a start that the crash interrupted stays, dockerd shows that container as never started
# and every later start fails with "task <id>: already exists". SHIMS are the shims that were
# alive before this dockerd started, so a start the new engine is making is never touched. A shim
# whose container the engine shows as `created` and that has no child but runc's own init (the
# task's process was never executed) is killed: the next start of that container then runs it. A
# shim whose task process runs is left alone and named: the task ran, only a person may decide.
clear_interrupted_starts() {
  local s id status children comms i bundle
  for s in $1; do
    kill -0 "$s" 2>/dev/null || continue
    id=$(shim_container_id "$s")
    [ -n "$id" ] || continue
    status=$(DOCKER_HOST=unix://$SOCK docker inspect -f '{{.State.Status}}' "$id" 2>/dev/null || echo gone)
    case $status in created | gone) ;; *) continue ;; esac
    children=$(ps -o pid= --ppid "$s" 2>/dev/null | tr -s ' \n' ' ' || true)
    comms=$(ps -o comm= --ppid "$s" 2>/dev/null | grep -v '^runc:' || true)
    if [ -n "$comms" ]; then
      repair "warning: container ${id:0:12} ($status) has a task process the engine does not track" \
        "(pids $children): left alone; see docs/operations.md \"StartNotConfirmed\""
      continue
    fi
    repair "clearing the interrupted start of container ${id:0:12} ($status): its task never ran"
    # shellcheck disable=SC2086
    [ -z "${children// /}" ] || kill -KILL $children 2>/dev/null || true
    kill -KILL "$s" 2>/dev/null || true
    # containerd removes the task's bundle when it sees the shim gone, but not always (when it
    # had not loaded that task: the crash lost the container's record); a bundle left makes the
    # next start fail with "file exists". Nothing uses it once its shim is dead.
    bundle=$D/exec/containerd/daemon/io.containerd.runtime.v2.task/moby/$id
    for i in $(seq 20); do
      [ -d "$bundle" ] || break
      sleep 0.1
    done
    if [ -d "$bundle" ]; then
      unmount_below "$bundle"
      rm -rf "$bundle"
    fi
  done
}

down() {
  local p ids
  p=$(running_pid)
  if [ -n "$p" ]; then
    # With --live-restore, containers would outlive dockerd; this dockerd is ours alone, so its
    # containers go with it.
    if ping; then
      ids=$(DOCKER_HOST=unix://$SOCK docker ps -aq 2>/dev/null || true)
      if [ -n "$ids" ]; then
        # shellcheck disable=SC2086
        DOCKER_HOST=unix://$SOCK docker rm -f $ids >/dev/null 2>&1 || log "warning: could not remove all containers"
      fi
    fi
    log "stopping dockerd (pid $p)"
    stop_pid "$p"
  fi
  kill_shims
  unmount_below "$D/exec"
  rm -rf "$D/exec" "$SOCK" "$PIDFILE" "$D/env.sh" "$D/tls-port"
  if [ -z "$(data_root_user)" ]; then
    unmount_below "$DATA"
    umount_self "$DATA"
  fi
}

# dockerd bind-mounts its data root onto itself; a crash leaves that mount behind.
umount_self() {
  awk -v p="$1" '$2 == p {found=1} END {exit !found}' /proc/mounts && umount -l "$1" 2>/dev/null || true
}

crash() {
  local p
  p=$(running_pid)
  [ -n "$p" ] || { log "no dockerd running for $D"; return 0; }
  log "killing dockerd (pid $p) with SIGKILL"
  kill -KILL "$p"
  while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
}

case ${1:-} in
  up) up ;;
  down) down ;;
  kill) crash ;;
  env) cat "$D/env.sh" ;;
  shim) shim_of "${2:?usage: dockerd.sh shim CONTAINER-ID}" ;;
  purge) down; rm -rf "$DATA" ;;
  *) echo "usage: dockerd.sh up|down|kill|env|shim ID|purge" >&2; exit 2 ;;
esac
