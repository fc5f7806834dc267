#!/usr/bin/env bash
# Installs the browser tests' npm packages (test/ui/package.json, pinned by its package-lock.json:
# playwright-core only) into a cache keyed by the lockfile's hash, and prints the node_modules
# folder. `npm ci --ignore-scripts`: no install script runs and no browser is downloaded; the
# tests drive Debian's chromium (hack/install-deps.sh).
#   hack/ui-test-deps.sh [CACHE_DIR]   default: ${XDG_CACHE_HOME:-~/.cache}/ayatori/ui-test
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/ayatori/ui-test}
hash=$(cat "$root/test/ui/package.json" "$root/test/ui/package-lock.json" | sha256sum | cut -c1-16)
dir="$cache/$hash"
if [ ! -f "$dir/.installed" ]; then
  command -v npm >/dev/null || { echo "ui-test-deps: npm is not on PATH (Node.js 18 or later)" >&2; exit 1; }
  mkdir -p "$dir"
  cp "$root/test/ui/package.json" "$root/test/ui/package-lock.json" "$dir/"
  (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund \
    --loglevel=error >&2)
  touch "$dir/.installed"
fi
echo "$dir/node_modules"
