"""What a KernelHandle promises a user beyond the contract suite, on real local kernels.

A paused budget does not run out, ``cancel`` starts the timeout ladder at once, listeners hear
the kernel's life (and cannot break it), ``info`` refuses a field it lacks, and the handle's
facts (pids, generation, restart count, state) follow restarts and shutdown. Written against
the survivors of the mutation run (``benchmarks/mutation.py``, issue #13).
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import WatchdogPolicy
from pytest_hermes_kernel.kernel.lifecycle import KernelState, Loss
from pytest_hermes_kernel.procs import start_time
from tests.support import CellStarted, run_in_thread


def test_a_paused_budget_does_not_run_out(make_kernel):
    probe = CellStarted()
    k = make_kernel(tools=probe.tools())
    with k.budget_paused():  # no cell runs: nothing to pause
        pass
    cell = run_in_thread(k, probe.CODE + "import time\ntime.sleep(1.5)\n'done'", timeout=1.0)
    probe.wait()

    with k.budget_paused():  # e.g. a human answers a prompt: the cell's clock stands still
        result = cell.result(timeout=30)

    assert result.status == "ok" and result.value == "'done'" and result.watchdog is None, result.summary()


def test_the_same_cell_without_the_pause_times_out(make_kernel):
    r = make_kernel().execute("import time\ntime.sleep(1.5)\n'done'", timeout=1.0)
    assert r.status == "timeout" and r.watchdog == "interrupted", r.summary()


def test_cancel_starts_the_ladder_now(make_kernel):
    probe = CellStarted()
    k = make_kernel(tools=probe.tools())
    k.cancel()  # no cell: nothing happens
    cell = run_in_thread(k, probe.CODE + "import time\ntime.sleep(60)", timeout=600.0)
    probe.wait()
    started = time.monotonic()

    k.cancel()
    r = cell.result(timeout=30)

    assert r.watchdog == "interrupted" and r.status == "timeout", r.summary()
    assert time.monotonic() - started < 10.0
    assert k.execute("1").value == "1", "an interrupted cell keeps the kernel"


def test_a_cancelled_cell_reset_by_the_ladder_says_it_was_cancelled(make_kernel):
    """Seen: a cancelled cell that ignored its SIGINT was reset with the note "the interrupt was
    ineffective; the kernel was killed (SIGKILL) and restarted" and ``reason="timeout"``: no budget
    had run out, and nothing said it was cancelled (the interrupted rung's note did say so)."""
    probe = CellStarted()
    k = make_kernel(tools=probe.tools(), watchdog=WatchdogPolicy(interrupt_grace=0.5, kill_grace=1.0))
    cell = run_in_thread(k, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" + probe.CODE
                         + "time.sleep(60)", timeout=600.0)
    probe.wait()

    k.cancel()
    r = cell.result(timeout=30)

    assert r.status == "timeout" and r.watchdog == "reset", r.summary()
    assert r.kernel.note.startswith("cancelled: the interrupt was ineffective"), r.kernel.note


def test_listeners_hear_the_kernels_life_and_cannot_break_it(make_kernel):
    heard: list[tuple[str, object]] = []

    def broken(event, handle, payload):
        raise RuntimeError("an observer's bug")

    k = make_kernel()
    k.add_listener(broken)
    k.add_listener(lambda event, handle, payload: heard.append((event, payload)))
    loss = Loss(reason="evicted", note="the previous kernel for this key was evicted")

    k.mark_lost(loss)
    k.mark_lost(loss)  # the same loss is told once
    r = k.execute("41 + 1")
    info = k.shutdown()

    assert [e for e, _ in heard] == ["lost", "result", "shutdown"]
    assert heard[0][1] is loss and heard[1][1] is r and heard[2][1] is info
    assert r.value == "42" and r.kernel.reason == "evicted"


def test_info_applies_changes_and_refuses_unknown_fields(make_kernel):
    k = make_kernel()
    assert k.info().reused is False
    k.execute("1")
    info = k.info(state_lost=True, reason="reset")

    assert (info.kernel_id, info.transport, info.pid, info.reused) == (k.kernel_id, "local", k.pid, True)
    assert info.state_lost and info.reason == "reset"
    with pytest.raises(TypeError):
        k.info(no_such_field=1)


def test_the_handles_facts_follow_a_restart_and_the_shutdown(make_kernel):
    k = make_kernel()
    assert k.state is KernelState.IDLE and k.alive and not k.stopping
    assert k.launched is not None and k.runner_pid == k.launched.pid and k.runner_pid != k.worker_pid
    first = k.pid
    first_identity = (first, start_time(first))  # a pid alone may be reused at once
    assert k.worker_pid == first and k.generation == 0 and k.restart_count == 0
    assert "alive" in repr(k) and k.kernel_id[:8] in repr(k)

    info = k.restart()

    assert info.state_lost and info.reason == "reset" and info.generation == 1
    assert k.generation == 1 and k.restart_count == 1
    r = k.execute("1")
    assert r.kernel.pid == k.pid and r.kernel.generation == 1
    assert (k.pid, start_time(k.pid)) != first_identity, "the next cell runs on the new worker"
    assert k.close().step == "request"
    assert k.stopping and not k.alive and k.state is KernelState.CLOSED
    assert k.launched is None and k.runner_pid is None and "down" in repr(k)


def test_a_big_non_ascii_cell_under_the_frame_limit_runs(make_kernel):
    """The size check counts the bytes sent (UTF-8), not an ASCII-escaped form 3x as long."""
    chars = 12_000_000  # over the fast path's character count; 24 MB as UTF-8, 72 MB ASCII-escaped
    r = make_kernel().execute("s = '" + "\u00e9" * chars + "'\nlen(s)")
    assert r.status == "ok" and r.value == str(chars), r.summary()


def test_a_cell_is_refused_exactly_when_its_source_does_not_fit_a_frame(make_kernel):
    from pytest_hermes_kernel.errors import FrameTooLargeError
    from pytest_hermes_kernel.kernel.cell import _HEADER_RESERVE_BYTES
    from pytest_hermes_kernel.kernel.results import MAX_FRAME_BYTES

    k = make_kernel()
    k.execute("keep = 41")
    room = MAX_FRAME_BYTES - _HEADER_RESERVE_BYTES  # bytes of source as sent (JSON, with its quotes)
    fits = "keep #" + "a" * (room - 2 - len("keep #"))

    assert k.execute(fits).value == "41", "a source of exactly the room left runs"
    with pytest.raises(FrameTooLargeError, match="nothing was sent"):
        k.execute(fits + "a")
    r = k.execute("keep + 1")
    assert r.value == "42" and not r.kernel.state_lost and r.kernel.generation == 0


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), "5"])
def test_a_cell_timeout_must_be_finite_seconds_over_zero(make_kernel, bad):
    from pytest_hermes_kernel.errors import ConfigError

    k = make_kernel()
    with pytest.raises(ConfigError, match="timeout"):
        k.execute("1", timeout=bad)
    assert k.execute("1", timeout=0.5).value == "1"


