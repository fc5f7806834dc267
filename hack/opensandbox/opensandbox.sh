#!/usr/bin/env bash
# The OpenSandbox test stack: the real opensandbox-server from PyPI (pinned, hashes in
# requirements.lock) on the project's dockerd (hack/dockerd.sh), sandboxes in `host` network mode,
# execd replaced by the project's stand-in image (test/opensandbox/execd_standin). See
# docs/opensandbox.md.
#
#   opensandbox.sh build    create the virtualenv (server + Python SDK) if the cache lacks it, and,
#                           when the stand-in binary is built, import the images
#                           (AYATORI_EXECD_STANDIN, default build/test/opensandbox/execd_standin)
#   opensandbox.sh up       build, write the server config, start the server on 127.0.0.1:<free
#                           port>, wait for /health, write DIR/env.sh
#   opensandbox.sh down     stop the server this script started (by pid), remove the sandbox
#                           containers it left on the dockerd, delete DIR
#   opensandbox.sh env      print DIR/env.sh
#   opensandbox.sh venv     print the virtualenv's path (after build)
#   opensandbox.sh stop     stop the server (TERM) but keep DIR, its config and its sandboxes
#   opensandbox.sh start    start the stopped server again on the same port and config (sandboxes
#                           live on: the server re-arms their timers from their labels)
#   opensandbox.sh restart  stop, then start
#   opensandbox.sh reserve-port
#                           take execd's port out of the kernel's ephemeral range (below; `up`
#                           does it too, and testenv.sh up does it before its connections open)
#
# The virtualenv lives outside the repository, keyed by the lock file and the Python version:
# ${XDG_CACHE_HOME:-~/.cache}/ayatori/opensandbox/<key>/venv (built in place: venvs do not move;
# a `.complete` mark is written last, so an interrupted install is redone rather than trusted).
#
# DIR is $AYATORI_OPENSANDBOX_DIR, default /tmp/ayatori-opensandbox-$(id -u). The dockerd is the
# one of $DOCKER_HOST, else the one of $AYATORI_DOCKERD_DIR/env.sh. DIR/env.sh exports
# AYATORI_OSB_DOMAIN (127.0.0.1:PORT), AYATORI_OSB_API_KEY (random; file mode 0600),
# AYATORI_OSB_VENV, AYATORI_OSB_EXECD_IMAGE and AYATORI_OSB_WORKLOAD_IMAGE.
set -euo pipefail

