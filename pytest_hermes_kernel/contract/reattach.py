"""Contract: a dropped stream is re-attached, on transports that declare ``reattachable``.

A transport whose ``reattachable`` is true (docker, ssh) promises that its kernel runner
outlives the stream to it. When the stream breaks while the runner lives, the next cell, or
the cell in flight, re-attaches (``kernel.reconnected``) with the namespace kept, and a result
that was ready while no stream was attached is delivered. When the runner itself is gone, the
cell in flight ends ``died`` with reason ``transport_lost`` (never a hang) and the next cell
runs on a fresh runner, ``state_lost``. These tests skip, with that reason, on a transport that
declares no re-attach (local: its channel is the parent-death lease; filecell: every cell is
one execute).

Drops are injected the way a test of the plugin does it, ``hermes_faults.transport_drop``
(``reset``: the connection is reset under the kernel). A test that acts on a running cell waits
until the cell reports that it runs (:class:`~._probes.CellStarted`), never a fixed time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from ..kernel.contract import Transport
from ..kernel.handle import KernelHandle
from ..kernel.options import KernelOptions
from ._probes import CellStarted, run_in_thread

__all__ = [
    "reattachable", "test_drop_while_idle_reattaches_with_the_state_kept",
    "test_drop_mid_cell_delivers_the_result_after_the_reattach", "test_runner_gone_mid_cell_is_transport_lost",
]

#: How long a cell in flight may take to settle after a drop (a hang, not slowness, beyond it).
SETTLE_TIMEOUT_S = 30.0
#: Slack over the kernel's ``reconnect_timeout`` for reporting a lost runner on a loaded machine.
REPORT_SLACK_S = 5.0


@pytest.fixture
def reattachable(hermes_transport: Transport) -> Transport:
    """This test's transport; skips when it declares no re-attach (``reattachable`` is false)."""
    if not hermes_transport.reattachable:
        pytest.skip(f"the {hermes_transport.name} transport declares no re-attach (reattachable=False): "
                    "a broken stream there is the kernel's end, not a drop")
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


def test_drop_mid_cell_delivers_the_result_after_the_reattach(reattachable: Transport,
                                                              kernel_factory: Callable[..., KernelHandle],
                                                              hermes_faults: Any) -> None:
    started = CellStarted()
    k = kernel_factory(tools=started.tools())
    k.execute("x = 41")
    fut = run_in_thread(k, started.CODE + "import time\ntime.sleep(1.0)\nx + 1")
    started.wait()

    hermes_faults.transport_drop(k, "reset")
    r = fut.result(timeout=SETTLE_TIMEOUT_S)

    assert r.status == "ok" and r.value == "42", r.summary()
    assert r.kernel.reconnected and not r.kernel.state_lost
    after = k.execute("x")
    assert after.value == "41" and after.kernel.generation == 0


def test_runner_gone_mid_cell_is_transport_lost(reattachable: Transport,
                                                kernel_factory: Callable[..., KernelHandle]) -> None:
    started = CellStarted()
    k = kernel_factory(tools=started.tools())
    k.execute("x = 1")
    fut = run_in_thread(k, started.CODE + "import time\ntime.sleep(600)")
    started.wait()
    bound = KernelOptions().reconnect_timeout + REPORT_SLACK_S

    killed = time.monotonic()
    assert reattachable.kill(k.launched), "the transport must see its runner gone after kill()"
    r = fut.result(timeout=SETTLE_TIMEOUT_S)

    assert r.status == "died" and r.kernel.state_lost and r.kernel.reason == "transport_lost", r.summary()
    assert time.monotonic() - killed <= bound, "a lost runner must be reported within the re-attach budget"
    after = k.execute("x")
    assert after.ename == "NameError" and after.kernel.state_lost and after.kernel.generation == 1, after.summary()
