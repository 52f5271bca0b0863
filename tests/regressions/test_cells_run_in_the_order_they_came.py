"""Cells that wait for their turn on one kernel run in the order they came: a step that depends on
the one sent before it (``df = load()``, then ``df.head()``) finds it done.

The queue's lock handed the kernel to any of its waiters (found by a breaker helper on
2026-12-05): of ten cells sent one after another behind a running one, each sent once the one
before was waiting, a later one ran first in 2-3 rounds of 40, and ``asyncio.gather()`` of five
``aexecute`` cells ran out of order in 3 rounds of 100. The queue now keeps a line, in which a
cell sent from a signal handler of a thread waiting in it takes that thread's place (behind its
own thread's cell it waited for ever: the lock alone let it through).
"""

from __future__ import annotations

import asyncio
import threading
import time

from pytest_hermes_kernel import KernelState, aexecute
from tests.support import in_line, wait_until

ROUNDS = 120
WAITERS = 10


def _make_late(k, monkeypatch, code: str, seconds: float):
    """Make the thread that sends ``code`` on ``k`` reach the line ``seconds`` late (a thread the
    scheduler starts late); return the unpatched ``execute``."""
    real_execute = k.execute

    def late(sent: str, **kwargs):
        if sent == code:
            time.sleep(seconds)
        return real_execute(sent, **kwargs)

    monkeypatch.setattr(k, "execute", late)
    return real_execute


def test_cells_waiting_behind_a_running_one_run_in_the_order_they_came(make_kernel) -> None:
    gate = threading.Event()
    k = make_kernel(tools={"gate": lambda: gate.wait(30.0)})
    wrong = []
    for _ in range(ROUNDS):
        k.execute("seq = []")
        gate.clear()
        threads = [threading.Thread(target=k.execute, args=("import hermes_tools; hermes_tools.gate()",))]
        threads[0].start()
        wait_until(lambda: k.state is KernelState.BUSY, 10.0)
        for i in range(WAITERS):
            threads.append(threading.Thread(target=k.execute, args=(f"seq.append({i})",)))
            threads[-1].start()
            wait_until(lambda n=i: in_line(k) > n, 10.0)  # it waits in line before the next is sent
        gate.set()
        for thread in threads:
            thread.join(30.0)
        if (got := k.execute("seq").value) != str(list(range(WAITERS))):
            wrong.append(got)
    assert not wrong, f"{len(wrong)} of {ROUNDS} rounds ran out of order: {wrong[:3]}"


def test_gathered_aexecute_cells_run_in_the_order_they_were_sent(make_kernel) -> None:
    k = make_kernel()

    async def rounds() -> list[str]:
        wrong = []
        for _ in range(50):
            k.execute("seq = []")
            await asyncio.gather(*(aexecute(k, f"seq.append({i})") for i in range(5)))
            if (got := k.execute("seq").value) != "[0, 1, 2, 3, 4]":
                wrong.append(got)
        return wrong

    began = time.monotonic()
    assert asyncio.run(rounds()) == []
    assert time.monotonic() - began < 60.0


def test_an_aexecute_whose_thread_is_slow_to_reach_the_line_keeps_its_place(make_kernel, monkeypatch) -> None:
    """Each ``aexecute`` runs its cell in a thread of its own, and the threads reached the line in
    any order: under load ``gather()`` of five ran ``[0, 2, 1, 3, 4]`` (1 round of 50, a full run of
    2026-12-06). Forced here: the second cell's thread is late by 0.3 s. Now each call's thread
    takes its place only after the one before it on that kernel has taken its own."""
    k = make_kernel()
    _make_late(k, monkeypatch, "seq.append(1)", 0.3)

    async def one_round() -> str:
        await asyncio.gather(*(aexecute(k, f"seq.append({i})") for i in range(5)))
        return k.execute("seq").value

    k.execute("seq = []")
    assert asyncio.run(one_round()) == "[0, 1, 2, 3, 4]"


def test_an_aexecute_whose_thread_is_slow_to_reach_the_line_leaves_the_loop_running(make_kernel, monkeypatch) -> None:
    """The fix above first made ``aexecute`` wait, on the loop, for its thread to stand in line (up to
    2 s): an agent host serving many sessions from one loop stopped all of them while one cell's
    thread was slow (here 3 s late: a ticker task saw a 2.0-s gap). The loop now goes on at once;
    the order still holds (the test above)."""
    k = make_kernel()
    _make_late(k, monkeypatch, "late = 1", 3.0)  # (or a slow step before the line)

    async def watch() -> float:
        gaps, stop = [], asyncio.Event()

        async def tick() -> None:
            last = time.monotonic()
            while not stop.is_set():
                await asyncio.sleep(0.01)
                gaps.append(time.monotonic() - last)
                last = time.monotonic()

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0.05)
        await asyncio.gather(aexecute(k, "late = 1"), aexecute(k, "after = late + 1"))
        stop.set()
        await ticker
        return max(gaps)

    widest = asyncio.run(watch())
    assert widest < 1.0, f"the event loop stood still for {widest:.2f} s while an aexecute cell's thread was late"
    assert k.execute("after").value == "2", "the cell sent second ran before the first (it names the first's variable)"


