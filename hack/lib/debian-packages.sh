# Sourced by hack/image.sh and hack/dist.sh, which both ship Debian's shared libraries: which package
# a library comes from, and that package's copyright file (the licence the copy must carry).

# debian_package_of PATH: the package that installed PATH (symbolic links followed), or nothing.
debian_package_of() {
  local pkg real
  real=$(readlink -f "$1")
  # dpkg knows the path the package installed, which on a merged-/usr system may be /usr/lib/...
  pkg=$(dpkg -S "$1" 2>/dev/null || dpkg -S "$real" 2>/dev/null || dpkg -S "/usr$1" 2>/dev/null ||
    dpkg -S "${real#/usr}" 2>/dev/null || true)
  echo "${pkg%%:*}"
}

# debian_licences DOCDIR LIST PKG...: each package's copyright file as DOCDIR/PKG/copyright, and
# LIST, which package versions they are (an inventory for scanners and for anyone asking).
debian_licences() {
  local doc=$1 list=$2 pkg pkgs
  shift 2
  mapfile -t pkgs < <(printf '%s\n' "$@" | sort -u)
  for pkg in "${pkgs[@]}"; do
    if [ -f "/usr/share/doc/$pkg/copyright" ]; then
      mkdir -p "$doc/$pkg"
      cp "/usr/share/doc/$pkg/copyright" "$doc/$pkg/"
    fi
  done
  mkdir -p "$(dirname "$list")"
  dpkg-query -W -f='${binary:Package} ${Version}\n' "${pkgs[@]}" >"$list"
}
