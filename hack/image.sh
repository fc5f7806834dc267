#!/usr/bin/env bash
# The controller image, built offline: no base image is pulled. The root filesystem holds the
# stripped ayatori-controller binary, the shared libraries it loads (found with ldd, copied from
# the Debian packages that own them, with those packages' copyright files), the CA bundle of
# Debian's ca-certificates, and /etc/passwd + /etc/group naming the non-root user 65532. There is no
# shell and no other program. `docker import` turns it into an image in the dockerd at DOCKER_HOST.
#
#   image.sh build [BINARY]   build IMAGE (default ayatori/controller:<version>) into $DOCKER_HOST;
#                             BINARY defaults to build/cmd/ayatori-controller/ayatori-controller
#   image.sh rootfs DIR [BINARY]   only write the root filesystem into DIR
#   image.sh name             print the image name
#   image.sh version          print the version (project(... VERSION) of CMakeLists.txt)
#
# DOCKER_HOST unset: the project's dockerd (hack/dockerd.sh up, started if needed) is used.
# The image's size is printed; a size of 50 MB or more fails the build.
set -euo pipefail

H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$H/.." && pwd)
MAX_BYTES=$((50 * 1000 * 1000))
UID_NONROOT=65532

# shellcheck source=hack/lib/debian-packages.sh
source "$H/lib/debian-packages.sh"

log() { printf 'image.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

version() {
  local v
  v=$(sed -n 's/^project(ayatori VERSION \([0-9][0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
  [ -n "$v" ] || die "no 'project(ayatori VERSION x.y.z' line in $ROOT/CMakeLists.txt"
  echo "$v"
}

name() { echo "${AYATORI_IMAGE:-ayatori/controller:$(version)}"; }

default_binary() { echo "${AYATORI_BUILD_DIR:-$ROOT/build}/cmd/ayatori-controller/ayatori-controller"; }

# copy_file SRC DIR: SRC (symlinks followed) to DIR$SRC, keeping its path.
copy_file() {
  mkdir -p "$2$(dirname "$1")"
  cp -L "$1" "$2$1"
}

rootfs() {
  local r=$1 bin=${2:-$(default_binary)} libs lib pkg pkgs=()
  [ -x "$bin" ] || die "$bin is missing: build it first (cmake --build build --target ayatori-controller)"
  command -v ldd >/dev/null || die "ldd is missing (Debian package libc-bin)"
  [ -f /etc/ssl/certs/ca-certificates.crt ] ||
    die "/etc/ssl/certs/ca-certificates.crt is missing (Debian package ca-certificates)"
  rm -rf "$r"
  mkdir -p "$r"/{etc/ssl/certs,tmp,home/nonroot,usr/share/doc}
  chmod 1777 "$r/tmp"
  # Debug information is most of the binary's size; a debugger can use the build tree's copy.
  strip --strip-unneeded -o "$r/ayatori-controller" "$bin"
  chmod 0755 "$r/ayatori-controller"

  # Every library the dynamic loader resolves (and the loader itself), at the path ldd names: the
  # loader's default search path covers them, so the image needs no ld.so.cache.
  libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
  [ -n "$libs" ] || die "ldd found no libraries for $bin (a static binary needs none: remove this check)"
  if ldd "$bin" | grep -q 'not found'; then
    ldd "$bin" | grep 'not found' >&2
    die "$bin needs libraries that are not installed"
  fi
  for lib in $libs; do
    copy_file "$lib" "$r"
    pkg=$(debian_package_of "$lib")
    [ -n "$pkg" ] || die "no Debian package owns $lib"
    pkgs+=("$pkg")
  done
  # glibc resolves host names and users through NSS; since glibc 2.34 the "files" and "dns" modules
  # are inside libc itself, so no libnss_*.so is needed.

  # Licences of what the image ships, and which package versions they are (an inventory for
  # scanners and for anyone asking what is inside).
  debian_licences "$r/usr/share/doc" "$r/usr/share/ayatori/packages.txt" "${pkgs[@]}" ca-certificates

  cp -L /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/ca-certificates.crt"
  # No login shell exists in the image; /sbin/nologin is named for tools that read passwd.
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/sbin/nologin\n' \
    "$UID_NONROOT" "$UID_NONROOT" >"$r/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\nnonroot:x:%s:\n' "$UID_NONROOT" >"$r/etc/group"
  chown "$UID_NONROOT:$UID_NONROOT" "$r/home/nonroot"
  printf 'hosts: files dns\n' >"$r/etc/nsswitch.conf"
}

use_project_dockerd() {
  [ -n "${DOCKER_HOST:-}" ] && return 0
  log "DOCKER_HOST is not set: using the project's dockerd (hack/dockerd.sh up)"
  AYATORI_DOCKERD_SKIP_IMAGES=1 "$H/dockerd.sh" up
  # shellcheck disable=SC1090
  source <("$H/dockerd.sh" env)
}

build() {
  local bin=${1:-$(default_binary)} image size v
  command -v docker >/dev/null || die "docker (the CLI) is missing (hack/install-deps.sh installs docker.io)"
  use_project_dockerd
  image=$(name)
  v=$(version)
  TMP_DIR=$(mktemp -d)
  trap 'rm -rf "$TMP_DIR"' EXIT
  rootfs "$TMP_DIR/root" "$bin"
  # A fixed mtime and order keep the layer the same for the same inputs.
  tar --numeric-owner --sort=name --mtime=@0 -C "$TMP_DIR/root" -c . |
    docker import \
      --change "ENTRYPOINT [\"/ayatori-controller\"]" \
      --change "USER $UID_NONROOT:$UID_NONROOT" \
      --change "WORKDIR /home/nonroot" \
      --change "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
      --change "EXPOSE 8080" \
      --change "LABEL org.opencontainers.image.title=ayatori-controller" \
      --change "LABEL org.opencontainers.image.version=$v" \
      --change "LABEL org.opencontainers.image.revision=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" \
      - "$image" >/dev/null
  size=$(docker image inspect -f '{{.Size}}' "$image")
  log "built $image in $DOCKER_HOST: $size bytes ($((size / 1000000)) MB)"
  if [ "$size" -ge "$MAX_BYTES" ]; then
    die "$image is $size bytes, over the limit of $MAX_BYTES"
  fi
}

case ${1:-build} in
  build) build "${2:-}" ;;
  rootfs) [ -n "${2:-}" ] || die "usage: image.sh rootfs DIR [BINARY]"; rootfs "$2" "${3:-}" ;;
  name) name ;;
  version) version ;;
  *) echo "usage: image.sh build [BINARY] | rootfs DIR [BINARY] | name | version" >&2; exit 2 ;;
esac
