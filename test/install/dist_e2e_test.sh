#!/usr/bin/env bash
# dist_release_archive_e2e_test (e2e, fixture dockerd): the kubectl plugin's release archive
# (hack/dist.sh, make dist) runs on a machine that has glibc and nothing else of this project's
# Debian libraries. The archive is written twice (the same checksum both times), its .sha256 and the
# krew manifest's sha256 must match it, and it must list the binary and lib/. Then a root filesystem
# holding ONLY the host's glibc files (the sonames dist.sh leaves out) and the extracted archive is
# `docker import`ed and `kubectl-ayatori version --client` and `--help` (through a symbolic link, as
# krew installs it) run in it (network none).
# The control: the same root filesystem without lib/ must fail to start, so the first run proves
# that lib/ and the rpath are what made it work.
set -euo pipefail

SRC=${AYATORI_SOURCE_DIR:?AYATORI_SOURCE_DIR is not set (CTest sets it)}
BIN_DIR=${AYATORI_BINARY_DIR:?AYATORI_BINARY_DIR is not set (CTest sets it)}
PLUGIN=$BIN_DIR/cmd/kubectl-ayatori/kubectl-ayatori

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
pass() { printf 'ok: %s\n' "$*"; }

[ -x "$PLUGIN" ] || fail "$PLUGIN is missing: cmake --build $BIN_DIR --target kubectl-ayatori"
# shellcheck disable=SC1090
source <("$SRC/hack/dockerd.sh" env)
[ -n "${DOCKER_HOST:-}" ] || fail "hack/dockerd.sh env set no DOCKER_HOST (is the dockerd fixture up?)"

