"""Found by a breaker helper (2026-12-05, hostile cells): a cell's own timeout (a signal handler
that raises ``TimeoutError``, as ``signal.alarm`` recipes do) that went off while the cell waited
for a slow host tool was taken for the end of the worker's channel (``TimeoutError`` is an
``OSError``, which the worker's read of its socket meant as "closed"): the cell came back
``error`` with a bare ``EOFError`` instead of its ``TimeoutError``, and the worker ended, so the
next cell reported its state lost (4 cells of 5). The worker now tells an error a cell's handler
raised inside its read from its socket's own: the cell gets its ``TimeoutError``, state kept.
Every leg.
"""

from __future__ import annotations

import signal
import threading

from tests.support import signal_in_kernel

CELL = ("import signal, hermes_tools\ndef on_usr1(*_):\n    raise TimeoutError('my own timeout')\n"
        "signal.signal(signal.SIGUSR1, on_usr1)\nhermes_tools.slow()")


def test_the_cells_timeout_in_a_tool_call_is_its_error(hermes_kernel_factory):
    box: list = []

    def slow() -> int:  # a slow tool: the cell's timeout goes off while it waits
        signal_in_kernel(box[0], box[0].pid, signal.SIGUSR1)
        threading.Event().wait(0.5)
        return 7

    kernel = hermes_kernel_factory(tools={"slow": slow})
    box.append(kernel)
    kernel.execute("kept = 'yes'")

    results = [kernel.execute(CELL) for _ in range(3)]
    after = kernel.execute("kept")

    for r in results:
        assert (r.status, r.ename, r.evalue) == ("error", "TimeoutError", "my own timeout"), r.summary()
        assert not r.kernel.state_lost, r.summary()
    assert (after.status, after.value) == ("ok", "'yes'") and not after.kernel.state_lost, after.summary()
