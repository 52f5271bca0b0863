"""Contract: the timeout ladder interrupt -> kill -> restart, and what each outcome tells the user."""

from __future__ import annotations

import signal
import time

import pytest

from pytest_hermes_kernel.errors import CellInterrupted, KernelResetAfterTimeout
from pytest_hermes_kernel.kernel.watchdog import WatchdogPolicy
from ._probes import kernel_pids, signal_in_kernel

FAST = WatchdogPolicy(interrupt_grace=1.0, kill_grace=1.0)
#: The budget of a cell that sleeps (``time.sleep(30)``): an interrupt that reaches the runner before
#: the cell runs is held and signalled once it does, so the cell ends ``interrupted`` however soon
#: the budget runs out; it is short, since it is waited out in full. (1 s until the nineteenth session.)
SLEEPER_TIMEOUT_S = 0.5
#: The budget of a cell that ignores SIGINT, or freezes its runner, in its first lines: it must
#: outlast those lines (an interrupt before them would end the cell ``interrupted``).
DEAF_TIMEOUT_S = 1.0
#: For a cell that ignores SIGINT: its interrupt grace is always waited out, so it is short (0.5 s
#: until the nineteenth session: the cell ignores the interrupt however soon the kill follows); the
#: kill (answered by the runner, not waited out) keeps FAST's grace.
IGNORED = WatchdogPolicy(interrupt_grace=0.2, kill_grace=1.0)
#: For a frozen runner: neither rung is answered, so both graces are waited out in full (0.5 s each
#: until the nineteenth session: the runner is stopped before the budget runs out, so it answers neither).
FROZEN = WatchdogPolicy(interrupt_grace=0.2, kill_grace=0.2)
#: Seconds a frozen runner and its worker may take to leave the transport's listing after the reset.
FROZEN_GONE_S = 5.0
IGNORE_SIGINT = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)"


def test_timeout_interrupt_keeps_state(kernel_factory):
    k = kernel_factory(watchdog=FAST)
    k.execute("kept = 'yes'")
    pid = k.pid

    r = k.execute("import time\ntime.sleep(30)", timeout=SLEEPER_TIMEOUT_S)

    assert r.status == "timeout" and r.watchdog == "interrupted", r.summary()
    assert r.ename == "KeyboardInterrupt"
    assert not r.kernel.state_lost and "interrupted" in r.kernel.note
    assert r.duration_s < SLEEPER_TIMEOUT_S + FAST.interrupt_grace + 1.0
    after = k.execute("kept")
    assert after.value == "'yes'" and after.kernel.pid == pid and after.kernel.generation == 0


def test_timeout_interrupt_raises_when_asked(kernel_factory):
    k = kernel_factory(watchdog=FAST)
    with pytest.raises(CellInterrupted) as caught:
        k.execute("import time\ntime.sleep(30)", timeout=SLEEPER_TIMEOUT_S, raise_on_timeout=True)
    assert caught.value.result.watchdog == "interrupted"
    assert k.execute("1").status == "ok"


def test_options_timeout_is_the_default_budget(kernel_factory):
    k = kernel_factory(watchdog=FAST, timeout=SLEEPER_TIMEOUT_S)
    r = k.execute("import time\ntime.sleep(30)")
    assert r.status == "timeout" and r.watchdog == "interrupted", r.summary()


def test_ignored_sigint_escalates_to_kill_and_restart(kernel_factory):
    k = kernel_factory(watchdog=IGNORED)
    k.execute("z = 7")
    old_pid = k.pid
    started = time.monotonic()

    r = k.execute(IGNORE_SIGINT, timeout=DEAF_TIMEOUT_S)

    elapsed = time.monotonic() - started
    assert r.status == "timeout" and r.watchdog == "reset", r.summary()
    assert r.kernel.state_lost and r.kernel.reason == "timeout"
    assert "ineffective" in r.kernel.note and "restarted" in r.kernel.note
    assert elapsed < DEAF_TIMEOUT_S + IGNORED.interrupt_grace + IGNORED.kill_grace + 3.0
    assert old_pid not in kernel_pids(k)
    assert k.generation == 1 and k.pid != old_pid
    after = k.execute("z")
    assert after.status == "error" and after.ename == "NameError", after.summary()
    assert after.kernel.generation == 1
    assert after.kernel.state_lost and after.kernel.reason == "timeout"  # the next cell is told too


