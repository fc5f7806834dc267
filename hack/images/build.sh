#!/usr/bin/env bash
# Builds the local test images into the dockerd at $DOCKER_HOST, without any registry (none is
# reachable): `docker import` of a root filesystem holding Debian's busybox-static. Idempotent: an
# image that already exists is left alone (bump the tag when the recipe changes).
#
#   ayatori.local/busybox:1  /bin/busybox + a symlink per applet (sh, echo, sleep, env, cat, wget,
#                            nc, dd, head, ...), CMD ["/bin/sh"]
#   ayatori.local/argv:1     the same files with ENTRYPOINT ["/bin/echo", "image-entrypoint"] and
#                            CMD ["image-cmd"], to test that task.command replaces the entrypoint
#                            and task.args replaces the CMD
#
# Other scripts reuse the root filesystem: `build.sh rootfs DIR` writes it into DIR, and
# `build.sh archive NAME FILE CONFIG` writes it as a one-layer docker-archive tarball (what
# `docker save` writes, which `ctr images import` loads) named NAME, whose image config is the JSON
# object CONFIG (e.g. {"Cmd":["/bin/sh"],"Env":["PATH=/bin"]}): the real node's images
# (hack/testenv/realnode.sh), made without a dockerd.
set -euo pipefail

BUSYBOX=${BUSYBOX:-/bin/busybox}

log() { printf 'images/build.sh: %s\n' "$*" >&2; }

rootfs() {
  local r=$1 a
  [ -x "$BUSYBOX" ] || { log "$BUSYBOX is missing (hack/install-deps.sh installs busybox-static)"; exit 1; }
  if ldd "$BUSYBOX" >/dev/null 2>&1; then
    log "$BUSYBOX is dynamically linked; the images need busybox-static"
    exit 1
  fi
  mkdir -p "$r"/{bin,etc,tmp,root,proc,sys,dev,home}
  chmod 1777 "$r/tmp"
  cp "$BUSYBOX" "$r/bin/busybox"
  for a in $("$BUSYBOX" --list); do
    [ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
}

import() {
  local name=$1 tmp
  shift
  if docker image inspect "$name" >/dev/null 2>&1; then
    return 0
  fi
  tmp=$(mktemp -d)
  rootfs "$tmp/root"
  tar --numeric-owner --owner=0 --group=0 -C "$tmp/root" -c . |
    docker import --change 'ENV PATH=/bin' "$@" - "$name" >/dev/null
  rm -rf "$tmp"
  log "built $name"
}

archive() {
  local name=$1 out=$2 config=$3 tmp diff cfg
  tmp=$(mktemp -d)
  rootfs "$tmp/root"
  mkdir -p "$tmp/image" "$(dirname "$out")"
  tar --numeric-owner --owner=0 --group=0 -C "$tmp/root" -cf "$tmp/image/layer.tar" .
  diff=$(sha256sum "$tmp/image/layer.tar" | cut -d' ' -f1)
  printf '{"architecture":"amd64","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$config" "$diff" >"$tmp/image/config.json"
  cfg=$(sha256sum "$tmp/image/config.json" | cut -d' ' -f1)
  mv "$tmp/image/config.json" "$tmp/image/$cfg.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$cfg" "$name" \
    >"$tmp/image/manifest.json"
  tar -C "$tmp/image" -cf "$out" manifest.json "$cfg.json" layer.tar
  rm -rf "$tmp"
}

case ${1:-all} in
  rootfs) rootfs "$2" ;;
  archive) archive "$2" "$3" "$4" ;;
  all)
    [ -n "${DOCKER_HOST:-}" ] || { log "DOCKER_HOST is not set (source the env.sh of hack/dockerd.sh up)"; exit 1; }
    import ayatori.local/busybox:1 --change 'CMD ["/bin/sh"]'
    import ayatori.local/argv:1 --change 'ENTRYPOINT ["/bin/echo", "image-entrypoint"]' \
      --change 'CMD ["image-cmd"]'
    ;;
  *) echo "usage: build.sh [all] | rootfs DIR | archive NAME FILE CONFIG" >&2; exit 2 ;;
esac
