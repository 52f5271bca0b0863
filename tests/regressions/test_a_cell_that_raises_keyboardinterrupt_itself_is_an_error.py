"""Found by a breaker helper (2026-12-05, hostile cells): a cell that raised ``KeyboardInterrupt``
itself (``raise KeyboardInterrupt``, ``_thread.interrupt_main()``, a SIGINT it sent its own
process) came back ``status="interrupted"``, which the result table keeps for an interrupt the
host sent (``k.interrupt()``): an agent loop that stops on "interrupted" (the user pressed stop)
stopped on a cell's own error, and nothing told the two apart. Such a cell is now ``error``
(``ename="KeyboardInterrupt"``, its note saying no interrupt was sent), state kept; an interrupt
the host sent stays ``interrupted``, also when the cell's own SIGINT handler raises it. Every leg.
"""

from __future__ import annotations

import threading

import pytest

from tests.support import CellStarted

OWN = {
    "raise": "raise KeyboardInterrupt",
    "interrupt_main": "import _thread, time\n_thread.interrupt_main()\ntime.sleep(5)",
    "sigint to itself": "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)",
}


@pytest.mark.parametrize("how", list(OWN))
def test_a_keyboardinterrupt_the_cell_raised_itself_is_its_error(hermes_kernel, how):
    hermes_kernel.execute("kept = 'yes'")

    r = hermes_kernel.execute(OWN[how])
    after = hermes_kernel.execute("kept")

    assert (r.status, r.ename, r.watchdog) == ("error", "KeyboardInterrupt", None), r.summary()
    assert "no interrupt was sent" in r.kernel.note and not r.kernel.state_lost, r.summary()
    assert (after.status, after.value, after.kernel.note) == ("ok", "'yes'", ""), after.summary()


def test_an_interrupt_the_host_sent_that_the_cells_own_handler_raises_is_interrupted(hermes_kernel_factory):
    probe = CellStarted()
    kernel = hermes_kernel_factory(tools=probe.tools())
    code = ("import signal, time\n"
            "def mine(*_):\n    raise KeyboardInterrupt('mine')\n"
            "signal.signal(signal.SIGINT, mine)\n" + CellStarted.CODE + "time.sleep(30)")
    box: list = []
    thread = threading.Thread(target=lambda: box.append(kernel.execute(code)))
    thread.start()
    probe.wait()
    kernel.interrupt()
    thread.join(20)

    assert box and (box[0].status, box[0].ename, box[0].evalue) == ("interrupted", "KeyboardInterrupt", "mine"), box
