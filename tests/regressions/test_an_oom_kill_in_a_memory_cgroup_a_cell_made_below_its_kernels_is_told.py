"""Seen (a breaker helper, 2026-12-06, cgroup v1): a cell under ``hermes_oom``'s limit made a memory
cgroup below its kernel's (as code that limits its own jobs does), gave it a smaller limit and moved
the worker there; the next cell outgrew it and was reported ``died``, ``reason="died"``, "killed by
signal 9": an OOM kill reported as a plain SIGKILL. On v1 the kernel counts an OOM kill only in the
victim's own group, and the runner read its kernel's group alone. The groups below are counted
now (v2's ``memory.events`` counts them itself). And the cleanup removed the kernel's group only,
which a group below it keeps in place: those are removed too.
"""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.faults.cgroup import create_memory_cgroup
from pytest_hermes_kernel.transports import make_transport

HOG = "hog = []\nwhile True: hog.append(b'x' * 2**22)"
INTO_A_GROUP_BELOW = """
import os
below = {where!r}
os.makedirs(below, exist_ok=True)
with open(below + "/memory.limit_in_bytes", "w") as fh:
    fh.write(str(64 * 2**20))
with open(below + "/cgroup.procs", "w") as fh:
    fh.write(str({pid}))
"""


@pytest.fixture
def memory_cgroup():
    try:
        cg = create_memory_cgroup(256 * 2**20)
    except TransportUnavailableError as exc:
        pytest.skip(f"no memory cgroup here: {exc}")
    if cg.version != 1:
        cg.remove()
        pytest.skip("cgroup v2 counts the OOM kills below a group in its own memory.events")
    yield cg
    cg.remove()
    assert not os.path.exists(cg.path), f"the kernel's memory cgroup, or one below it, was left: {cg.path}"


@pytest.mark.parametrize("where", ["local", "local-spawn"])
def test_the_worker_oom_killed_in_a_group_below_is_oom_killed(memory_cgroup, where) -> None:
    transport = make_transport("local", **({"server": False} if where == "local-spawn" else {}))
    below = memory_cgroup.path + "/jobs"
    try:
        with start_kernel(transport, cgroup_procs=memory_cgroup.procs_file, start_timeout=30) as kernel:
            moved = kernel.execute(INTO_A_GROUP_BELOW.format(where=below, pid="os.getpid()"))
            assert moved.status == "ok", moved.summary()
            result = kernel.execute(HOG, timeout=60)
            job = kernel.execute(INTO_A_GROUP_BELOW.format(where=below, pid="'0'") + "\n" +
                                 f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {HOG!r}]).returncode")
    finally:
        transport.close()

    assert result.status == "died" and result.kernel.reason == "oom_killed", result.summary()
    assert job.status == "ok" and job.value == "-9", job.summary()
    assert "the memory cgroup's OOM killer ended 1 process while this cell ran" in job.kernel.note, job.kernel.note
