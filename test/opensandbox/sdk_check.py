"""The official OpenSandbox Python SDK (opensandbox, the version of hack/opensandbox/requirements.lock)
against the real opensandbox-server and the project's execd stand-in: shows that the stand-in
speaks the wire format the official client expects (docs/opensandbox.md § execd stand-in).

Run by CTest (test opensandbox_sdk_check) through test/opensandbox/sdk_check.sh, which exports
AYATORI_OSB_DOMAIN, AYATORI_OSB_API_KEY and AYATORI_OSB_WORKLOAD_IMAGE. Every wait is a poll with a
deadline. Exits non-zero on the first mismatch; prints one line per check and a summary line.
"""

import logging
import os
import re
import sys
import time
import uuid
from datetime import timedelta

from opensandbox.config.connection_sync import ConnectionConfigSync
from opensandbox.models.execd import RunCommandOpts
from opensandbox.models.sandboxes import SandboxFilter
from opensandbox.sync.manager import SandboxManagerSync
from opensandbox.sync.sandbox import SandboxSync

PASSED = 0


def check(cond, what):
    global PASSED
    if not cond:
        print(f"FAIL: {what}", flush=True)
        print(f"{PASSED} passed, 1 failed", flush=True)
        sys.exit(1)
    PASSED += 1
    print(f"ok: {what}", flush=True)


def wait_finished(sbx, cid, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while True:
        st = sbx.commands.get_command_status(cid)
        if not st.running:
            return st
        if time.monotonic() > deadline:
            raise TimeoutError(f"command {cid} still running after {timeout_s}s")
        time.sleep(0.05)


def raises(fn):
    try:
        fn()
    except Exception:  # noqa: BLE001 - any SDK exception counts as a rejection
        return True
    return False


def main():
    # The SDK logs every API error with a traceback; the checks below expect some errors.
    logging.getLogger("opensandbox").setLevel(logging.CRITICAL)
    domain = os.environ["AYATORI_OSB_DOMAIN"]
    image = os.environ["AYATORI_OSB_WORKLOAD_IMAGE"]
    config = ConnectionConfigSync(
        domain=domain,
        api_key=os.environ["AYATORI_OSB_API_KEY"],
        protocol="http",
        request_timeout=timedelta(seconds=60),
    )
    manager = SandboxManagerSync.create(config)
    if os.environ.get("AYATORI_OSB_EXCLUSIVE") == "1":
        # The project's stack runs sandboxes in host network mode, one at a time: a leftover
        # sandbox's execd would answer on the same port.
        check(manager.list_sandbox_infos(SandboxFilter()).sandbox_infos == [],
              "no sandbox exists before the check")

    uid = str(uuid.uuid4())
    sbx = SandboxSync.create(
        image,
        entrypoint=["tail", "-f", "/dev/null"],
        metadata={"job-uid": uid},
        resource={"cpu": "500m", "memory": "256Mi"},
        timeout=timedelta(minutes=5),
        ready_timeout=timedelta(seconds=30),
        connection_config=config,
    )
    try:
        check(re.fullmatch(r"[0-9a-f-]{36}", sbx.id) is not None,
              "Sandbox.create returns a server id (create, endpoint and /ping passed)")
        found = manager.list_sandbox_infos(SandboxFilter(metadata={"job-uid": uid}))
        check([i.id for i in found.sandbox_infos] == [sbx.id], "the sandbox is found by metadata")

        ex = sbx.commands.run("echo out; echo err >&2; exit 3", opts=RunCommandOpts(background=True))
        check(ex.id is not None and re.fullmatch(r"[0-9a-f]{32}", ex.id) is not None,
              "a background run returns a 32-hex command id from the init event")
        st = wait_finished(sbx, ex.id)
        check(st.exit_code == 3 and st.error == "exit status 3",
              f"status after exit 3: exit_code={st.exit_code} error={st.error!r}")
        check(st.started_at is not None and st.finished_at is not None and
              st.finished_at >= st.started_at, "status has started_at <= finished_at")
        check(st.content == "echo out; echo err >&2; exit 3", "status echoes the command")
        logs = sbx.commands.get_background_command_logs(ex.id, cursor=0)
        check(logs.content == "out\nerr\n", f"logs from cursor 0: {logs.content!r}")
        check(logs.cursor == len("out\nerr\n"), f"logs cursor is the byte offset: {logs.cursor}")
        again = sbx.commands.get_background_command_logs(ex.id, cursor=logs.cursor)
        check(again.content == "" and again.cursor == logs.cursor, "logs from the cursor: empty")

        ex = sbx.commands.run("pwd; echo \"$X\"", opts=RunCommandOpts(
            background=True, working_directory="/tmp", envs={"X": "from-envs"}))
        st = wait_finished(sbx, ex.id)
        logs = sbx.commands.get_background_command_logs(ex.id)
        check(st.exit_code == 0 and st.error in (None, "") and logs.content == "/tmp\nfrom-envs\n",
              f"working_directory and envs: {logs.content!r}")

        ex = sbx.commands.run("sleep 30", opts=RunCommandOpts(background=True,
                                                               timeout=timedelta(seconds=1)))
        st = wait_finished(sbx, ex.id, timeout_s=10)
        check(st.exit_code == -1 and st.error == "signal: killed",
              f"a command past its timeout is killed: {st.exit_code} {st.error!r}")

        ex = sbx.commands.run("sleep 30", opts=RunCommandOpts(background=True))
        check(sbx.commands.get_command_status(ex.id).running is True, "a sleeping command runs")
        sbx.commands.interrupt(ex.id)
        st = wait_finished(sbx, ex.id, timeout_s=10)
        check(st.exit_code == -1 and st.error == "signal: terminated",
              f"interrupt ends it with SIGTERM: {st.exit_code} {st.error!r}")
        check(raises(lambda: sbx.commands.interrupt(ex.id)),
              "interrupting a finished command is an error")
        check(raises(lambda: sbx.commands.get_command_status("0" * 32)),
              "the status of an unknown command is an error (404)")

        proxied = SandboxSync.connect(sbx.id, connection_config=ConnectionConfigSync(
            domain=domain, api_key=os.environ["AYATORI_OSB_API_KEY"], protocol="http",
            request_timeout=timedelta(seconds=60), use_server_proxy=True))
        try:
            ex = proxied.commands.run("echo via-proxy", opts=RunCommandOpts(background=True))
            st = wait_finished(proxied, ex.id)
            logs = proxied.commands.get_background_command_logs(ex.id)
            check(st.exit_code == 0 and logs.content == "via-proxy\n",
                  "a run through the server proxy (use_server_proxy)")
        finally:
            proxied.close()
    finally:
        sbx.kill()
        sbx.close()
    check(raises(lambda: manager.get_sandbox_info(sbx.id)), "after kill the sandbox is gone (404)")
    check(manager.list_sandbox_infos(SandboxFilter(metadata={"job-uid": uid})).sandbox_infos == [],
          "after kill the metadata lookup finds nothing")
    manager.close()
    print(f"{PASSED} passed, 0 failed", flush=True)


if __name__ == "__main__":
    main()
