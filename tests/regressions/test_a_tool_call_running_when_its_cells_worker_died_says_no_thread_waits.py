"""Seen (a breaker helper, 2026-12-06): a cell under ``hermes_oom`` called a host tool while a
thread of it outgrew the memory limit; the cell was ``died``, ``oom_killed`` (right), and its
``tool_calls`` said of the call still running on the host "its result reaches only a thread of the
cell still waiting for it": the worker was dead, no thread of it was left. The result of a cell
whose worker died now says the call's result reaches nobody (a cut cell whose worker lives on, an
interrupted or timed-out one, keeps the words: a thread of it may still wait).
"""

from __future__ import annotations

import threading

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

#: The cell's worker dies (SIGKILL, as by the OOM killer) while its tool call runs on the host.
CELL = """
import os, signal, threading, time, hermes_tools
threading.Thread(target=lambda: (time.sleep(0.3), os.kill(os.getpid(), signal.SIGKILL)), daemon=True).start()
hermes_tools.slow()
"""


@pytest.mark.parametrize("where", ["local", "filecell"])
def test_the_running_calls_error_says_its_result_reaches_nobody(where) -> None:
    release = threading.Event()
    transport = make_transport(where)
    try:
        with start_kernel(transport, tools={"slow": lambda: release.wait(30)}, start_timeout=30) as kernel:
            result = kernel.execute(CELL, timeout=30)
            release.set()
    finally:
        release.set()
        transport.close()

    assert result.status == "died", result.summary()
    [call] = result.tool_calls
    assert call["running"] and "reaches only a thread of the cell" not in call["error"], call
    assert call["error"] == "still running on the host when the cell's worker died: its result reaches nobody", call
