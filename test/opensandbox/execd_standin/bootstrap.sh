#!/bin/sh
# The execd stand-in image's /bootstrap.sh. opensandbox-server copies it (with the image's
# /execd) into every sandbox as /opt/opensandbox/bootstrap.sh and makes it the container's
# entrypoint, with the sandbox's requested entrypoint as arguments. Same contract as the real
# image's script (docs/opensandbox.md § execd stand-in): start execd in the background, then run
#   $BOOTSTRAP_CMD with sh -c, if set; else
#   "-c TEXT" as sh -c TEXT; else
#   an idle wait when there are no arguments; else
#   the arguments as a command,
# in the background; SIGTERM is forwarded to it (then exit 0); otherwise the script exits with
# its exit code, so the sandbox ends when its entrypoint ends.
EXECD=${EXECD:-/opt/opensandbox/execd}
EXECD_ENVS=${EXECD_ENVS:-/opt/opensandbox/.env}
mkdir -p "$(dirname "$EXECD_ENVS")" 2>/dev/null || echo "warning: cannot create the directory of EXECD_ENVS=$EXECD_ENVS" >&2
[ -e "$EXECD_ENVS" ] || : >"$EXECD_ENVS" 2>/dev/null || echo "warning: cannot create EXECD_ENVS=$EXECD_ENVS" >&2
export EXECD_ENVS
if [ -n "${EXECD_BOOTSTRAP_PRE_SCRIPT:-}" ]; then
  # shellcheck disable=SC1090
  . "$EXECD_BOOTSTRAP_PRE_SCRIPT"
fi

"$EXECD" &

if command -v bash >/dev/null 2>&1; then SHELL_BIN=bash; else SHELL_BIN=sh; fi
if [ -n "${BOOTSTRAP_CMD:-}" ]; then
  "$SHELL_BIN" -c "$BOOTSTRAP_CMD" &
elif [ "${1:-}" = "-c" ]; then
  shift
  "$SHELL_BIN" -c "$*" &
elif [ $# -eq 0 ]; then
  while :; do sleep 3600; done &
else
  "$@" &
fi
child=$!
trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit 0' TERM
wait "$child"
exit $?
