"""Unit: a cell's budget and the watchdog ladder's stages, on a fake clock."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.kernel.watchdog import POLL_SLICE_S, CellBudget, WatchdogPolicy

POLICY = WatchdogPolicy(interrupt_grace=2.0, kill_grace=3.0)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_ladder_interrupt_then_kill_then_abandon(clock):
    budget = CellBudget(10.0, POLICY, clock=clock)
    clock.now += 9.9
    assert budget.due() is None
    clock.now += 0.1
    assert budget.due() == "interrupt" and budget.stage == "interrupting"
    assert budget.due() is None  # each rung is returned once
    clock.now += 1.9
    assert budget.due() is None
    clock.now += 0.1
    assert budget.due() == "kill" and budget.stage == "killing"
    clock.now += 3.0
    assert budget.due() == "abandon" and budget.stage == "abandoned"
    clock.now += 100
    assert budget.due() is None


def test_pause_freezes_the_budget(clock):
    budget = CellBudget(10.0, POLICY, clock=clock)
    clock.now += 4.0
    budget.pause()
    clock.now += 1000.0  # e.g. a tool call waiting on a human
    assert budget.used() == pytest.approx(4.0)
    assert budget.due() is None
    budget.resume()
    clock.now += 5.9
    assert budget.due() is None
    clock.now += 0.1
    assert budget.due() == "interrupt"


def test_nested_pauses_resume_only_when_all_end(clock):
    budget = CellBudget(1.0, POLICY, clock=clock)
    with budget.paused():
        with budget.paused():
            clock.now += 50
        clock.now += 50
        assert budget.due() is None
    clock.now += 1.0
    assert budget.due() == "interrupt"


def test_cancel_cuts_through_a_pause(clock):
    budget = CellBudget(10.0, POLICY, clock=clock)
    budget.pause()
    budget.cancel()
    assert budget.next_wait() == 0.0
    assert budget.due() == "interrupt"


def test_no_limit_is_never_due_unless_cancelled(clock):
    budget = CellBudget(None, POLICY, clock=clock)
    clock.now += 10**6
    assert budget.due() is None
    assert budget.next_wait() == POLL_SLICE_S
    budget.cancel()
    assert budget.due() == "interrupt"


def test_next_wait_is_bounded_by_the_poll_slice(clock):
    budget = CellBudget(10.0, POLICY, clock=clock)
    assert budget.next_wait() == POLL_SLICE_S
    clock.now += 9.95
    assert budget.next_wait() == pytest.approx(0.05)
    clock.now += 1.0
    assert budget.next_wait() == 0.0


def test_next_wait_follows_each_rungs_grace(clock):
    budget = CellBudget(1.0, POLICY, clock=clock)
    clock.now += 1.0
    assert budget.due() == "interrupt"
    assert budget.next_wait() == POLL_SLICE_S  # 2 s of interrupt grace left, in poll slices
    clock.now += 1.95
    assert budget.next_wait() == pytest.approx(0.05)
    clock.now += 0.05
    assert budget.due() == "kill"
    clock.now += 2.97
    assert budget.next_wait() == pytest.approx(0.03)
    clock.now += 0.03
    assert budget.due() == "abandon"
    assert budget.next_wait() == 0.0, "nothing left to wait for"


def test_a_paused_budget_over_its_time_waits_in_poll_slices(clock):
    budget = CellBudget(1.0, POLICY, clock=clock)
    budget.pause()
    clock.now += 50
    assert budget.next_wait() == POLL_SLICE_S and budget.due() is None
    assert budget.used() == 0.0


def test_an_unmatched_resume_does_not_unpause_a_later_pause(clock):
    budget = CellBudget(1.0, POLICY, clock=clock)
    budget.resume()  # nothing to resume: no effect
    clock.now += 0.5
    with budget.paused():
        clock.now += 50
        assert budget.due() is None
    assert budget.used() == pytest.approx(0.5)
    clock.now += 0.5
    assert budget.due() == "interrupt"


def test_a_cancel_during_the_ladder_restarts_nothing(clock):
    budget = CellBudget(1.0, POLICY, clock=clock)
    budget.cancel()
    assert budget.due() == "interrupt"
    budget.cancel()
    assert budget.due() is None and budget.stage == "interrupting"
    clock.now += POLICY.interrupt_grace
    assert budget.due() == "kill"


def test_a_cancel_or_pause_is_noticed_within_a_tenth_of_a_second(clock):
    """The documented poll slice: the longest single wait of a cell's wait loop."""
    for budget in (CellBudget(None, POLICY, clock=clock), CellBudget(3600.0, POLICY, clock=clock)):
        assert 0.0 < budget.next_wait() <= 0.1
