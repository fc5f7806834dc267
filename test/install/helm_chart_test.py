#!/usr/bin/env python3
"""The Helm chart charts/ayatori (docs/install.md, "Install with Helm"), with Helm v4 built into the
test environment's cache (hack/testenv/testenv.sh build-helm; `make testenv` builds it).

    helm_chart_test.py render    no cluster: the chart against dist/install.yaml
      - hack/chart-files.py --check: crds/ and files/ are what config/ renders;
      - `helm template --include-crds` with the default values gives the objects of
        hack/install-manifests.sh (dist/install.yaml), compared as parsed objects;
      - watchNamespaces=[team-a,team-b] gives those of install-manifests.sh --namespaces;
      - each value of the table in docs/install.md changes what it says, and a bad namespace
        name is refused with a message naming it;
      - helm lint (default values and the namespaced ones).
    helm_chart_test.py install   a kube-apiserver + etcd of its own (the CRDs must be new)
      - helm install creates every object the chart renders, CRDs from crds/ included;
      - helm upgrade changes the Deployment (replicas);
      - helm uninstall deletes the release's objects and keeps the CRDs (Helm's crds/ rule).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(ROOT, "charts", "ayatori")
TESTENV = os.path.join(ROOT, "hack", "testenv", "testenv.sh")
FAILURES = []


def run(args, env=None, check=True):
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    return p


def tool(name):
    """The cached helm (testenv.sh helm) or kubectl (testenv.sh bindir)."""
    if name == "helm":
        path = run([TESTENV, "helm"]).stdout.strip()
        hint = "make testenv (or hack/testenv/testenv.sh build-helm) builds it"
    else:
        path = os.path.join(run([TESTENV, "bindir"]).stdout.strip(), "kubectl")
        hint = "make testenv builds it"
    if not os.access(path, os.X_OK):
        raise SystemExit(f"FAIL: {name} is not built: no {path}; {hint}")
    return path


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def objects(text):
    out = {}
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        m = doc["metadata"]
        key = (doc["apiVersion"], doc["kind"], m.get("namespace", ""), m["name"])
        assert key not in out, f"{key} twice"
        out[key] = doc
    return out


def template(helm, *args):
    return run([helm, "template", "ayatori", CHART, "--include-crds", *args]).stdout


def compare(got, want, what):
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    differ = sorted(k for k in set(got) & set(want) if got[k] != want[k])
    for k in missing:
        print(f"  not rendered by the chart: {k}")
    for k in extra:
        print(f"  rendered by the chart only: {k}")
    for k in differ:
        for path, a, b in differences(got[k], want[k]):
            print(f"  differs: {k} at {path}: chart {json.dumps(a)[:300]}, install {json.dumps(b)[:300]}")
    check(not missing and not extra and not differ and len(want) > 20,
          f"{what}: {len(got)} objects of the chart, {len(want)} of install-manifests.sh, equal")


def differences(a, b, path=""):
    """[(path, a's value, b's value)] where the two parsed objects differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path or ".", a, b)]


def install_manifests(*args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "install.yaml")
        run([os.path.join(ROOT, "hack", "install-manifests.sh"), *args, out],
            env=dict(os.environ, KUBECTL=tool("kubectl")))
        return open(out).read()


def deployment(objs):
    return next(o for k, o in objs.items() if k[1] == "Deployment")


