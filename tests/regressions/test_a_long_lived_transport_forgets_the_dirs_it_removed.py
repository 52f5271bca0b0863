"""A docker, ssh or filecell transport kept the path of every kernel dir it ever made.

``MadeDirs`` (what the leak probe looks for where kernels run) forgot a dir only when a leak
probe saw it gone: a process that runs no leak check (an agent host outside pytest, a run with
``--hermes-leak-check=off``) kept one path per kernel started, for ever (20 kernels, 20 paths, on
every one of those transports and both paths). A dir its kernel's cleanup removed is forgotten
now; one the cleanup could not remove is still looked for (``test_transport_leak_probes.py``).
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.transports import make_transport

KERNELS = 4  # with the bug each leaves its path: 4 where at most 1 may stay


def _paths(transport: Transport) -> int:
    return sum(len(dirs) for dirs in transport.made_dirs._dirs.values())  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", ["server", "spawn"])
def test_kernels_started_and_ended_leave_no_record_of_their_dirs(hermes_transport: Transport, path: str) -> None:
    if not hasattr(hermes_transport, "made_dirs"):
        pytest.skip(f"{hermes_transport.name} kernel dirs are on this machine (no record of them)")
    if path == "spawn" and hermes_transport.name == "filecell":
        pytest.skip("filecell has no kernel server")
    transport = hermes_transport if path == "server" else make_transport(hermes_transport.name, server=False)
    try:
        before = _paths(transport)
        for _ in range(KERNELS):
            with start_kernel(transport) as kernel:
                assert kernel.execute("1").value == "1"

        assert _paths(transport) - before <= 1, f"{_paths(transport) - before} kernel dir paths kept after {KERNELS} kernels"
    finally:
        if transport is not hermes_transport:
            transport.close()
