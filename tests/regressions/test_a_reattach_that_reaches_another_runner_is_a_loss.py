"""A re-attach whose stream reaches another runner than the kernel's (a backend that starts a fresh
kernel when asked to re-attach, or one whose address now leads elsewhere) is a loss the result
reports, never a re-attach that kept the state.

The host took any runner that said hello to its token as the kernel's own (found by a breaker
helper on 2026-12-05): after such a "re-attach" the next cell ran on a fresh worker and failed
``NameError`` while its result said ``reconnected=True`` and ``state_lost=False``; a cell in
flight was sent again and ran again from its first line. The runner's hello names its pid and
kernel id, and the host now holds them against the runner it launched: another runner is
refused, the cell ends ``died`` with ``reason="transport_lost"`` and a note saying so, and the
next cell runs on a fresh generation, ``state_lost``. The contract suite's re-attach cases then
fail such a backend with that note (they failed it before with a bare ``NameError``, or by
waiting out the cell sent again).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.contract._probes import process_of, run_in_thread, wait_until
from pytest_hermes_kernel.faults.faulty_transport import FaultyTransport
from pytest_hermes_kernel.procs import processes_with_env
from pytest_hermes_kernel.transports.local import LocalTransport

SETTLE_S = 30.0


class FreshOnReattach(LocalTransport):
    """Lie: it declares re-attach, and a re-attach starts a fresh runner of the kernel (same id,
    same token) and hands over its stream."""

    reattachable = True

    def __init__(self) -> None:
        super().__init__(server=False)
        self.fresh: list[Any] = []

    def launch(self, spec: Any) -> Any:
        launched = super().launch(spec)
        launched.extra["liar_spec"] = spec
        return launched

    def reattach(self, launched: Any) -> Any:
        self.fresh.append(super().launch(launched.extra["liar_spec"]))
        return self.fresh[-1].stream


@pytest.fixture
def liar_kernel(start: Callable[..., KernelHandle]) -> Iterator[KernelHandle]:
    """A kernel on :class:`FreshOnReattach` whose streams can be dropped; whatever of it is left
    after the test (the fresh runners) is killed."""
    liar = FreshOnReattach()
    transport = FaultyTransport(liar)
    kernel = start(transport)
    yield kernel
    kernel.shutdown()
    for launched in liar.fresh:
        liar.kill(launched)
        liar.cleanup(launched)
    for line in processes_with_env("HERMES_KERNEL_ID", kernel.kernel_id):
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
    transport.close()


def _a_loss_saying_so(r: Any) -> None:
    assert r.status == "died" and r.kernel.state_lost and r.kernel.reason == "transport_lost", r.summary()
    assert not r.kernel.reconnected, r.summary()
    assert "another runner" in r.kernel.note, r.kernel.note


def test_an_idle_drop_re_attached_to_a_fresh_runner_is_reported_lost(liar_kernel: KernelHandle) -> None:
    liar_kernel.execute("x = 'kept'")
    liar_kernel.transport.drop("reset", launched=liar_kernel.launched)

    r = liar_kernel.execute("x", timeout=SETTLE_S)

    _a_loss_saying_so(r)
    after = liar_kernel.execute("x")
    assert after.ename == "NameError" and after.kernel.state_lost and after.kernel.generation == 1, after.summary()


def test_a_mid_cell_drop_re_attached_to_a_fresh_runner_does_not_run_the_cell_again(liar_kernel: KernelHandle) -> None:
    liar_kernel.execute("x = 41")
    fut = run_in_thread(liar_kernel, "import subprocess\nsubprocess.run(['sleep', '30'])\nx + 1")
    wait_until(lambda: process_of(liar_kernel, "sleep 30"), 10.0, what="the cell's sleep to run")

    liar_kernel.transport.drop("reset", launched=liar_kernel.launched)
    r = fut.result(timeout=SETTLE_S)

    _a_loss_saying_so(r)
