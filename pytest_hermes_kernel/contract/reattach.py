"""Contract: a dropped stream is re-attached, on transports that declare ``reattachable``.

A transport whose ``reattachable`` is true (docker, ssh) promises that its kernel runner
outlives the stream to it. When the stream breaks while the runner lives, the next cell, or
the cell in flight, re-attaches (``kernel.reconnected``) with the namespace kept, and a result
that was ready while no stream was attached is delivered; a stream that drops again in the same
cell is re-attached again. When the runner itself is gone, the
cell in flight ends ``died`` with reason ``transport_lost`` (never a hang) and the next cell
runs on a fresh runner, ``state_lost``. These tests skip, with that reason, on a transport that
declares no re-attach (local: its channel is the parent-death lease; filecell: every cell is
one execute).

Drops are injected the way a test of the plugin does it, ``hermes_faults.transport_drop``
(``reset``: the connection is reset under the kernel). A test that acts on a running cell waits
until the cell's ``sleep`` runs where the kernel runs (:func:`~._probes.process_of`), never a
fixed time; the sleep is then ended from outside, so the drop is always mid-cell.

Tool calls survive a drop both ways: a tool result the host sends as the stream drops is sent
again after the re-attach, and so is a tool call the worker makes while no stream is attached
(the runner keeps it until it is answered); the host runs each call once.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from ..kernel.contract import Transport
from ..kernel.handle import KernelHandle
from ..kernel.options import KernelOptions
from ._probes import gone_in_kernel, process_of, run_in_thread, signal_in_kernel, wait_until

__all__ = [
    "reattachable", "test_drop_while_idle_reattaches_with_the_state_kept",
    "test_drop_mid_cell_delivers_the_result_after_the_reattach", "test_runner_gone_mid_cell_is_transport_lost",
    "test_drop_during_a_tool_call_still_answers_it", "test_a_tool_call_made_while_the_stream_is_down_is_answered_once",
    "test_a_second_drop_in_the_same_cell_is_re_attached_too", "test_an_interrupt_while_the_stream_is_down_reaches_the_cell",
    "test_an_interrupt_lost_in_a_silent_stream_still_reaches_the_cell",
    "test_an_interrupt_of_a_cell_sent_again_after_the_reattach_reaches_it",
]

#: How long a cell in flight may take to settle after a drop (a hang, not slowness, beyond it).
SETTLE_TIMEOUT_S = 30.0
#: Slack over the kernel's ``reconnect_timeout`` for reporting a lost runner on a loaded machine.
REPORT_SLACK_S = 5.0
#: The budget of the cell whose tool call meets a drop (a lost tool result would wait all of it).
TOOL_DROP_BUDGET_S = 5.0
#: The budget of the cell that calls a tool while the stream is down: it also covers the test's
#: steps around the drop on a loaded machine (a lost tool call would wait all of it).
TOOL_WHILE_DOWN_BUDGET_S = 20.0


def _hold_reattach(kernel: KernelHandle, monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Hold the host's next re-attaches of ``kernel``: ``(reattaching, let_go)``; the first is set
    when a re-attach begins, which then waits until the second is set."""
    reattaching, let_go = threading.Event(), threading.Event()
    reattach = kernel.transport.reattach

    def held_reattach(launched: Any) -> Any:
        reattaching.set()
        let_go.wait(SETTLE_TIMEOUT_S)
        return reattach(launched)

    monkeypatch.setattr(kernel.transport, "reattach", held_reattach)
    return reattaching, let_go


@pytest.fixture
def reattachable(hermes_transport: Transport) -> Transport:
    """This test's transport; skips when it declares no re-attach (``reattachable`` is false)."""
    if not hermes_transport.reattachable:
        pytest.skip(f"the {hermes_transport.name} transport declares no re-attach (reattachable=False): "
                    "a broken stream there is the kernel's end, not a drop")
    if type(hermes_transport).reattach is Transport.reattach:  # every case failed 'died', naming no cause
        pytest.fail(f"{hermes_transport!r} declares reattachable=True but keeps Transport.reattach's default, which "
                    "refuses every re-attach: implement reattach(launched) (a new stream to the same runner, which "
                    "must outlive a dropped stream), or declare reattachable=False", pytrace=False)
    return hermes_transport


def test_drop_while_idle_reattaches_with_the_state_kept(reattachable: Transport, kernel: KernelHandle,
                                                        hermes_faults: Any) -> None:
    kernel.execute("x = 'kept'")
    pid = kernel.pid

    hermes_faults.transport_drop(kernel, "reset")
    r = kernel.execute("x", timeout=SETTLE_TIMEOUT_S)

    assert r.status == "ok" and r.value == "'kept'", r.summary()
    assert r.kernel.reconnected and not r.kernel.state_lost
    assert r.kernel.pid == pid and r.kernel.generation == 0


