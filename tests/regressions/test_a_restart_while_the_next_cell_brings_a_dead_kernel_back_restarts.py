"""``restart()`` called while the next cell was bringing a dead kernel back (its worker had died,
the cell starting a new one) raised a bare ``AttributeError: 'NoneType' object has no attribute
'reason'`` from ``control.restart`` (found by the random registry driver, ``tests/registry_fuzz.py``,
docker leg: a ``restart()`` right after another thread's cell whose worker exited).

The restart noted the kernel's pending loss (the death) as it began, then, once the cell had
settled, looked for a reset loss the cell might have written: the cell had reported the death
and cleared it, and ``None.reason`` raised. Now a cleared loss is no reset: the restart records
its own, and reports ``state_lost``, ``reason="reset"`` as always.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from pytest_hermes_kernel.contract._probes import call_in_thread
from tests.support import run_in_thread


def test_a_restart_during_the_next_cells_bring_up_restarts(make_kernel, monkeypatch) -> None:
    kernel = make_kernel()
    assert kernel.execute("import os\nos._exit(3)").status in ("died", "exited")  # a pending loss: the death
    in_bring_up, restarting, go = threading.Event(), threading.Event(), threading.Event()
    bring_up, restart = kernel._runtime.bring_up, kernel._queue.restart

    def slow_bring_up(*args, **kwargs):  # the next cell, in its turn, brings a worker up: held there
        in_bring_up.set()
        go.wait(30.0)
        return bring_up(*args, **kwargs)

    @contextmanager
    def marked_restart():
        with restart():
            restarting.set()
            yield

    monkeypatch.setattr(kernel._runtime, "bring_up", slow_bring_up)
    monkeypatch.setattr(kernel._queue, "restart", marked_restart)
    cell = run_in_thread(kernel, "1")
    assert in_bring_up.wait(30.0)
    restarted = call_in_thread(kernel.restart)
    assert restarting.wait(30.0)
    go.set()

    info = restarted.result(60.0)
    result = cell.result(60.0)

    assert info.state_lost and info.reason == "reset"
    assert result.status == "ok" and result.kernel.state_lost and result.kernel.reason in ("died", "exited")
    after = kernel.execute("2")
    assert after.value == "2" and after.kernel.state_lost and after.kernel.reason == "reset"