@pytest.mark.parametrize("code, kwargs, error", [
    ("'\ud800'", {}, "ConfigError"),  # a lone surrogate: no UTF-8 form; it failed while sending
    ("1", {"cancel": "yes"}, "TypeError"),  # not an Event: it failed in the cell's wait
])
def test_a_cell_refused_for_its_arguments_loses_nothing(make_kernel, code, kwargs, error):
    """Bad arguments are refused before anything is sent: the kernel and its state stay."""
    k = make_kernel()
    k.execute("keep = 41")
    with pytest.raises(Exception) as caught:
        k.execute(code, **kwargs)
    assert type(caught.value).__name__ == error and "nothing was sent" in str(caught.value), caught.value
    r = k.execute("keep + 1")
    assert r.value == "42" and not r.kernel.state_lost and r.kernel.generation == 0, r.summary()


def test_a_first_cell_starts_the_kernel_and_reports_no_loss():
    from pytest_hermes_kernel.kernel.handle import KernelHandle
    from tests.unit.test_registry_losses import FakeTransport

    with KernelHandle(FakeTransport()) as started:
        pass
    k = KernelHandle(FakeTransport())  # never started: the first cell brings it up
    try:
        r = k.execute("1")
        assert r.status == "ok" and not r.kernel.state_lost and r.kernel.reason is None
    finally:
        k.shutdown()
    assert started.stopping


def test_a_restart_of_a_handle_never_started_starts_it_and_reports_no_loss():
    from pytest_hermes_kernel.kernel.handle import KernelHandle
    from tests.unit.test_registry_losses import FakeTransport

    k = KernelHandle(FakeTransport())
    try:
        info = k.restart()  # it said state_lost=True, reason="reset", and so did the first cell after it
        assert not info.state_lost and info.reason is None and info.generation == 0, info
        r = k.execute("1")
        assert r.status == "ok" and not r.kernel.state_lost and r.kernel.note == "", r.summary()
    finally:
        k.shutdown()


def test_an_interrupt_with_no_cell_running_is_harmless(make_kernel):
    k = make_kernel()
    k.execute("w = 3")

    k.interrupt()
    k.interrupt()

    r = k.execute("w")
    assert r.value == "3" and r.status == "ok" and not r.kernel.state_lost


def test_a_second_start_while_the_first_launches_returns_once_the_kernel_is_up():
    """``start()`` returns at once on a started kernel (a tool's upload must not wait for the cell
    that called it), but not on one still starting: it returned with the runner not yet up."""
    import threading

    from pytest_hermes_kernel import KernelHandle
    from pytest_hermes_kernel.transports.local import LocalTransport

    gate = threading.Event()

    class SlowLaunch(LocalTransport):
        def launch(self, spec):  # type: ignore[no-untyped-def]
            gate.wait(30)
            return super().launch(spec)

    handle = KernelHandle(SlowLaunch())
    first = threading.Thread(target=handle.start, daemon=True)
    seen: list[KernelState] = []
    second = threading.Thread(target=lambda: seen.append(handle.start().state), daemon=True)
    try:
        first.start()
        deadline = time.monotonic() + 10
        while handle.state is not KernelState.STARTING and time.monotonic() < deadline:
            time.sleep(0.01)
        assert handle.state is KernelState.STARTING
        second.start()
        second.join(0.5)  # it must wait for the launch: one that returns does so within this
        gate.set()
        first.join(30)
        second.join(30)
        assert seen == [KernelState.IDLE], seen
    finally:
        gate.set()
        handle.shutdown()
