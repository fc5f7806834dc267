#!/usr/bin/env bash
# Runs sdk_check.py (the official Python SDK) against the OpenSandbox test stack that the CTest
# fixture "opensandbox" started (hack/opensandbox/opensandbox.sh up; $AYATORI_OPENSANDBOX_DIR).
set -euo pipefail
env_file=${AYATORI_OPENSANDBOX_DIR:?}/env.sh
[ -f "$env_file" ] || { echo "sdk_check.sh: $env_file is missing: the opensandbox fixture is not up" >&2; exit 1; }
# shellcheck disable=SC1090
. "$env_file"
export AYATORI_OSB_EXCLUSIVE=1
exec "$AYATORI_OSB_VENV/bin/python" "$(dirname "${BASH_SOURCE[0]}")/sdk_check.py"
