"""The kernel's state table: allowed moves go through, an illegal one is refused with both
states named, and a shutdown wins over the cell thread's moves; the typed loss record."""

from __future__ import annotations

import pickle

import pytest

from pytest_hermes_kernel.errors import HermesKernelError, KernelStateError
from pytest_hermes_kernel.kernel.lifecycle import TRANSITIONS, KernelState, Lifecycle, Loss

S = KernelState


def test_every_state_has_a_row_and_closed_is_final():
    assert set(TRANSITIONS) == set(KernelState)
    assert TRANSITIONS[S.CLOSED] == frozenset()
    assert TRANSITIONS[S.CLOSING] == {S.CLOSED}
    every_live_state = set(KernelState) - {S.CLOSING, S.CLOSED}
    assert all(S.CLOSING in TRANSITIONS[s] for s in every_live_state), "shutdown must be possible from anywhere"


def test_a_kernel_walks_its_usual_life():
    life = Lifecycle()
    for state in (S.STARTING, S.IDLE, S.BUSY, S.WORKER_DEAD, S.IDLE, S.BUSY, S.RUNNER_LOST, S.STARTING, S.IDLE,
                  S.CLOSING, S.CLOSED):
        life.to(state)
    assert life.state is S.CLOSED and life.stopping


@pytest.mark.parametrize("old, new", [
    (S.NEW, S.BUSY),             # a cell before any runner
    (S.IDLE, S.STARTING),        # a second runner while one is up
    (S.WORKER_DEAD, S.BUSY),     # a cell on a dead worker
    (S.RUNNER_LOST, S.IDLE),     # back to life without a new runner
    (S.CLOSED, S.STARTING),      # auto-restart after shutdown (handed case B20 a)
    (S.CLOSING, S.IDLE),
])
def test_an_illegal_transition_is_refused_naming_both_states(old, new):
    life = Lifecycle(old)

    with pytest.raises(KernelStateError) as caught:
        life.to(new)

    assert life.state is old, "a refused move leaves the state alone"
    assert old.name in str(caught.value) and new.name in str(caught.value)
    assert caught.value.from_state == old.name and caught.value.to_state == new.name
    assert isinstance(caught.value, HermesKernelError)
    back = pickle.loads(pickle.dumps(caught.value))
    assert type(back) is KernelStateError and back.from_state == old.name


def test_to_returns_the_state_it_left():
    life = Lifecycle()
    assert life.to(S.STARTING) is S.NEW and life.is_(S.STARTING)


def test_shutdown_wins_over_the_cell_threads_moves():
    life = Lifecycle(S.BUSY)
    life.to(S.CLOSING)

    assert life.advance(S.WORKER_DEAD) is False  # the cell that ended by the shutdown starts nothing
    assert life.advance(S.STARTING) is False
    assert life.state is S.CLOSING


def test_advance_still_refuses_an_illegal_move_while_live():
    life = Lifecycle(S.NEW)
    with pytest.raises(KernelStateError):
        life.advance(S.IDLE)


def test_swap_moves_only_from_the_expected_state():
    life = Lifecycle(S.IDLE)
    assert life.swap(S.BUSY, S.RESETTING) is False and life.state is S.IDLE  # restart() with no cell running
    life.to(S.BUSY)
    assert life.swap(S.BUSY, S.RESETTING) is True and life.state is S.RESETTING
    assert life.advance(S.WORKER_DEAD) and life.state is S.WORKER_DEAD  # the cut cell settles


def test_a_failed_start_returns_to_where_it_came_from():
    for prior in (S.NEW, S.RUNNER_LOST):
        life = Lifecycle(prior)
        life.to(S.STARTING)
        life.to(prior)
        assert life.state is prior


def test_loss_sets_the_kernel_info_fields():
    loss = Loss(reason="died", exit_code=137, signal=9, note="killed by signal 9")
    assert loss.info_fields() == {"state_lost": True, "reason": "died", "exit_code": 137, "signal": 9,
                                  "oom_killed": False, "note": "killed by signal 9"}
    with pytest.raises(AttributeError):
        loss.reason = "reset"  # type: ignore[misc]  # a fact that travels is frozen


def test_loss_between_cells_tells_oom_from_a_plain_death():
    plain = Loss.between_cells(exit_code=None, signal=9, oom_killed=False)
    oom = Loss.between_cells(exit_code=None, signal=9, oom_killed=True)
    exited = Loss.between_cells(exit_code=3, signal=None, oom_killed=False)

    assert plain.reason == "died" and "(signal 9)" in plain.note and "between cells" in plain.note
    assert oom.reason == "oom_killed" and oom.oom_killed
    assert exited.reason == "died" and "(exit code 3)" in exited.note