def render():
    helm = tool("helm")
    p = run([sys.executable, os.path.join(ROOT, "hack", "chart-files.py"), "--check"],
            env=dict(os.environ, KUBECTL=tool("kubectl")), check=False)
    check(p.returncode == 0, "charts/ayatori/crds and files are what config/ renders "
          "(hack/chart-files.py --check)" + ("" if p.returncode == 0 else ":\n" + p.stderr))

    default = objects(template(helm))
    compare(default, objects(install_manifests()), "default values vs dist/install.yaml")
    compare(objects(template(helm, "--set", "watchNamespaces={team-a,team-b}")),
            objects(install_manifests("--namespaces", "team-a,team-b")),
            "watchNamespaces=[team-a,team-b] vs install-manifests.sh --namespaces team-a,team-b")

    # The values of docs/install.md's table.
    objs = objects(template(helm, "--set", "logsApi.enabled=false"))
    args = deployment(objs)["spec"]["template"]["spec"]["containers"][0]["args"]
    check(not any(k[1] == "APIService" for k in objs)
          and not any(a.startswith("--logs-api") for a in args)
          and ("rbac.authorization.k8s.io/v1", "ClusterRole", "", "ayatori-job-log-reader") not in objs,
          "logsApi.enabled=false: no APIService, log API RBAC or --logs-api-* flag")
    objs = objects(template(helm, "--set", "jobCleanupFinalizerPolicy=false"))
    check(not any(k[1].startswith("MutatingAdmissionPolicy") for k in objs)
          and any(k[1] == "ValidatingAdmissionPolicy" for k in objs),
          "jobCleanupFinalizerPolicy=false: no MutatingAdmissionPolicy, the others stay")
    # Supported versions (docs/install.md): on kube-apiserver < 1.36 the chart leaves out the
    # finalizer policy as install-manifests.sh --kube-version does, and only that.
    compare(objects(template(helm, "--kube-version", "1.34")),
            objects(install_manifests("--kube-version", "1.34")),
            "--kube-version 1.34 vs install-manifests.sh --kube-version 1.34")
    check(not any(k[1].startswith("MutatingAdmissionPolicy")
                  for k in objects(template(helm, "--kube-version", "1.35")))
          and any(k[1] == "MutatingAdmissionPolicy"
                  for k in objects(template(helm, "--kube-version", "1.36"))),
          "the finalizer policy: left out on 1.35, rendered on 1.36")
    objs = objects(template(helm, "--set", "namespace=ayatori-ops", "--set", "replicas=3",
                            "--set", "image.repository=registry.example/ayatori",
                            "--set", "image.tag=9.9.9", "--set", "podSecurityStandard=baseline"))
    dep = deployment(objs)
    c = dep["spec"]["template"]["spec"]["containers"][0]
    # The CRDs' descriptions name ayatori-system "as installed"; every other object follows the value.
    text = yaml.safe_dump_all(o for k, o in objs.items() if k[1] != "CustomResourceDefinition")
    check(dep["metadata"]["namespace"] == "ayatori-ops" and "--namespace=ayatori-ops" in c["args"]
          and "ayatori-system" not in text,
          "namespace=ayatori-ops: every object and reference in it, none left in ayatori-system")
    check(dep["spec"]["replicas"] == 3 and c["image"] == "registry.example/ayatori:9.9.9",
          "replicas and image.repository/tag reach the Deployment")
    ns = objs[("v1", "Namespace", "", "ayatori-ops")]
    check(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline",
          "podSecurityStandard labels the namespace")
    objs = objects(template(helm, "--set", "jobClasses.docker.enabled=true",
                            "--set", "jobClasses.docker.parameters.endpoint=tcp://docker.example:2376",
                            "--set", "jobClasses.kubernetes.enabled=true"))
    classes = {k[3]: o for k, o in objs.items() if k[1] == "JobClass"}
    params = objs[("execution.ayatori.ddupan.top/v1alpha1", "DockerExecutionParameters", "", "default")]
    check(sorted(classes) == ["default", "kubernetes"]
          and params["spec"]["endpoint"] == "tcp://docker.example:2376"
          and params["spec"]["networkMode"] == "none",
          "jobClasses: the enabled samples, parameters merged over the sample's spec")
    check(not any(k[1] == "JobClass" for k in default), "no JobClass by default (as dist/install.yaml)")
    p = run([helm, "template", "ayatori", CHART, "--set", "watchNamespaces={Team_A}"], check=False)
    error = next((line for line in p.stderr.splitlines() if line.startswith("Error:")), p.stderr)
    check(p.returncode != 0 and '"Team_A" is not a namespace name' in error,
          f"a bad watchNamespaces entry is refused, naming it: {error.strip()}")

    for extra in ([], ["--set", "watchNamespaces={team-a}"]):
        p = run([helm, "lint", "--strict", CHART, *extra], check=False)
        check(p.returncode == 0, f"helm lint --strict {' '.join(extra)}".strip()
              + ("" if p.returncode == 0 else ":\n" + p.stdout + p.stderr))


def wait_for(what, cond, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.2)
    print(f"  timed out after {timeout}s waiting for {what}")
    return False


