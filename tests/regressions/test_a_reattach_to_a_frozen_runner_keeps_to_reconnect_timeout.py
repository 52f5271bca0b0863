"""Seen: a docker or ssh runner frozen (SIGSTOP on its pid inside the container, a debugger's
stop) mid-cell; the keepalives gave up on its silent channel, and the re-attach's new relay
reached its socket (the kernel accepts for a stopped listener), then waited for its hello as
long as a start does, ``start_timeout`` (30 s), not ``reconnect_timeout`` (10 s): a cell without
a budget came back ``died`` after 42 s (12 s of keepalives + 30 s). The hello of a re-attach now
waits no longer than what is left of ``reconnect_timeout``.
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports.detached import SIGNAL_SCRIPT
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")

#: Quick keepalives and re-attach: silent for 1 x (1 + 1) s, then 2 s to re-attach.
OPTIONS = {"keepalive_interval": 1.0, "keepalive_missed": 1, "reconnect_timeout": 2.0}
#: Seconds the cell may take: 2 s of keepalives, 2 s of re-attach, the runner's kill (it said 32 s).
ENDED_S = 12.0


def _signal(transport, kernel, sig: str) -> None:
    if transport.name == "docker":
        code, out = transport.run_script(kernel.launched.extra["container"], SIGNAL_SCRIPT, str(kernel.runner_pid),
                                         {"STOP": "19", "CONT": "18"}[sig])
    else:
        code, out, _ = transport.connection().run(f"kill -{sig} {kernel.runner_pid}")
    assert code == 0, out


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_cell_on_a_frozen_runner_ends_within_its_reconnect_timeout(name: str, server: bool) -> None:
    with transport_of_its_own(name, server=server) as transport:
        kernel = start_kernel(transport, **OPTIONS)
        try:
            assert kernel.execute("x = 1").status == "ok"
            _signal(transport, kernel, "STOP")
            began = time.monotonic()
            result = kernel.execute("x")
            took = time.monotonic() - began
            assert result.status == "died" and result.kernel.state_lost, result.summary()
            assert took < ENDED_S, (took, result.summary())
            assert kernel.execute("x = 2; x").value == "2"  # a fresh runner took its place
        finally:
            kernel.shutdown()
