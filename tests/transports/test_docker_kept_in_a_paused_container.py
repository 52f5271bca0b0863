"""A docker kernel kept for post-mortem whose container is paused (``docker pause``) cannot be
reached until the unpause, and says so: ``hermes-kernel exec``/``attach`` ended in docker's
``APIError: 409 Client Error ... Conflict ("Container ... is paused, unpause the container before
exec")`` traceback (exit status 1, which says the cell failed); now exit status 2 with the reason
and the hint, and after ``docker unpause`` the kernel is reached with its state."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pytest_hermes_kernel.errors import TransportLostError
from pytest_hermes_kernel.kernel.handle import attach_kept
from tests.transports.test_docker_keep import _keep, docker_pair  # noqa: F401

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_kept_kernel_in_a_paused_container_is_unreachable_until_the_unpause(docker_pair):
    first, second, made = docker_pair
    record, _ = _keep(first)
    cid = record.locator["container_id"]
    made.append(cid)
    first.client.api.pause(cid)
    try:
        with pytest.raises(TransportLostError, match=f"container {cid[:12]} is paused"):
            attach_kept(second, record.locator, kernel_id=record.kernel_id, token=record.token)
        command = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "exec", record.kernel_id,
                                  "evidence"], capture_output=True, text=True, timeout=60, env=dict(os.environ),
                                 stdin=subprocess.DEVNULL)
    finally:
        first.client.api.unpause(cid)

    assert command.returncode == 2 and command.stdout == "", command.stderr
    assert f"container {cid[:12]} is paused" in command.stderr and f"docker unpause {cid[:12]}" in command.stderr
    assert "Traceback" not in command.stderr, command.stderr
    handle = attach_kept(second, record.locator, kernel_id=record.kernel_id, token=record.token)
    assert handle.execute("evidence").value == "'left by the failed test'"
    handle.shutdown()
