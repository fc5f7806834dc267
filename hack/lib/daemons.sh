# Sourced by hack/testenv/testenv.sh and hack/testenv/realnode.sh: the daemons they start in the
# background, each with its pid in $DAEMON_DIR/pids/NAME and its output in $DAEMON_DIR/logs/NAME.log.
# The sourcing script sets DAEMON_DIR and defines log.

# port: a free TCP port on 127.0.0.1.
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# start NAME CMD...: CMD in a session of its own, detached from the script's terminal.
start() {
  local n=$1
  shift
  setsid nohup "$@" >"$DAEMON_DIR/logs/$n.log" 2>&1 </dev/null &
  echo $! >"$DAEMON_DIR/pids/$n"
}

# stop_pid NAME [--kill]: TERM (KILL after 10 s), or KILL at once; forgets the pid.
stop_pid() {
  local n=$1 p i
  [ -f "$DAEMON_DIR/pids/$n" ] || return 0
  p=$(cat "$DAEMON_DIR/pids/$n")
  if [ "${2:-}" = --kill ]; then
    kill -KILL "$p" 2>/dev/null || true
  else
    kill -TERM "$p" 2>/dev/null || true
  fi
  for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$p" 2>/dev/null || true
  for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  rm -f "$DAEMON_DIR/pids/$n"
}

# wait_until NAME SECONDS CMD...: CMD succeeds within SECONDS while NAME's process lives;
# otherwise the last lines of NAME's log, and status 1.
wait_until() {
  local n=$1 s=$2 i
  shift 2
  for i in $(seq $((s * 5))); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$(cat "$DAEMON_DIR/pids/$n")" 2>/dev/null || break
    sleep 0.2
  done
  log "$n: not ready after ${s}s; last lines of its log ($DAEMON_DIR/logs/$n.log):"
  tail -n 40 "$DAEMON_DIR/logs/$n.log" >&2
  return 1
}
