"""Bug: ``restart()`` on a kernel whose runner was gone raised ``ChannelClosed`` ("broke while
sending") instead of starting a fresh kernel.

Between cells a handle does not know its runner died (SIGKILLed from outside, or its transport
was closed: the plugin closes the run's transports at session end). ``restart()`` asked the dead
runner for a new worker over the dead channel, and the channel's error escaped: on an open
transport the kernel was never replaced (the next cell did it, as ``auto_restart``), and on a
closed one the error said nothing of the close. Now a runner gone with its channel is replaced by
a new runner: a fresh kernel, or the transport's own start error.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest

from pytest_hermes_kernel import KernelHandle, KernelStartError, start_kernel
from pytest_hermes_kernel.transports import make_transport
from tests.support import gone, wait_until


@pytest.mark.parametrize("server", [True, False], ids=["kernel-server", "spawn"])
def test_restart_replaces_a_kernel_whose_runner_was_killed(make_kernel: Callable[..., KernelHandle],
                                                           server: bool) -> None:
    transport = make_transport("local", server=server)
    kernel = make_kernel() if server else start_kernel(transport)
    try:
        kernel.execute("x = 1")
        runner, worker = kernel.runner_pid, kernel.pid
        os.kill(runner, signal.SIGKILL)
        wait_until(lambda: gone(runner) and gone(worker), 5.0, what="the killed runner and its worker to end")

        info = kernel.restart()

        assert (info.generation, info.state_lost, info.reason) == (1, True, "reset")
        result = kernel.execute("'x' in globals()")
        assert (result.status, result.value) == ("ok", "False"), result.summary()
        assert kernel.runner_pid != runner
    finally:
        kernel.shutdown()
        transport.close()


def test_restart_on_a_closed_docker_transport_says_it_was_closed(docker_ready: None) -> None:
    transport = make_transport("docker")
    kernel = start_kernel(transport)
    try:
        kernel.execute("x = 1")
        transport.close()  # its container goes, and the runner with it

        with pytest.raises(KernelStartError, match="this docker transport was closed"):
            kernel.restart()
    finally:
        kernel.shutdown()
        transport.close()
