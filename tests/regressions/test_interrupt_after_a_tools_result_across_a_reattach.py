"""A tool's result lost with a dropped stream, then an interrupt: after the re-attach the call
still returns the result, and the cell is interrupted at its next step (as without the drop).

The host sends a cell's tool results again once it has re-attached, then the interrupt the runner
did not get. An ``interrupt()`` made just as the re-attach had installed the new channel, before
the cell's thread had sent the results again, went out first: the worker took the SIGINT with no
result in its socket and raised ``KeyboardInterrupt`` inside the call, and the result, whose tool
had run on the host, was lost (``got = hermes_tools.value()`` left ``got`` unset). It takes the
cell's thread held up there (preempted on a loaded host) for longer than the worker's last look
for a result after a SIGINT (it waits up to ``INTERRUPT_POLL_S``, 20 ms): the test puts the
``interrupt()`` there and holds the cell's thread 0.2 s.
"""

from __future__ import annotations

import threading
import time

import pytest

CELL = "import hermes_tools, time\ngot = hermes_tools.value()\nafter = got + 1\nwhile True:\n    time.sleep(0.01)"


def test_an_interrupt_made_as_the_stream_is_re_attached_comes_after_the_lost_tool_result(
        hermes_kernel_factory, hermes_faults, monkeypatch: pytest.MonkeyPatch) -> None:
    box: dict = {}

    def value() -> int:  # the stream drops as the tool returns: its result is lost with it
        hermes_faults.transport_drop(box["kernel"], "reset")
        return 7

    kernel = box["kernel"] = hermes_kernel_factory(tools={"value": value})
    if not kernel.transport.reattachable:
        pytest.skip(f"the {kernel.transport.name} transport declares no re-attach")
    link = kernel._runtime.require_link()
    reattach = link.reattach

    def interrupted_as_it_re_attaches(*args, **kwargs):
        hello = reattach(*args, **kwargs)  # the new channel is in place now
        user = threading.Thread(target=kernel.interrupt)  # a user's interrupt(), from a thread of its own
        user.start()
        user.join(5)
        time.sleep(0.2)  # the cell's thread preempted before it sends the results again
        return hello

    monkeypatch.setattr(link, "reattach", interrupted_as_it_re_attaches)
    kernel.execute("got = after = None")

    r = kernel.execute(CELL, timeout=20)

    assert r.status == "interrupted" and r.kernel.reconnected and not r.kernel.state_lost, r.summary()
    assert kernel.execute("got, after").value == "(7, 8)", "the tool's result was lost to the interrupt after it"
