"""Found by a breaker helper (frozen parts, 2026-12-05): with a docker container's (or an ssh
host's) kernel server stopped (SIGSTOP: a cell signalling its runner's parent, a debugger), the
next kernel start waited ``SPAWN_TIMEOUT_S`` (15 s: 15.4 s in all) for the server's answer before
starting the kernel by a plain spawn. The wait now asks every 0.5 s whether the server is stopped
(one exec reading its ``/proc/<pid>/stat``) and falls back at once: ~1 s, saying "the kernel
server ... is frozen (stopped, or its host paused)" in the kernel's note; the server is kept (it
carries its kernels' streams), and the leak scan does not wait its 12 s for it either.
"""

from __future__ import annotations

import os
import time

import pytest

from pytest_hermes_kernel import KernelHandle, start_kernel
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")


def signal_server(kernel: KernelHandle, sig: str) -> None:
    """``kill -<sig>`` the kernel's server, where it runs."""
    extra = kernel.launched.extra
    argv = ["kill", f"-{sig}", str(extra["server"].pid)]
    if "conn" in extra:  # ssh
        assert extra["conn"].run(" ".join(argv))[0] == 0
    else:
        assert kernel.transport._run(extra["container"], argv)[0] == 0


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_start_beside_a_stopped_kernel_server_falls_back_at_once(name: str) -> None:
    with transport_of_its_own(name, server=True) as transport:
        first = start_kernel(transport)
        assert first.execute("x = 1").status == "ok"
        signal_server(first, "STOP")
        try:
            began = time.monotonic()
            second = start_kernel(transport)
            took = time.monotonic() - began
            result = second.execute("1 + 1")
            began = time.monotonic()
            transport.leak_snapshot(os.getpid())
            scan = time.monotonic() - began
        finally:
            signal_server(first, "CONT")
        assert took < 6.0, f"the start took {took:.1f} s"  # 15.4 s
        assert scan < 4.0, f"the leak scan took {scan:.1f} s"
        assert result.value == "2" and "is frozen (stopped, or its host paused)" in result.kernel.note, result
        assert first.execute("x").value == "1"  # its stream rides the server, which was kept
        first.shutdown()
        second.shutdown()
