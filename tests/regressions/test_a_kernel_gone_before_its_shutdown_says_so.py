"""``shutdown()`` of a kernel whose runner was already gone says it was gone, not that it killed it.

A docker kernel whose container had died (``docker kill`` of its fresh container) while it was
idle was shut down with ``ExitInfo(step='unreachable', signal=9, note='killed from outside
through the transport')``: the shutdown had killed nothing (the transport's kill found the
container stopped and said so with ``True``). The same held for a local kernel whose runner was
SIGKILLed. When the shutdown request cannot be answered and the transport sees the runner gone,
the step is ``already-exited``, as the README's table of shutdown steps has it.
"""

from __future__ import annotations

import os
import signal

import pytest

from tests.support import gone, wait_until


@pytest.mark.hermes_transports("docker")
@pytest.mark.hermes_kernel(container="fresh")
def test_a_docker_kernel_whose_container_died_is_already_exited(hermes_kernel) -> None:
    import docker

    hermes_kernel.execute("x = 1")
    client = docker.from_env()
    try:
        container = client.containers.get(hermes_kernel.launched.extra["container"])
        container.kill()
        wait_until(lambda: (container.reload() or container.status) != "running", 30, what="the container to stop")
    finally:
        client.close()

    info = hermes_kernel.shutdown()

    assert (info.step, info.confirmed) == ("already-exited", True), info
    assert "killed from outside" not in info.note and "gone before" in info.note, info


@pytest.mark.hermes_transports("local")
def test_a_local_kernel_whose_runner_was_killed_is_already_exited(hermes_kernel) -> None:
    hermes_kernel.execute("x = 1")
    runner, worker = hermes_kernel.runner_pid, hermes_kernel.pid
    os.kill(runner, signal.SIGKILL)
    wait_until(lambda: gone(runner) and gone(worker), 10, what="the runner and its worker to be gone")

    info = hermes_kernel.shutdown()

    assert (info.step, info.confirmed) == ("already-exited", True), info
    assert "killed from outside" not in info.note and "gone before" in info.note, info
