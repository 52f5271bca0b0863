"""Found by a fresh-install helper (2026-12-04): a cell the timeout ladder killed (``watchdog="reset"``
or ``"reset_failed"``), or whose worker died under it, reported ``duration_s=0.0``: only a worker
that answered said how long its cell ran. The runner now times each cell from the moment it hands
it to the worker, and a death's result carries that. Every leg.
"""

from __future__ import annotations

import pytest

IGNORES_SIGINT = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(30)"


@pytest.mark.hermes_kernel(watchdog={"interrupt_grace": 0.3, "kill_grace": 2.0})
def test_a_cell_the_ladder_killed_says_how_long_it_ran(hermes_kernel):
    r = hermes_kernel.execute(IGNORES_SIGINT, timeout=0.5)
    assert (r.status, r.watchdog) == ("timeout", "reset"), r
    assert 0.5 <= r.duration_s < 30, r.duration_s  # its budget, its grace and the kill: not 0.0


def test_a_cell_whose_worker_died_says_how_long_it_ran(hermes_kernel):
    r = hermes_kernel.execute("import os, time; time.sleep(0.3); os._exit(4)")
    assert r.status == "died" and 0.3 <= r.duration_s < 30, (r.status, r.duration_s)
