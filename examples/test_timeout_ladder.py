"""A cell over its budget climbs the timeout ladder: interrupt, then kill and restart.

1. SIGINT (KeyboardInterrupt in the cell): if the cell stops within ``interrupt_grace``,
   the result is ``status="timeout"``, ``watchdog="interrupted"`` and the namespace is kept.
2. If it ignores SIGINT, the worker is killed and a fresh one started: ``watchdog="reset"``,
   ``kernel.state_lost`` with ``reason="timeout"``, and the kernel's generation goes up by one.

The budget comes from ``--hermes-timeout`` or, as here, the ``hermes_kernel`` marker; a single
cell can also pass ``timeout=``. Short graces keep the example fast.
"""

import pytest

from pytest_hermes_kernel import CellInterrupted, WatchdogPolicy

FAST = WatchdogPolicy(interrupt_grace=1.0, kill_grace=1.0)

IGNORES_SIGINT = """
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    time.sleep(0.05)
"""

pytestmark = pytest.mark.hermes_kernel(timeout=1, watchdog=FAST)


def test_over_budget_cell_is_interrupted_and_the_state_kept(hermes_kernel):
    hermes_kernel.execute("kept = 'still here'")

    result = hermes_kernel.execute("import time\ntime.sleep(30)")

    assert result.status == "timeout" and result.watchdog == "interrupted"
    assert result.ename == "KeyboardInterrupt" and not result.kernel.state_lost
    assert hermes_kernel.execute("kept").value == "'still here'"


def test_raise_on_timeout_turns_the_outcome_into_an_exception(hermes_kernel):
    with pytest.raises(CellInterrupted) as caught:
        hermes_kernel.execute("import time\ntime.sleep(30)", raise_on_timeout=True)

    assert caught.value.result.watchdog == "interrupted"


def test_ignored_interrupt_resets_the_kernel_and_says_state_was_lost(hermes_kernel):
    hermes_kernel.execute("kept = 'gone soon'")
    old_pid = hermes_kernel.pid

    result = hermes_kernel.execute(IGNORES_SIGINT)

    assert result.status == "timeout" and result.watchdog == "reset"
    assert result.kernel.state_lost and result.kernel.reason == "timeout"
    assert "ineffective" in result.kernel.note  # the note says what the ladder did
    # a fresh worker (generation + 1) runs the next cell; the old namespace is gone
    assert hermes_kernel.generation == 1 and hermes_kernel.pid != old_pid
    after = hermes_kernel.execute("kept")
    assert after.ename == "NameError" and after.kernel.generation == 1
