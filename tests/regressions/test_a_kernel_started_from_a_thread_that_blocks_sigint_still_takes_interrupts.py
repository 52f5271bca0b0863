"""Seen, making a transport of one's own wrong on purpose (its launch blocked SIGINT around
``Popen``): the built-in transports do the same for any caller whose thread blocks SIGINT, as a
host that leaves signals to one ``sigwait`` thread does. The signal mask is inherited across
``fork`` and ``exec``, so the kernel's worker started with SIGINT blocked: ``interrupt()`` left
its cell running (``status=ok`` 5 s later), and a cell over its budget was "the interrupt was
ineffective; the kernel was killed (SIGKILL) and restarted: state lost".

Now the runner starts with no signal blocked, whatever the process that started it blocked.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel import KernelHandle, start_kernel
from pytest_hermes_kernel.transports import Transport, make_transport


@pytest.fixture(params=["local", "local-server", "filecell"])
def started_with_sigint_blocked(request: pytest.FixtureRequest) -> Iterator[KernelHandle]:
    """A kernel (and, for ``local-server``, its kernel server) started while this thread blocks SIGINT."""
    name, _, server = request.param.partition("-")
    transport = make_transport(name, server=bool(server)) if name == "local" else make_transport(name)
    try:
        kernel = _start_blocked(transport)
        try:
            yield kernel
        finally:
            kernel.shutdown()
    finally:
        transport.close()


def _start_blocked(transport: Transport) -> KernelHandle:
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return start_kernel(transport)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def test_a_cell_over_its_budget_is_interrupted_with_its_state_kept(started_with_sigint_blocked) -> None:
    kernel = started_with_sigint_blocked
    kernel.execute("x = 'kept'")

    r = kernel.execute("import time\ntime.sleep(60)", timeout=1.0)

    assert r.status == "timeout" and r.watchdog == "interrupted" and r.ename == "KeyboardInterrupt", r.summary()
    after = kernel.execute("x")
    assert after.value == "'kept'" and not after.kernel.state_lost, after.summary()
