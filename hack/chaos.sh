#!/usr/bin/env bash
# make chaos: one chaos round (test/chaos/, docs/chaos.md) on a control plane and a dockerd of its
# own, both stopped again afterwards (CHAOS_KEEP=1 leaves them running for a look).
#
#   CHAOS_JOBS=40      Jobs, half on the Docker and half on the Kubernetes backend
#   CHAOS_SEED=<n>     replay the round of that seed (the report prints it); default random
#   CHAOS_SETTLE=180   seconds the Jobs may take to finish after the last disruption
#
# The e2e tier of the test control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok) runs in $CHAOS_DIR/testenv, the dockerd in $CHAOS_DIR/dockerd, the two
# controller replicas' logs go to $CHAOS_DIR/logs. Exit code: 0 no violation, 1 violations, 2 the
# round could not run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${AYATORI_BUILD_DIR:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
DIR=${CHAOS_DIR:-/tmp/ayatori-chaos}
CHAOS=$BUILD/test/chaos/ayatori-chaos
CONTROLLER=$BUILD/cmd/ayatori-controller/ayatori-controller
export TESTENV_DIR=$DIR/testenv AYATORI_DOCKERD_DIR=$DIR/dockerd

log() { printf 'chaos.sh: %s\n' "$*" >&2; }

for b in "$CHAOS" "$CONTROLLER"; do
  [ -x "$b" ] || { log "$b is missing: run make build (make chaos builds first)"; exit 2; }
done

down() {
  if [ -n "${CHAOS_KEEP:-}" ]; then
    log "CHAOS_KEEP is set: the control plane ($TESTENV_DIR) and dockerd ($AYATORI_DOCKERD_DIR) keep running"
    log "stop them with: TESTENV_DIR=$TESTENV_DIR $ROOT/hack/testenv/testenv.sh down; AYATORI_DOCKERD_DIR=$AYATORI_DOCKERD_DIR $ROOT/hack/dockerd.sh down"
    return
  fi
  "$ROOT/hack/dockerd.sh" down || true
  "$ROOT/hack/testenv/testenv.sh" down || true
}
trap down EXIT

mkdir -p "$DIR/logs"
"$ROOT/hack/testenv/testenv.sh" up e2e
"$ROOT/hack/dockerd.sh" up

rc=0
"$CHAOS" --jobs="${CHAOS_JOBS:-40}" --seed="${CHAOS_SEED:-0}" \
  --settle-timeout="${CHAOS_SETTLE:-180}" --source-dir="$ROOT" --controller="$CONTROLLER" \
  --run-dir="$DIR/logs" || rc=$?
if [ "$rc" -ne 0 ]; then
  # The control plane's directory goes with `down`: keep its logs (audit log included).
  rm -rf "$DIR/logs/testenv" && cp -r "$TESTENV_DIR/logs" "$DIR/logs/testenv" 2>/dev/null || true
  cp "$AYATORI_DOCKERD_DIR/dockerd.log" "$DIR/logs/" 2>/dev/null || true
  log "the round failed (exit code $rc); the replicas' logs are in $DIR/logs, the control plane's in $DIR/logs/testenv"
fi
exit "$rc"
