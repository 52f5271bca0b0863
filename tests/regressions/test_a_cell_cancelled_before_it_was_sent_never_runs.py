"""A cell whose cancel switch is set before it is sent (``execute(code, cancel=event)`` with the
event set, or an ``aexecute`` task cancelled while its cell waits behind another thread's) is
never sent: ``timeout``, ``watchdog="interrupted"``, state kept, and none of its code runs.

The switch was only looked at once the cell was on its way, by the wait for its result: a short
cell had often ended by then, and the result was ``ok`` with no watchdog, as if never cancelled
(8 cells of 20 in a row); its code had run, side effects included, though the caller cancelled
it before it was sent (``aexecute``'s ``on_cancelled`` then got that ``ok``).
"""

from __future__ import annotations

import asyncio
import threading

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
