#!/usr/bin/env python3
"""Writes the static parts of the Helm chart charts/ayatori from config/ (docs/install.md,
"Install with Helm"): the CRDs (charts/ayatori/crds/, which Helm installs before the release and
never upgrades or deletes) and the objects the chart's templates include as they are
(charts/ayatori/files/<group>/*.yaml: RBAC, admission policies, the log API's RBAC, the sample
JobClasses). The Namespace, ServiceAccount, Deployment, Service and APIService, which the values
change, are templates of the chart. Run it after a change in config/:

    hack/chart-files.py            rewrite charts/ayatori/crds and charts/ayatori/files
    hack/chart-files.py --check    exit 1 if they differ from config/ (a test does it)

kubectl (for `kubectl kustomize`) comes from $KUBECTL, else the test control plane's cache.
test/install/helm_chart_test.py proves that the chart renders the objects of dist/install.yaml.
"""
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHART = os.path.join(ROOT, "charts", "ayatori")

# (kind, name) -> the group (a folder of charts/ayatori/files) of an object of config/default or
# config/namespaced; "template" for the objects the chart's templates write, "crds" for the CRDs.
GROUPS = {
    ("Namespace", "ayatori-system"): "template",
    ("ServiceAccount", "ayatori-controller"): "template",
    ("Deployment", "ayatori-controller"): "template",
    ("Service", "ayatori-logs-api"): "template",
    ("APIService", "v1alpha1.logs.execution.ayatori.ddupan.top"): "template",
    ("Role", "ayatori-controller-backend-snapshots"): "controller-namespace",
    ("Role", "ayatori-controller-leader-election"): "controller-namespace",
    ("RoleBinding", "ayatori-controller-backend-snapshots"): "controller-namespace",
    ("RoleBinding", "ayatori-controller-leader-election"): "controller-namespace",
    ("Role", "ayatori-controller-version"): "controller-namespace",
    ("RoleBinding", "ayatori-controller-version"): "controller-namespace",
    ("Role", "ayatori-version-reader"): "controller-namespace",
    ("RoleBinding", "ayatori-version-reader"): "controller-namespace",
    ("ClusterRole", "ayatori-backend-lost-confirmer"): "policy",
    ("ClusterRoleBinding", "ayatori-backend-lost-confirmers"): "policy",
    ("ValidatingAdmissionPolicy", "ayatori-backend-lost-confirmer-scope"): "policy",
    ("ValidatingAdmissionPolicy", "ayatori-confirm-backend-lost"): "policy",
    ("ValidatingAdmissionPolicy", "ayatori-job-references"): "policy",
    ("ValidatingAdmissionPolicyBinding", "ayatori-backend-lost-confirmer-scope"): "policy",
    ("ValidatingAdmissionPolicyBinding", "ayatori-confirm-backend-lost"): "policy",
    ("ValidatingAdmissionPolicyBinding", "ayatori-job-references"): "policy",
    ("MutatingAdmissionPolicy", "ayatori-job-cleanup-finalizer"): "finalizer-policy",
    ("MutatingAdmissionPolicyBinding", "ayatori-job-cleanup-finalizer"): "finalizer-policy",
    ("ClusterRole", "ayatori-job-log-reader"): "logs-api",
    ("RoleBinding", "ayatori-controller:extension-apiserver-authentication-reader"): "logs-api",
    ("ClusterRoleBinding", "ayatori-controller:system:auth-delegator"): "logs-api",
}
# The controller's RBAC differs between the two overlays: its ClusterRole(Binding) of
# config/rbac (every namespace) or of config/namespaced (cluster-scoped reads only, plus a Role
# in each served namespace: the template repeats tenant/ once per namespace).
RBAC_GROUP = {"default": "cluster-rbac", "namespaced": "namespaced-rbac"}
OVERLAY_RBAC = {("ClusterRole", "ayatori-controller"), ("ClusterRoleBinding", "ayatori-controller"),
                ("Role", "ayatori-controller-own-namespace"),
                ("RoleBinding", "ayatori-controller-own-namespace")}
