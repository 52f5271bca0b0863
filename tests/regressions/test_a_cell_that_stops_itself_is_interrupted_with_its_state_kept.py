"""Found by a breaker helper (2026-12-05, hostile cells): a cell that stopped its own process
(``os.kill(os.getpid(), signal.SIGSTOP)``, or ``SIGTSTP``: a "suspend" of a tool made for a
terminal) could not be interrupted: the SIGINT waited while the worker stayed stopped, and the
cell over its budget came back ``timeout``, ``watchdog="reset"``, "the interrupt was ineffective",
its state lost (``interrupt()`` did nothing). The runner now continues a stopped worker (SIGCONT)
right after its SIGINT: ``timeout``, ``watchdog="interrupted"``, state kept. Every leg.
"""

from __future__ import annotations

import pytest

STOPS = {sig: f"import os, signal\nos.kill(os.getpid(), signal.{sig})\nprint('went on')" for sig in ("SIGSTOP", "SIGTSTP")}


@pytest.mark.parametrize("sig", list(STOPS))
def test_a_stopped_cell_over_its_budget_is_interrupted(hermes_kernel, sig):
    hermes_kernel.execute("kept = 'yes'")

    r = hermes_kernel.execute(STOPS[sig], timeout=1.0)
    after = hermes_kernel.execute("kept")

    assert (r.status, r.watchdog, r.ename) == ("timeout", "interrupted", "KeyboardInterrupt"), r.summary()
    assert not r.kernel.state_lost and r.stdout == "", r.summary()
    assert (after.status, after.value) == ("ok", "'yes'") and not after.kernel.state_lost, after.summary()
