"""Seen (sessions 18 and 19): a kernel server refused as ``stale`` (a site dir changed since it
started: a ``.pth`` file added, a user site dir made by a cell) forks no kernel again, yet it kept
its spare (the kernel forked ahead for the next spawn, ``kernel/runner/spare.py``): a supervisor
and its worker lived on beside the retired server until it idled out, which it does only after
its last kernel ended and ``idle_timeout`` (300 s locally) passed.

Now the server ends its spare when it refuses a spawn as stale, and makes no other.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.kernel.runner.environ import SERVER_KERNEL_ID_PREFIX
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import gone, wait_until


def spare_pids(server: int) -> list[int]:
    """The pids of ``server``'s spare: its supervisor and worker (they carry the server's
    placeholder kernel id; the kernels it forked carry their own)."""
    pids = []
    for proc in psutil.Process(server).children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and \
                    proc.environ().get("HERMES_KERNEL_ID", "").startswith(SERVER_KERNEL_ID_PREFIX):
                pids.append(proc.pid)
        except psutil.Error:
            continue
    return pids


def test_a_server_refused_as_stale_ends_its_spare(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    (site_packages,) = (tmp_path / "venv" / "lib").glob("python*/site-packages")
    transport = LocalTransport(python=str(tmp_path / "venv" / "bin" / "python"))
    try:
        with start_kernel(transport) as first:  # its server forks a spare after it
            (old_server,) = transport.server_pids()
            spare = wait_until(lambda: spare_pids(old_server), 30.0, what="the server's spare")
            (site_packages / "late.pth").write_text(f"{tmp_path}\n")
            with start_kernel(transport) as second:  # refused as stale: a new server forks it
                assert second.execute("1 + 1").value == "2"
            wait_until(lambda: all(gone(pid) for pid in spare), 30.0, what=f"the stale server's spare {spare} to end")
            assert spare_pids(old_server) == []  # and no other made
            assert first.execute("1 + 2").value == "3"  # the retired server's kernel lives on
            assert psutil.pid_exists(old_server)
    finally:
        transport.close()
