"""Seen (a breaker helper, odd ssh hosts, 2026-12-06): an ssh host whose home had less room than
the runner file (about 200 KiB) failed the start with the right error ("could not prepare ... over
sftp: Failure. Hint: ... is it read-only, or the host's disk full?"), but left what it had
written: the kernel dir with a cut runner file, and on the kernel-server path the server's dir with
another, each start one or two more (3 dirs and 2 cut files after one start on each path). On a
home with 96 KiB free, the first start's pieces took all of it: the kit had filled the user's disk.

Now a start that cannot put its runner file removes what it made, on both paths: the home has the
room it had before, and ``~/.hermes-kernels`` holds nothing.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from tests.odd_hosts import odd_ssh_host

pytestmark = pytest.mark.usefixtures("docker_ready")

FILL = "dd if=/dev/zero of=/home/hermes/fill bs=1k count=200 2>/dev/null; sync"


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_start_on_a_nearly_full_home_leaves_nothing_of_it(tmp_path, server):
    with odd_ssh_host(tmp_path, setup=FILL, tmpfs={"/home/hermes": "size=300k,mode=0755,uid=1000,gid=1000"}) as host:
        free_before = host.run("df -k --output=avail /home/hermes | tail -n 1").strip()
        transport = host.transport(server=server)
        try:
            with pytest.raises(KernelStartError, match="disk full"):
                start_kernel(transport)
        finally:
            transport.close()

        left = host.run("find /home/hermes/.hermes-kernels -mindepth 1 2>&1")
        free_after = host.run("df -k --output=avail /home/hermes | tail -n 1").strip()
    assert left == "", f"the failed start left on the host:\n{left}"
    assert free_after == free_before, f"{free_before} KiB free before the start, {free_after} KiB after"
