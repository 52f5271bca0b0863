"""A worker that SIGKILL cannot end (uninterruptible sleep on a hung file system; here a frozen
cgroup v1 freezer, where a kill stays pending until the thaw). ``restart()`` waited 5 s, said
``reset`` and gave the old worker's pid as the new one's; the old worker, state and all, ran
the next cell until the thaw ended it. Now the runner refuses to hand back the old worker: the
restart raises ``KernelStartError`` naming it and the 5 s bound, and the next cell, once the
worker has ended, runs on a fresh one and reports the loss. Found by the mutation run (issue
#13: a survivor of ``KILL_WAIT_S``).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelStartError
from pytest_hermes_kernel.procs import pid_alive
from tests.support import wait_until

FREEZER = Path("/sys/fs/cgroup/freezer")


@contextlib.contextmanager
def frozen(pid: int) -> Iterator[None]:
    """Freeze ``pid`` in a cgroup v1 freezer of its own; thaw it and remove the cgroup after."""
    if not os.access(FREEZER, os.W_OK):
        pytest.skip("needs a writable cgroup v1 freezer (root): on cgroup v2 a SIGKILL ends frozen tasks")
    group = FREEZER / f"hermes-test-{uuid.uuid4().hex[:12]}"
    group.mkdir()
    try:
        (group / "cgroup.procs").write_text(str(pid))
        (group / "freezer.state").write_text("FROZEN")
        wait_until(lambda: (group / "freezer.state").read_text().strip() == "FROZEN", 5.0, what="the freeze")
        yield
    finally:
        (group / "freezer.state").write_text("THAWED")
        wait_until(lambda: not (group / "cgroup.procs").read_text().strip() or not pid_alive(pid), 10.0,
                   what=f"pid {pid} to end or leave the freezer")
        wait_until(lambda: not (group / "cgroup.procs").read_text().strip(), 10.0, what="the freezer to empty")
        group.rmdir()


def test_restart_of_a_worker_sigkill_cannot_end_fails_naming_it(make_kernel):
    k = make_kernel()
    k.execute("x = 1")
    old = k.pid

    refused = rf"the old worker \(pid {old}\) did not end within 5 s of SIGKILL"
    with frozen(old), pytest.raises(KernelStartError, match=refused):
        k.restart()

    r = k.execute("x")
    assert r.ename == "NameError" and r.kernel.state_lost and r.kernel.reason == "reset" and r.kernel.pid != old, r.summary()
    assert not pid_alive(old)
