"""Bug: ``shutdown()`` from a signal handler hung when the handler ran while the same thread was
already inside ``shutdown()`` or ``restart()`` of that kernel.

A script wires SIGTERM (or SIGINT) to a handler that shuts its kernels down. Python runs the
handler in the main thread between two steps of whatever it does; when that was the kernel's
own ``shutdown()`` (the script's cleanup) or a ``restart()``, the handler's ``shutdown()`` waited
for the handle's control lock, held by the very call it had interrupted: forever. Now the lock
is reentrant and a ``shutdown()`` nested in the thread's own use of the kernel's channel does not
ask the runner over that channel (the frame below holds it): it kills the runner from outside at
once; the call below then ends with the kernel shut down.

The signal is raised at an exact point, as the call below sends its request to the runner (the
stream's ``send``): every transport's stream is below the lock, so every leg is the bug.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pytest_hermes_kernel import KernelShutdownError
from pytest_hermes_kernel.contract._probes import kernel_pids, wait_until
from tests.support import SignalAsFrameGoesOut, hang_alarm

NESTED_BOUND_S = 5.0
"""Seconds the nested shutdown may take: a kill from outside (a docker exec under load included);
the polite path it must not take waits ``2 * shutdown_grace + 6`` s for an answer nobody reads."""


def _alarm(seconds: int) -> Any:
    return hang_alarm(seconds, "the handler's shutdown() waits for a lock its own thread holds")


@contextmanager
def _shutdown_on_sigusr1(kernel: Any, kind: str) -> Iterator[list[tuple[Any, float]]]:
    """SIGUSR1, raised as the ``kind`` request goes out, runs ``kernel.shutdown()``; yields its
    (ExitInfo, seconds) once it ran."""
    channel = kernel._runtime.require_link().channel
    stream = channel.stream
    channel.stream = SignalAsFrameGoesOut(stream, kind, signal.SIGUSR1)
    nested: list[tuple[Any, float]] = []

    def handler(*_: object) -> None:
        started = time.monotonic()
        nested.append((kernel.shutdown(), time.monotonic() - started))

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        yield nested
    finally:
        signal.signal(signal.SIGUSR1, previous)
        channel.stream = stream


def test_shutdown_from_a_handler_inside_shutdown_ends_the_kernel(hermes_kernel_factory):
    kernel = hermes_kernel_factory()
    kernel.execute("x = 1")
    pids = kernel_pids(kernel)
    launched = kernel.launched
    with _alarm(30), _shutdown_on_sigusr1(kernel, "shutdown") as nested:
        outer = kernel.shutdown()

    assert nested, "the handler did not run"
    info, seconds = nested[0]
    assert seconds < NESTED_BOUND_S, f"the nested shutdown took {seconds:.1f} s: {info}"
    assert info.confirmed, info
    assert outer is info, (outer, info)  # one end, told once: the nested one ended it
    assert not kernel.alive and kernel.stopping
    _assert_gone(kernel, launched, pids)


def test_shutdown_from_a_handler_inside_restart_ends_the_kernel(hermes_kernel_factory):
    kernel = hermes_kernel_factory()
    kernel.execute("x = 1")
    pids = kernel_pids(kernel)
    launched = kernel.launched
    with _alarm(30), _shutdown_on_sigusr1(kernel, "kill_worker") as nested:
        with pytest.raises(KernelShutdownError):
            kernel.restart()

    assert nested, "the handler did not run"
    info, seconds = nested[0]
    assert seconds < NESTED_BOUND_S, f"the nested shutdown took {seconds:.1f} s: {info}"
    assert (info.step, info.confirmed) == ("sigkill", True), info
    assert not kernel.alive and kernel.stopping
    _assert_gone(kernel, launched, pids)
    with pytest.raises(KernelShutdownError):
        kernel.execute("x")


def _assert_gone(kernel: Any, launched: Any, pids: set[int]) -> None:
    transport = kernel.transport

    def left() -> set[int]:
        lines = transport.kernel_processes(kernel.kernel_id, transport.locator(launched))
        return {int(line.split(":", 1)[0]) for line in lines} & pids

    wait_until(lambda: not left(), 5.0, what=f"the kernel's processes {sorted(pids)} to end")
