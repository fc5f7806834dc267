#!/usr/bin/env bash
# A private image registry for image-auth tests: Debian's docker-registry on 127.0.0.1:<free port>
# with htpasswd auth, holding one image that exists nowhere else.
#
#   registry.sh up     start it, push the private image through the project's dockerd, remove the
#                      image from that dockerd (so only the registry has it), write DIR/env.sh
#   registry.sh down   stop only the registry this script started (by pid) and delete DIR
#   registry.sh env    print DIR/env.sh
#
# DIR is $AYATORI_REGISTRY_DIR, default /tmp/ayatori-registry-$(id -u). The dockerd is the one of
# $DOCKER_HOST, else the one of $AYATORI_DOCKERD_DIR/env.sh (hack/dockerd.sh). DIR/env.sh exports
# REGISTRY_ADDR (127.0.0.1:PORT; 127.0.0.0/8 registries are insecure-allowed by dockerd by
# default, so plain HTTP works), REGISTRY_USER, REGISTRY_PASSWORD (random, file mode 0600) and
# REGISTRY_IMAGE (REGISTRY_ADDR/ayatori/private:1, whose /private-marker reads "private-image").
set -euo pipefail

H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
D=${AYATORI_REGISTRY_DIR:-/tmp/ayatori-registry-$(id -u)}
USER_NAME=ayatori-test

log() { printf 'registry.sh: %s\n' "$*" >&2; }

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

docker_host() {
  if [ -n "${DOCKER_HOST:-}" ]; then return 0; fi
  local env=${AYATORI_DOCKERD_DIR:-/tmp/ayatori-dockerd-$(id -u)}/env.sh
  [ -f "$env" ] || { log "no dockerd: set DOCKER_HOST or start hack/dockerd.sh up ($env is missing)"; exit 1; }
  # shellcheck disable=SC1090
  . "$env"
}

up() {
  local p i pw addr image tmp
  command -v docker-registry >/dev/null || { log "docker-registry is not installed (hack/install-deps.sh)"; exit 1; }
  command -v htpasswd >/dev/null || { log "htpasswd is not installed (apache2-utils)"; exit 1; }
  docker_host
  down
  mkdir -p "$D/data" "$D/docker-config"
  chmod 700 "$D"
  pw=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  htpasswd -Bbn "$USER_NAME" "$pw" >"$D/htpasswd" 2>/dev/null
  p=$(port)
  addr=127.0.0.1:$p
  cat >"$D/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $D/data
  delete:
    enabled: true
http:
  addr: $addr
auth:
  htpasswd:
    realm: ayatori-test
    path: $D/htpasswd
EOF
  setsid nohup docker-registry serve "$D/config.yml" >"$D/registry.log" 2>&1 </dev/null &
  echo $! >"$D/registry.pid"
  for i in $(seq 300); do
    # /v2/ answers 401 without credentials once the registry listens.
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/v2/" 2>/dev/null)" = 401 ] && break
    if ! kill -0 "$(cat "$D/registry.pid")" 2>/dev/null; then
      log "docker-registry exited during startup; last lines of its log:"
      tail -n 20 "$D/registry.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  image=$addr/ayatori/private:1
  tmp=$(mktemp -d)
  "$H/images/build.sh" rootfs "$tmp/root"
  echo private-image >"$tmp/root/private-marker"
  tar --numeric-owner --owner=0 --group=0 -C "$tmp/root" -c . |
    docker import --change 'ENV PATH=/bin' --change 'CMD ["/bin/cat", "/private-marker"]' - "$image" >/dev/null
  rm -rf "$tmp"
  # The login is kept in DIR, never in the user's ~/.docker.
  printf '%s' "$pw" | DOCKER_CONFIG=$D/docker-config docker login -u "$USER_NAME" --password-stdin "$addr" >/dev/null 2>&1 ||
    { log "docker login to $addr failed"; exit 1; }
  DOCKER_CONFIG=$D/docker-config docker push "$image" >/dev/null || { log "docker push $image failed"; exit 1; }
  docker rmi "$image" >/dev/null
  (
    umask 077
    cat >"$D/env.sh" <<EOF
export REGISTRY_ADDR=$addr
export REGISTRY_USER=$USER_NAME
export REGISTRY_PASSWORD=$pw
export REGISTRY_IMAGE=$image
EOF
  )
  log "up: $image on $addr (source $D/env.sh)"
}

down() {
  local p i
  if [ -f "$D/registry.pid" ]; then
    p=$(cat "$D/registry.pid")
    if kill -0 "$p" 2>/dev/null && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = docker-registry ]; then
      kill -TERM "$p" 2>/dev/null || true
      for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$p" 2>/dev/null || true
    fi
  fi
  rm -rf "$D"
}

case ${1:-} in
  up) up ;;
  down) down ;;
  env) cat "$D/env.sh" ;;
  *) echo "usage: registry.sh up|down|env" >&2; exit 2 ;;
esac
