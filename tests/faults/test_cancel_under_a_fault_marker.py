"""Found by a breaker helper (2026-12-04): under any fault marker the kernel fixtures hand out a
wrapper (``FaultingKernel``, or ``HarnessKernel`` for a host death) whose ``execute`` took no
``cancel=``, so ``aexecute(k, code)`` (which always passes one) and ``k.execute(code,
cancel=event)`` raised ``TypeError`` before the cell ran, and the fault then "never fired".
Now both wrappers take it: ``FaultingKernel`` hands it on, ``HarnessKernel`` relays it to its
host as the kernel's ``cancel()``. Each test runs the cancelled cell, then the fault fires and is
seen, so the marker did its work too.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from pytest_hermes_kernel import aexecute
from pytest_hermes_kernel.faults.harness import HostGoneError

SLEEP = "import time; time.sleep(60)"


def _cancelled_cell(kernel) -> None:
    cancel = threading.Event()
    cancel.set()  # the ladder starts at once: the cell is interrupted instead of sleeping 60 s
    r = kernel.execute(SLEEP, cancel=cancel)
    assert (r.status, r.watchdog) == ("timeout", "interrupted"), r


@pytest.mark.hermes_kernel_sigkill(after_cell=2)
def test_execute_with_cancel_and_aexecute_under_kernel_sigkill(hermes_kernel) -> None:
    assert asyncio.run(aexecute(hermes_kernel, "x = 1; x")).value == "1"
    _cancelled_cell(hermes_kernel)
    r = hermes_kernel.execute("x")  # the fault fired after cell 2
    assert r.kernel.state_lost and r.ename == "NameError", r


@pytest.mark.hermes_kernel(orphan_timeout=1.0)  # the kernel's end after the host's is waited for: not 5 s
@pytest.mark.hermes_host_sigkill(after_cell=2)
def test_execute_with_cancel_and_aexecute_under_host_sigkill(hermes_kernel) -> None:
    assert asyncio.run(aexecute(hermes_kernel, "x = 1; x")).value == "1"
    _cancelled_cell(hermes_kernel)
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("x")
