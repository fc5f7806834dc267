#!/usr/bin/env bash
# The kubectl plugin's release archive (docs/kubectl-ayatori.md, "Install"): a tar.gz that runs on a
# Linux machine without this project's Debian libraries. It holds the stripped kubectl-ayatori,
# lib/ with every shared library it loads except glibc's own (the machine's glibc is used: it must
# be at least the build machine's), the Debian copyright files of those libraries and a README.txt.
# The binary finds lib/ through DT_RPATH $ORIGIN/lib (an RPATH, not a RUNPATH: it applies to the
# libraries' own dependencies too); each library has RUNPATH $ORIGIN as well.
#
#   dist.sh [OUTDIR]        build the plugin (cmake --build, nice) and write into OUTDIR (default
#                           dist/release): kubectl-ayatori_<version>_linux_<arch>.tar.gz, its
#                           .sha256 (sha256sum format) and ayatori.yaml, the krew manifest
#                           (plugins/ayatori.yaml) with the archive's version and sha256
#   dist.sh glibc-sonames   print the sonames left out of lib/ (test/install/dist_e2e_test.sh
#                           copies exactly these from the host)
#
# AYATORI_BUILD_DIR (default build/) is the configured CMake tree (make configure).
# AYATORI_PLUGIN_BINARY: package this binary and build nothing (the test's CTest run must not start
# a build in the tree it runs from). The archive is reproducible for the same binary at the same
# commit: names sorted, owner 0, modes fixed, every mtime the commit's time (SOURCE_DATE_EPOCH if
# set), gzip without a name or time stamp.
set -euo pipefail

H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$H/.." && pwd)

# shellcheck source=hack/lib/debian-packages.sh
source "$H/lib/debian-packages.sh"

