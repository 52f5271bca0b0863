"""Cells sent while a ``restart()`` runs wait for it and then run on the new kernel in the order
they came.

The queue's line handed a cell's place on to the next one as soon as the cell took the queue's
lock, before it had waited out the restart; that wait gives the lock up, so every cell sent
during the restart came to wait on the restart's end at once, and its end woke them all to race
for the lock (left alone in the closing note of 2026-12-05, fixed the session after): of eight
cells sent one after another while a restart ended a running cell, a later one ran first in 163
rounds of 200. A cell now keeps its place at the head of the line until the restart is over.
"""

from __future__ import annotations

import threading

from pytest_hermes_kernel import KernelState

from tests.support import in_line, wait_until

ROUNDS = 40
WAITERS = 8


def test_cells_sent_while_a_restart_runs_run_after_it_in_the_order_they_came(make_kernel) -> None:
    k = make_kernel()
    wrong = []
    for _ in range(ROUNDS):
        link = k._runtime.require_link()
        kill_worker = link.kill_worker
        gate, killing = threading.Event(), threading.Event()

        def slow_kill(kill_worker=kill_worker, gate=gate, killing=killing) -> None:
            killing.set()  # a restart of a busy kernel whose kill takes a while (a slow host)
            gate.wait(30.0)
            kill_worker()

        link.kill_worker = slow_kill
        running = threading.Thread(target=k.execute, args=("import time; time.sleep(60)",))
        running.start()
        wait_until(lambda: k.state is KernelState.BUSY, 10.0)
        restart = threading.Thread(target=k.restart)
        restart.start()
        assert killing.wait(10.0), "the restart never began to end the running cell"
        cells = []
        for i in range(WAITERS):
            code = f"seq = globals().setdefault('seq', []); seq.append({i})"
            cells.append(threading.Thread(target=k.execute, args=(code,)))
            cells[-1].start()
            wait_until(lambda n=i: in_line(k) > n, 10.0)  # it waits before the next is sent
        gate.set()
        for thread in (running, restart, *cells):
            thread.join(30.0)
        link.kill_worker = kill_worker
        if (got := k.execute("seq").value) != str(list(range(WAITERS))):
            wrong.append(got)
    assert not wrong, f"{len(wrong)} of {ROUNDS} rounds ran out of order: {wrong[:3]}"
