#!/usr/bin/env bash
# Installs every Debian package Ayatori needs to build, test and run its demo. Idempotent: packages
# already present are not reinstalled and `apt-get update` runs at most once per invocation, only
# when something is missing. Runs as root (no sudo); Go comes with the machine (see README).
#
#   install-deps.sh        everything: build, tests, sanitizers, fuzzing, formatting, the demos
#   install-deps.sh demo   only what `make demo` needs (no clang/LLVM, clang-format, clang-tidy,
#                          registry or venv: several hundred MB less on a fresh machine)
set -euo pipefail
PACKAGES=(
  # build (gtest, gmock and benchmark too: the CMake configuration requires them)
  cmake ninja-build g++ pkg-config ccache
  # libraries (Debian -dev packages, no vendored copies)
  libcurl4-openssl-dev zlib1g-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libfmt-dev libcli11-dev
  libcpp-httplib-dev libmicrohttpd-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # test environment and demo
  openssl curl python3 procps busybox-static docker.io
  # the controller image (hack/image.sh): its CA bundle
  ca-certificates
)
if [ "${1:-}" != demo ]; then
  PACKAGES+=(
    # formatting and linting
    clang-format clang-tidy
    # sanitizer builds and fuzzing (clang + libFuzzer + llvm-symbolizer)
    clang-14 libclang-rt-14-dev llvm-14
    # tests only: network namespaces, the private registry with htpasswd, the OpenSandbox venv
    iproute2 docker-registry apache2-utils python3-venv
  )
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}) and not running as root; install them first" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if ! command -v go >/dev/null; then
  echo "install-deps: warning: go is not on PATH; the test control plane is built with Go >= 1.26" >&2
fi
