"""Seen: a kernel server frozen (SIGSTOP; a debugger's stop) in a docker container or on an ssh
host carries its kernels' streams, so nothing reached a kernel it forked, nor came back. A
1-s cell with a 3-s budget came back after the ladder (3 s + 2 x 2 s of grace, then the kill from
outside; ~25 s in all with the replacement's start) saying "the interrupt was ineffective": the
interrupt never reached the kernel, which had ended its cell long before, and a user went looking
for code that ignores SIGINT. The note now says the runner had been silent, keepalives unanswered,
and that the interrupt may never have reached it.
"""

from __future__ import annotations

import signal
import time

import pytest

from pytest_hermes_kernel import WatchdogPolicy, start_kernel
from pytest_hermes_kernel.transports.detached import SIGNAL_SCRIPT
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")


def _signal_server(transport, launched, sig: int) -> None:
    pid = launched.extra["server"].pid
    if transport.name == "docker":
        code, out = transport.run_script(launched.extra["container"], SIGNAL_SCRIPT, str(pid), str(int(sig)))
    else:
        code, out, _ = transport.connection().run(f"kill -{int(sig)} {pid}")
    assert code == 0, out


#: The ladder of the interrupt case: SIGINT after the 1.5-s budget, the kills 0.5 s apart (the
#: defaults, 2 s each, made it 7 s). Its keepalives (every 1 s, 5 missed) go unanswered on the way,
#: and the stream is not given up before the ladder ends.
LADDER = WatchdogPolicy(interrupt_grace=0.5, kill_grace=0.5, restart=False)


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_cell_behind_a_frozen_kernel_server_is_not_called_deaf_to_its_interrupt(name: str) -> None:
    with transport_of_its_own(name, server=True) as transport:
        kernel = start_kernel(transport, watchdog=LADDER, keepalive_interval=1.0, keepalive_missed=5)
        try:
            assert kernel.execute("x = 1").status == "ok"
            assert "forked by kernel server" in kernel.launched.label
            _signal_server(transport, kernel.launched, signal.SIGSTOP)
            try:
                result = kernel.execute("import time; time.sleep(1)", timeout=1.5)
            finally:
                _signal_server(transport, kernel.launched, signal.SIGCONT)
            note = result.kernel.note
            assert result.status == "timeout", result.summary()
            assert "ineffective" not in note, note
            assert "keepalives unanswered" in note and "may never have reached it" in note, note
        finally:
            kernel.shutdown()


#: The kernel's keepalives in the re-attach case: the silent stream is given up after 3 s (the
#: default, 3 s x 3, took 12 s), then the re-attach runs as before.
KEEPALIVE = {"keepalive_interval": 1.0, "keepalive_missed": 3}
#: Seconds the cell behind a frozen server may take: the keepalives' ~4 s, then a re-attach.
REATTACHED_S = 12.0


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_cell_behind_a_frozen_kernel_server_reattaches_with_its_state(name: str) -> None:
    """Seen (docker): a 1-s cell without a budget came back after 27 s ``died``, its state lost,
    "runner still alive; killed": the keepalives gave up on the silent stream after 12 s, and the
    re-attach asked the frozen server whether the runner runs (a 15-s wait, over the re-attach's
    10 s); the runner, healthy all along, was then killed. The re-attach now asks by exec."""
    with transport_of_its_own(name, server=True) as transport:
        kernel = start_kernel(transport, **KEEPALIVE)
        try:
            assert kernel.execute("x = 1").status == "ok"
            _signal_server(transport, kernel.launched, signal.SIGSTOP)
            try:
                began = time.monotonic()
                result = kernel.execute("import time; time.sleep(1); x")
                took = time.monotonic() - began
            finally:
                _signal_server(transport, kernel.launched, signal.SIGCONT)
            assert (result.status, result.value) == ("ok", "1"), result.summary()
            assert result.kernel.reconnected and not result.kernel.state_lost, result.summary()
            assert took < REATTACHED_S, took
        finally:
            kernel.shutdown()
