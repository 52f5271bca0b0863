"""A cell sent to a key whose kernel had just been idle past ``idle_timeout`` (the reaper had not
come by yet) raised a bare ``KeyError: KernelKey(owner=...)`` from the registry's acquire, and
left that kernel's runner, worker and kernel dir running after ``close()`` (found by the random
registry driver, ``tests/registry_fuzz.py``, seeds 8 and 23 with a 0.3-s idle timeout).

The acquire looked the key's entry up, then took the expired kernels out of the map: the key's
own among them. It leased that entry out of the map, ``move_to_end`` raised, and the expired
kernels it had taken out were never ended. Now the expired ones are taken out first: the cell
runs on a fresh kernel and reports ``state_lost``, ``reason="idle_reaped"``, as after the reaper.
"""

from __future__ import annotations

from pytest_hermes_kernel import KernelKey
from tests.support import gone

KEY = KernelKey(owner="conv-idle")


def test_a_cell_after_the_idle_timeout_ran_out_runs_on_a_fresh_kernel(make_registry, fake_clock) -> None:
    reg = make_registry(idle_timeout=10.0, clock=fake_clock)
    first = reg.execute(KEY, "x = 1\nx")
    fake_clock.advance(11.0)  # idle past the timeout; no reaper has come by

    again = reg.execute(KEY, "'x' in globals()")

    assert again.status == "ok" and again.value == "False"
    assert again.kernel.state_lost and again.kernel.reason == "idle_reaped"
    assert again.kernel.kernel_id != first.kernel.kernel_id
    assert gone(first.kernel.pid), "the expired kernel is ended"
    assert [s.kernel_id for s in reg.snapshot()] == [again.kernel.kernel_id]
    assert reg.stats["idle_reaped"] == 1
