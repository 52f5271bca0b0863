"""A local kernel kept by a kit before 2026-12-04 (6c93526) survives ``hermes-kernel sweep`` run with
another ``TMPDIR``, as one kept by this kit does.

Such a kernel carries no ``HERMES_KERNEL_TMPDIR``: kept by 50c2a37 under ``TMPDIR=/tmp/kd-tmp``
(exec worked, 3600 s left), ``TMPDIR=/tmp/kd-tmp2 hermes-kernel sweep --dry-run kernel-processes``
of this kit said ``would kill kernel process 14651 (host 14452 is gone)`` and the worker's too, and
two such kept kernels of this session were found dead 6 minutes after they were kept (a sweep with
the default temp dir on the same machine). Its processes still carry their host's ``TMPDIR``
(inherited): the record is looked for under it. One whose TTL ran out is still killed.

The process sweep looks at the whole machine: here it is shown only this test's processes.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import psutil
import pytest

from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.transports.leftovers import kill_orphan_kernels
from tests.regressions.test_a_sweep_under_another_tmpdir_leaves_kept_kernels_alone import _dead_pid, _record
from tests.support import environ_of, wait_until


@pytest.fixture
def keeping_tmp(tmp_path: Path) -> Path:
    """The temp dir of the older run that kept the kernels (the sweep's is ``private_tmp``)."""
    where = tmp_path / "keeping"
    where.mkdir(mode=0o700)
    return where


def test_an_older_kits_kept_kernel_is_found_by_its_hosts_tmpdir(private_tmp: Path, keeping_tmp: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    procs = {}
    for name, expired in (("kept", False), ("expired", True)):
        kid = uuid.uuid4().hex
        _record(kid, keeping_tmp, expired=expired)
        env = {k: v for k, v in os.environ.items() if k != kept.TMPDIR_ENV}
        env.update({"HERMES_KERNEL_ID": kid, "HERMES_KERNEL_HOST_PID": str(_dead_pid()), "TMPDIR": str(keeping_tmp)})
        procs[name] = subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)
    try:
        wait_until(lambda: all("HERMES_KERNEL_ID" in environ_of(p.pid) for p in procs.values()), 5.0,
                   what="both processes to have exec'd with their markers")
        mine = [psutil.Process(p.pid) for p in procs.values()]
        monkeypatch.setattr(psutil, "process_iter", lambda *args, **kwargs: iter(mine))
        lines: list[str] = []

        killed = kill_orphan_kernels(lines.append, False)  # this process's TMPDIR is private_tmp

        assert killed == 1 and procs["expired"].wait(5) == -9, lines
        assert procs["kept"].poll() is None and str(procs["kept"].pid) not in "".join(lines), lines
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(5)
