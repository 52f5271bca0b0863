"""``wait_until`` with a probe that takes longer than the wait (a ``docker exec`` or an ssh command
on a loaded machine): the probe that began before the deadline and came back false says nothing
of the state at the deadline, so one more starts; only a probe begun at or after it gives up.
Before, a first listing that took longer than the whole wait (2 s for "the exited worker to be
gone" in the contract suite) ended it with the worker long gone.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.contract import _probes


class _Clock:
    """A monotonic clock the probe moves on; sleeps move it too."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(_probes, "time", fake)
    return fake


def test_a_probe_slower_than_the_wait_is_asked_again_after_the_deadline(clock: _Clock) -> None:
    calls = []

    def slow_probe() -> bool:
        calls.append(clock.now)
        clock.now += 3.0  # one listing takes 3 s; the condition held from its start on
        return len(calls) > 1

    assert _probes.wait_until(slow_probe, 2.0, what="the worker to be gone") is True
    assert calls == [100.0, 103.02]


def test_a_probe_still_false_after_the_deadline_times_out_naming_what(clock: _Clock) -> None:
    calls = []

    def never() -> bool:
        calls.append(clock.now)
        clock.now += 3.0
        return False

    with pytest.raises(AssertionError, match="timed out after 2.0 s waiting for the worker to be gone"):
        _probes.wait_until(never, 2.0, what="the worker to be gone")
    assert len(calls) == 2 and calls[-1] >= 102.0


def test_a_fast_probe_gives_up_at_the_deadline(clock: _Clock) -> None:
    calls = []

    def never() -> bool:
        calls.append(clock.now)
        return False

    with pytest.raises(AssertionError, match="timed out after 1.0 s"):
        _probes.wait_until(never, 1.0, interval=0.25)
    assert calls == [100.0, 100.25, 100.5, 100.75, 101.0]