def test_a_cancelled_aexecute_between_two_others_leaves_the_later_one_behind_the_earlier(make_kernel, monkeypatch) -> None:
    """Three gathered calls, the first one's thread late to the line, the second cancelled while its
    thread waited for the first's: the cancelled call's thread sent its (refused) cell at once and
    so let the third one through, which ran before the first (``NameError: name 'late' is not
    defined``, found by a breaker helper on 2026-12-06). A call cancelled before it stood in line
    now keeps its place for the next one until the call before it stands in line."""
    k = make_kernel()
    real_execute = _make_late(k, monkeypatch, "late = 1", 1.0)

    async def chain() -> str:
        first = asyncio.ensure_future(aexecute(k, "late = 1"))
        second = asyncio.ensure_future(aexecute(k, "second = 1"))
        third = asyncio.ensure_future(aexecute(k, "after = late + 1"))
        await asyncio.sleep(0.2)  # the second's thread waits for the first's
        second.cancel()
        results = await asyncio.gather(first, second, third, return_exceptions=True)
        assert isinstance(results[1], asyncio.CancelledError), results[1]
        return f"{results[2].ename}: {results[2].evalue}" if results[2].ename else results[2].status

    assert asyncio.run(chain()) == "ok", "the third aexecute ran before the first, past the cancelled second"
    assert real_execute("after").value == "2"
    assert real_execute("'second' in dir()").value == "False", "the cancelled cell ran"


def test_aexecute_through_a_faulting_kernel_and_its_kernel_keeps_the_order(make_kernel, monkeypatch) -> None:
    """The place of the last ``aexecute`` was kept per object handed in: a ``FaultingKernel`` (what
    a fault marker's fixture hands out) and the handle it wraps share one line of cells but kept two
    places, so the cell sent second through the handle ran first while the first one's thread was
    late (``NameError``, found by a breaker helper on 2026-12-06). Places are kept per line now."""
    from pytest_hermes_kernel.faults.injector import FaultingKernel

    k = make_kernel()
    _make_late(k, monkeypatch, "late = 1", 0.5)
    wrapped = FaultingKernel(k, [])

    async def both() -> list:
        return await asyncio.gather(aexecute(wrapped, "late = 1"), aexecute(k, "after = late + 1"))

    second = asyncio.run(both())[1]
    assert (second.status, second.evalue) == ("ok", None), "the cell sent second ran before the first"


def test_aexecute_on_an_unhashable_kernel_wrapper_runs_the_cell(make_kernel) -> None:
    """A user's wrapper that delegates to a handle and is a dataclass (so unhashable): ``aexecute``
    raised ``TypeError: unhashable type`` from its weak mapping (2026-12-06, since it kept the place
    per object); the cell runs, as before that change."""
    import dataclasses

    @dataclasses.dataclass
    class Session:
        handle: object

        def __getattr__(self, name: str):
            return getattr(self.handle, name)

        def execute(self, code: str, **kwargs):
            return self.handle.execute(code, **kwargs)

    k = make_kernel()
    result = asyncio.run(aexecute(Session(k), "6 * 7"))
    assert result.value == "42"


def test_a_cell_sent_from_a_thread_after_an_aexecute_runs_after_it(make_kernel, monkeypatch) -> None:
    """``aexecute`` called (and back on the loop), then ``asyncio.to_thread(k.execute, ...)``: while
    ``aexecute`` waited on the loop for its cell to stand in line, the later cell ran after it; since
    the loop no longer waits (2026-12-06), a late ``aexecute`` thread let the later cell run first
    (``NameError: name 'late' is not defined``, found by a breaker helper). A cell sent after an
    ``aexecute`` call now waits for that call's cell to stand in line."""
    k = make_kernel()
    _make_late(k, monkeypatch, "late = 1", 0.5)

    async def both() -> object:
        first = asyncio.create_task(aexecute(k, "late = 1"))
        await asyncio.sleep(0)  # aexecute runs up to its await: called, its thread started
        later = await asyncio.to_thread(k.execute, "after = late + 1")
        await first
        return later

    later = asyncio.run(both())
    assert (later.status, later.evalue) == ("ok", None), "the cell sent after the aexecute call ran first"


def test_a_cell_from_a_signal_handler_of_a_thread_waiting_in_line_runs(make_kernel) -> None:
    """A handler that runs a cell while its thread waits in line (behind another thread's cell)
    goes in its thread's place: behind its own outer cell it would wait for ever."""
    import os
    import signal

    from tests.support import hang_alarm

    k = make_kernel()
    k.execute("order = []")
    ahead = threading.Thread(target=k.execute, args=("import time; time.sleep(0.5); order.append('ahead')",))
    ahead.start()
    wait_until(lambda: k.state is KernelState.BUSY, 10.0)

    def send_when_waiting() -> None:
        wait_until(lambda: in_line(k) >= 1, 10.0)
        os.kill(os.getpid(), signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, lambda *_: k.execute("order.append('handler')"))
    try:
        threading.Thread(target=send_when_waiting, daemon=True).start()
        with hang_alarm(20, "the handler's cell waited behind its own thread's"):
            k.execute("order.append('outer')")
    finally:
        signal.signal(signal.SIGUSR1, previous)
        ahead.join(30.0)

    assert k.execute("order").value == "['ahead', 'handler', 'outer']"
