"""Found by the flaky-by-construction hunt (2026-12-06): the contract's frozen-runner case froze the
runner from a 0.3-s timer started before its cell, whose budget is 1 s. On docker and ssh the
freeze is an exec into the container or host (``Transport.signal_pid``): one that took over 0.7 s
(a loaded machine) froze the runner after the budget's interrupt had been answered, and an honest
transport failed the case (``watchdog=interrupted``, not ``reset``). The cell now freezes its own
runner through a tool, with its budget paused meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pytest_hermes_kernel.contract import watchdog
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.transports.local import LocalTransport

#: What an exec into a container took on a loaded machine (the budget the case gives its cell: 1 s).
EXEC_S = 1.2


class SlowSignals(LocalTransport):
    """Honest, but each ``signal_pid`` takes :data:`EXEC_S` before the signal goes out."""

    def signal_pid(self, launched: Any, pid: int, sig: int) -> None:
        time.sleep(EXEC_S)
        super().signal_pid(launched, pid, sig)


def test_the_frozen_runner_case_passes_a_transport_whose_signals_are_slow(
        start: Callable[..., KernelHandle]) -> None:
    transport = SlowSignals(server=False)
    try:
        watchdog.test_unreachable_runner_is_killed_from_outside_and_replaced(
            lambda **options: start(transport, **options))
    finally:
        transport.close()
