#!/usr/bin/env bash
# Renders config/default into one file (default dist/install.yaml), like kubebuilder's
# build-installer: kubectl apply -f dist/install.yaml installs Ayatori in a cluster; then
# hack/wait-crds.sh waits until its CRDs can be used (Established, served, known to admission).
#
#   install-manifests.sh [OUT]
#   install-manifests.sh --namespaces team-a,team-b [OUT]
#
# With --namespaces it renders config/namespaced instead (default OUT dist/install-namespaced.yaml):
# the controller serves only the Jobs of those namespaces (--watch-namespaces), with a Role and
# RoleBinding in each of them and only cluster-scoped reads in its ClusterRole (docs/install.md,
# "Namespaced install"). The namespaces must exist before the file is applied.
#
# With --kube-version MAJOR.MINOR (the cluster's kube-apiserver) or --kube-version cluster (ask
# the cluster of KUBECONFIG whether it serves admissionregistration.k8s.io/v1
# MutatingAdmissionPolicy), the features a server older than 1.36 does not serve are left out,
# with a message naming each: today config/finalizer-policy, the MutatingAdmissionPolicy that adds
# the cleanup finalizer (the controller then adds it itself). Without the option everything is
# rendered, and `kubectl apply` on an older server would refuse that kind after applying the rest:
# a half-applied install, which the option exists to avoid (docs/install.md, "Supported versions").
#
# The controller image is IMAGE if set, else ayatori/controller:<version> (hack/image.sh name,
# the version of CMakeLists.txt). kubectl comes from $KUBECTL, else the test control plane's cache
# (hack/testenv/testenv.sh bindir), else PATH; it needs `kubectl kustomize` (kubectl >= 1.14).
set -euo pipefail

H=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$H/.." && pwd)
log() { printf 'install-manifests.sh: %s\n' "$*" >&2; }

# The first Kubernetes minor version that serves each optional feature (docs/install.md).
FINALIZER_POLICY_MIN_MINOR=36

namespaces=
kube_version=
if [ "${1:-}" = --kube-version ]; then
  kube_version=${2:-}
  shift 2 || { log "--kube-version needs MAJOR.MINOR (e.g. 1.34) or \"cluster\""; exit 1; }
  if ! [[ $kube_version =~ ^(1\.[0-9]+|cluster)$ ]]; then
    log "--kube-version: \"$kube_version\" is neither MAJOR.MINOR (e.g. 1.34) nor \"cluster\""
    exit 1
  fi
fi
if [ "${1:-}" = --namespaces ]; then
  namespaces=${2:-}
  shift 2 || { log "--namespaces needs a comma-separated list of namespaces"; exit 1; }
  [ -n "$namespaces" ] || { log "--namespaces needs a comma-separated list of namespaces"; exit 1; }
  IFS=, read -ra nsList <<<"$namespaces"
  seen=" "
  for ns in "${nsList[@]}"; do
    # A namespace name is an RFC 1123 label, as --watch-namespaces checks (kube::ValidateNamespaceName).
    if ! [[ $ns =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]]; then
      log "--namespaces: \"$ns\" is not a namespace name (1-63 lowercase letters, digits, '-')"
      exit 1
    fi
    case $seen in *" $ns "*) log "--namespaces: \"$ns\" is listed twice"; exit 1 ;; esac
    seen="$seen$ns "
  done
  OUT=${1:-$ROOT/dist/install-namespaced.yaml}
  overlay=namespaced
else
  OUT=${1:-$ROOT/dist/install.yaml}
  overlay=default
fi

kubectl_bin() {
  if [ -n "${KUBECTL:-}" ]; then echo "$KUBECTL"; return; fi
  local cached
  cached="$("$H/testenv/testenv.sh" bindir 2>/dev/null)/kubectl"
  if [ -x "$cached" ]; then echo "$cached"; return; fi
  command -v kubectl || { log "no kubectl: set KUBECTL, or build the test control plane (make testenv)"; exit 1; }
}