def install():
    helm = tool("helm")
    binary_dir = os.environ.get("AYATORI_BINARY_DIR")
    if not binary_dir:
        raise SystemExit("FAIL: AYATORI_BINARY_DIR is not set: run this through ctest")
    env = dict(os.environ, TESTENV_DIR=os.path.join(binary_dir, "run", "helm-install"))
    env.pop("KUBECONFIG", None)
    up = run([TESTENV, "up", "api"], env=env, check=False)
    try:
        if up.returncode != 0:
            raise SystemExit(f"FAIL: the control plane did not start:\n{up.stderr[-3000:]}")
        kubeconfig = os.path.join(env["TESTENV_DIR"], "kubeconfig")
        env["KUBECONFIG"] = kubeconfig
        kubectl = tool("kubectl")

        def kube(*args, ok=True):
            return run([kubectl, *args], env=env, check=ok)

        crds = [o for k, o in objects(template(helm)).items() if k[1] == "CustomResourceDefinition"]
        check(len(crds) == 5 and kube("get", "crd", "-o", "name").stdout.strip() == "",
              "a new control plane: none of the 5 CRDs of the chart exists yet")

        # The chart as rendered for this server's version (KUBE_VERSION picks the control plane's,
        # make test-versions): helm install renders it so too.
        server = json.loads(kube("version", "-o", "json").stdout)["serverVersion"]
        minor = int(re.match(r"\d+", server["minor"]).group(0))
        rendered = objects(template(helm, "--kube-version", server["gitVersion"],
                                    "--set", "jobClasses.docker.enabled=true"))
        # The release is recorded in ayatori-system, which the chart itself writes (with its Pod
        # Security label): --create-namespace makes it first, --take-ownership lets the chart own it.
        p = run([helm, "install", "ayatori", CHART, "--namespace", "ayatori-system",
                 "--create-namespace", "--take-ownership",
                 "--set", "jobClasses.docker.enabled=true", "--wait=hookOnly", "--timeout=120s"],
                env=env, check=False)
        check(p.returncode == 0, "helm install" + ("" if p.returncode == 0 else ":\n" + p.stdout + p.stderr))
        if p.returncode != 0:
            return
        left_out = "Left out: the MutatingAdmissionPolicy ayatori-job-cleanup-finalizer" in p.stdout
        has_policy = any(k[1] == "MutatingAdmissionPolicy" for k in rendered)
        check(left_out == (minor < 36) and has_policy == (minor >= 36),
              f"kube-apiserver {server['gitVersion']}: the finalizer policy "
              + ("left out and NOTES.txt says so" if minor < 36 else "installed, NOTES.txt silent")
              + ("" if left_out == (minor < 36) else ":\n" + p.stdout))
        missing = []
        for (api, kind, ns, name), want in rendered.items():
            if kind in ("JobClass", "DockerExecutionParameters"):
                continue  # checked below, once their CRDs serve them
            args = ["get", f"{kind}.{api.split('/')[0]}" if "/" in api else kind, name, "-o", "json"]
            if ns:
                args += ["-n", ns]
            got = kube(*args, ok=False)
            if got.returncode != 0:
                missing.append((kind, ns, name))
        check(not missing, f"helm install created every object the chart renders ({len(rendered)})"
              + (f"; missing: {missing}" if missing else ""))
        dep = json.loads(kube("get", "deployment", "-n", "ayatori-system", "ayatori-controller",
                              "-o", "json").stdout)
        want = deployment(rendered)["spec"]["template"]["spec"]["containers"][0]
        got = dep["spec"]["template"]["spec"]["containers"][0]
        check(got["image"] == want["image"] == "ayatori/controller:0.1.0" and got["args"] == want["args"]
              and dep["metadata"]["annotations"].get("meta.helm.sh/release-name") == "ayatori",
              "the controller Deployment: the chart's image and flags, owned by the release")
        check(wait_for("the CRDs Established", lambda: kube(
            "wait", "--for", "condition=established", "--timeout=5s", "crd",
            "-l", "app.kubernetes.io/part-of=ayatori", ok=False).returncode == 0),
            "the CRDs of crds/ are Established")
        check(wait_for("JobClass default", lambda: kube("get", "jobclass", "default", ok=False).returncode == 0),
              "jobClasses.docker.enabled: JobClass default created")

        p = run([helm, "upgrade", "ayatori", CHART, "--namespace", "ayatori-system", "--reuse-values",
                 "--set", "replicas=3", "--wait=hookOnly", "--timeout=120s"], env=env, check=False)
        replicas = kube("get", "deployment", "-n", "ayatori-system", "ayatori-controller",
                        "-o", "jsonpath={.spec.replicas}").stdout
        check(p.returncode == 0 and replicas == "3", f"helm upgrade --set replicas=3: replicas {replicas}")

        p = run([helm, "uninstall", "ayatori", "--namespace", "ayatori-system", "--wait=hookOnly",
                 "--timeout=120s"], env=env, check=False)
        check(p.returncode == 0, "helm uninstall" + ("" if p.returncode == 0 else ":\n" + p.stdout + p.stderr))
        left = kube("get", "crd", "-o", "name").stdout.split()
        check(len(left) == 5 and all("execution.ayatori.ddupan.top" in c for c in left),
              f"helm uninstall keeps the CRDs (crds/): {len(left)} left")
        gone = []
        for args in (["deployment", "-n", "ayatori-system", "ayatori-controller"],
                     ["clusterrole", "ayatori-controller"],
                     ["validatingadmissionpolicy", "ayatori-job-references"],
                     ["apiservice", "v1alpha1.logs.execution.ayatori.ddupan.top"],
                     ["jobclass", "default"]):
            gone.append(wait_for(" ".join(args) + " deleted",
                                 lambda a=args: kube("get", *a, ok=False).returncode != 0))
        check(all(gone), "helm uninstall deletes the release's objects (Deployment, RBAC, policies, "
              "APIService, the sample JobClass)")
    finally:
        run([TESTENV, "down"], env=env, check=False)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "render":
        render()
    elif mode == "install":
        install()
    else:
        raise SystemExit("usage: helm_chart_test.py render|install")
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
