"""An orphan timer (or a kept kernel's TTL) over 24.8 days: the runner's serve loop handed the
time left to epoll, which takes at most INT_MAX ms, and died of ``OverflowError: timeout is too
large``. A docker or ssh kernel with ``orphan_timeout=3e6`` failed its start with that traceback
as a ``KernelStartError``; a local kernel kept with such a TTL died right after pytest listed it
as kept (tests/plugin/test_keep_failed.py)."""

from __future__ import annotations

import pytest


@pytest.mark.hermes_kernel(orphan_timeout=3e6)  # 34.7 days
def test_a_kernel_with_an_orphan_timer_of_weeks_starts_and_keeps_its_state(hermes_kernel):
    hermes_kernel.execute("kept = 6 * 7")
    assert hermes_kernel.execute("kept").value == "42"
