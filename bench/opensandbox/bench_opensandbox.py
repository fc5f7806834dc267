"""bench_opensandbox: a trivial task through Ayatori on OpenSandbox (Job create -> Succeeded, seen
by a watch) vs the same task through the official Python SDK (create sandbox, run the command,
poll its status until it finished), alternating in the same run on the same server; p50/p99 of
each side and their ratio (target: p50 ratio <= 1.3). Run by hack/bench-opensandbox.sh (make
bench-opensandbox) with the venv of hack/opensandbox/opensandbox.sh, which has the SDK and the
kubernetes client. Sandboxes use host networking (docs/opensandbox.md): one at a time, so every
run waits, untimed, until the previous sandbox is gone.
"""

import argparse
import os
import statistics
import sys
import time
import uuid
from datetime import timedelta

from kubernetes import client, config, watch
from opensandbox.config.connection_sync import ConnectionConfigSync
from opensandbox.models.execd import RunCommandOpts
from opensandbox.models.sandboxes import SandboxFilter
from opensandbox.sync.manager import SandboxManagerSync
from opensandbox.sync.sandbox import SandboxSync

GROUP, VERSION, PLURAL = "execution.ayatori.ddupan.top", "v1alpha1", "jobs"
TASK = ["/bin/sh", "-c", "exit 0"]
# The SDK side polls the command status like a user would, at the adapter's first interval.
SDK_POLL_SECONDS = 0.05


def percentile(values, p):
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def wait_no_sandbox(manager, timeout=60.0):
    deadline = time.monotonic() + timeout
    while manager.list_sandbox_infos(SandboxFilter()).sandbox_infos:
        if time.monotonic() > deadline:
            raise TimeoutError("a sandbox was not removed")
        time.sleep(0.05)


def succeeded(job):
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Succeeded" and c.get("status") != "Unknown":
            return c
    return None


def ayatori_run(api, ns, job_class, image, manager):
    name = "bench-" + uuid.uuid4().hex[:10]
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Job",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"jobClassName": job_class, "task": {"image": image, "command": TASK}}}
    w = watch.Watch()
    start = time.monotonic()
    api.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, body)
    result = None
    for ev in w.stream(api.list_namespaced_custom_object, GROUP, VERSION, ns, PLURAL,
                       field_selector=f"metadata.name={name}", timeout_seconds=120):
        result = succeeded(ev["object"])
        if result is not None:
            break
    elapsed = time.monotonic() - start
    w.stop()
    if result is None or result.get("status") != "True":
        raise RuntimeError(f"Job {name} did not succeed: {result}")
    api.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
    wait_no_sandbox(manager)
    return elapsed


def sdk_run(cfg, image, manager):
    start = time.monotonic()
    sbx = SandboxSync.create(image, entrypoint=["tail", "-f", "/dev/null"],
                             metadata={"bench": "sdk"}, resource={"cpu": "500m", "memory": "256Mi"},
                             timeout=timedelta(minutes=10), ready_timeout=timedelta(seconds=30),
                             connection_config=cfg)
    ex = sbx.commands.run("exit 0", opts=RunCommandOpts(background=True))
    while True:
        st = sbx.commands.get_command_status(ex.id)
        if not st.running:
            break
        time.sleep(SDK_POLL_SECONDS)
    elapsed = time.monotonic() - start
    if st.exit_code != 0:
        raise RuntimeError(f"the SDK's command exited {st.exit_code}")
    sbx.kill()
    sbx.close()
    wait_no_sandbox(manager)
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--job-class", required=True)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    image = os.environ["AYATORI_OSB_WORKLOAD_IMAGE"]
    cfg = ConnectionConfigSync(domain=os.environ["AYATORI_OSB_DOMAIN"],
                               api_key=os.environ["AYATORI_OSB_API_KEY"], protocol="http",
                               request_timeout=timedelta(seconds=60))
    manager = SandboxManagerSync.create(cfg)
    config.load_kube_config(config_file=args.kubeconfig)
    api = client.CustomObjectsApi()
    client.CoreV1Api().create_namespace({"metadata": {"name": args.namespace}})
    wait_no_sandbox(manager)

    ayatori, sdk = [], []
    for i in range(args.warmup + args.jobs):
        a = ayatori_run(api, args.namespace, args.job_class, image, manager)
        s = sdk_run(cfg, image, manager)
        if i >= args.warmup:
            ayatori.append(a)
            sdk.append(s)
        print(f"run {i + 1:3d}{' (warm-up)' if i < args.warmup else ''}: "
              f"ayatori {a * 1000:7.1f} ms   sdk {s * 1000:7.1f} ms", flush=True)

    def line(name, v):
        return (f"{name:8s} p50 {percentile(v, 50) * 1000:7.1f} ms  p99 {percentile(v, 99) * 1000:7.1f} ms"
                f"  mean {statistics.mean(v) * 1000:7.1f} ms")
    print()
    print(f"OpenSandbox: create -> Succeeded of a trivial task, {args.jobs} runs per side "
          f"(alternating, one sandbox at a time)")
    print(line("ayatori", ayatori))
    print(line("sdk", sdk))
    r50 = percentile(ayatori, 50) / percentile(sdk, 50)
    r99 = percentile(ayatori, 99) / percentile(sdk, 99)
    print(f"ratio    p50 {r50:.2f}x  p99 {r99:.2f}x  (target p50 <= 1.3x: "
          f"{'met' if r50 <= 1.3 else 'NOT met'})")
    manager.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
