"""Seen: once a site dir changed after a kernel server started (a ``.pth`` file added, a user
site dir made by a cell's ``pip install --user``), every later kernel of that server was started
afresh in its fork (an ``exec`` of a new interpreter: a spawn's cost, 40-60 ms locally instead of
a few) until the server ended, and nothing said so.

Now the server refuses a spawn as ``stale`` once its site dirs changed; the host retires it (it
still serves the kernels it forked, which keep working) and a new server, started on the site
dirs as they are now, forks this kernel and the later ones again.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.regressions.test_a_kernel_started_after_a_site_dir_changed_sees_it import (
    IMPORT,
    PUT_IN_USER_SITE,
    SUPERVISOR_ARGV,
)
from tests.support import transport_of_its_own


def forked(kernel) -> bool:
    """Whether ``kernel``'s supervisor is a fork of a kernel server (its command line is the
    server's), not a fresh interpreter."""
    return " server " in kernel.execute(SUPERVISOR_ARGV).value


def forked_and_seeing_the_change(*kernels) -> None:
    """Each of ``kernels`` (new ones) imports what the site change brought, is a fork of a server
    started after it, and fell back to no spawn."""
    for kernel in kernels:
        result = kernel.execute(IMPORT)
        assert (result.status, result.value) == ("ok", "42"), result.traceback
        assert "kernel server" not in result.kernel.note  # no fallback to a spawn
        assert forked(kernel), "started afresh, not forked by a server started after the change"


def test_a_local_server_whose_site_dir_changed_is_replaced(tmp_path: Path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    (site_packages,) = (tmp_path / "venv" / "lib").glob("python*/site-packages")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "hermes_late_module.py").write_text("X = 42\n")
    transport = LocalTransport(python=str(tmp_path / "venv" / "bin" / "python"))
    try:
        with start_kernel(transport) as first:
            first.execute("kept = 7")
            (old_server,) = transport.server_pids()
            (site_packages / "late.pth").write_text(f"{extra}\n")
            with start_kernel(transport) as second, start_kernel(transport) as third:
                forked_and_seeing_the_change(second, third)
                assert len(set(transport.server_pids()) - {old_server}) == 1  # one new server forked both
            assert first.execute("kept").value == "7"  # the retired server's kernel lives on, state kept
            assert psutil.pid_exists(old_server)
        servers = transport.server_pids()
    finally:
        transport.close()
    for pid in servers:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.usefixtures("docker_ready")
@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_remote_server_whose_site_dir_changed_is_replaced(name):
    with transport_of_its_own(name, server=True) as transport:
        with start_kernel(transport) as first:
            first.execute("kept = 7")
            assert forked(first)
            assert first.execute(PUT_IN_USER_SITE).value == "True"
            with start_kernel(transport) as second, start_kernel(transport) as third:
                forked_and_seeing_the_change(second, third)
            # its server relays it still: retired, not closed (closing would cut its channel)
            assert first.execute("kept").value == "7"
