#!/usr/bin/env bash
# integration_crd_race_test: the first-run race of the install path (issue 33), on the real
# kube-apiserver of the "apiserver" fixture.
#
# A Job created right after its CRD became Established is refused with 503 "Resource kind
# ...Kind=Job not found" while kube-apiserver's MutatingAdmissionPolicy plugin has not yet seen
# the new group-version in /openapi/v3 (it polls every 5 s); the Job cleanup finalizer policy of
# config/finalizer-policy matches every Job CREATE, so `kubectl apply -f dist/install.yaml` and a
# Job at once fail now and then (hack/wait-crds.sh says more). Each round installs the shipped Job
# CRD and that policy as they are, but renamed into a group of its own (the fixture's apiserver is
# shared with the other tests, whose CRDs must stay), then:
#   1. the old install path: `kubectl wait --for condition=established`, then a Job at once;
#      its refusals are counted: the race must show at least once in the rounds, or this test
#      reproduces nothing;
#   2. the fixed install path: hack/wait-crds.sh, then a Job: it must be admitted every round,
#      with the policy's finalizer (the policy ran).
# The Jobs are server-side dry runs (nothing to clean up but the CRDs and the policy).
#   CRD_RACE_ROUNDS=8   rounds
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${TESTENV_DIR:?TESTENV_DIR is not set: run this through ctest (fixture apiserver)}"
# shellcheck disable=SC1091
source "$TESTENV_DIR/env.sh"
export KUBECTL=$TESTENV_BIN/kubectl
ROUNDS=${CRD_RACE_ROUNDS:-8}
RUN=$$-$RANDOM
WORK=$(mktemp -d)
GROUPS_MADE=()
# What the policy adds (its finalizer keeps the shipped name in every group).
FINALIZERS='["execution.ayatori.ddupan.top/job-cleanup"]'

cleanup() {
  local g
  "$KUBECTL" delete mutatingadmissionpolicybinding,mutatingadmissionpolicy "crd-race-$RUN" \
    --ignore-not-found --wait=false >/dev/null 2>&1 || true
  for g in "${GROUPS_MADE[@]}"; do
    "$KUBECTL" delete crd "jobs.$g" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

group() { echo "r$1-$RUN.crd-race.ayatori.test"; }

# The shipped Job CRD, in group $1, without its short names and category (`kubectl get ajob` of
# the other tests on this apiserver must keep meaning the shipped CRD).
crd() {
  sed -e "s/execution\.ayatori\.ddupan\.top/$1/g" -e '/^    shortNames: /d' -e '/^    categories: /d' \
    "$ROOT/config/crd/execution.ayatori.ddupan.top_jobs.yaml" >"$WORK/crd-$1.yaml"
  echo "$WORK/crd-$1.yaml"
}

# A minimal Job of group $1, as `kubectl ayatori run` would create it.
job() {
  printf 'apiVersion: %s/v1alpha1\nkind: Job\nmetadata: {name: race, namespace: default}\nspec: {task: {image: busybox}}\n' "$1"
}

# create_job GROUP: a server-side dry run; prints the finalizers, or "!" and the error.
create_job() {
  local out
  if out=$(job "$1" | "$KUBECTL" create --dry-run=server -o 'jsonpath={.metadata.finalizers}' -f - 2>&1); then
    echo "$out"
  else
    echo "!$out"
  fi
}

# The shipped policy, matching the Jobs of every round's group (and of the warm-up group 0).
all_groups=
for i in $(seq 0 "$ROUNDS"); do all_groups+="$(group "$i"), "; done
sed -e "s/name: ayatori-job-cleanup-finalizer/name: crd-race-$RUN/" \
  -e "s/policyName: ayatori-job-cleanup-finalizer/policyName: crd-race-$RUN/" \
  -e "s/apiGroups: \[execution.ayatori.ddupan.top\]/apiGroups: [${all_groups%, }]/" \
  "$ROOT/config/finalizer-policy/job-cleanup-finalizer.yaml" >"$WORK/policy.yaml"
grep -q "crd-race-$RUN" "$WORK/policy.yaml" || fail "the policy was not renamed: $WORK/policy.yaml"
"$KUBECTL" apply -f "$WORK/policy.yaml" >/dev/null

# Warm-up (group 0): once a Job of it gets the finalizer, the policy is in force, so that the
# rounds meet it from their first Job on.
g0=$(group 0)
GROUPS_MADE+=("$g0")
"$KUBECTL" apply -f "$(crd "$g0")" >/dev/null
"$ROOT/hack/wait-crds.sh" -f "$WORK/crd-$g0.yaml"
end=$((SECONDS + 60))
until [ "$(create_job "$g0")" = "$FINALIZERS" ]; do
  [ "$SECONDS" -lt "$end" ] || fail "the policy never added its finalizer: $(create_job "$g0")"
  sleep 0.2  # a poll with a deadline
done

raced=0
for i in $(seq 1 "$ROUNDS"); do
  g=$(group "$i")
  GROUPS_MADE+=("$g")
  file=$(crd "$g")
  "$KUBECTL" apply -f "$file" >/dev/null
  # 1. The old install path.
  # kubectl wait fails at once ("accessor error: <nil>") when it reads the CRD before the
  # apiserver gave it any condition; such a read is asked again.
  end=$((SECONDS + 60))
  until "$KUBECTL" wait --for condition=established --timeout=60s -f "$file" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$end" ] || fail "round $i: the CRD was not Established within 60 s"
    sleep 0.2  # a poll with a deadline
  done
  first=$(create_job "$g")
  case $first in
    '!'*) raced=$((raced + 1)); echo "round $i: right after Established: ${first#!}" ;;
    *) echo "round $i: right after Established: admitted" ;;
  esac
  # 2. The fixed one.
  start=$SECONDS
  "$ROOT/hack/wait-crds.sh" -f "$file"
  got=$(create_job "$g")
  [ "$got" = "$FINALIZERS" ] ||
    fail "round $i: after hack/wait-crds.sh the Job was not admitted with the policy's finalizer: $got"
  echo "round $i: after hack/wait-crds.sh ($((SECONDS - start)) s): admitted with the finalizer"
  "$KUBECTL" delete crd "jobs.$g" --wait=false >/dev/null
done

echo "the race showed in $raced of $ROUNDS rounds; hack/wait-crds.sh prevented it in all"
[ "$raced" -gt 0 ] ||
  fail "a Job created right after Established was admitted in all $ROUNDS rounds: the race was not reproduced (more rounds: CRD_RACE_ROUNDS)"
