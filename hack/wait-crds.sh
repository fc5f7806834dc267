#!/usr/bin/env bash
# Waits until the CRDs of the given manifests can be used, right after `kubectl apply`:
#
#   wait-crds.sh [-f FILE-OR-DIR]... [--timeout=SECONDS]     (default: -f config/crd, 60 s)
#
# "Established" is not enough. kube-apiserver's MutatingAdmissionPolicy plugin (the Job cleanup
# finalizer policy of config/finalizer-policy matches every Job CREATE) learns a new kind's schema
# from /openapi/v3, which it polls every 5 s (k8s.io/apiserver .../policy/mutating/patch,
# typeConverterManager). Until its poll has seen the new group-version, every CREATE the policy
# matches is refused with 503 "Resource kind execution.ayatori.ddupan.top/v1alpha1, Kind=Job not
# found. There can be a delay between when CustomResourceDefinitions are created and when they are
# available." (failurePolicy Ignore does not apply to it), for up to ~5 s after the CRD became
# Established. So this script, for each CRD of the files:
#   1. waits for the condition Established (kubectl wait);
#   2. asks the API server to create an empty object of each kind as a server-side dry run,
#      until the answer shows that discovery serves the kind and admission knows it: the dry run
#      passes, or only the CRD's schema validation refuses the empty object (validation runs
#      after mutating admission). Nothing is stored.
# kubectl comes from $KUBECTL, else PATH. Exit 0 when every kind is served, 1 (naming the kind and
# the last answer) at the deadline.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KUBECTL=${KUBECTL:-kubectl}
TIMEOUT=60
FILES=()
while [ $# -gt 0 ]; do
  case $1 in
    -f) [ $# -ge 2 ] || { echo "wait-crds.sh: -f needs a file or directory" >&2; exit 2; }
        FILES+=(-f "$2"); shift 2 ;;
    -f=* | --filename=*) FILES+=(-f "${1#*=}"); shift ;;
    --timeout=*) TIMEOUT=${1#--timeout=}; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "wait-crds.sh: unknown argument '$1' (usage: wait-crds.sh [-f FILE]... [--timeout=SECONDS])" >&2
       exit 2 ;;
  esac
done
case $TIMEOUT in '' | *[!0-9]*) echo "wait-crds.sh: --timeout takes whole seconds, not '$TIMEOUT'" >&2; exit 2 ;; esac
[ ${#FILES[@]} -gt 0 ] || FILES=(-f "$ROOT/config/crd")

deadline=$((SECONDS + TIMEOUT))
t0=$(date +%s.%N)
"$KUBECTL" wait --for condition=established --timeout="${TIMEOUT}s" "${FILES[@]}" >/dev/null
t1=$(date +%s.%N)
probes=0

# group version kind scope, one line per CRD of the files (the served storage version).
kinds=$("$KUBECTL" get "${FILES[@]}" -o json | python3 -c '
import json, sys
doc = json.load(sys.stdin)
for crd in doc.get("items", [doc]):
    if crd.get("kind") != "CustomResourceDefinition":
        continue
    spec = crd["spec"]
    version = [v["name"] for v in spec["versions"] if v.get("storage")][0]
    print(spec["group"], version, spec["names"]["kind"], spec["scope"])
')
[ -n "$kinds" ] || { echo "wait-crds.sh: no CustomResourceDefinition in ${FILES[*]}" >&2; exit 1; }

while read -r group version kind scope; do
  [ -n "$group" ] || continue
  ns=
  [ "$scope" != Namespaced ] || ns='"namespace": "default", '
  probe="{\"apiVersion\": \"$group/$version\", \"kind\": \"$kind\", \"metadata\": {${ns}\"generateName\": \"wait-crds-\"}}"
  while true; do
    probes=$((probes + 1))
    if answer=$("$KUBECTL" create --dry-run=server -o name -f - <<<"$probe" 2>&1); then break; fi
    # Refused by the schema (422 Invalid): served, and mutating admission (before validation) passed.
    case $answer in *" is invalid"* | *"Invalid value"* | *"Required value"*) break ;; esac
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "wait-crds.sh: $kind.$group is not served after ${TIMEOUT}s; the API server's last answer: $answer" >&2
      exit 1
    fi
    sleep 0.2  # a poll of the condition above, with the deadline
  done
done <<<"$kinds"
awk -v n="$(grep -c . <<<"$kinds")" -v t0="$t0" -v t1="$t1" -v t2="$(date +%s.%N)" -v p="$probes" \
  'BEGIN { printf "wait-crds.sh: %d kinds Established after %.1f s, served and admitted after %.1f s (%d dry runs)\n", n, t1 - t0, t2 - t0, p }'
