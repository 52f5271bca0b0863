"""Cells that wait for their turn on one kernel run in the order they came: a step that depends on
the one sent before it (``df = load()``, then ``df.head()``) finds it done.

The queue's lock handed the kernel to any of its waiters (found by a breaker helper on
2026-12-05): of ten cells sent one after another behind a running one, each sent once the one
before was waiting, a later one ran first in 2-3 rounds of 40, and ``asyncio.gather()`` of five
``aexecute`` cells ran out of order in 3 rounds of 100. The queue now keeps a line.
"""

from __future__ import annotations

import asyncio
import threading
import time

from pytest_hermes_kernel import KernelState, aexecute
from tests.support import wait_until

ROUNDS = 120
WAITERS = 10


def test_cells_waiting_behind_a_running_one_run_in_the_order_they_came(make_kernel) -> None:
    k = make_kernel()
    wrong = []
    for _ in range(ROUNDS):
        k.execute("seq = []")
        threads = [threading.Thread(target=k.execute, args=("import time; time.sleep(0.05)",))]
        threads[0].start()
        wait_until(lambda: k.state is KernelState.BUSY, 10.0)
        for i in range(WAITERS):
            before = k.queued
            threads.append(threading.Thread(target=k.execute, args=(f"seq.append({i})",)))
            threads[-1].start()
            wait_until(lambda n=before: k.queued > n, 10.0)  # it waits in line before the next is sent
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
