"""``hermes-kernel sweep kernel-processes``: it kills local kernel processes whose host is gone and
leaves those whose host lives (that it leaves kept kernels alone is in ``tests/plugin/test_keep_failed.py``).

The sweep looks at the whole machine; run as is, it would also kill what concurrent tests keep
alive on purpose (see ``tests.plugin.test_keep_failed.ORPHAN_SWEEP_IS_MACHINE_WIDE``). Here it is
shown only this test's processes (``psutil.process_iter`` narrowed to them); the selection and
the kill are the command's own.
"""

from __future__ import annotations

import os

import psutil
import pytest

from pytest_hermes_kernel.transports.leftovers import kill_orphan_kernels
from tests.support import gone, kernel_process, wait_until


def _dead_pid() -> int:
    """A pid no process can have: one past the kernel's ``pid_max`` (a freed pid could be reused)."""
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as fh:
        pid = int(fh.read()) + 1
    assert not psutil.pid_exists(pid)
    return pid


def test_kills_the_kernel_processes_of_a_dead_host_and_only_those(monkeypatch: pytest.MonkeyPatch) -> None:
    orphan, live = kernel_process(_dead_pid()), kernel_process(os.getpid())
    try:
        wait_until(lambda: all(psutil.Process(p.pid).environ().get("HERMES_KERNEL_ID") for p in (orphan, live)),
                   5.0, what="both processes to have exec'd with their markers")
        mine = [psutil.Process(orphan.pid), psutil.Process(live.pid)]
        monkeypatch.setattr(psutil, "process_iter", lambda *args, **kwargs: iter(mine))
        lines: list[str] = []

        listed = kill_orphan_kernels(lines.append, True)
        assert listed == 1 and not gone(orphan.pid)  # a dry run kills nothing

        killed = kill_orphan_kernels(lines.append, False)

        assert killed == 1 and orphan.wait(5) == -9 and live.poll() is None
        assert lines[0].startswith(f"would kill kernel process {orphan.pid} (host ")
        assert lines[1].startswith(f"killed kernel process {orphan.pid} (host ")
    finally:
        for p in (orphan, live):
            if p.poll() is None:
                p.kill()
            p.wait(5)
