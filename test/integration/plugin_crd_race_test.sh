#!/usr/bin/env bash
# integration_plugin_crd_race_test: `kubectl ayatori run` right after `kubectl apply` of the CRDs
# and the Job cleanup finalizer policy (issue 33), on a new control plane each round: the first
# run of a fresh install, as `make demo-install` met it.
#
# Each round starts its own kube-apiserver + etcd (hack/testenv/testenv.sh, in a directory of this
# build tree: the CRDs must be new, and the other tests' apiserver keeps its own), applies
# config/crd and config/finalizer-policy, then at once:
#   1. kubectl create of a Job (a server-side dry run): refusals are counted; the kind must have
#      been not served (404, or 503 "Resource kind ... not found") in at least one round, or this
#      test reproduces nothing;
#   2. kubectl-ayatori run: must create the Job every round (it retries while the CRD settles) and
#      name nothing else on stderr.
#   PLUGIN_CRD_RACE_ROUNDS=6   rounds (kubectl met the race in 2 of 3 rounds when measured)
#   KUBECTL_AYATORI            another plugin binary (e.g. an older build, to see it fail)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${AYATORI_BINARY_DIR:?AYATORI_BINARY_DIR is not set: run this through ctest}"
PLUGIN=${KUBECTL_AYATORI:-$AYATORI_BINARY_DIR/cmd/kubectl-ayatori/kubectl-ayatori}
[ -x "$PLUGIN" ] || { echo "FAIL: $PLUGIN is not built" >&2; exit 1; }
ROUNDS=${PLUGIN_CRD_RACE_ROUNDS:-6}
export TESTENV_DIR=$AYATORI_BINARY_DIR/run/plugin-crd-race
fail() { echo "FAIL: $*" >&2; exit 1; }

down() { "$ROOT/hack/testenv/testenv.sh" down >/dev/null 2>&1 || true; }
trap down EXIT

job() {
  printf 'apiVersion: execution.ayatori.ddupan.top/v1alpha1\nkind: Job\nmetadata: {name: race-%s, namespace: default}\nspec: {task: {image: busybox}}\n' "$1"
}

mkdir -p "$AYATORI_BINARY_DIR/run"
unserved=0
for i in $(seq 1 "$ROUNDS"); do
  down
  "$ROOT/hack/testenv/testenv.sh" up api >"$AYATORI_BINARY_DIR/run/plugin-crd-race.log" 2>&1 ||
    { cat "$AYATORI_BINARY_DIR/run/plugin-crd-race.log" >&2; fail "round $i: the control plane did not start"; }
  # shellcheck disable=SC1091
  source "$TESTENV_DIR/env.sh"
  kubectl=$TESTENV_BIN/kubectl
  "$kubectl" apply -f "$ROOT/config/crd/" -f "$ROOT/config/finalizer-policy/job-cleanup-finalizer.yaml" >/dev/null
  # 1. kubectl, at once.
  if out=$(job "k$i" | "$kubectl" create --dry-run=server -o name -f - 2>&1); then
    echo "round $i: kubectl create right after apply: created"
  else
    case $out in
      *"Resource kind"*"not found"* | *"could not find the requested resource"* | *"no matches for kind"* | *"NotFound"*)
        unserved=$((unserved + 1)) ;;
    esac
    echo "round $i: kubectl create right after apply: $out"
  fi
  # 2. The plugin, at once.
  start=$(date +%s.%N)
  rc=0
  err=$("$PLUGIN" run "p$i" -n default --image busybox -- true 2>&1 >/dev/null) || rc=$?
  took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  [ "$rc" -eq 0 ] || fail "round $i: kubectl-ayatori run right after apply exited $rc: $err"
  [ -z "$err" ] || fail "round $i: kubectl-ayatori run printed on stderr: $err"
  "$kubectl" get -n default ajob "p$i" -o name >/dev/null || fail "round $i: the plugin's Job is not there"
  echo "round $i: kubectl-ayatori run right after apply: created in $took s"
done
echo "the kind was not yet served to kubectl in $unserved of $ROUNDS rounds; kubectl-ayatori run created its Job in all"
[ "$unserved" -gt 0 ] ||
  fail "kubectl created its Job right after apply in all $ROUNDS rounds: the race was not reproduced"
