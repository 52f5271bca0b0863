"""Handed case B15: a non-daemon thread or an atexit hook left by a cell blocked kernel shutdown;
the registry thought the kernel gone while the process lived on (or close() hung).

Shutdown's exit request ends the worker without joining cell threads; it runs the atexit hooks
(an open file's buffered writes must reach it: ``test_a_kernels_end_flushes_its_open_files.py``),
and the ladder's SIGTERM ends one that hangs after ``shutdown_grace`` (a clean exit through
SystemExit runs them too, and is killed after ``exit_grace`` when they hang: see B07). Either way
the process is gone and reaped (no zombie) within the graces.
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import KernelKey
from tests.support import reaped, wait_until

LEFTOVERS = {
    "thread": "import threading, time\nthreading.Thread(target=time.sleep, args=(10**6,)).start()",
    "atexit": "import atexit, time\natexit.register(time.sleep, 10**6)",
}
GRACE = 1.0


@pytest.mark.parametrize("leftover", sorted(LEFTOVERS))
def test_close_returns_and_the_process_is_reaped(make_kernel, leftover):
    k = make_kernel(shutdown_grace=GRACE)
    assert k.execute(LEFTOVERS[leftover]).status == "ok"
    worker, runner = k.pid, k.runner_pid

    started = time.monotonic()
    info = k.close()

    assert time.monotonic() - started <= 2 * GRACE + 4.0  # shutdown grace + kill grace
    assert info.confirmed and info.step in ("request", "sigterm", "sigkill")
    if info.step == "sigkill":
        assert "forced kill after grace" in info.note
    assert reaped(worker) and reaped(runner)  # gone and waited for: no zombie


@pytest.mark.parametrize("leftover", sorted(LEFTOVERS))
def test_idle_reap_of_such_a_kernel(make_registry, fake_clock, leftover):
    reg = make_registry(idle_timeout=10.0, clock=fake_clock)
    key = KernelKey(owner=f"b15-{leftover}")
    assert reg.execute(key, LEFTOVERS[leftover]).status == "ok"
    (snap,) = reg.snapshot()

    fake_clock.advance(60)
    started = time.monotonic()
    assert reg.reap_once() == 1

    assert time.monotonic() - started <= 2 * 2.0 + 4.0
    assert len(reg) == 0
    wait_until(lambda: reaped(snap.pid) and reaped(snap.runner_pid), 2.0,
               what="the reaped kernel's processes to be gone and waited for")
