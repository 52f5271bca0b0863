"""Bug: Ctrl-C (a ``KeyboardInterrupt``) while ``start_kernel()`` or a registry's start waited for
the new runner's hello left that runner running, owned by no one.

The start had launched the runner and kept it for the handle; the ``KeyboardInterrupt`` went out
of the wait for the hello, the handle was never returned (``start_kernel()``) or was dropped with
its registry entry, and the runner, its worker and its kernel dir stayed: a docker or ssh kernel
until its orphan timer (60 s), a local one until its channel was garbage. A user who presses
Ctrl-C while an agent starts its kernel met it. Now a start cut short by a ``BaseException``
that is no error (Ctrl-C, a handler's ``SystemExit``) ends what it launched before it
propagates.

The signal is raised at an exact point: in the start's wait for the hello, as the runner's first
bytes arrive (SIGINT, handled by Python's own handler): every leg. A second Ctrl-C during the
kill that follows cut that kill short, and the runner ran on (see
``test_ctrl_c_during_shutdown_ends_the_runner.py``).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pytest_hermes_kernel import KernelKey, start_kernel
from tests.support import ctrl_c_first, wrap_launch_streams


class _CtrlCAsTheHelloArrives:
    """A runner's stream that raises SIGINT in the start's wait for the hello, once the runner's
    first bytes arrived (so it runs, and shows where it runs, for sure)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.raised = False

    def recv(self, timeout: float | None) -> bytes:
        data = self.inner.recv(timeout)
        if data and not self.raised:
            self.raised = True
            signal.raise_signal(signal.SIGINT)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@contextmanager
def _ctrl_c_in_the_hello_wait(transport: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any]]]:
    """Every launch of ``transport`` gets the Ctrl-C stream; yields [(kernel_id, Launched)] launched."""
    launches = wrap_launch_streams(transport, monkeypatch, _CtrlCAsTheHelloArrives)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield launches
    finally:
        signal.signal(signal.SIGINT, previous)


def _left(transport: Any, launches: list[tuple[str, Any]]) -> list[str]:
    """The launched kernels' live processes where they run."""
    return [line for kernel_id, launched in launches
            for line in transport.kernel_processes(kernel_id, transport.locator(launched))]


@pytest.mark.parametrize("presses", [1, 2], ids=["ctrl-c", "ctrl-c-again-during-the-kill"])
def test_ctrl_c_during_start_kernel_ends_the_runner_before_it_propagates(hermes_transport, monkeypatch, presses):
    if presses == 2:
        monkeypatch.setattr(hermes_transport, "kill", ctrl_c_first(hermes_transport.kill))
    with _ctrl_c_in_the_hello_wait(hermes_transport, monkeypatch) as launches:
        with pytest.raises(KeyboardInterrupt):
            start_kernel(hermes_transport)
        left = _left(hermes_transport, launches)  # right as it propagates: nothing may be left

    assert len(launches) == 1
    assert not left, f"still running after start_kernel() propagated Ctrl-C: {left}"


def test_ctrl_c_during_a_registry_start_ends_the_runner_before_it_propagates(hermes_transport, monkeypatch,
                                                                             make_registry):
    registry = make_registry(transport_factory=lambda _key: hermes_transport, transport=hermes_transport.name)
    with _ctrl_c_in_the_hello_wait(hermes_transport, monkeypatch) as launches:
        with pytest.raises(KeyboardInterrupt):
            registry.get_or_start(KernelKey(owner="u1"))
        left = _left(hermes_transport, launches)

    assert len(launches) == 1 and len(registry) == 0
    assert not left, f"still running after the registry's start propagated Ctrl-C: {left}"
