"""Found by the breaker helper on other interpreters (2026-12-06): in an image whose Python is not
``python3`` on PATH (only ``/opt/py/bin/python3``), a docker kernel started with that ``python=``
ran its cells, but every helper script of the transport ran ``python3``: docker answered each
"exec: python3: executable file not found in $PATH". ``transport.kill`` did nothing and said
``False`` (the next cell still ran), ``kernel_processes`` and the leak check's scan raised
``TransportLostError: no complete answer from a scan ... exit code 126``, on the spawn path a
shutdown was never ``confirmed``; in a pytest run ``hermes_kernel_sigkill`` failed the test with
"the worker ... had already ended when the fault was due", and ``hermes_transport_drop`` ended
the kernel ("the kill was not confirmed") and reported it leaked. Fixed: a script runs with an interpreter a kernel was launched
with there when the transport's is missing (``transports/docker/scripts.py``).
"""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel import start_kernel
from tests.regressions.conftest import PYTHON_ELSEWHERE as OWN
from tests.support import transport_of_its_own, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_kernel_on_its_own_python_is_seen_killed_and_confirmed_ended(image_without_python3: str, server: bool) -> None:
    with transport_of_its_own("docker", server=server, image=image_without_python3) as transport:
        kernel = start_kernel(transport, python=OWN, start_timeout=60)
        assert kernel.execute("import sys; sys.executable").value == repr(OWN)

        assert transport.kernel_processes(kernel.kernel_id, transport.locator(kernel.launched)) != []
        transport.signal_pid(kernel.launched, kernel.worker_pid, 0)  # hermes_kernel_sigkill's way: it raised
        # ProcessLookupError, and the fault said "the worker ... had already ended ... nothing to kill"
        scanned = transport.leak_snapshot(os.getpid())["remote kernel process"]
        assert any(kernel.kernel_id in key for key in scanned), scanned
        assert kernel.shutdown().confirmed

        doomed = start_kernel(transport, python=OWN, start_timeout=60)
        assert doomed.execute("x = 1").status == "ok"
        assert transport.kill(doomed.launched) and transport.seen_gone(doomed.launched)
        after = doomed.execute("x")
        assert after.status == "died", after.summary()
        doomed.shutdown()
        assert wait_until(lambda: not transport.leak_snapshot(os.getpid())["remote kernel process"], 20.0)

