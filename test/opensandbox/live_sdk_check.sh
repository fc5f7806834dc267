#!/usr/bin/env bash
# Opt-in: the same SDK check (sdk_check.py) against an OpenSandbox server whose sandboxes run the
# official execd image, to find where the stand-in differs from the real daemon. Configured by
#   OPENSANDBOX_TEST_DOMAIN   host:port of the server (plain HTTP)
#   OPEN_SANDBOX_API_KEY      its API key
#   OPENSANDBOX_TEST_IMAGE    a sandbox image the server can start (default python:3.11-slim)
# Without OPENSANDBOX_TEST_DOMAIN it prints that it is not configured and exits 77, which CTest
# reports as skipped (SKIP_RETURN_CODE), never as passed. See docs/opensandbox.md.
set -euo pipefail
if [ -z "${OPENSANDBOX_TEST_DOMAIN:-}" ]; then
  echo "OpenSandbox live test: not configured (set OPENSANDBOX_TEST_DOMAIN and OPEN_SANDBOX_API_KEY)"
  exit 77
fi
: "${OPEN_SANDBOX_API_KEY:?OPENSANDBOX_TEST_DOMAIN is set but OPEN_SANDBOX_API_KEY is not}"
H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv=$("$H/../../hack/opensandbox/opensandbox.sh" venv)
# The venv only: the stand-in images are not needed here.
AYATORI_EXECD_STANDIN=/nonexistent "$H/../../hack/opensandbox/opensandbox.sh" build
export AYATORI_OSB_DOMAIN=$OPENSANDBOX_TEST_DOMAIN
export AYATORI_OSB_API_KEY=$OPEN_SANDBOX_API_KEY
export AYATORI_OSB_WORKLOAD_IMAGE=${OPENSANDBOX_TEST_IMAGE:-python:3.11-slim}
exec "$venv/bin/python" "$H/sdk_check.py"
