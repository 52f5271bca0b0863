"""``hermes-kernel sweep`` run with another ``TMPDIR`` than the run that kept a kernel leaves
that kept kernel alone until its TTL has run out, as the README says.

It killed it: a user kept a local kernel with ``pytest --hermes-keep-failed``, then
``TMPDIR=/tmp/other hermes-kernel sweep --dry-run kernel-processes`` said ``would kill kernel
process 5256 (host 5253 is gone)``, and the real sweep did (``hermes-kernel exec`` then said the
kept runner is gone). The sweep looked for kept records under its own temp dir only. Now a
local kernel carries its host's temp dir (``HERMES_KERNEL_TMPDIR`` in its processes'
environment, a line of its kernel dir's host file), as a docker kernel's container carries the
label ``org.hermes-kernel.tmpdir``, and the sweeps read the records there too. A kept kernel
whose TTL ran out is still swept.

The process sweep looks at the whole machine (see ``tests.plugin.test_keep_failed``): here it is
shown only this test's processes.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from pytest_hermes_kernel.transports.leftovers import kill_orphan_kernels
from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.transports.kernel_dirs import HOST_FILE, KERNEL_DIR_PREFIX, stale_kernel_dirs
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import environ_of, wait_until

WEEK_S = 7 * 86400.0


def _dead_pid() -> int:
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as fh:
        return int(fh.read()) + 1  # no process can have it


def _record(kernel_id: str, where: Path, *, expired: bool, kernel_dir: str = "") -> None:
    """A kept record of ``kernel_id`` under temp dir ``where``, as the run that kept it wrote it."""
    at = time.time() - (7200 if expired else 0)
    kept.save(kept.KeptKernel(kernel_id=kernel_id, transport="local", locator={"kernel_dir": kernel_dir},
                              token="t", nodeid="t.py::t", kept_at=at, detached_at=at, ttl_s=3600.0,
                              host_pid=_dead_pid()), str(where))


@pytest.fixture
def keeping_tmp(tmp_path: Path) -> Path:
    """The temp dir of the run that kept the kernels (not the sweep's: that is ``private_tmp``)."""
    where = tmp_path / "keeping"
    where.mkdir(mode=0o700)
    return where


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_local_kernel_carries_its_hosts_temp_dir(server: bool) -> None:
    transport = LocalTransport(server=server)
    handle = KernelHandle(transport).start()
    try:
        kdir = transport.locator(handle.launched)["kernel_dir"]
        for pid in (handle.launched.pid, handle.pid):
            assert environ_of(pid)[kept.TMPDIR_ENV] == tempfile.gettempdir()
        assert Path(kdir, HOST_FILE).read_text().splitlines()[1] == tempfile.gettempdir()
    finally:
        handle.shutdown()
        transport.close()


def test_the_process_sweep_finds_the_record_under_the_kernels_own_temp_dir(private_tmp: Path, keeping_tmp: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    sweep_spares_the_kept_kernel(keeping_tmp, monkeypatch, kept.TMPDIR_ENV, lambda env: {
        **env, kept.TMPDIR_ENV: str(keeping_tmp)})


def sweep_spares_the_kept_kernel(keeping_tmp: Path, monkeypatch: pytest.MonkeyPatch, marker: str,
                                 marked: Callable[[dict[str, str]], dict[str, str]]) -> None:
    """A process sweep, with its own temp dir, shown two kernel processes of a dead host whose records
    are under ``keeping_tmp`` (one kept, one whose TTL ran out): it kills the expired one alone.
    ``marked(env)`` is a process's environment given its kernel id and host pid (``marker`` is
    the variable waited for in its ``/proc/<pid>/environ``)."""
    procs = {}
    for name, expired in (("kept", False), ("expired", True)):
        kid = uuid.uuid4().hex
        _record(kid, keeping_tmp, expired=expired)
        env = marked({**os.environ, "HERMES_KERNEL_ID": kid, "HERMES_KERNEL_HOST_PID": str(_dead_pid())})
        procs[name] = subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)
    try:
        wait_until(lambda: all(marker in environ_of(p.pid) for p in procs.values()), 5.0,
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


def test_the_dir_sweep_finds_the_record_under_the_kernel_dirs_host_temp_dir(private_tmp: Path, keeping_tmp: Path,
                                                                           tmp_path: Path) -> None:
    root = tmp_path / "kernel-dirs"  # PYTEST_HERMES_KERNEL_DIR, shared by both runs
    root.mkdir()
    dirs = {}
    for name, expired in (("kept", False), ("expired", True)):
        dead = _dead_pid()
        path = root / f"{KERNEL_DIR_PREFIX}{dead}-{name}"
        path.mkdir(mode=0o700)
        (path / HOST_FILE).write_text(f"{dead} {os.readlink('/proc/self/ns/pid')}\n{keeping_tmp}\n")
        _record(uuid.uuid4().hex, keeping_tmp, expired=expired, kernel_dir=str(path))
        dirs[name] = str(path)

    assert stale_kernel_dirs(WEEK_S, root=str(root)) == [dirs["expired"]]
