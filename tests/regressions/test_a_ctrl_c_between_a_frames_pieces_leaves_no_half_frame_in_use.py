"""A Ctrl-C between two pieces of a long frame (``Channel.send`` sends one over 1 MiB in pieces) left
the runner holding half a frame on a channel the host still used: it read the next frames as that
frame's rest. The kernel's ``shutdown()`` (a test's teardown after the Ctrl-C) sent its request there,
got no reply, and took 10 s to kill the runner from outside (a Ctrl-C before the first piece: 0.05 s).
Now the cut channel is closed at once: the shutdown does not wait on it.
"""

from __future__ import annotations

import signal
import time

import pytest


@pytest.mark.hermes_transports("local", "docker", "ssh")  # (filecell's stream takes a frame whole)
def test_shutdown_after_a_ctrl_c_between_a_long_cells_pieces_is_prompt(hermes_kernel) -> None:
    assert hermes_kernel.execute("x = 1").status == "ok"
    stream = hermes_kernel._runtime.require_link().channel.stream
    real, pieces = stream.send, []

    def send(data) -> None:
        pieces.append(len(data))
        if len(pieces) == 2:
            signal.raise_signal(signal.SIGINT)  # the user's Ctrl-C, as the second piece goes out
        real(data)

    stream.send = send
    # SIGINT raises KeyboardInterrupt, as in a terminal: a run started as a background job (`cmd &`)
    # inherits it ignored, and a full run's worker passed the cell on whole (DID NOT RAISE)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            hermes_kernel.execute("y = 2\n#" + "z" * (3 << 20), timeout=30)
    finally:
        signal.signal(signal.SIGINT, previous)
        stream.send = real
    assert len(pieces) == 2, pieces
    began = time.monotonic()
    hermes_kernel.shutdown()
    took = time.monotonic() - began
    assert took < 5.0, f"shutdown() after the cut send took {took:.1f} s"