def test_drop_mid_cell_delivers_the_result_after_the_reattach(reattachable: Transport, kernel: KernelHandle,
                                                              hermes_faults: Any) -> None:
    """The cell ends after the drop, maybe before the re-attach: its result is delivered either way."""
    kernel.execute("x = 41")
    fut = run_in_thread(kernel, "import subprocess\nsubprocess.run(['sleep', '30'])\nx + 1")
    sleep = wait_until(lambda: process_of(kernel, "sleep 30"), 10.0, what="the cell's sleep to run")

    hermes_faults.transport_drop(kernel, "reset")
    signal_in_kernel(kernel, sleep, signal.SIGTERM)  # the cell goes on to its result
    r = fut.result(timeout=SETTLE_TIMEOUT_S)

    assert r.status == "ok" and r.value == "42", r.summary()
    assert r.kernel.reconnected and not r.kernel.state_lost
    after = kernel.execute("x")
    assert after.value == "41" and after.kernel.generation == 0


def test_a_second_drop_in_the_same_cell_is_re_attached_too(reattachable: Transport, kernel: KernelHandle,
                                                          hermes_faults: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream drops, the host re-attaches, and it drops again before the cell ends."""
    reattached = threading.Semaphore(0)
    reattach = kernel.transport.reattach

    def counted(launched: Any) -> Any:
        stream = reattach(launched)
        reattached.release()
        return stream

    monkeypatch.setattr(kernel.transport, "reattach", counted)
    kernel.execute("x = 40")
    fut = run_in_thread(kernel, "import subprocess\nsubprocess.run(['sleep', '30'])\n"
                                "subprocess.run(['sleep', '31'])\nx + 2")
    for sleep_cmd in ("sleep 30", "sleep 31"):
        sleep = wait_until(lambda c=sleep_cmd: process_of(kernel, c), 10.0, what=f"the cell's {sleep_cmd} to run")
        hermes_faults.transport_drop(kernel, "reset")
        assert reattached.acquire(timeout=SETTLE_TIMEOUT_S), "the host did not re-attach after the drop"
        signal_in_kernel(kernel, sleep, signal.SIGTERM)  # the cell goes on
    r = fut.result(timeout=SETTLE_TIMEOUT_S)

    assert r.status == "ok" and r.value == "42", r.summary()
    assert r.kernel.reconnected and not r.kernel.state_lost and r.kernel.generation == 0


def test_an_interrupt_while_the_stream_is_down_reaches_the_cell(reattachable: Transport, kernel: KernelHandle,
                                                                hermes_faults: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``interrupt()`` after a drop and before the re-attach: no error, and the cell is interrupted
    once the stream is back, with the namespace kept."""
    reattaching, let_go = _hold_reattach(kernel, monkeypatch)
    kernel.execute("x = 'kept'")
    fut = run_in_thread(kernel, "import subprocess\nsubprocess.run(['sleep', '30'])")
    wait_until(lambda: process_of(kernel, "sleep 30"), 10.0, what="the cell's sleep to run")
    try:
        hermes_faults.transport_drop(kernel, "reset")
    except BaseException:
        let_go.set()
        raise
    r = _interrupt_during_the_reattach(kernel, reattaching, let_go, fut)

    _interrupted_with_the_namespace_kept(r, kernel)


def test_an_interrupt_lost_in_a_silent_stream_still_reaches_the_cell(
        reattachable: Transport, kernel_factory: Callable[..., KernelHandle], hermes_faults: Any) -> None:
    """``interrupt()`` while the stream is silent (a ``blackhole``: no FIN, no RST) goes out
    without an error and vanishes; once the keepalives give up and the host re-attaches, the cell
    still gets it: it ends ``interrupted`` with the namespace kept, not after its own end (the
    interrupt was lost: the cell ran on, and a watchdog then killed what it could have interrupted)."""
    kernel = kernel_factory(keepalive_interval=0.5, keepalive_missed=2)
    kernel.execute("x = 'kept'")
    fut = run_in_thread(kernel, "import subprocess\nsubprocess.run(['sleep', '60'])")
    wait_until(lambda: process_of(kernel, "sleep 60"), 10.0, what="the cell's sleep to run")
    hermes_faults.transport_drop(kernel, "blackhole", 3.0)  # the keepalives give up after 1.5 s
    kernel.interrupt()

    r = fut.result(timeout=SETTLE_TIMEOUT_S)

    _interrupted_with_the_namespace_kept(r, kernel)


def test_an_interrupt_of_a_cell_sent_again_after_the_reattach_reaches_it(
        reattachable: Transport, kernel: KernelHandle, hermes_faults: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream dropped while idle, so the next cell's request never reached the runner; the
    host re-attaches and sends the cell again. An ``interrupt()`` made while that re-attach ran
    must reach the cell sent again (it was lost: the cell ran to its own end)."""
    kernel.execute("x = 'kept'")
    reattaching, let_go = _hold_reattach(kernel, monkeypatch)
    hermes_faults.transport_drop(kernel, "reset")
    fut = run_in_thread(kernel, "import subprocess\nsubprocess.run(['sleep', '60'])")
    r = _interrupt_during_the_reattach(kernel, reattaching, let_go, fut)

    _interrupted_with_the_namespace_kept(r, kernel)


def test_runner_gone_mid_cell_is_transport_lost(reattachable: Transport, kernel: KernelHandle) -> None:
    kernel.execute("x = 1")
    fut = run_in_thread(kernel, "import subprocess\nsubprocess.run(['sleep', '600'])")
    wait_until(lambda: process_of(kernel, "sleep 600"), 10.0, what="the cell's sleep to run")
    bound = KernelOptions().reconnect_timeout + REPORT_SLACK_S

    killed = time.monotonic()
    assert reattachable.kill(kernel.launched), "the transport must see its runner gone after kill()"
    r = fut.result(timeout=SETTLE_TIMEOUT_S)

    assert r.status == "died" and r.kernel.state_lost and r.kernel.reason == "transport_lost", r.summary()
    assert time.monotonic() - killed <= bound, "a lost runner must be reported within the re-attach budget"
    after = kernel.execute("x")
    assert after.ename == "NameError" and after.kernel.state_lost and after.kernel.generation == 1, after.summary()


def test_drop_during_a_tool_call_still_answers_it(reattachable: Transport, kernel_factory: Callable[..., KernelHandle],
                                                  hermes_faults: Any) -> None:
    """The stream drops while the host runs a tool for the cell (the tool itself drops it)."""
    made: list[KernelHandle] = []

    def drop_then_answer() -> str:
        hermes_faults.transport_drop(made[0], "reset")
        return "answered"

    made.append(kernel_factory(tools={"drop_then_answer": drop_then_answer}))
    r = made[0].execute("import hermes_tools\nhermes_tools.drop_then_answer()", timeout=TOOL_DROP_BUDGET_S)

    assert r.status == "ok" and r.value == "'answered'", r.summary()
    assert r.kernel.reconnected and not r.kernel.state_lost
    assert len(r.tool_calls) == 1, f"the call sent again after the re-attach ran again: {r.tool_calls}"


def test_a_tool_call_made_while_the_stream_is_down_is_answered_once(
        reattachable: Transport, kernel_factory: Callable[..., KernelHandle], hermes_faults: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker calls a tool after the stream dropped and before the host re-attached.

    The host's re-attach is held (its transport's ``reattach`` waits) until the cell, let go
    only then, has gone on to its call: the call meets no stream, and only the runner's copy of
    it can reach the host after the re-attach.
    """
    calls: list[str] = []
    kernel = kernel_factory(tools={"answer": lambda: calls.append("answer") or "answered"})
    reattaching, let_go = _hold_reattach(kernel, monkeypatch)
    fut = run_in_thread(kernel, "import subprocess, hermes_tools\nsubprocess.run(['sleep', '30'])\n"
                                "hermes_tools.answer()", timeout=TOOL_WHILE_DOWN_BUDGET_S)
    sleep = wait_until(lambda: process_of(kernel, "sleep 30"), 10.0, what="the cell's sleep to run")
    try:
        hermes_faults.transport_drop(kernel, "reset")
        assert reattaching.wait(SETTLE_TIMEOUT_S), "the host never began to re-attach after the drop"
        signal_in_kernel(kernel, sleep, signal.SIGTERM)  # the cell goes on to call the tool
        wait_until(lambda: gone_in_kernel(kernel, sleep), 10.0, what="the cell's sleep to end")
    finally:
        let_go.set()
    r = fut.result(timeout=TOOL_WHILE_DOWN_BUDGET_S + SETTLE_TIMEOUT_S)

    assert r.status == "ok" and r.value == "'answered'", r.summary()
    assert r.kernel.reconnected and not r.kernel.state_lost
    assert calls == ["answer"] and len(r.tool_calls) == 1, (calls, r.tool_calls)


def _interrupted_with_the_namespace_kept(r: Any, kernel: KernelHandle) -> None:
    """The cell ended ``interrupted`` after a re-attach, and what an earlier cell set (``x``) is still there."""
    assert r.status == "interrupted" and r.kernel.reconnected and not r.kernel.state_lost, r.summary()
    assert kernel.execute("x").value == "'kept'"


def _interrupt_during_the_reattach(kernel: KernelHandle, reattaching: Any, let_go: Any, fut: Any) -> Any:
    """``interrupt()`` once the host began to re-attach (held by ``_hold_reattach``), then let the
    re-attach go on; the cell's result."""
    try:
        assert reattaching.wait(SETTLE_TIMEOUT_S), "the host never began to re-attach after the drop"
        kernel.interrupt()
    finally:
        let_go.set()
    return fut.result(timeout=SETTLE_TIMEOUT_S)
