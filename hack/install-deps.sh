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
  # build (gtest and gmock too: the CMake configuration requires them)
  cmake ninja-build g++ pkg-config ccache
  # libraries (Debian -dev packages, no vendored copies)
  libcurl4-openssl-dev zlib1g-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  libcpp-httplib-dev libmicrohttpd-dev
  libgtest-dev libgmock-dev
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
    # the real node of the Kubernetes backend's tests (hack/testenv/realnode.sh): its runtime,
    # OCI runtime and pod network (bridge + host-local)
    containerd runc containernetworking-plugins
    # the Helm chart's files and tests (hack/chart-files.py, test/install/helm_chart_test.py)
    python3-yaml
    # the plugin's completion tests (test/kubectl-ayatori/shell_completion.cc) run each shell
    zsh fish
    # the web view's browser tests (test/ui): Debian's browser, driven by playwright-core from npm
    # (node and npm come with the machine, as Go does)
    chromium
    # the plugin's release archive (make dist, hack/dist.sh): the rpath $ORIGIN/lib of the binary
    # and its libraries
    patchelf
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
