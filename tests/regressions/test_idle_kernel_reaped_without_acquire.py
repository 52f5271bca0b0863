"""Seed bug: idle kernels were reaped only on the next acquire, so a quiet host kept them forever.

A background reaper ends idle kernels on its own.
"""

from __future__ import annotations

from pytest_hermes_kernel import KernelKey
from tests.support import gone, wait_until


def test_background_reaper_ends_an_idle_kernel(make_registry):
    reg = make_registry(idle_timeout=0.5, background_reaper=True, reap_interval=0.1)
    key = KernelKey(owner="conv-idle")
    r = reg.execute(key, "x = 1")
    pid, runner = r.kernel.pid, reg.snapshot()[0].runner_pid

    wait_until(lambda: len(reg) == 0 and gone(pid) and gone(runner), 5.0,
               what="the idle kernel to be reaped with no new acquire")

    assert reg.stats["idle_reaped"] == 1
    again = reg.execute(key, "x")
    assert again.ename == "NameError"
    assert again.kernel.state_lost and again.kernel.reason == "idle_reaped"
