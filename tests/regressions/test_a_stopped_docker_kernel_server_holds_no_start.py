"""Found by a breaker helper (frozen parts, 2026-12-05): with a docker container's kernel server
stopped (SIGSTOP: a cell signalling its runner's parent, a debugger), the next kernel start
waited ``SPAWN_TIMEOUT_S`` (15 s: 15.4 s in all) for the server's answer before starting the
kernel by a plain spawn. The wait now asks every 0.5 s whether the server is stopped (one exec
reading its ``/proc/<pid>/stat``) and falls back at once: ~1 s, saying "the kernel server ... is
frozen (stopped, or its host paused)" in the kernel's note; the server is kept (it carries its
kernels' streams), and the leak scan does not wait its 12 s for it either.
"""

from __future__ import annotations

import os
import time

import pytest

from pytest_hermes_kernel import start_kernel
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_start_beside_a_stopped_kernel_server_falls_back_at_once() -> None:
    with transport_of_its_own("docker", server=True) as transport:
        first = start_kernel(transport)
        assert first.execute("x = 1").status == "ok"
        cid = first.launched.extra["container"]
        server = first.launched.extra["server"].pid
        assert transport._run(cid, ["kill", "-STOP", str(server)])[0] == 0
        try:
            began = time.monotonic()
            second = start_kernel(transport)
            took = time.monotonic() - began
            result = second.execute("1 + 1")
            began = time.monotonic()
            transport.leak_snapshot(os.getpid())
            scan = time.monotonic() - began
        finally:
            transport._run(cid, ["kill", "-CONT", str(server)])
        assert took < 6.0, f"the start took {took:.1f} s"  # 15.4 s
        assert scan < 4.0, f"the leak scan took {scan:.1f} s"
        assert result.value == "2" and "is frozen (stopped, or its host paused)" in result.kernel.note, result
        assert first.execute("x").value == "1"  # its stream rides the server, which was kept
        first.shutdown()
        second.shutdown()