def test_reset_raises_when_asked(kernel_factory):
    k = kernel_factory(watchdog=IGNORED)
    with pytest.raises(KernelResetAfterTimeout) as caught:
        k.execute(IGNORE_SIGINT, timeout=DEAF_TIMEOUT_S, raise_on_timeout=True)
    assert caught.value.result.kernel.state_lost
    assert k.execute("'alive'").value == "'alive'"


def test_reset_failed_when_restart_is_off(kernel_factory):
    k = kernel_factory(watchdog=WatchdogPolicy(interrupt_grace=IGNORED.interrupt_grace, kill_grace=IGNORED.kill_grace,
                                               restart=False))
    k.execute("z = 7")
    old_pid = k.pid

    r = k.execute(IGNORE_SIGINT, timeout=DEAF_TIMEOUT_S)

    assert r.status == "timeout" and r.watchdog == "reset_failed", r.summary()
    assert r.kernel.state_lost and r.kernel.reason == "timeout"
    # no replacement was tried: a note saying "its replacement failed to start" sent users after a failure
    assert "not restarted" in r.kernel.note and "failed" not in r.kernel.note, r.kernel.note
    assert old_pid not in kernel_pids(k)
    nxt = k.execute("z")  # the next cell gets a fresh worker and says the state is gone
    assert nxt.ename == "NameError"
    assert nxt.kernel.state_lost and nxt.kernel.reason == "timeout"
    assert nxt.kernel.generation == 1


def test_unreachable_runner_is_killed_from_outside_and_replaced(kernel_factory):
    """A frozen supervisor (SIGSTOP) never answers: the ladder kills the kernel through the transport.

    Whether the frozen runner and worker are gone is looked at before the case's own clean-up
    kills what is left: it looked after, so a transport that counted a frozen runner as gone
    without killing it (its ``kill`` and ``alive`` asking the runner itself) passed."""
    def freeze() -> None:  # the cell's first step; the pids are where the kernel runs: signalled there
        with k.budget_paused():  # (not a 0.3-s timer: an exec that landed after the 1-s budget froze nothing)
            signal_in_kernel(k, runner, signal.SIGSTOP)

    k = kernel_factory(watchdog=FROZEN, tools={"freeze": freeze})
    k.execute("s = 1")
    runner, worker = k.runner_pid, k.pid
    left: set[int] = set()
    try:  # the frozen runner never relays the tool's result: the cell waits until the ladder
        r = k.execute("import hermes_tools, time\nhermes_tools.freeze()\ntime.sleep(30)", timeout=DEAF_TIMEOUT_S)
        left = _left_after(lambda: {runner, worker} & kernel_pids(k), FROZEN_GONE_S)
    finally:
        for pid in {runner, worker} & kernel_pids(k):
            signal_in_kernel(k, pid, signal.SIGKILL)

    assert r.status == "timeout" and r.watchdog == "reset", r.summary()
    assert r.kernel.state_lost and r.kernel.reason == "timeout"
    assert not left, (f"the frozen runner's processes {sorted(left)} still run {FROZEN_GONE_S} s after the reset "
                      f"(runner {runner}, worker {worker}): Transport.kill/alive counted them gone without ending them")
    assert k.runner_pid != runner
    after = k.execute("s")
    assert after.ename == "NameError" and after.kernel.generation == 1


def _left_after(left_now, timeout):
    """What ``left_now()`` still gives after up to ``timeout`` seconds (empty as soon as it is)."""
    deadline = time.monotonic() + timeout
    while (left := left_now()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left
