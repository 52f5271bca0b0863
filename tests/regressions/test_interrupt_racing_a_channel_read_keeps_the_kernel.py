"""Found by examples/test_interrupt_keeps_state.py: ``interrupt()`` from another thread, sent
while the cell's thread was reading the channel, sometimes killed the kernel instead.

``SocketStream`` switched the socket's timeout per call (``None`` to send, the wait's timeout to
receive). A send from the interrupting thread flipped the socket back to blocking under the
reader's ``recv``, which then ran on a descriptor still marked non-blocking: EAGAIN closed the
channel, and the cell came back ``status="died"`` with its state lost. The race is most likely
right after a tool call (the cell's thread sends the tool's reply, then reads), so the cell
signals "busy" through a tool and is interrupted at once, several times over.
"""

from __future__ import annotations

import threading

import pytest

BUSY_LOOP = "import hermes_tools, time\nhermes_tools.busy()\nwhile True:\n    time.sleep(0.01)"


@pytest.mark.parametrize("attempt", range(12))
def test_interrupt_right_after_a_tool_call_interrupts_and_keeps_state(hermes_kernel_factory, attempt):
    busy = threading.Event()
    kernel = hermes_kernel_factory(tools={"busy": busy.set})
    kernel.execute("kept = 'yes'")
    results = []
    cell = threading.Thread(target=lambda: results.append(kernel.execute(BUSY_LOOP)))
    cell.start()
    assert busy.wait(10), "the cell never called its tool"

    kernel.interrupt()
    cell.join(10)

    [result] = results
    assert result.status == "interrupted", result.summary()
    assert kernel.execute("kept").value == "'yes'"
