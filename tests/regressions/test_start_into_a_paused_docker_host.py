"""Seen: ``start_kernel(docker, start_timeout=3)`` into a ``docker pause``d kernel host container
waited 15.1 s on the kernel-server path (the server's fixed ``SPAWN_TIMEOUT_S``: the launch did
not know the caller's start timeout) before it failed.

Now the server's answer is awaited for at most the start timeout (``LaunchSpec.start_timeout``).
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import KernelStartError
from pytest_hermes_kernel.transports.docker.transport import DockerTransport

pytestmark = pytest.mark.usefixtures("docker_ready")

START_TIMEOUT_S = 2.0
ORPHAN_TIMEOUT_S = 3.0


def _paused_start(transport: DockerTransport, start) -> tuple[KernelStartError, float]:
    """Start a kernel while the container of an earlier one is paused: the error and its seconds."""
    first = start(transport)  # the container's kernel server (server path) and exec user are known
    cid = first.launched.extra["container"]
    transport.api.pause(cid)
    try:
        began = time.monotonic()
        with pytest.raises(KernelStartError) as exc:
            start(transport, start_timeout=START_TIMEOUT_S, orphan_timeout=ORPHAN_TIMEOUT_S)
        return exc.value, time.monotonic() - began
    finally:
        transport.api.unpause(cid)


def test_a_start_into_a_paused_container_fails_within_its_start_timeout(own_docker, start):
    _error, took = _paused_start(own_docker, start)

    assert took < START_TIMEOUT_S + 2.0, f"the start failed after {took:.1f} s, its start timeout is {START_TIMEOUT_S} s"
