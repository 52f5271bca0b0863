"""Found by a breaker helper (2026-12-05, hostile cells): a cell's own Python signal handler that
ran between cells ran inside the worker's own code, and one that raised ended the worker. The
common case is a cell's home-made timeout (``signal.signal(SIGALRM, raise_timeout)`` and
``signal.alarm(5)``) whose work was done early, the alarm never cancelled: it went off while the
worker waited for the next cell, the ``TimeoutError`` (an ``OSError``) read as the end of its
channel, and the next cell said "the kernel died between cells (exit code 0)", its state lost;
other errors ended it with exit code 70. Between cells a cell's handler still runs when its signal
comes, but an error it raises is raised as the next cell's code begins (that cell's error, as a
script would meet it), state kept; a late SIGINT's is dropped. Every leg.
"""

from __future__ import annotations

import signal

from tests.support import signal_in_kernel

RAISES = ("import signal\ndef on_usr1(*_):\n    raise TimeoutError('my own timeout')\n"
          "signal.signal(signal.SIGUSR1, on_usr1)\nkept = 'yes'")
COUNTS = "import signal\ngot = []\nsignal.signal(signal.SIGUSR1, lambda s, _f: got.append(s))"


def test_a_handler_that_raises_between_cells_is_the_next_cells_error(hermes_kernel):
    assert hermes_kernel.execute(RAISES).status == "ok"
    signal_in_kernel(hermes_kernel, hermes_kernel.pid, signal.SIGUSR1)

    hit = hermes_kernel.execute("1 + 1")
    after = hermes_kernel.execute("kept")

    assert (hit.status, hit.ename, hit.evalue) == ("error", "TimeoutError", "my own timeout"), hit.summary()
    assert not hit.kernel.state_lost and "on_usr1" in hit.traceback, hit.summary()
    assert (after.status, after.value) == ("ok", "'yes'") and not after.kernel.state_lost, after.summary()


def test_a_signal_that_came_between_cells_reaches_its_handler_once(hermes_kernel):
    assert hermes_kernel.execute(COUNTS).status == "ok"
    signal_in_kernel(hermes_kernel, hermes_kernel.pid, signal.SIGUSR1)

    first = hermes_kernel.execute("len(got)")
    again = hermes_kernel.execute("len(got)")

    assert (first.status, first.value, again.value) == ("ok", "1", "1"), (first.summary(), again.summary())
