"""A transport whose ``reattach`` blocks (a connect to a host that went silent, with no timeout of
its own) cannot hold a cell past ``reconnect_timeout``, nor a ``shutdown()`` made meanwhile.

The deadline was only looked at between attempts (found by a breaker helper on 2026-12-05): with
``reconnect_timeout=2`` a ``reattach`` that took 20 s held ``execute()`` 20.2 s, and one that
never returned held it for ever, a ``shutdown()`` from another thread included ("never a hang",
docs/reference.md). Each attempt now runs on a thread of its own that the cell waits for until
the deadline, or until a shutdown begins; a stream the attempt gives after that is closed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.contract._probes import run_in_thread, wait_until
from pytest_hermes_kernel.faults.faulty_transport import FaultyTransport
from pytest_hermes_kernel.transports.local import LocalTransport

RECONNECT_S = 2.0
SLACK_S = 5.0


class BlockingReattach(LocalTransport):
    """It declares re-attach, and a ``reattach`` blocks until :attr:`release` is set (then fails)."""

    reattachable = True

    def __init__(self) -> None:
        super().__init__(server=False)
        self.release = threading.Event()
        self.calls = 0

    def reattach(self, launched: Any) -> Any:
        self.calls += 1
        self.release.wait(60.0)
        raise OSError("the host did not answer")


@pytest.fixture
def blocked(start: Callable[..., KernelHandle]) -> Iterator[Callable[..., KernelHandle]]:
    """``blocked(**options)``: a kernel whose stream was just dropped, on :class:`BlockingReattach`."""
    liar = BlockingReattach()
    transport = FaultyTransport(liar)

    def make(**options: Any) -> KernelHandle:
        kernel = start(transport, **options)
        kernel.execute("x = 1")
        transport.drop("reset", launched=kernel.launched)
        return kernel

    yield make
    liar.release.set()
    transport.close()


def test_a_blocking_reattach_ends_the_cell_at_reconnect_timeout(blocked: Callable[..., KernelHandle]) -> None:
    kernel = blocked(reconnect_timeout=RECONNECT_S)
    began = time.monotonic()

    r = run_in_thread(kernel, "x").result(timeout=RECONNECT_S + SLACK_S + 30.0)

    took = time.monotonic() - began
    assert r.status == "died" and r.kernel.reason == "transport_lost", r.summary()
    assert took <= RECONNECT_S + SLACK_S, f"the cell took {took:.1f} s with reconnect_timeout={RECONNECT_S}"


def test_a_shutdown_during_a_blocking_reattach_ends_the_cell(blocked: Callable[..., KernelHandle]) -> None:
    kernel = blocked(reconnect_timeout=60.0)
    fut = run_in_thread(kernel, "x")
    liar = kernel.transport.inner
    wait_until(lambda: liar.calls, 10.0, what="the cell's re-attach to begin")

    began = time.monotonic()
    kernel.shutdown()
    r = fut.result(timeout=SLACK_S + 60.0)

    assert time.monotonic() - began <= SLACK_S, "the cell waited for the re-attach after the shutdown"
    assert r.status == "died" and r.kernel.state_lost, r.summary()
