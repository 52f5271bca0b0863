"""Seen (a breaker helper, odd ssh hosts, 2026-12-06): an ssh login whose home path is long (75
bytes here, ``/mnt/shared/cluster-storage/users/<department>/<first.last>``, as cluster homes
are) got no kernel on either path: "the ssh kernel runner ended during start, before its hello:
... closed: end of stream (the kernel runner or its relay is gone)", naming no cause. The kernel's
socket, ``<home>/.hermes-kernels/<32-hex id>/sock``, is over the 107 bytes a unix socket address
holds: the runner binds it through its directory's ``/proc/self/fd`` entry (as for a local kernel
under a long ``TMPDIR``), but the relay (spawn path) and the kernel server's attach (server path)
connected by the plain path and failed.

Now the relay is started in the kernel dir and connects to ``sock`` by its name there, and the
server's attach connects as the runner binds: the kernel starts and runs, on both paths.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from tests.odd_hosts import odd_ssh_host

pytestmark = pytest.mark.usefixtures("docker_ready")

HOME = "/mnt/shared/cluster-storage/users/research-department/firstname.lastname"


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_kernel_starts_under_a_home_too_long_for_its_socket_path(tmp_path, server):
    assert len(f"{HOME}/.hermes-kernels/{'0' * 32}/sock") > 107
    setup = f"mkdir -p {HOME.rsplit('/', 1)[0]} && usermod -d {HOME} -m hermes"
    with odd_ssh_host(tmp_path, setup=setup, working_dir="/") as host:
        transport = host.transport(server=server)
        try:
            kernel = start_kernel(transport)
            try:
                assert kernel.execute("import os; x = os.getcwd(); x").value == repr(f"{HOME}/.hermes-kernels/{kernel.kernel_id}")
                assert kernel.execute("len(x)").value == str(len(HOME) + 16 + 33)
            finally:
                kernel.shutdown()
        finally:
            transport.close()
        assert host.run(f"ls -A {HOME}/.hermes-kernels") == ""