log() { printf 'dist.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# glibc's libraries: ABI-bound to the loader and the kernel interface of the machine that runs the
# plugin, so they come from that machine, never from the archive.
GLIBC_SONAMES=(linux-vdso.so.1 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1 libc.so.6 libm.so.6
  libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 libutil.so.1 libanl.so.1)

is_glibc() {
  local s
  for s in "${GLIBC_SONAMES[@]}"; do [ "$1" = "$s" ] && return 0; done
  return 1
}

# The plugin's `version` prints the same: project(ayatori VERSION ...) of CMakeLists.txt.
version() { "$H/image.sh" version; }

# The glibc of this machine, which README.txt names as the minimum.
glibc_version() { ldd --version | sed -n '1s/.* \([0-9][0-9]*\.[0-9][0-9]*\)$/\1/p'; }

stage() {
  local bin=$1 r=$2 glibc=$3 soname path pkg pkgs=() n=0
  rm -rf "$r"
  mkdir -p "$r/lib" "$r/licenses"
  # Debug information is most of the binary's size; a debugger can use the build tree's copy.
  strip --strip-unneeded -o "$r/kubectl-ayatori" "$bin"
  patchelf --force-rpath --set-rpath '$ORIGIN/lib' "$r/kubectl-ayatori"

  if ldd "$bin" | grep -q 'not found'; then
    ldd "$bin" | grep 'not found' >&2
    die "$bin needs libraries that are not installed"
  fi
  # "soname => /path (addr)" lines; the loader's own line has no "=>" and is glibc's.
  while read -r soname path; do
    is_glibc "$soname" && continue
    [ -f "$path" ] || die "ldd names $path for $soname, which is not a file"
    cp -L "$path" "$r/lib/$soname"
    patchelf --set-rpath '$ORIGIN' "$r/lib/$soname"
    pkg=$(debian_package_of "$path")
    [ -n "$pkg" ] || die "no Debian package owns $path: its licence cannot be shipped"
    pkgs+=("$pkg")
    n=$((n + 1))
  done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
  [ "$n" -gt 0 ] || die "ldd found no libraries to bundle for $bin"

  # The licences of what the archive ships, and which package versions they are.
  debian_licences "$r/licenses" "$r/licenses/packages.txt" "${pkgs[@]}"
  [ -f "$ROOT/LICENSE" ] && cp "$ROOT/LICENSE" "$r/LICENSE"

  cat >"$r/README.txt" <<EOF
kubectl-ayatori $(version): the kubectl plugin of Ayatori (docs/kubectl-ayatori.md).

Install: extract this archive into a directory of its own and put kubectl-ayatori on PATH, e.g.

  mkdir -p ~/.local/lib/kubectl-ayatori
  tar -xzf kubectl-ayatori_$(version)_linux_<arch>.tar.gz -C ~/.local/lib/kubectl-ayatori
  ln -s ~/.local/lib/kubectl-ayatori/kubectl-ayatori ~/.local/bin/kubectl-ayatori
  kubectl ayatori version --client

Keep lib/ next to the binary: kubectl-ayatori loads its libraries from there (rpath \$ORIGIN/lib;
a symbolic link to the binary works). With krew: kubectl krew install --manifest=ayatori.yaml.

Requirements: Linux with glibc $glibc or newer (the build machine's: Debian 12 has 2.36). Only
glibc (libc, libm, libpthread, libdl, librt, libresolv, the loader) comes from the machine; lib/
holds everything else (libstdc++, libgcc_s, libcurl and its dependencies, OpenSSL, yaml-cpp).
TLS to the API server uses the CA of the kubeconfig; the bundled libcurl's default CA file is
/etc/ssl/certs/ca-certificates.crt.

licenses/ holds the Debian copyright file of each library in lib/ and packages.txt, the Debian
package versions they come from.
EOF

  find "$r" -type d -exec chmod 0755 {} +
  find "$r" -type f -exec chmod 0644 {} +
  chmod 0755 "$r/kubectl-ayatori"
}

dist() {
  local out=${1:-$ROOT/dist/release} build=${AYATORI_BUILD_DIR:-$ROOT/build} bin v arch name epoch sum glibc
  command -v patchelf >/dev/null || die "patchelf is missing (hack/install-deps.sh installs it)"
  command -v ldd >/dev/null || die "ldd is missing (Debian package libc-bin)"
  if [ -n "${AYATORI_PLUGIN_BINARY:-}" ]; then
    bin=$AYATORI_PLUGIN_BINARY
    [ -x "$bin" ] || die "AYATORI_PLUGIN_BINARY=$bin is not an executable file"
  else
    [ -f "$build/CMakeCache.txt" ] || die "$build is not a configured build tree: run make configure"
    nice -n 5 cmake --build "$build" --target kubectl-ayatori >&2
    bin=$build/cmd/kubectl-ayatori/kubectl-ayatori
    [ -x "$bin" ] || die "$bin was not built"
  fi
  v=$(version)
  arch=$(dpkg --print-architecture)
  name=kubectl-ayatori_${v}_linux_${arch}
  epoch=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)}

  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  TMP_DIR=$(mktemp -d)
  trap 'rm -rf "$TMP_DIR"' EXIT
  glibc=$(glibc_version)
  [ -n "$glibc" ] || die "could not read glibc's version from ldd --version"
  stage "$bin" "$TMP_DIR/root" "$glibc"
  tar --sort=name --format=gnu --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -C "$TMP_DIR/root" -c . | gzip -n -9 >"$out/$name.tar.gz"
  (cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
  sum=$(cut -d' ' -f1 "$out/$name.tar.gz.sha256")
  # The template's leading comment is about the template; the copy says where it comes from.
  {
    echo "# Written by hack/dist.sh from plugins/ayatori.yaml for $name.tar.gz."
    sed -e '/^#/d' -e "s/@VERSION@/$v/g" -e "s/@ARCH@/$arch/g" -e "s/@SHA256@/$sum/g" \
      -e "s/@GLIBC@/$glibc/g" "$ROOT/plugins/ayatori.yaml"
  } >"$out/ayatori.yaml"
  grep -q '@[A-Z0-9]*@' "$out/ayatori.yaml" && die "plugins/ayatori.yaml has a placeholder dist.sh does not fill"
  log "wrote $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1)), $name.tar.gz.sha256, ayatori.yaml"
}

case "${1:-}" in
  glibc-sonames) printf '%s\n' "${GLIBC_SONAMES[@]}" ;;
  -h | --help) sed -n '2,20p' "$0" ;;
  *) dist "$@" ;;
esac
