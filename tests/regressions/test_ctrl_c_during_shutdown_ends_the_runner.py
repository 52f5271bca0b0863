"""Bug: Ctrl-C (a ``KeyboardInterrupt``) that lands while ``KernelHandle.shutdown()`` runs left the
kernel runner alive: its supervisor and worker ran on, and no one owned them any more.

``shutdown()`` takes the runner from the kernel before it asks it to exit; a ``KeyboardInterrupt``
out of the polite steps (the request, the wait for its answer, the reap) left that runner
behind: a docker or ssh kernel until its orphan timer (60 s), a local one until its lease was
garbage. A user who presses Ctrl-C twice (once for the cell, once while the script cleans up) met
it. Now a stop cut short by a ``BaseException`` kills the runner's whole tree from outside
before it propagates.

The signal is raised at an exact point: as the shutdown request is about to go out (the
stream's ``send``), so the runner never hears it and only the host can end it: every leg.

A second Ctrl-C during that kill from outside (a user who keeps pressing it) cut the kill itself
short, and the runner ran on just the same: the kill now runs to its end in a thread of its
own, and the second ``KeyboardInterrupt`` propagates once it is done.
"""

from __future__ import annotations

import signal

import pytest

from pytest_hermes_kernel.contract._probes import kernel_pids, wait_until
from tests.support import SignalAsFrameGoesOut, assert_ctrl_c_leaves_no_runner, ctrl_c_first


@pytest.mark.parametrize("presses", [1, 2], ids=["ctrl-c", "ctrl-c-again-during-the-kill"])
def test_ctrl_c_during_shutdown_ends_the_runner_before_it_propagates(hermes_kernel_factory, monkeypatch, presses):
    kernel = hermes_kernel_factory()
    kernel.execute("import subprocess; helper = subprocess.Popen(['sleep', '300'])")  # in the worker's group
    # supervisor, worker, helper (a loaded machine's scan may not see the helper at once)
    wait_until(lambda: len(kernel_pids(kernel)) >= 3, 10.0, what="the kernel's supervisor, worker and helper")
    channel = kernel._runtime.require_link().channel
    channel.stream = SignalAsFrameGoesOut(channel.stream, "shutdown", signal.SIGINT, before=True)  # never heard
    if presses == 2:
        monkeypatch.setattr(kernel.transport, "kill", ctrl_c_first(kernel.transport.kill))
    assert_ctrl_c_leaves_no_runner(kernel, kernel.shutdown, "shutdown()")