TENANT_NAMESPACE = "team-a"  # the example namespace of config/namespaced/tenant

SAMPLES = {  # the sample JobClasses of config/samples, each with its parameters
    "docker": ["dockerexecutionparameters.yaml", "jobclass-docker.yaml"],
    "kubernetes": ["kubernetesexecutionparameters.yaml", "jobclass-kubernetes.yaml"],
    "opensandbox": ["opensandboxexecutionparameters.yaml", "jobclass-opensandbox.yaml"],
}


def kubectl():
    if os.environ.get("KUBECTL"):
        return os.environ["KUBECTL"]
    bindir = subprocess.run([os.path.join(ROOT, "hack/testenv/testenv.sh"), "bindir"],
                            check=True, capture_output=True, text=True).stdout.strip()
    path = os.path.join(bindir, "kubectl")
    if not os.path.exists(path):
        sys.exit(f"chart-files.py: no kubectl at {path}: set KUBECTL or run make testenv")
    return path


def kustomize(overlay):
    out = subprocess.run([kubectl(), "kustomize", os.path.join(ROOT, "config", overlay)],
                         check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def dump(obj):
    return yaml.safe_dump(obj, sort_keys=True, width=1000)


def file_name(obj):
    return f"{obj['kind'].lower()}-{obj['metadata']['name'].replace(':', '-')}.yaml"


def wanted():
    """{path relative to the chart: text}"""
    files = {}
    header = "# Generated by hack/chart-files.py from config/; do not edit.\n"
    for overlay in ("default", "namespaced"):
        for obj in kustomize(overlay):
            key = (obj["kind"], obj["metadata"]["name"])
            ns = obj["metadata"].get("namespace")
            if obj["kind"] == "CustomResourceDefinition":
                group = "crds"
            elif key in GROUPS:
                group = GROUPS[key]
            elif key in OVERLAY_RBAC:
                group = "files/" + RBAC_GROUP[overlay]
            elif ns == TENANT_NAMESPACE and overlay == "namespaced":
                group = "files/tenant"
            else:
                sys.exit(f"chart-files.py: {obj['kind']} {obj['metadata']['name']} of config/{overlay} "
                         "has no place in the chart: add it to GROUPS (hack/chart-files.py)")
            if group == "template":
                continue
            if not group.startswith("files/") and group != "crds":
                group = "files/" + group
            files[f"{group}/{file_name(obj)}"] = header + dump(obj)
    for backend, names in SAMPLES.items():
        for name in names:
            obj = yaml.safe_load(open(os.path.join(ROOT, "config", "samples", name)))
            files[f"files/samples/{backend}/{file_name(obj)}"] = header + dump(obj)
    return files


def main():
    check = "--check" in sys.argv[1:]
    files = wanted()
    present = set()
    for top in ("crds", "files"):
        for d, _, names in os.walk(os.path.join(CHART, top)):
            present.update(os.path.relpath(os.path.join(d, n), CHART) for n in names)
    stale = sorted(present - set(files))
    differ = sorted(p for p, t in files.items()
                    if not os.path.exists(os.path.join(CHART, p)) or open(os.path.join(CHART, p)).read() != t)
    if check:
        if stale or differ:
            for p in differ:
                print(f"chart-files.py: charts/ayatori/{p} differs from config/", file=sys.stderr)
            for p in stale:
                print(f"chart-files.py: charts/ayatori/{p} is not in config/ any more", file=sys.stderr)
            print("chart-files.py: run hack/chart-files.py to update the chart", file=sys.stderr)
            return 1
        return 0
    for p in stale:
        os.remove(os.path.join(CHART, p))
    for p in differ:
        os.makedirs(os.path.dirname(os.path.join(CHART, p)), exist_ok=True)
        with open(os.path.join(CHART, p), "w") as f:
            f.write(files[p])
    print(f"chart-files.py: {len(differ)} written, {len(stale)} removed, {len(files)} in charts/ayatori")
    return 0


if __name__ == "__main__":
    sys.exit(main())
