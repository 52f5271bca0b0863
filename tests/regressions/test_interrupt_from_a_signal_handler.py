"""Found under load by tests/plugin/test_keep_failed.py: ``hermes-kernel exec`` ended by SIGTERM
now and then hung, and its runaway cell ran on in the kept kernel.

``exec`` wires SIGINT, SIGTERM and SIGHUP to ``KernelHandle.interrupt()``. Python runs a signal
handler in the main thread between two steps of whatever that thread does; when that was the
cell's own request going out (the runner had started the cell before ``sendall`` returned), the
handler's interrupt waited for the channel's send lock, held by the very send it had
interrupted: forever (a thread dump showed ``Channel.send`` twice on one stack). A user who
wires Ctrl-C to ``interrupt()`` in an agent loop meets the same. Now a frame sent from inside
the thread's own send goes out from a thread of its own right after it, whole.

The signal is raised at that exact point (the stream's ``send``, right after the request's
bytes, lock held): each transport's stream has the lock above it, so every leg is the bug.
"""

from __future__ import annotations

import signal
from typing import Any

from tests.support import SignalAsFrameGoesOut, hang_alarm

RUNAWAY = "import time\nwhile True:\n    time.sleep(0.05)"


def _alarm(seconds: int) -> Any:
    return hang_alarm(seconds, "the interrupt's send waits for the lock held by the send it interrupted")


def test_interrupt_from_a_signal_handler_inside_the_requests_send_interrupts_the_cell(hermes_kernel_factory):
    kernel = hermes_kernel_factory()
    kernel.execute("kept = 'yes'")
    channel = kernel._runtime.require_link().channel
    stream = channel.stream
    channel.stream = SignalAsFrameGoesOut(stream, "execute", signal.SIGUSR1)  # inside Channel.send, its lock held
    previous = signal.signal(signal.SIGUSR1, lambda *_: kernel.interrupt())
    try:
        with _alarm(30):
            result = kernel.execute(RUNAWAY)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        channel.stream = stream

    assert result.status == "interrupted", result.summary()
    assert kernel.execute("kept").value == "'yes'"