# finalizer_policy: "yes" when the target server serves the finalizer policy's kind, else the
# reason it is left out.
finalizer_policy=yes
case $kube_version in
  "") ;;
  cluster)
    # What the server serves, not its version number: the same check as the chart's
    # .Capabilities.APIVersions.Has (charts/ayatori/templates/finalizer-policy.yaml).
    if ! served=$("$(kubectl_bin)" get --raw /apis/admissionregistration.k8s.io/v1 2>&1); then
      log "--kube-version cluster: cannot read the cluster's admissionregistration.k8s.io/v1: $served"
      exit 1
    fi
    if ! grep -q '"kind":"MutatingAdmissionPolicy"' <<<"$served"; then
      finalizer_policy="the cluster's kube-apiserver does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (kube-apiserver >= 1.$FINALIZER_POLICY_MIN_MINOR does)"
    fi
    ;;
  *)
    if [ "${kube_version#1.}" -lt "$FINALIZER_POLICY_MIN_MINOR" ]; then
      finalizer_policy="kube-apiserver $kube_version does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (>= 1.$FINALIZER_POLICY_MIN_MINOR does)"
    fi
    ;;
esac

image=${IMAGE:-$("$H/image.sh" name)}
name=${image%:*}
tag=${image##*:}
case $tag in
  "$image" | */* | "") log "IMAGE=$image has no tag (NAME:TAG)"; exit 1 ;;
esac

# An overlay in a scratch directory sets the image; config/default stays as committed.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$ROOT/config" "$tmp/config"
python3 - "$tmp/config/$overlay/kustomization.yaml" "$name" "$tag" "$namespaces" "$finalizer_policy" <<'PY'
import os, sys
path, name, tag, namespaces, finalizer_policy = sys.argv[1:]
text = open(path).read()
if finalizer_policy != "yes":
    line = "- ../finalizer-policy\n"
    if line not in text:
        sys.exit(f"install-manifests.sh: {path} has no line {line.strip()!r} to leave out")
    text = text.replace(line, "")
if namespaces:
    # One copy of the example tenant Role per namespace; the flag names the same list.
    tenant = os.path.join(os.path.dirname(path), "tenant")
    example = open(os.path.join(tenant, "role-team-a.yaml")).read()
    os.remove(os.path.join(tenant, "role-team-a.yaml"))
    files = []
    for ns in namespaces.split(","):
        open(os.path.join(tenant, f"role-{ns}.yaml"), "w").write(
            example.replace("\n  namespace: team-a\n", f"\n  namespace: {ns}\n"))
        files.append(f"- tenant/role-{ns}.yaml")
    text = text.replace("- tenant/role-team-a.yaml", "\n".join(files))
    text = text.replace("--watch-namespaces=team-a", f"--watch-namespaces={namespaces}")
old = "images:\n- name: ayatori/controller\n  newTag: "
start = text.index(old)
end = text.index("\n", start + len(old))
text = text[:start] + f"images:\n- name: ayatori/controller\n  newName: {name}\n  newTag: \"{tag}\"" + text[end:]
open(path, "w").write(text)
PY
mkdir -p "$(dirname "$OUT")"
{
  echo "# Ayatori $("$H/image.sh" version): CRDs, RBAC, admission policy and controller ($image)."
  if [ -n "$namespaces" ]; then
    echo "# Namespaced install: serves only the Jobs of the namespaces $namespaces (they must exist)."
  fi
  echo "# Generated by hack/install-manifests.sh from config/$overlay; do not edit."
  echo "# Install: kubectl apply -f install.yaml, then wait until the CRDs can be used before the"
  echo "# first Job: hack/wait-crds.sh, or kubectl wait --for condition=established --timeout=60s"
  echo "# crd -l app.kubernetes.io/part-of=ayatori and a few seconds more (docs/install.md)."
  if [ "$finalizer_policy" != yes ]; then
    echo "# Left out: config/finalizer-policy ($finalizer_policy); the controller adds the cleanup"
    echo "# finalizer to each Job itself."
  fi
  "$(kubectl_bin)" kustomize "$tmp/config/$overlay"
} >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
if [ "$finalizer_policy" != yes ]; then
  log "left out config/finalizer-policy, the MutatingAdmissionPolicy that adds the cleanup finalizer:"
  log "  $finalizer_policy; the controller adds the finalizer to each Job itself"
fi
log "wrote $OUT ($(grep -c '^kind:' "$OUT") objects, image $image)"
log "install: kubectl apply -f $OUT && hack/wait-crds.sh   (the CRDs Established, served and admitted"
log "  before the first Job; without the repository: kubectl wait --for condition=established"
log "  --timeout=60s crd -l app.kubernetes.io/part-of=ayatori, then expect a Job to be refused with"
log "  503 'Resource kind ... not found' for a few seconds more: docs/install.md)"
