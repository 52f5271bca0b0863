"""Bug: ``KernelRegistry.shutdown_owner()`` from a signal handler hung when the handler ran while
the same thread held the registry's lock.

An agent server wires SIGTERM to a handler that ends a conversation's kernels
(``registry.shutdown_owner(owner)``). Python runs the handler in the main thread between two
steps of whatever it does; when that was a registry call holding the registry's lock (an
acquire making a key's entry, its transport factory, a ``snapshot()``), the handler waited for
that lock: forever. Now the lock is reentrant, the registry's walks over its entries walk a
copy (a nested shutdown may pop entries under them), and a start the handler finds running in
its own thread is ended at once instead of waited for.

The signal is raised at an exact point: from the registry's transport factory, which the
registry calls with its lock held while it makes a key's entry; and as the start of the owner's
own kernel, in this thread, waits for its runner's hello (the handler waited for that start to
end, which only the frame below it could do). Every leg.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pytest_hermes_kernel import KernelKey, KernelShutdownError
from pytest_hermes_kernel.contract._probes import kernel_pids, wait_until
from tests.support import hang_alarm, wrap_launch_streams

NESTED_BOUND_S = 10.0
"""Seconds the handler's ``shutdown_owner()`` may take: one polite shutdown under load."""


def _alarm(seconds: int) -> Any:
    return hang_alarm(seconds, 'the handler waits for what its own thread holds (the registry lock, a start)')


@contextmanager
def _on_sigusr1(call: Any) -> Iterator[list[tuple[Any, float]]]:
    done: list[tuple[Any, float]] = []

    def handler(*_: object) -> None:
        started = time.monotonic()
        done.append((call(), time.monotonic() - started))

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        yield done
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_shutdown_owner_from_a_handler_under_the_registry_lock_ends_the_owners_kernels(make_registry,
                                                                                        hermes_transport):
    ring_for = {"u2"}

    def factory(key: KernelKey) -> Any:  # called with the registry's lock held
        if key.owner in ring_for:
            ring_for.discard(key.owner)
            signal.raise_signal(signal.SIGUSR1)
        return hermes_transport

    registry = make_registry(transport_factory=factory, transport=hermes_transport.name)
    u1 = registry.get_or_start(KernelKey(owner="u1"))
    u1.execute("x = 1")
    pids, launched = kernel_pids(u1), u1.launched

    with _alarm(30), _on_sigusr1(lambda: registry.shutdown_owner("u1")) as nested:
        u2 = registry.get_or_start(KernelKey(owner="u2"))

    assert nested, "the handler did not run"
    count, seconds = nested[0]
    assert count == 1 and seconds < NESTED_BOUND_S, (count, seconds)
    assert [s.key.owner for s in registry.snapshot()] == ["u2"]
    assert u2.execute("1 + 1").value == "2"
    try:
        u1.execute("x")
    except KernelShutdownError:
        pass
    else:
        raise AssertionError("u1's kernel still runs cells after shutdown_owner('u1')")
    transport = u1.transport

    def left() -> set[int]:
        lines = transport.kernel_processes(u1.kernel_id, transport.locator(launched))
        return {int(line.split(":", 1)[0]) for line in lines} & pids

    wait_until(lambda: not left(), 5.0, what=f"u1's kernel processes {sorted(pids)} to end")


class _SignalInTheFirstRecv:
    """A runner's stream that raises SIGUSR1 in its first ``recv`` (the start's wait for the hello)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.raised = False

    def recv(self, timeout: float | None) -> bytes:
        if not self.raised:
            self.raised = True
            signal.raise_signal(signal.SIGUSR1)
        return self.inner.recv(timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_shutdown_owner_from_a_handler_inside_that_owners_start_ends_it(make_registry, hermes_transport,
                                                                        monkeypatch):
    launches = wrap_launch_streams(hermes_transport, monkeypatch, _SignalInTheFirstRecv)
    registry = make_registry(transport_factory=lambda _key: hermes_transport, transport=hermes_transport.name)
    with _alarm(30), _on_sigusr1(lambda: registry.shutdown_owner("u1")) as nested:
        with pytest.raises(KernelShutdownError):
            registry.get_or_start(KernelKey(owner="u1"))

    assert nested, "the handler did not run"
    count, seconds = nested[0]
    assert count == 1 and seconds < NESTED_BOUND_S, (count, seconds)
    assert len(registry) == 0
    [(kernel_id, launched)] = launches

    def left() -> list[str]:
        return hermes_transport.kernel_processes(kernel_id, hermes_transport.locator(launched))

    wait_until(lambda: not left(), 5.0, what="the started kernel's processes to end")
