"""Seen (a breaker helper, 2026-12-06): a pytest run SIGKILLed during a ``hermes_oom`` test on local
(a CI job's timeout, the OOM killer taking pytest itself, an xdist worker that crashed) left its
memory cgroup, ``/sys/fs/cgroup/memory/hermes-kernel-...``, on the machine for good: empty (its
kernel ended with its host), but never removed, one more per such run, and nothing in the kit
removed it. A group's name now says who made it (pid namespace, pid, start time); making one
removes the empty ones whose maker is gone. One a process is still in is left: nothing is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pytest_hermes_kernel
from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.faults.cgroup import V1_ROOT, create_memory_cgroup

HANGS = """
import time
import pytest

@pytest.mark.hermes_oom(limit_bytes=128 * 2**20)
def test_hangs(hermes_kernel):
    line = next(l for l in open(f"/proc/{hermes_kernel.pid}/cgroup").read().splitlines() if ":memory:" in l)
    with open("cgroup.txt", "w") as fh:
        fh.write(line.split(":", 2)[2])
    hermes_kernel.execute("import time; time.sleep(120)", timeout=180)
"""


def _wait_for(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (found := pred()):
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:g} s: {what}")
        time.sleep(0.05)
    return found


def test_the_next_memory_cgroup_made_removes_a_killed_runs(tmp_path: Path) -> None:
    if not os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        pytest.skip("needs a cgroup v1 memory hierarchy (this machine's)")
    try:
        create_memory_cgroup(64 * 2**20).remove()
    except TransportUnavailableError as exc:
        pytest.skip(f"no memory cgroup here: {exc}")
    (tmp_path / "test_hangs.py").write_text(HANGS)
    env = {**os.environ, "PYTHONPATH": str(Path(pytest_hermes_kernel.__file__).parents[1])}
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--hermes-transport=local",
                            "test_hangs.py"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        path = _wait_for(lambda: (tmp_path / "cgroup.txt").exists() and (tmp_path / "cgroup.txt").read_text(), 60,
                         "the hung test's kernel in its memory cgroup")
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    left = V1_ROOT + path
    assert "hermes-kernel-" in left, left
    _wait_for(lambda: Path(left, "cgroup.procs").read_text() == "", 30, f"{left} empty once its host died")

    with_a_process = create_memory_cgroup(64 * 2**20)  # a later run's, still in use: left alone
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        with open(with_a_process.procs_file, "w", encoding="ascii") as fh:
            fh.write(str(sleeper.pid))
        create_memory_cgroup(64 * 2**20).remove()  # what the next hermes_oom test does first
        assert not os.path.exists(left), f"the killed run's memory cgroup is still on the machine: {left}"
        assert os.path.exists(with_a_process.path), "a group with a process in it (its maker alive) was removed"
    finally:
        sleeper.kill()
        sleeper.wait()
        with_a_process.remove()
        if os.path.exists(left):
            os.rmdir(left)
