"""``interrupt()``, ``shutdown()`` or ``restart()`` returns a cell that ended while a thread of it
waits on a host tool that hangs.

A cell whose own code has ended (``ok`` or ``error``) has its result wait for its threads' tool
calls, so that ``tool_calls`` is complete. When such a call hangs, ``execute()`` waited for it with
no end: a tool's time pauses the budget (so ``timeout=`` never fired), and ``interrupt()`` named a
cell the worker no longer ran (so it did nothing); ``shutdown()`` ended the kernel but left
``execute()`` blocked, and ``restart()`` (which waits for the running cell to settle) blocked too.
The user's stop did not stop ``execute()``: the same defect 9899ef9 fixed for an interrupted cell
(``test_interrupt_during_a_hung_tool_returns_the_cell.py``), on the path where the cell had ended.
Now each of them makes the result wait at most ``TOOLS_AFTER_CUT_S`` more, the call listed as
still running.
"""

from __future__ import annotations

import threading
import time

import pytest

from pytest_hermes_kernel.contract._probes import call_in_thread, run_in_thread
from pytest_hermes_kernel.kernel.cell import CellRun

CELL = """
import threading, hermes_tools
threading.Thread(target=hermes_tools.hung, daemon=True).start()
hermes_tools.ack()  # (back once the thread's call has reached the host: the cell ends then)
"""


@pytest.fixture
def joining(monkeypatch) -> threading.Event:
    """Set once a cell's result waits for its tool calls (``CellRun._join_tools`` entered): a stop
    sent after that reaches a cell whose own code has ended. (Walking ``sys._current_frames()``
    for it read a popped frame of a running thread on CPython 3.11: ``f_back`` gave a float.)"""
    entered, join = threading.Event(), CellRun._join_tools

    def noted(self, *args, **kwargs):
        entered.set()
        return join(self, *args, **kwargs)

    monkeypatch.setattr(CellRun, "_join_tools", noted)
    return entered


@pytest.mark.parametrize("stop", ["interrupt", "shutdown", "restart"])
def test_a_stop_returns_a_cell_whose_thread_waits_on_a_hung_tool(hermes_kernel_factory, joining, stop):
    started, release = threading.Event(), threading.Event()
    kernel = hermes_kernel_factory(tools={"hung": lambda: (started.set(), release.wait(60))[0],
                                          "ack": lambda: started.wait(15)})
    try:
        cell = run_in_thread(kernel, CELL, timeout=30)
        assert joining.wait(15), "the cell's result never came"
        stopping = call_in_thread(getattr(kernel, stop))
        result = cell.result(timeout=10)  # (TimeoutError before the fix: it waited for the tool)
        stopping.result(timeout=10)
    finally:
        release.set()

    assert result.status == "ok", result.summary()
    hung = [c for c in result.tool_calls if c["name"] == "hung"]
    assert len(hung) == 1 and hung[0]["running"] and not hung[0]["ok"], result.tool_calls


def test_a_thread_of_an_interrupted_cell_gets_its_tools_late_result(hermes_kernel_factory):
    """``tool_calls`` of the interrupted cell said the running call's result "goes nowhere"; a
    thread of that cell still waiting for it gets it (the worker routes it to the waiting call)."""
    started, release = threading.Event(), threading.Event()
    kernel = hermes_kernel_factory(tools={"hung": lambda: (started.set(), release.wait(60), 7)[2]})
    try:
        cell = run_in_thread(kernel, "import threading, time, hermes_tools\nout = []\n"
                             "threading.Thread(target=lambda: out.append(hermes_tools.hung()), daemon=True).start()\n"
                             "while True: time.sleep(0.01)")
        assert started.wait(15), "the tool was never called"
        kernel.interrupt()
        result = cell.result(timeout=10)
    finally:
        release.set()
    assert result.status == "interrupted", result.summary()
    [call] = result.tool_calls
    assert call["running"] and "goes nowhere" not in call["error"], call
    end = time.monotonic() + 10
    while kernel.execute("out").value != "[7]":
        assert time.monotonic() < end, "the thread never got the tool's result"
