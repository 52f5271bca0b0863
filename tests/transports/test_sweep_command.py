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

import pytest

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


def _dead_member(run_id: str, tmp: Path) -> tuple[str, str]:
    """A process that joined the run's sshd and was SIGKILLed: ``(container id, key file)``."""
    member = subprocess.Popen([sys.executable, "-c", MEMBER, run_id], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TMPDIR": str(tmp)})
    try:
        assert member.stdout is not None
        cid, key_file = member.stdout.readline().split()
    finally:
        member.send_signal(signal.SIGKILL)
        member.wait(10)
        if member.stdout is not None:
            member.stdout.close()
    return cid, key_file


def _remove(cid: str) -> None:
    from pytest_hermes_kernel.containers.lifecycle import remove_container

    remove_container(cid)


def test_dry_run_lists_a_dead_runs_sshd_and_key_then_the_sweep_removes_them(docker_ready: None,
                                                                            tmp_path: Path) -> None:
    # Any session's first docker use sweeps dead runs' containers on this engine, so another
    # session may remove ours between the kill and the dry run: then the scenario runs again.
    for _attempt in range(3):
        cid, key_file = _dead_member(f"sweep-{uuid.uuid4().hex[:12]}", tmp_path)
        try:
            out = _hermes_kernel(tmp_path, "--dry-run")
            if _exists(cid):  # it existed all through the dry run: it must have been listed
                break
        except BaseException:
            _remove(cid)
            raise
    else:
        pytest.skip("other sessions' sweeps removed the dead run's container before each dry run")
    try:
        run_dir = os.path.dirname(key_file)
        assert f"would remove container {cid[:12]} " in out and f"would remove run file {key_file} " in out
        assert f"would remove run dir {run_dir} " in out
        assert os.path.exists(key_file), "a dry run removed something"

        out = _hermes_kernel(tmp_path, "run-files", "containers")
        assert f"removed run file {key_file} " in out
        assert not _exists(cid) and not os.path.exists(key_file) and not os.path.exists(run_dir)
    finally:
        _remove(cid)
