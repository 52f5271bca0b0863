"""Found by a breaker helper (the spare kernel, 2026-12-07): a cell removed the kernel root where it
runs (``rm -rf /tmp/*`` in a container, ``~/.hermes-kernels`` on an ssh host: a test's cleanup),
and with it the dir of the kernel server that forked it, holding the runner file each new kernel
dir links to. From then on the server refused every start (``could not make the kernel dir ...:
[Errno 2] No such file or directory: '.../server-.../hermes-runner-....pyz'``), and every later
start on that transport fell back to a plain spawn, its first result's ``kernel.note`` saying
``kernel server unavailable (...): started by a plain spawn``, for the transport's whole life: a
test asserting an empty note failed, and each start paid for the execs. The server now refuses
such a start as stale, as after a site dir changed: the transport starts a new server, its runner
put anew, which forks this kernel and the later ones, with no note (nothing fell back); the old
server serves on the kernels it has, and its spare ends at once (it lingered until the server idled
out: its last kernel ended + 300 s).
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from tests.regressions.test_a_stale_kernel_servers_spare_kernel_ends_at_once import SPARES_OF_MY_SERVER
from tests.support import kernels_shut_down_after, transport_of_its_own, wait_until  # noqa: F401 - fixture

#: The kernel root on each transport's kernel host (docker: in the container; ssh: the login's home).
ROOTS = {"docker": "/tmp/hermes-kernels", "ssh": "~/.hermes-kernels"}


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_starts_after_a_cell_removed_the_kernel_root_are_forked_with_no_note(name: str, kernels: list) -> None:
    with transport_of_its_own(name, server=True) as transport:
        first = start_kernel(transport)
        kernels.append(first)
        spares = lambda: first.execute(SPARES_OF_MY_SERVER).value  # noqa: E731
        wait_until(lambda: spares() == "1", 30.0, what="the server's spare")
        removed = first.execute(f"import os, shutil; root = os.path.expanduser({ROOTS[name]!r}); "
                                "shutil.rmtree(root, ignore_errors=True); os.path.exists(root)")
        assert removed.value == "False"

        for _ in range(2):
            k = start_kernel(transport)
            kernels.append(k)
            result = k.execute("1 + 1")
            assert (result.value, result.kernel.note) == ("2", ""), result.kernel.note
            assert "forked by kernel server" in k.launched.label  # type: ignore[union-attr]
            k.shutdown()
        assert first.execute("2 + 2").value == "4", "the old server still relays the kernel it forked"
        wait_until(lambda: spares() == "0", 30.0, what="the retired server's spare to end")
