"""Seen (the soak round, ``benchmarks/soak.py``): a docker or ssh kernel server's host side kept
how each kernel it forked ended, one record per kernel, dropped only past the newest 256 (+100
per 100 kernels on a busy host, for as long as the transport lived).

Now a kernel's record is dropped at its cleanup, after which nobody asks for it.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from tests.support import transport_of_its_own


@pytest.mark.usefixtures("docker_ready")
@pytest.mark.parametrize("name", ["docker", "ssh"])
@pytest.mark.parametrize("how", ["shutdown", "died"])
def test_no_record_of_ended_kernels_stays_after_their_cleanup(name, how):
    with transport_of_its_own(name, server=True) as transport:
        servers = set()
        for _ in range(4):
            with start_kernel(transport) as kernel:
                servers.add(kernel.launched.extra["server"])
                if how == "died":
                    assert kernel.execute("import os; os._exit(3)").status == "died"
        (server,) = servers
        assert server._exited == {}, f"{len(server._exited)} ended kernels remembered after their cleanup"
