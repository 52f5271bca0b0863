"""Bug: ``shutdown()`` or ``restart()`` from a signal handler that ran while the same thread waited
for a cell's result (``execute()`` reading the channel) hung, and the restart failed with a
misleading error.

A script wires SIGTERM to a handler that ends or resets its kernel. Python runs the handler in
the main thread, here inside ``execute()``, whose frame reads the channel for everyone: the
handler's request went out, but its reply was never read. ``shutdown()`` waited
``2 * shutdown_grace + 6`` s (10 s) and said the runner was ``unreachable``; ``restart()`` waited
10 s and raised ``KernelStartError`` ("restart() got no answer from its runner") while its kill
ended the cell below. Now ``shutdown()`` there kills the runner from outside at once (the cell
ends ``died``, ``reason="reset"``, as for any shutdown while a cell runs), and ``restart()``
raises ``ChannelHeldHereError`` at once, the cell and its state untouched. A local stream closed
under the cell's read now reads as its end, not a bare ``ValueError``.

The signal is raised at an exact point: as the cell's thread begins to read the channel for the
cell's result (the stream's first ``recv`` after the request went out), so the handler runs while
that thread is the channel's reader: every leg. (Raised from elsewhere, e.g. a tool's ``os.kill``,
the handler may also run between two reads, where the nested call could read its own reply.)
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pytest_hermes_kernel import ChannelHeldHereError
from pytest_hermes_kernel.contract._probes import kernel_pids, wait_until
from pytest_hermes_kernel.kernel.channel import SocketStream
from tests.support import hang_alarm

NESTED_BOUND_S = 5.0
"""Seconds the nested call may take: a kill from outside (a docker exec under load included);
the wait it must not make is 10 s."""


class _SignalAsTheCellsReadBegins:
    """A stream that raises SIGUSR1 in the first ``recv`` after an ``execute`` request went out."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.armed = self.raised = False

    def send(self, data: bytes) -> None:
        self.inner.send(data)
        if b'"type":"execute"' in data:
            self.armed = True

    def recv(self, timeout: float | None) -> bytes:
        if self.armed and not self.raised:
            self.raised = True
            signal.raise_signal(signal.SIGUSR1)
        return self.inner.recv(timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextmanager
def _signal_in_the_cells_read(kernel: Any) -> Iterator[None]:
    channel = kernel._runtime.require_link().channel
    stream = channel.stream
    channel.stream = _SignalAsTheCellsReadBegins(stream)
    try:
        yield
    finally:
        channel.stream = stream


def _alarm(seconds: int) -> Any:
    return hang_alarm(seconds, "the handler's call waits for what the cell's read holds")


@contextmanager
def _on_sigusr1(call: Any) -> Iterator[list[tuple[Any, float]]]:
    """SIGUSR1 runs ``call()``; yields [(what it returned or raised, seconds)]."""
    done: list[tuple[Any, float]] = []

    def handler(*_: object) -> None:
        started = time.monotonic()
        try:
            outcome: Any = call()
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            outcome = exc
        done.append((outcome, time.monotonic() - started))

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        yield done
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_shutdown_from_a_handler_inside_a_cells_wait_kills_the_kernel_at_once(hermes_kernel_factory):
    kernel = hermes_kernel_factory()
    kernel.execute("x = 1")
    pids = kernel_pids(kernel)
    launched = kernel.launched
    with _alarm(30), _on_sigusr1(kernel.shutdown) as nested, _signal_in_the_cells_read(kernel):
        result = kernel.execute("import time\ntime.sleep(60)")

    assert nested, "the handler did not run"
    info, seconds = nested[0]
    assert seconds < NESTED_BOUND_S, f"the handler's shutdown() took {seconds:.1f} s: {info}"
    assert (info.step, info.confirmed) == ("sigkill", True), info
    assert (result.status, result.kernel.reason) == ("died", "reset"), result.summary()
    assert kernel.stopping and not kernel.alive
    transport = kernel.transport

    def left() -> set[int]:
        lines = transport.kernel_processes(kernel.kernel_id, transport.locator(launched))
        return {int(line.split(":", 1)[0]) for line in lines} & pids

    wait_until(lambda: not left(), 5.0, what=f"the kernel's processes {sorted(pids)} to end")


def test_restart_from_a_handler_inside_a_cells_wait_is_refused_and_the_cell_runs_on(hermes_kernel_factory):
    kernel = hermes_kernel_factory()
    kernel.execute("x = 1")
    with _alarm(30), _on_sigusr1(kernel.restart) as nested, _signal_in_the_cells_read(kernel):
        result = kernel.execute("import time\ntime.sleep(0.5)\n'done'")

    assert nested, "the handler did not run"
    error, seconds = nested[0]
    assert isinstance(error, ChannelHeldHereError), error
    assert error.held_by == "execute()" and error.kernel_id == kernel.kernel_id
    assert seconds < NESTED_BOUND_S
    assert (result.status, result.value) == ("ok", "'done'"), result.summary()
    assert not result.kernel.state_lost
    assert kernel.execute("x").value == "1"  # the stream is whole and the state kept


def test_a_local_stream_closed_under_its_read_reads_as_its_end():
    ours, theirs = socket.socketpair()
    stream = SocketStream(ours)
    try:
        stream.close()
        assert stream.recv(0.5) == b""
        assert stream.recv(None) == b""
    finally:
        theirs.close()


def test_a_local_stream_closed_from_another_thread_ends_a_blocked_read():
    ours, theirs = socket.socketpair()
    stream = SocketStream(ours)
    closer = threading.Timer(0.2, stream.close)
    closer.start()
    try:
        with _alarm(10):
            assert stream.recv(5.0) == b""
    finally:
        closer.join()
        theirs.close()