TMP=$(mktemp -d)
IMAGES=()
cleanup() {
  local image
  for image in "${IMAGES[@]}"; do docker rmi -f "$image" >/dev/null 2>&1 || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

version=$("$SRC/hack/image.sh" version)
arch=$(dpkg --print-architecture)
name=kubectl-ayatori_${version}_linux_${arch}

# The archive, twice: the same binary must give the same bytes. A copy of the binary, so that a
# build relinking it meanwhile cannot make the two differ.
cp "$PLUGIN" "$TMP/kubectl-ayatori"
PLUGIN=$TMP/kubectl-ayatori
for out in out1 out2; do
  AYATORI_PLUGIN_BINARY=$PLUGIN "$SRC/hack/dist.sh" "$TMP/$out"
done
archive=$TMP/out1/$name.tar.gz
[ -f "$archive" ] || fail "hack/dist.sh wrote no $name.tar.gz: $(ls "$TMP/out1")"
(cd "$TMP/out1" && sha256sum --check --strict "$name.tar.gz.sha256") || fail "$name.tar.gz.sha256 does not match the archive"
sum=$(sha256sum "$archive" | cut -d' ' -f1)
sum2=$(sha256sum "$TMP/out2/$name.tar.gz" | cut -d' ' -f1)
[ "$sum" = "$sum2" ] || fail "two runs of hack/dist.sh on the same binary gave $sum and $sum2"
pass "the archive's checksum matches its .sha256 and is the same on a second run ($sum)"

manifest=$TMP/out1/ayatori.yaml
manifest_sum=$(python3 -c 'import sys, yaml
m = yaml.safe_load(open(sys.argv[1]))
assert m["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2" and m["kind"] == "Plugin", m
assert m["metadata"]["name"] == "ayatori" and m["spec"]["version"] == "v" + sys.argv[2], m
[p] = m["spec"]["platforms"]
assert p["bin"] == "kubectl-ayatori" and p["selector"]["matchLabels"] == {"os": "linux", "arch": sys.argv[3]}, p
assert p["uri"].endswith("/" + sys.argv[4] + ".tar.gz"), p["uri"]
print(p["sha256"])' "$manifest" "$version" "$arch" "$name") || fail "the krew manifest $manifest is not as expected"
[ "$manifest_sum" = "$sum" ] || fail "the krew manifest's sha256 is $manifest_sum, the archive's $sum"
pass "the krew manifest names the archive, its version and its sha256"

listing=$(tar -tzf "$archive")
for entry in ./kubectl-ayatori ./lib/ ./lib/libcurl.so.4 ./lib/libstdc++.so.6 ./lib/libyaml-cpp.so.0.7 ./README.txt; do
  grep -qxF "$entry" <<<"$listing" || fail "the archive does not list $entry: $listing"
done
mapfile -t glibc < <("$SRC/hack/dist.sh" glibc-sonames)
for soname in "${glibc[@]}"; do
  if grep -qxF "./lib/$soname" <<<"$listing"; then fail "the archive bundles glibc's $soname"; fi
done
pass "the archive lists kubectl-ayatori, lib/ ($(grep -c '^\./lib/.' <<<"$listing") libraries) and no glibc library"

# The root filesystem: glibc's files copied from the host at their paths (the loader at the binary's
# PT_INTERP path, the libraries from the directory the plugin's libc.so.6 is loaded from, which the
# loader searches by default), nothing else of the host.
LIBC=$(ldd "$PLUGIN" | awk '$1 == "libc.so.6" && $2 == "=>" {print $3}')
[ -f "$LIBC" ] || fail "ldd names no libc.so.6 for $PLUGIN"
rootfs() {
  local r=$1 soname libdir interp
  mkdir -p "$r/opt/ayatori"
  interp=$(patchelf --print-interpreter "$PLUGIN")
  mkdir -p "$r$(dirname "$interp")"
  cp -L "$interp" "$r$interp"
  libdir=$(dirname "$LIBC")
  mkdir -p "$r$libdir"
  for soname in "${glibc[@]}"; do
    # Absent ones (the other architecture's loader, linux-vdso, which the kernel maps) are skipped.
    [ -e "$libdir/$soname" ] && cp -L "$libdir/$soname" "$r$libdir/$soname"
  done
  tar -xzf "$archive" -C "$r/opt/ayatori"
  # As README.txt and krew install it: a symbolic link on PATH to the binary next to lib/.
  mkdir -p "$r/usr/local/bin"
  ln -s /opt/ayatori/kubectl-ayatori "$r/usr/local/bin/kubectl-ayatori"
}

# import_rootfs TAG DIR: sets image (not run in a $(...) subshell, so IMAGES reaches cleanup).
import_rootfs() {
  image=ayatori-dist-test:$1-$$
  IMAGES+=("$image")
  tar --numeric-owner -C "$2" -c . | docker import - "$image" >/dev/null
}

rootfs "$TMP/root"
import_rootfs full "$TMP/root"
[ -z "$(find "$TMP/root" -name 'libstdc++*' -not -path '*/opt/ayatori/*')" ] ||
  fail "the root filesystem has a libstdc++ outside the archive"

got=$(docker run --rm --network none "$image" /opt/ayatori/kubectl-ayatori version --client 2>&1) ||
  fail "kubectl-ayatori version --client failed in the glibc-only image: $got"
grep -q "^Client Version: $version" <<<"$got" || fail "version --client printed '$got', not 'Client Version: $version'"
pass "version --client in the glibc-only image: $got"

got=$(docker run --rm --network none "$image" /usr/local/bin/kubectl-ayatori --help 2>&1) ||
  fail "kubectl-ayatori --help (through the symbolic link /usr/local/bin/kubectl-ayatori) failed in the glibc-only image: $got"
grep -q "version" <<<"$got" || fail "--help does not name the version command: $got"
pass "--help exits 0 in the glibc-only image, run through a symbolic link"

# The control: without lib/ the loader cannot find libcurl and the rest.
rm -rf "$TMP/root/opt/ayatori/lib"
import_rootfs nolib "$TMP/root"
if got=$(docker run --rm --network none "$image" /opt/ayatori/kubectl-ayatori version --client 2>&1); then
  fail "kubectl-ayatori started without lib/ (the image is not glibc-only): $got"
fi
grep -q "error while loading shared libraries" <<<"$got" ||
  fail "without lib/ the run failed, but not for a missing library: $got"
pass "without lib/ it does not start: $got"

cleanup
IMAGES=()
left=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep -c "^ayatori-dist-test:.*-$$\$" || true)
[ "$left" = 0 ] || fail "$left of the test's images are left in the engine"
pass "the test's images are removed"
