"""``registry.execute(key, code, reset=True)`` from threads that share the key: the reset and its
cell are one turn on the kernel.

Before, the reset was a ``restart()`` and then the cell, two steps: a reset from one thread killed
the cell another thread's call was running (3 threads, 8 reset cells each: 23 of 24 ``died``,
``reason="reset"``), and another thread's cell could run between a reset and its cell, so the
cell that asked for a fresh kernel saw that cell's variables and did not say ``state_lost``
(8 of 8 reset cells beside a thread of plain cells; that thread's cells reported the reset
instead). Now a reset waits for its turn, as a cell does: the cells ahead of it run to their end,
and its cell runs on the fresh worker before any cell sent meanwhile.
"""

from __future__ import annotations

import threading
from collections import Counter

from pytest_hermes_kernel import KernelKey

RESETS = 8


def _summary(result) -> tuple:
    return (result.status, result.kernel.reason, result.ename, result.kernel.note[:80])


def test_resets_from_several_threads_cut_no_cell(hermes_registry) -> None:
    key = KernelKey(owner="reset-race")
    hermes_registry.execute(key, "1")
    seen: Counter = Counter()
    lock = threading.Lock()

    def caller(i: int) -> None:
        for _ in range(RESETS):
            r = hermes_registry.execute(key, f"import time\nmine = {i}\ntime.sleep(0.1)\nmine", reset=True, timeout=60)
            with lock:
                seen[_summary(r) + (r.value == str(i),)] += 1

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a reset call hung"
    assert seen == {("ok", "reset", None, "restart() was called", True): 3 * RESETS}, dict(seen)


def test_a_reset_cell_sees_no_other_threads_cell(hermes_registry) -> None:
    key = KernelKey(owner="reset-fresh")
    hermes_registry.execute(key, "1")
    resets: Counter = Counter()
    others: Counter = Counter()
    done = threading.Event()

    def resetting() -> None:
        try:
            for _ in range(RESETS):
                r = hermes_registry.execute(key, "'other' in globals()", reset=True, timeout=60)
                resets[(r.status, r.value, r.kernel.state_lost, r.kernel.reason)] += 1
        finally:
            done.set()

    def plain() -> None:
        while not done.is_set():
            r = hermes_registry.execute(key, "other = 1", timeout=60)
            others[(r.status, r.kernel.reason if r.status != "ok" else None)] += 1

    threads = [threading.Thread(target=resetting), threading.Thread(target=plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a call hung"
    assert resets == {("ok", "False", True, "reset"): RESETS}, dict(resets)
    assert set(others) == {("ok", None)}, f"the plain cells a reset cut or overtook: {dict(others)}"


def test_a_reset_sent_while_a_new_kernels_first_cell_runs_sees_none_of_it(hermes_registry) -> None:
    """The reset was skipped when no cell had ended on the key's kernel yet (``cells_run``, looked at
    before its turn): sent while another thread's first cell ran, its cell ran after that one and saw
    its variables ('True', state_lost=False, no reason), a reset in name only."""
    key = KernelKey(owner="reset-first")
    started = threading.Event()
    hermes_registry.tools.register("started", lambda: started.set())
    first: list = []
    plain = threading.Thread(target=lambda: first.append(hermes_registry.execute(
        key, "import hermes_tools, time\nother = 1\nhermes_tools.started()\ntime.sleep(1.5)", timeout=60)))
    plain.start()
    try:
        assert started.wait(60), f"the first cell never ran: {first}"  # (its kernel started, no cell ended yet)
        r = hermes_registry.execute(key, "'other' in globals()", reset=True, timeout=60)
    finally:
        plain.join(120)
    assert first and first[0].status == "ok", first
    assert (r.status, r.value, r.kernel.state_lost, r.kernel.reason) == ("ok", "False", True, "reset"), r.summary()
