"""Seen (sessions 18 and 19): a kernel server refused as ``stale`` (a site dir changed since it
started: a ``.pth`` file added, a user site dir made by a cell) forks no kernel again, yet it kept
its spare (the kernel forked ahead for the next spawn, ``kernel/runner/spare.py``): a supervisor
and its worker lived on beside the retired server until it idled out, which it does only after
its last kernel ended and ``idle_timeout`` (300 s locally) passed.

Now the server ends its spare when it refuses a spawn as stale, and makes no other.
Locally (a ``.pth`` file added to a venv of the test's own) and in a container or on an ssh host
(a user site dir made by a cell): every server refuses as stale the same way (``ForkingServer``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.kernel.runner.environ import SERVER_KERNEL_ID_PREFIX
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.regressions.test_a_kernel_started_after_a_site_dir_changed_sees_it import PUT_IN_USER_SITE
from tests.support import gone, transport_of_its_own, wait_until

#: A cell: how many processes the kernel's server has as its spare's supervisor (its child with
#: the server's placeholder kernel id; the kernels it forked carry their own).
SPARES_OF_MY_SERVER = f"""
import os
def ppid(pid):
    try:
        with open(f'/proc/{{pid}}/stat') as fh:
            stat = fh.read()
    except OSError:
        return None
    return int(stat[stat.rfind(')') + 2:].split()[1])
def placeholder(pid):
    try:
        with open(f'/proc/{{pid}}/environ', 'rb') as fh:
            return b'HERMES_KERNEL_ID={SERVER_KERNEL_ID_PREFIX}' in fh.read()
    except OSError:
        return False
server = ppid(os.getppid())  # the worker's supervisor's parent
len([p for p in os.listdir('/proc') if p.isdigit() and ppid(p) == server and placeholder(p)])
"""


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


@pytest.mark.usefixtures("docker_ready")
@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_remote_server_refused_as_stale_ends_its_spare(name: str) -> None:
    with transport_of_its_own(name, server=True) as transport:
        with start_kernel(transport) as first:
            spares = lambda: first.execute(SPARES_OF_MY_SERVER).value  # noqa: E731
            wait_until(lambda: spares() == "1", 30.0, what="the server's spare")
            assert first.execute(PUT_IN_USER_SITE).value == "True"
            with start_kernel(transport) as second:  # refused as stale: a new server forks it
                assert second.execute("1 + 1").value == "2"
            wait_until(lambda: spares() == "0", 30.0, what="the stale server's spare to end")
