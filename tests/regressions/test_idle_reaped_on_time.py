"""Idle reaping is precise (issue #9 point 6).

Before: the reaper woke on a fixed interval with a 30 s floor, so a kernel with
``idle_timeout=1.0`` lived up to 30 s, and a test of reaping had to sleep half a minute or
call private seams. Now the reaper sleeps until the earliest expiry or the next change: a
kernel is reaped within ``idle_timeout + 1 s`` of its last cell, for any idle timeout, with the
default settings.
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import KernelKey, KernelRegistry


def _reaped_after(reg: KernelRegistry, since: float, limit: float) -> float:
    deadline = since + limit
    while len(reg) and time.monotonic() < deadline:
        time.sleep(0.02)
    return time.monotonic() - since


@pytest.mark.parametrize("idle_timeout", [1.0, 2.5])
def test_an_idle_kernel_is_reaped_within_a_second_of_its_idle_timeout(idle_timeout: float) -> None:
    with KernelRegistry(idle_timeout=idle_timeout) as reg:  # the default reaper, no private seam
        key = KernelKey(owner=f"idle-{idle_timeout}")
        reg.execute(key, "x = 1")
        last_cell = time.monotonic()
        waited = _reaped_after(reg, last_cell, idle_timeout + 5.0)
        assert len(reg) == 0, f"still there {waited:.1f} s after its last cell"
        assert idle_timeout <= waited <= idle_timeout + 1.0, f"reaped after {waited:.2f} s"
        assert reg.stats["idle_reaped"] == 1
        again = reg.execute(key, "x")
        assert again.kernel.state_lost and again.kernel.reason == "idle_reaped"


def test_a_kernel_used_again_before_its_expiry_is_kept_and_its_clock_restarts() -> None:
    with KernelRegistry(idle_timeout=1.5) as reg:
        key = KernelKey(owner="busy")
        reg.execute(key, "x = 1")
        time.sleep(1.0)  # part of the idle time, then a cell resets it
        assert reg.execute(key, "x").value == "1"
        last_cell = time.monotonic()
        waited = _reaped_after(reg, last_cell, 6.0)
        assert 1.5 <= waited <= 2.5, f"reaped {waited:.2f} s after the last cell (idle_timeout 1.5 s)"
