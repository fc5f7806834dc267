#!/usr/bin/env bash
# The Job log API's serving certificate, made at install (docs/install.md, "Job logs"), so that
# kube-apiserver's aggregator verifies the controller through the APIService's caBundle instead
# of skipping verification:
#   - a CA of its own (its key stays in OUTDIR: keep it, or delete it once the Secret exists),
#   - a P-256 serving certificate for ayatori-logs-api.NAMESPACE.svc signed by it (1 year),
#   - with --apply: the Secret NAMESPACE/ayatori-logs-api-tls that the Deployment mounts
#     (--logs-api-tls-cert-file/--logs-api-tls-key-file) and spec.caBundle of the APIService
#     v1alpha1.logs.execution.ayatori.ddupan.top.
#
#   hack/logs-api-cert.sh [--apply] [--namespace NAMESPACE] OUTDIR
#
# NAMESPACE is the controller's install namespace (the Helm value `namespace`): --namespace, else
# $AYATORI_NAMESPACE, else ayatori-system. kubectl comes from $KUBECTL, else PATH. Run it again
# before the certificate expires (it makes a new CA and certificate; the pods read the Secret at
# start: restart them). With cert-manager, use its Certificate and the
# cert-manager.io/inject-ca-from annotation instead (docs/install.md).
set -euo pipefail

usage() { echo "usage: logs-api-cert.sh [--apply] [--namespace NAMESPACE] OUTDIR" >&2; exit 2; }
apply=false
NAMESPACE=${AYATORI_NAMESPACE:-ayatori-system}
while [ $# -gt 0 ]; do
  case $1 in
    --apply) apply=true ;;
    --namespace) [ $# -ge 2 ] || usage; NAMESPACE=$2; shift ;;
    --namespace=*) NAMESPACE=${1#--namespace=} ;;
    -*) usage ;;
    *) break ;;
  esac
  shift
done
[ $# -eq 1 ] || usage
OUT=$1
# A DNS label: it goes into the certificate's names and kubectl's arguments.
[[ $NAMESPACE =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]] || {
  echo "logs-api-cert.sh: \"$NAMESPACE\" is not a namespace name" >&2
  exit 2
}
SERVICE=ayatori-logs-api.$NAMESPACE.svc
mkdir -p "$OUT"
chmod 700 "$OUT"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
  -subj "/CN=ayatori-logs-api-ca" -keyout "$OUT/ca.key" -out "$OUT/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$SERVICE" \
  -keyout "$OUT/tls.key" -out "$OUT/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:%s.cluster.local\nextendedKeyUsage=serverAuth\n' \
  "$SERVICE" "$SERVICE" >"$OUT/tls.ext"
openssl x509 -req -in "$OUT/tls.csr" -CA "$OUT/ca.crt" -CAkey "$OUT/ca.key" -CAcreateserial \
  -days 365 -extfile "$OUT/tls.ext" -out "$OUT/tls.crt" 2>/dev/null
rm -f "$OUT/tls.csr" "$OUT/tls.ext"
echo "logs-api-cert.sh: $OUT/tls.crt for $SERVICE, signed by $OUT/ca.crt" >&2

if $apply; then
  kubectl=${KUBECTL:-kubectl}
  "$kubectl" -n "$NAMESPACE" create secret tls ayatori-logs-api-tls --cert="$OUT/tls.crt" \
    --key="$OUT/tls.key" --dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null
  "$kubectl" patch apiservice v1alpha1.logs.execution.ayatori.ddupan.top --type=merge \
    -p "{\"spec\":{\"caBundle\":\"$(base64 -w0 "$OUT/ca.crt")\",\"insecureSkipTLSVerify\":false}}" >/dev/null
  echo "logs-api-cert.sh: Secret $NAMESPACE/ayatori-logs-api-tls and the APIService's caBundle set" >&2
fi
