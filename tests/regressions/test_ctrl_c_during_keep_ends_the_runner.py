"""Bug: Ctrl-C (a ``KeyboardInterrupt``) that lands while ``KernelHandle.keep()`` waits for the
runner's answer left the runner neither kept nor shut down.

``keep()`` takes the runner from the kernel, sends the keep request and waits for ``kept``.
Only a refusal or a lost channel was handled (the runner is then shut down); a
``KeyboardInterrupt`` in the wait propagated with the runner told to stay up and listen for a
client, owned by no one, and with no kept record that ``hermes-kernel ls`` or ``attach`` could
use: it lived for its orphan timer (``keep(3600)``: an hour). Now a keep cut short by a
``BaseException`` kills the runner's whole tree from outside before it propagates.

The signal is raised at an exact point: just after the keep request has gone out (the stream's
``send``), so the runner has been told to stay and only the host can end it: every keepable leg.
"""

from __future__ import annotations

import signal

import pytest

from pytest_hermes_kernel.contract._probes import kernel_pids, wait_until
from tests.support import SignalAsFrameGoesOut, assert_ctrl_c_leaves_no_runner


def test_ctrl_c_during_keep_ends_the_runner_before_it_propagates(hermes_kernel_factory):
    kernel = hermes_kernel_factory()
    if not kernel.transport.keepable:
        pytest.skip(f"{kernel.transport.name} cannot keep a kernel (keepable is False)")
    kernel.execute("x = 1")
    wait_until(lambda: len(kernel_pids(kernel)) >= 2, 10.0, what="the kernel's supervisor and worker")
    channel = kernel._runtime.require_link().channel
    channel.stream = SignalAsFrameGoesOut(channel.stream, "keep", signal.SIGINT)  # the runner heard it
    assert_ctrl_c_leaves_no_runner(kernel, lambda: kernel.keep(3600), "keep()")