H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
D=${AYATORI_OPENSANDBOX_DIR:-/tmp/ayatori-opensandbox-$(id -u)}
PY=${AYATORI_PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
LOCK=$H/requirements.lock
# The stand-in image is tagged with the hash of what goes into it, so a rebuilt stand-in is a new
# image; the workload image's tag is bumped when its recipe changes (the import is skipped while
# the tag exists).
BOOTSTRAP=$H/../../test/opensandbox/execd_standin/bootstrap.sh
STANDIN=${AYATORI_EXECD_STANDIN:-$H/../../build/test/opensandbox/execd_standin}
EXECD_IMAGE=
WORKLOAD_IMAGE=ayatori-test/workload:1
STOP_SECONDS=${AYATORI_OPENSANDBOX_STOP_SECONDS:-20}
# execd's port. In host network mode every sandbox's execd listens on 127.0.0.1:$EXECD_PORT of
# this machine, so no other socket may hold it: a client connection to which the kernel gave it as
# its ephemeral port (44772 lies in the usual 32768-60999) makes every execd's bind fail for as
# long as the connection lives, and each sandbox then runs without an execd (the control plane's
# long-lived connections did that to a whole CI run).
EXECD_PORT=44772
RESERVED_PORTS=/proc/sys/net/ipv4/ip_local_reserved_ports

log() { printf 'opensandbox.sh: %s\n' "$*" >&2; }

venv_dir() {
  local key
  key=$( (cat "$LOCK"; "$PY" -c 'import sys; print(sys.version)') | sha256sum | cut -c1-16)
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/ayatori/opensandbox/$key/venv"
}

docker_host() {
  if [ -n "${DOCKER_HOST:-}" ]; then return 0; fi
  local env=${AYATORI_DOCKERD_DIR:-/tmp/ayatori-dockerd-$(id -u)}/env.sh
  [ -f "$env" ] || { log "no dockerd: set DOCKER_HOST or start hack/dockerd.sh up ($env is missing)"; exit 1; }
  # shellcheck disable=SC1090
  . "$env"
}

build_venv() {
  local v
  v=$(venv_dir)
  [ -f "$v/.complete" ] && return 0
  "$PY" -c 'import venv, ensurepip' 2>/dev/null || { log "$PY lacks venv/ensurepip (Debian: python3-venv)"; exit 1; }
  log "creating $v (opensandbox-server + SDK from $LOCK; a few minutes the first time)"
  rm -rf "$v"
  mkdir -p "$(dirname "$v")"
  "$PY" -m venv "$v"
  # --no-deps + --require-hashes: exactly the locked set, nothing resolved at install time.
  PIP_FIND_LINKS= "$v/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    --require-hashes -r "$LOCK"
  touch "$v/.complete"
}

# A root filesystem with Debian's busybox-static (hack/images/build.sh), plus extra files
# "SRC:DEST", imported as TAG unless that tag exists.
import_image() {
  local tag=$1 tmp f
  shift
  docker image inspect "$tag" >/dev/null 2>&1 && return 0
  tmp=$(mktemp -d)
  "$H/../images/build.sh" rootfs "$tmp/root"
  for f in "$@"; do
    install -m 0755 "${f%%:*}" "$tmp/root${f#*:}"
  done
  tar --numeric-owner --owner=0 --group=0 -C "$tmp/root" -c . |
    docker import --change 'ENV PATH=/bin' --change 'CMD ["/bin/sh"]' - "$tag" >/dev/null
  rm -rf "$tmp"
  log "built $tag"
}

build_images() {
  [ -x "$STANDIN" ] || {
    log "the execd stand-in $STANDIN is missing: build it (cmake --build build --target"
    log "execd_standin) or set AYATORI_EXECD_STANDIN to its path"
    exit 1
  }
  if ldd "$STANDIN" >/dev/null 2>&1; then
    log "$STANDIN is dynamically linked; the sandbox images need a static binary"
    exit 1
  fi
  EXECD_IMAGE=ayatori-test/execd-standin:$(cat "$STANDIN" "$BOOTSTRAP" | sha256sum | cut -c1-12)
  import_image "$EXECD_IMAGE" "$STANDIN:/execd" "$BOOTSTRAP:/bootstrap.sh"
  import_image "$WORKLOAD_IMAGE"
}

build() {
  build_venv
  if [ -x "$STANDIN" ]; then
    docker_host
    build_images
  fi
}

# Is $EXECD_PORT in the kernel's list $1 ("a,b-c,...")?
port_in_list() {
  local r
  for r in ${1//,/ }; do
    if [ "$EXECD_PORT" -ge "${r%-*}" ] && [ "$EXECD_PORT" -le "${r#*-}" ]; then return 0; fi
  done
  return 1
}

# Takes execd's port out of the ephemeral range (per network namespace, until reboot), so that no
# connection or bind to port 0 made from now on is given it. Needs root; without it, a warning.
reserve_port() {
  local cur
  cur=$(cat "$RESERVED_PORTS" 2>/dev/null) || { log "warning: cannot read $RESERVED_PORTS"; return 0; }
  port_in_list "$cur" && return 0
  echo "${cur:+$cur,}$EXECD_PORT" >"$RESERVED_PORTS" 2>/dev/null ||
    log "warning: cannot add $EXECD_PORT to $RESERVED_PORTS (root only): a connection may take execd's port"
}

# Fails, naming them, when sockets already hold execd's port (TIME_WAIT ones do not count: execd
# binds with SO_REUSEADDR).
check_port_free() {
  local holders
  holders=$(ss -Htanp exclude time-wait "( sport = :$EXECD_PORT )" 2>/dev/null || true)
  [ -z "$holders" ] && return 0
  log "port $EXECD_PORT, where every sandbox's execd must listen (host network mode), is held:"
  printf '%s\n' "$holders" >&2
  log "no sandbox could be reached; stop what holds it (a connection that took the port before it"
  log "was reserved keeps it until it closes: restart that process, e.g. testenv.sh down; up)"
  return 1
}

port() { "$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

write_config() {
  local p=$1 k=$2
  # 127.0.0.1 only: sandbox endpoints are reported on the server's host. host network mode: this
  # project's dockerd has no bridge. The server's own state (sqlite store, metadata overlays in
  # ~/.opensandbox) stays in DIR.
  cat >"$D/sandbox.toml" <<EOF
[server]
host = "127.0.0.1"
port = $p
api_key = "$k"
max_sandbox_timeout_seconds = 86400

[log]
level = "INFO"

[runtime]
type = "docker"
execd_image = "$EXECD_IMAGE"

[docker]
network_mode = "host"
api_timeout = 120

[ingress]
mode = "direct"

[store]
type = "sqlite"
path = "$D/home/opensandbox.db"
EOF
  chmod 600 "$D/sandbox.toml"
}

start_server() {
  local v
  v=$(venv_dir)
  # DOCKER_HOST is the only way to point the server at a dockerd (it has no config key).
  HOME=$D/home DOCKER_HOST=$DOCKER_HOST setsid nohup "$v/bin/opensandbox-server" \
    --config "$D/sandbox.toml" >>"$D/server.log" 2>&1 </dev/null &
  echo $! >"$D/server.pid"
}

wait_healthy() {
  local p=$1 pid i
  pid=$(cat "$D/server.pid")
  for i in $(seq 600); do
    curl -sf --max-time 2 "http://127.0.0.1:$p/health" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  log "opensandbox-server did not become healthy; last lines of $D/server.log:"
  tail -n 40 "$D/server.log" >&2
  return 1
}

up() {
  local p k
  docker_host
  down
  reserve_port
  check_port_free
  build_venv
  build_images
  mkdir -p "$D/home"
  chmod 700 "$D"
  p=$(port)
  k=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  write_config "$p" "$k"
  echo "$p" >"$D/port"
  echo "$DOCKER_HOST" >"$D/docker_host"
  log "starting opensandbox-server on 127.0.0.1:$p (dockerd $DOCKER_HOST)"
  start_server
  if ! wait_healthy "$p"; then
    AYATORI_OPENSANDBOX_KEEP=1 down
    exit 1
  fi
  cat >"$D/env.sh" <<EOF
export AYATORI_OSB_DOMAIN=127.0.0.1:$p
export AYATORI_OSB_API_KEY=$k
export AYATORI_OSB_VENV=$(venv_dir)
export AYATORI_OSB_EXECD_IMAGE=$EXECD_IMAGE
export AYATORI_OSB_WORKLOAD_IMAGE=$WORKLOAD_IMAGE
export AYATORI_OSB_DIR=$D
EOF
  chmod 600 "$D/env.sh"
  log "up: source $D/env.sh"
}

stop_server() {
  local p i
  [ -f "$D/server.pid" ] || return 0
  p=$(cat "$D/server.pid")
  if kill -0 "$p" 2>/dev/null; then
    kill -TERM "$p" 2>/dev/null || true
    for i in $(seq $((STOP_SECONDS * 10))); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$p" 2>/dev/null; then
      log "opensandbox-server (pid $p) did not stop within ${STOP_SECONDS}s; sending KILL"
      kill -KILL "$p" 2>/dev/null || true
    fi
  fi
  rm -f "$D/server.pid"
}

start_again() {
  [ -f "$D/port" ] || { log "no stack in $D"; exit 1; }
  DOCKER_HOST=$(cat "$D/docker_host")
  start_server
  wait_healthy "$(cat "$D/port")"
}

down() {
  local ids
  stop_server
  # Sandboxes are the server's containers (label opensandbox.io/id), on the dockerd it used.
  if [ -f "$D/docker_host" ]; then
    ids=$(DOCKER_HOST=$(cat "$D/docker_host") docker ps -aq --filter label=opensandbox.io/id 2>/dev/null || true)
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086
      DOCKER_HOST=$(cat "$D/docker_host") docker rm -f $ids >/dev/null 2>&1 ||
        log "warning: could not remove all sandbox containers"
    fi
  fi
  [ -n "${AYATORI_OPENSANDBOX_KEEP:-}" ] || rm -rf "$D"
}

case ${1:-} in
  build) build ;;
  up) up ;;
  down) down ;;
  stop) stop_server ;;
  start) start_again ;;
  restart) stop_server; start_again ;;
  env) cat "$D/env.sh" ;;
  venv) venv_dir ;;
  reserve-port) reserve_port ;;
  *) echo "usage: opensandbox.sh build|up|down|stop|start|restart|env|venv|reserve-port" >&2; exit 2 ;;
esac
