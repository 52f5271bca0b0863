"""Found by a breaker helper (2026-12-05, hostile cells): after a cell put every signal back to
its default (``signal.signal(s, signal.SIG_DFL)`` for each of ``signal.valid_signals()``: a
"reset the signals" recipe), an ``interrupt()`` of a cell that handles SIGINT itself and goes on
ended the kernel: ``died``, ``signal=37``, the namespace lost. The runner follows each SIGINT with
kicks (a real-time signal whose handler does nothing: :mod:`...kernel.runner.kick`), and a
real-time signal's default action ends the process. The runner now kicks only a worker that still
handles the kick (``SigCgt`` in its ``/proc`` status). Every leg, the kernel-server and spawn paths.
"""

from __future__ import annotations

import threading

import pytest

from tests.support import CellStarted

RESET = ("import signal\nfor s in signal.valid_signals():\n    try:\n        signal.signal(s, signal.SIG_DFL)\n"
         "    except (OSError, ValueError):\n        pass")
GOES_ON = ("import signal, time\nsignal.signal(signal.SIGINT, lambda *_: print('got it'))\n" + CellStarted.CODE
           + "time.sleep(1.5)\n'done'")


@pytest.mark.parametrize("path", ["server", pytest.param("spawn", marks=pytest.mark.hermes_kernel(server=False))])
def test_an_interrupt_after_the_signals_were_reset_keeps_the_kernel(hermes_kernel_factory, path):
    probe = CellStarted()
    kernel = hermes_kernel_factory(tools=probe.tools())
    kernel.execute("kept = 'yes'")
    assert kernel.execute(RESET).status == "ok"

    box: list = []
    thread = threading.Thread(target=lambda: box.append(kernel.execute(GOES_ON)))
    thread.start()
    probe.wait()
    kernel.interrupt()
    thread.join(30)
    after = kernel.execute("kept")

    assert box, "the cell did not come back"
    r = box[0]
    assert (r.status, r.value, r.stdout) == ("ok", "'done'", "got it\n"), r.summary()
    assert not r.kernel.state_lost and (after.status, after.value) == ("ok", "'yes'"), after.summary()
