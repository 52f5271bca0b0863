"""The typed cell outcome: the runner's reply read from its header, host-side facts as fields
(never a made-up reply), and what an outcome means (status, loss, watchdog)."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_hermes_kernel.kernel.lifecycle import Loss
from pytest_hermes_kernel.kernel.outcome import CellOutcome, RunnerReply, blobs_of, build_result, judge
from pytest_hermes_kernel.kernel.results import KernelInfo

FULL = {"type": "result", "id": 7, "status": "died", "not_run": False, "exit_code": 137, "signal": 9,
        "oom_killed": True, "oom_counter": 2, "note": "forced", "ename": "E", "evalue": "v", "traceback": "tb",
        "value": "1", "value_tail": "2", "value_truncated": True, "value_length": 9, "execution_count": 3,
        "duration_s": 0.5, "stdout_dropped": 10, "stderr_dropped": 20, "stdout_stray": 3, "stderr_stray": 4, "oom_kills": 0, "oom_shared": "/cg/memory.events", "worker_pid": 42, "worker_generation": 0,
        "caught_interrupt": True}


def test_a_reply_read_from_a_header_equals_one_built_field_by_field():
    fields = {f.name: FULL[f.name] for f in dataclasses.fields(RunnerReply)}

    reply = RunnerReply.from_header(FULL)

    assert reply == RunnerReply(**fields) and hash(reply) == hash(RunnerReply(**fields))
    with pytest.raises(dataclasses.FrozenInstanceError):
        reply.status = "ok"  # type: ignore[misc]


def test_a_minimal_header_reads_with_the_defaults():
    reply = RunnerReply.from_header({"type": "result", "id": 1})
    assert reply == RunnerReply(status="error")
    assert RunnerReply.from_header({"status": "ok", "worker_pid": None}).worker_pid is None
    assert RunnerReply.from_header({"status": "ok", "stdout_total": 5}) == RunnerReply(status="ok")  # other fields


def test_blobs_are_always_four():
    assert blobs_of([]) == (b"", b"", b"", b"")
    assert blobs_of([b"a", b"b"]) == (b"a", b"b", b"", b"")
    assert blobs_of([b"1", b"2", b"3", b"4"]) == (b"1", b"2", b"3", b"4")


def test_an_unreachable_runner_is_an_outcome_without_a_reply():
    confirmed = CellOutcome(reply=None, stage="abandon", abandoned=True, kill_confirmed=True)
    unconfirmed = CellOutcome(reply=None, stage="abandon", abandoned=True, kill_confirmed=False)

    verdict = judge(confirmed, "none")

    assert confirmed.status == "died" and confirmed.runner_gone and confirmed.ladder_killed
    assert verdict.status == "timeout" and verdict.death is not None and verdict.death.reason == "timeout"
    assert verdict.death.signal == 9 and judge(unconfirmed, "none").death.signal is None


@pytest.mark.parametrize("reason", ["transport_lost", "died", "reset"])
def test_a_lost_channel_reports_its_own_reason_and_note(reason):
    outcome = CellOutcome(reply=None, channel_lost=Loss(reason=reason, note="channel lost: end of stream"))

    death = judge(outcome, "none").death

    assert outcome.runner_gone and not outcome.ladder_killed
    assert death is not None and death.reason == reason and death.note == "channel lost: end of stream"


def test_a_restart_or_shutdown_during_the_cell_makes_its_death_a_reset():
    died = CellOutcome(reply=RunnerReply(status="died", signal=9))
    assert judge(died, "restart").death.reason == "reset"
    assert judge(died, "shutdown").death.reason == "reset"
    assert judge(died, "none").death.reason == "died"
    interrupted = CellOutcome(reply=RunnerReply(status="interrupted"))
    assert judge(interrupted, "restart").reset and not judge(interrupted, "none").reset


def test_oom_and_system_exit_are_told_apart_from_a_plain_kill():
    oom = judge(CellOutcome(reply=RunnerReply(status="died", signal=9, oom_killed=True, oom_counter=1)), "none")
    kill = judge(CellOutcome(reply=RunnerReply(status="died", signal=9, oom_counter=0)), "none")
    no_cgroup = judge(CellOutcome(reply=RunnerReply(status="died", signal=9)), "none")
    exited = judge(CellOutcome(reply=RunnerReply(status="exited", exit_code=3, evalue="3")), "none")

    assert oom.death.reason == "oom_killed" and oom.death.oom_killed
    assert kill.death.reason == "died" and "possible OOM" not in kill.death.note
    assert "possible OOM" in no_cgroup.death.note
    assert exited.death.reason == "exited" and exited.status == "exited" and "SystemExit(3)" in exited.death.note


def test_sigint_from_the_ladder_is_a_timeout_that_keeps_the_state():
    verdict = judge(CellOutcome(reply=RunnerReply(status="interrupted"), stage="interrupt", budget_s=1.0), "none")

    assert verdict.status == "timeout" and verdict.watchdog == "interrupted" and verdict.death is None
    changes = verdict.info_changes(earlier=None, death=None, reconnected=False)
    assert "state_lost" not in changes and "1.0 s budget" in changes["note"]


def test_an_earlier_loss_and_this_cells_death_both_reach_the_info():
    earlier = Loss(reason="evicted", note="the previous kernel for this key was evicted")
    plain = judge(CellOutcome(reply=RunnerReply(status="ok")), "none")
    assert plain.info_changes(earlier=earlier, death=None, reconnected=True) == {
        "reconnected": True, **earlier.info_fields()}
    death = Loss(reason="died", signal=9, note="killed by signal 9")
    assert plain.info_changes(earlier=earlier, death=death, reconnected=False)["reason"] == "died"


def test_a_result_without_a_reply_has_no_output_and_no_made_up_fields():
    outcome = CellOutcome(reply=None, channel_lost=Loss(reason="transport_lost", note="lost"))
    info = KernelInfo(kernel_id="k", transport="fake", state_lost=True, reason="transport_lost")

    result = build_result(outcome, status="died", kernel=info, watchdog=None, tool_calls=(), secrets=())

    assert result.status == "died" and result.stdout == "" and result.ename is None and result.execution_count == 0
