"""A cell whose cancel switch is set before it is sent (``execute(code, cancel=event)`` with the
event set, or an ``aexecute`` task cancelled while its cell waits behind another thread's) is
never sent: ``timeout``, ``watchdog="interrupted"``, state kept, and none of its code runs.

The switch was only looked at once the cell was on its way, by the wait for its result: a short
cell had often ended by then, and the result was ``ok`` with no watchdog, as if never cancelled
(8 cells of 20 in a row); its code had run, side effects included, though the caller cancelled
it before it was sent (``aexecute``'s ``on_cancelled`` then got that ``ok``).

A switch set while the cell waits its turn is answered at once, not when the cell ahead ends: the
queued cell waited for the queue's lock, looking at its switch only once it had it, so an agent's
cancelled step (``asyncio.wait_for(aexecute(...), 1)``) behind a long cell took as long as that cell.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pytest_hermes_kernel import aexecute
from pytest_hermes_kernel.contract._probes import CellStarted, run_in_thread
from pytest_hermes_kernel.errors import CellInterrupted

SETTLE_S = 15.0


def test_a_cell_sent_with_its_switch_already_set_never_runs(make_kernel) -> None:
    k = make_kernel()
    k.execute("m = 0")
    switch = threading.Event()
    switch.set()

    results = [k.execute("m += 1", cancel=switch) for _ in range(20)]

    assert {(r.status, r.watchdog, r.kernel.state_lost) for r in results} == {("timeout", "interrupted", False)}
    assert "cancel" in results[0].kernel.note, results[0].summary()
    assert k.execute("m").value == "0", "a cancelled cell ran"
    with pytest.raises(CellInterrupted):
        k.execute("m += 1", cancel=switch, raise_on_timeout=True)


def test_an_aexecute_cancelled_while_its_cell_waits_its_turn_never_runs_it(make_kernel) -> None:
    probe = CellStarted()
    k = make_kernel(tools=probe.tools())
    k.execute("m = 0")
    ahead = run_in_thread(k, probe.CODE + "import time\ntime.sleep(2)")
    probe.wait()
    told: list = []

    async def agent_step() -> None:
        task = asyncio.ensure_future(aexecute(k, "m += 1", on_cancelled=told.append))
        while k.queued < 1:  # the cell waits behind the running one
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(agent_step(), SETTLE_S))
    assert ahead.result(timeout=SETTLE_S).status == "ok"

    assert [(r.status, r.watchdog) for r in told] == [("timeout", "interrupted")], told
    assert k.execute("m").value == "0", "the cancelled cell ran"


AHEAD = "import time\ntime.sleep(120)"  # far longer than the test waits: it is cancelled at the end


def _a_kernel_running_a_long_cell(make_kernel):
    """A kernel holding ``m = 0``, and the future of the :data:`AHEAD` cell it is now running."""
    probe = CellStarted()
    k = make_kernel(tools=probe.tools())
    k.execute("m = 0")
    ahead = run_in_thread(k, probe.CODE + AHEAD, timeout=300)
    probe.wait()
    return k, ahead


def _end_the_cell_ahead(k, ahead) -> None:
    k.cancel()
    assert ahead.result(timeout=SETTLE_S).watchdog == "interrupted"


def test_a_switch_set_while_the_cell_waits_its_turn_is_answered_before_the_cell_ahead_ends(make_kernel) -> None:
    k, ahead = _a_kernel_running_a_long_cell(make_kernel)
    switch = threading.Event()
    queued = run_in_thread(k, "m += 1", cancel=switch)
    deadline = time.monotonic() + SETTLE_S
    while k.queued < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert k.queued == 1, "the cell never queued behind the running one"

    switch.set()
    result = queued.result(timeout=SETTLE_S)

    assert not ahead.done(), "the queued cell's answer waited for the cell ahead"
    assert (result.status, result.watchdog, result.kernel.state_lost) == ("timeout", "interrupted", False)
    assert "cancel" in result.kernel.note, result.summary()
    _end_the_cell_ahead(k, ahead)
    assert k.execute("m").value == "0", "the cancelled cell ran"


def test_an_aexecute_timed_out_while_its_cell_waits_its_turn_returns_before_the_cell_ahead_ends(make_kernel) -> None:
    k, ahead = _a_kernel_running_a_long_cell(make_kernel)

    async def agent_step() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(aexecute(k, "m += 1"), 0.5)

    asyncio.run(asyncio.wait_for(agent_step(), SETTLE_S))

    assert not ahead.done(), "the cancelled step waited for the cell ahead"
    _end_the_cell_ahead(k, ahead)
    assert k.execute("m").value == "0", "the cancelled cell ran"
