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


def _cell(reg: KernelRegistry, key: KernelKey, code: str) -> tuple[str | None, float, float]:
    """The cell's value, and the times just before it was sent and just after it returned: its kernel's
    idle clock starts between the two. (One stamp after the return made a test held up there for
    longer than the reaper's slack, 0.05 s, see the kernel reaped "before" its idle timeout.)"""
    before = time.monotonic()
    value = reg.execute(key, code).value
    return value, before, time.monotonic()


@pytest.mark.parametrize("idle_timeout", [1.0, 2.5])
def test_an_idle_kernel_is_reaped_within_a_second_of_its_idle_timeout(idle_timeout: float) -> None:
    with KernelRegistry(idle_timeout=idle_timeout) as reg:  # the default reaper, no private seam
        key = KernelKey(owner=f"idle-{idle_timeout}")
        _, sent, last_cell = _cell(reg, key, "x = 1")
        waited = _reaped_after(reg, last_cell, idle_timeout + 5.0)
        assert len(reg) == 0, f"still there {waited:.1f} s after its last cell"
        early = waited + (last_cell - sent)  # since before the cell: its idle clock cannot have started earlier
        assert idle_timeout <= early and waited <= idle_timeout + 1.0, f"reaped after {waited:.2f} s ({early:.2f} s)"
        assert reg.stats["idle_reaped"] == 1
        again = reg.execute(key, "x")
        assert again.kernel.state_lost and again.kernel.reason == "idle_reaped"


def test_a_kernel_used_again_before_its_expiry_is_kept_and_its_clock_restarts() -> None:
    with KernelRegistry(idle_timeout=1.5) as reg:
        key = KernelKey(owner="busy")
        reg.execute(key, "x = 1")
        time.sleep(0.5)  # part of the idle time, then a cell resets it (a 1-s part left 0.5 s for a held-up test)
        value, sent, last_cell = _cell(reg, key, "x")
        assert value == "1"
        waited = _reaped_after(reg, last_cell, 6.0)
        early = waited + (last_cell - sent)
        assert 1.5 <= early and waited <= 2.5, f"reaped {waited:.2f} s after the last cell (idle_timeout 1.5 s)"
