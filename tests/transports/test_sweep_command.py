"""``hermes-kernel sweep`` on a run whose only process was SIGKILLed while it held an sshd.

Before: the sweep removed the container but left the run's state and lock files and the sshd
private key in the temp dir, and there was no way to see what it would remove. Now
``--dry-run`` lists the container and every run file (the key included) and removes nothing;
the sweep then removes them all, the run dir with them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

MEMBER = """
import sys, time
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
record = SshTransport(run_id=sys.argv[1]).sshd.join()
print(record["container_id"], record["key_file"], flush=True)
time.sleep(600)
"""


def _hermes_kernel(tmp: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", *args],
                          env={**os.environ, "TMPDIR": str(tmp)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _exists(cid: str) -> bool:
    import docker

    client = docker.from_env()
    try:
        client.containers.get(cid)
        return True
    except docker.errors.NotFound:
        return False
    finally:
        client.close()


def test_dry_run_lists_a_dead_runs_sshd_and_key_then_the_sweep_removes_them(docker_ready: None,
                                                                            tmp_path: Path) -> None:
    run_id = f"sweep-{uuid.uuid4().hex[:12]}"
    member = subprocess.Popen([sys.executable, "-c", MEMBER, run_id], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TMPDIR": str(tmp_path)})
    cid = ""
    try:
        assert member.stdout is not None
        cid, key_file = member.stdout.readline().split()
        member.send_signal(signal.SIGKILL)
        member.wait(10)
        run_dir = os.path.dirname(key_file)

        out = _hermes_kernel(tmp_path, "--dry-run")
        assert f"would remove container {cid[:12]} " in out and f"would remove run file {key_file} " in out
        assert f"would remove run dir {run_dir} " in out
        assert _exists(cid) and os.path.exists(key_file), "a dry run removed something"

        out = _hermes_kernel(tmp_path, "run-files", "containers")
        assert f"removed container {cid[:12]} " in out
        assert not _exists(cid) and not os.path.exists(key_file) and not os.path.exists(run_dir)
    finally:
        if member.poll() is None:
            member.kill()
            member.wait(10)
        if cid:
            from pytest_hermes_kernel.containers.lifecycle import remove_container

            remove_container(cid)
