"""Found by a breaker helper (frozen parts, 2026-12-05): ``shutdown()`` of a local kernel whose
runner was stopped (SIGSTOP, a debugger attached, a ``kill -STOP`` by a test) waited the whole
10 s for a reply the stopped runner could not send, then killed it: every such test's teardown took
10 s. The local transport now says a stopped runner is frozen (``Transport.frozen``, as docker
says of a paused container), so the shutdown kills it from outside within ~0.5 s, confirmed gone.

How soon is a figure; what is asserted is that the shutdown did not wait out its reply wait. The
shutdown's and restart's waits are made 60 s here (:data:`~.link.SHUTDOWN_SLACK_S`,
:data:`~.link.KILL_WORKER_TIMEOUT_S`), so the bug's path takes 60 s and the bound, a third of it,
leaves a loaded machine its slack (a 3-s bound against the 10 s failed only by load).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

import psutil
import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.kernel import link
from pytest_hermes_kernel.transports import make_transport

#: What the shutdown's and the restart's wait for a reply is made here (the bug waited all of it).
REPLY_WAIT_S = 60.0
#: The bound: a third of :data:`REPLY_WAIT_S`.
BOUND_S = REPLY_WAIT_S / 3


@pytest.fixture
def long_reply_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shutdown's reply wait (``grace * 2 + SHUTDOWN_SLACK_S``, grace 2 s) and the restart's
    kill wait made :data:`REPLY_WAIT_S`."""
    monkeypatch.setattr(link, "SHUTDOWN_SLACK_S", REPLY_WAIT_S - 4.0)
    monkeypatch.setattr(link, "KILL_WORKER_TIMEOUT_S", REPLY_WAIT_S)


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.usefixtures("long_reply_waits")
def test_shutdown_of_a_stopped_runner_kills_it_without_waiting_for_its_reply(server: bool) -> None:
    transport = make_transport("local", server=server)
    try:
        kernel = start_kernel(transport)
        assert kernel.execute("x = 1").status == "ok"
        runner = psutil.Process(kernel.info().pid).ppid()  # the worker's parent
        os.kill(runner, signal.SIGSTOP)
        began = time.monotonic()
        info = kernel.shutdown()
        took = time.monotonic() - began
        assert took < BOUND_S, f"shutdown took {took:.1f} s"  # it took the whole reply wait (10 s by default)
        assert info.confirmed and info.signal == 9, info
        assert not psutil.pid_exists(runner) or psutil.Process(runner).status() == psutil.STATUS_ZOMBIE
    finally:
        transport.close()


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_cell_whose_runner_is_stopped_is_not_called_an_ineffective_interrupt(server: bool) -> None:
    """The same runner stopped mid-cell: the cell's timeout note said "the interrupt was
    ineffective", blaming the cell's code for an interrupt that never reached the worker."""
    transport = make_transport("local", server=server)
    try:
        kernel = start_kernel(transport)
        runner = psutil.Process(kernel.info().pid).ppid()
        code = f"import os, signal, time\nos.kill({runner}, signal.SIGSTOP)\ntime.sleep(30)"
        began = time.monotonic()
        result = kernel.execute(code, timeout=1)
        assert time.monotonic() - began < 10.0
        note = result.kernel.note
        assert (result.status, result.watchdog, result.kernel.state_lost) == ("timeout", "reset", True), result
        assert "ineffective" not in note and "the runner seen stopped" in note, note
        assert "may never have reached it" in note, note
        assert kernel.execute("1 + 1").value == "2"
        kernel.shutdown()
    finally:
        transport.close()


def test_a_start_while_the_local_kernel_server_is_stopped_does_not_wait_for_it() -> None:
    """A stopped kernel server (a cell's ``os.kill(server, SIGSTOP)``, a debugger): the next
    start waited 10 s for its answer (12.1 s in all) before starting the kernel another way."""
    transport = make_transport("local")
    try:
        first = start_kernel(transport)
        server = psutil.Process(psutil.Process(first.info().pid).ppid()).ppid()  # worker -> runner -> server
        assert "server" in psutil.Process(server).cmdline()
        os.kill(server, signal.SIGSTOP)
        try:
            began = time.monotonic()
            second = start_kernel(transport)
            took = time.monotonic() - began
            assert second.execute("1 + 1").value == "2"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, signal.SIGCONT)
        assert took < 6.0, f"the start took {took:.1f} s"
        assert first.execute("1").value == "1"  # a forked kernel does not need its server
        first.shutdown()
        second.shutdown()
    finally:
        transport.close()


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.usefixtures("long_reply_waits")
def test_a_restart_of_a_stopped_runner_says_so_without_waiting_for_its_answer(server: bool) -> None:
    """``restart()`` of the stopped runner waited the whole 10 s (``KILL_WORKER_TIMEOUT_S``) for
    an answer to its kill before it raised; it raises the same ``KernelStartError`` at once now,
    saying the runner is frozen, and the kernel goes on once the runner is continued."""
    transport = make_transport("local", server=server)
    try:
        kernel = start_kernel(transport)
        assert kernel.execute("x = 1").status == "ok"
        runner = psutil.Process(kernel.info().pid).ppid()
        os.kill(runner, signal.SIGSTOP)
        try:
            began = time.monotonic()
            with pytest.raises(KernelStartError, match=r"is frozen: stopped, or its host paused\).*may still run"):
                kernel.restart()
            took = time.monotonic() - began
        finally:
            os.kill(runner, signal.SIGCONT)
        assert took < BOUND_S, f"restart() took {took:.1f} s to fail"  # the whole kill wait (10 s by default)
        result = kernel.execute("'x' in globals()", timeout=20)
        assert (result.status, result.value, result.kernel.state_lost) == ("ok", "False", True), result
        kernel.shutdown()
    finally:
        transport.close()
