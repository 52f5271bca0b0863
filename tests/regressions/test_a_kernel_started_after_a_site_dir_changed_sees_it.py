"""Seen: a kernel forked by a kernel server had the ``sys.path`` the server's interpreter start
made from its site dirs, not the one a spawned runner's start makes then. A ``.pth`` file added
to site-packages after the server started (an editable ``pip install``), or a user site dir made
since (``pip install --user`` from a cell, a module put there): a new kernel on the spawn path
(``server=False``) imported it, one forked by the server raised ``ModuleNotFoundError``, locally
and in a container or on an ssh host alike.

Now a forked kernel whose server's site dirs changed since it started (their mtimes, a user site
dir that did not exist) is started afresh in the fork (an ``exec`` of a new interpreter: the same
pid, session and channel), as a spawned runner would be.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import transport_of_its_own

IMPORT = "import hermes_late_module; hermes_late_module.X"
SUPERVISOR_ARGV = "import os; open(f'/proc/{os.getppid()}/cmdline').read().replace(chr(0), ' ')"
#: A cell that puts a module in the user's site dir (made if missing: then it is not on
#: ``sys.path`` of an interpreter started before).
PUT_IN_USER_SITE = """
import os, site
os.makedirs(site.getusersitepackages(), exist_ok=True)
with open(os.path.join(site.getusersitepackages(), "hermes_late_module.py"), "w") as fh:
    fh.write("X = 42\\n")
site.ENABLE_USER_SITE
"""


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_pth_file_added_after_the_servers_start_is_honoured(server, tmp_path: Path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    (site_packages,) = (tmp_path / "venv" / "lib").glob("python*/site-packages")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "hermes_late_module.py").write_text("X = 42\n")
    transport = LocalTransport(python=str(tmp_path / "venv" / "bin" / "python"), server=server)
    try:
        with start_kernel(transport) as first:  # the server (if any) starts now
            assert first.execute(IMPORT).status == "error"
            (site_packages / "hermes_plain_module.py").write_text("Y = 1\n")  # found by an import anyway:
            with start_kernel(transport) as plain:  # the kernel is forked as before, not started afresh
                assert plain.execute("import hermes_plain_module; hermes_plain_module.Y").value == "1"
                assert (" server " in plain.execute(SUPERVISOR_ARGV).value) == server
            (site_packages / "late.pth").write_text(f"{extra}\n")
            with start_kernel(transport) as second:
                result = second.execute(IMPORT)
                assert (result.status, result.value) == ("ok", "42"), result.traceback
                assert second.execute("import sys; sys.path[-1]").value == repr(str(extra))
    finally:
        transport.close()


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_pth_file_rewritten_in_place_after_the_servers_start_is_honoured(server, tmp_path: Path):
    """``setup.py develop`` appends to an ``easy-install.pth`` that exists: the site dir's own
    mtime stays (no entry added or removed), and only that was compared (the review of
    2026-12-05: the forked kernel still raised ``ModuleNotFoundError``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    (site_packages,) = (tmp_path / "venv" / "lib").glob("python*/site-packages")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "hermes_late_module.py").write_text("X = 42\n")
    pth = site_packages / "easy-install.pth"
    pth.write_text("")
    transport = LocalTransport(python=str(tmp_path / "venv" / "bin" / "python"), server=server)
    try:
        with start_kernel(transport) as first:  # the server (if any) starts now
            assert first.execute(IMPORT).status == "error"
            dir_mtime = site_packages.stat().st_mtime_ns
            with pth.open("a") as fh:  # in place: same inode, the dir untouched
                fh.write(f"{extra}\n")
            assert site_packages.stat().st_mtime_ns == dir_mtime
            with start_kernel(transport) as second:
                result = second.execute(IMPORT)
                assert (result.status, result.value) == ("ok", "42"), result.traceback
    finally:
        transport.close()


@pytest.mark.usefixtures("docker_ready")
@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_module_put_in_a_new_user_site_dir_is_found_by_the_next_kernel(name, server):
    with transport_of_its_own(name, server=server) as transport:
        with start_kernel(transport) as first:
            assert first.execute(PUT_IN_USER_SITE).value == "True"
            assert first.execute(IMPORT).status == "error"  # not on its sys.path: made after its start
            with start_kernel(transport) as second:
                result = second.execute(IMPORT)
                assert (result.status, result.value) == ("ok", "42"), result.traceback
