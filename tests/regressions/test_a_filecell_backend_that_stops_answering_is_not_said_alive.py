"""Seen: a filecell backend that stopped answering (a sandbox API down: every ``execute`` raised)
ended the next cell ``died`` with the note "(runner still alive; the kill was not confirmed: its
cell may run on)": no probe had seen the runner alive. Filecell's ``alive()`` said ``True`` when
it could not ask ("not confirmed dead"), which the loss note reads as a runner seen alive.

Now ``alive()`` says ``True`` only for a runner the backend saw running and ``seen_gone()`` only
for one it saw gone, so the note says the runner could not be reached; once the backend answers
again, ``shutdown()`` ends the runner and nothing is left.

Seen too: a start into such an outage raised ``KernelStartError`` with the hint "the backend's
execute raised instead of returning; it must return (exit status, output) for every command":
the protocol lets ``execute`` raise when it could not run the command, so the user was sent to
fix a backend that kept it, not to look at what it calls.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel import KernelHandle, KernelOptions, KernelStartError
from pytest_hermes_kernel.transports.filecell.backends import LocalShellBackend
from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport
from tests.support import wait_until


class Outage(LocalShellBackend):
    """The local shell backend, with an outage: while ``down``, every call raises."""

    down = False

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        if self.down:
            raise ConnectionError("sandbox API: 503 Service Unavailable")
        return super().execute(cmd, timeout)

    def execute_detached(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        if self.down:
            raise ConnectionError("sandbox API: 503 Service Unavailable")
        return super().execute_detached(cmd, timeout)


@pytest.fixture
def root() -> Iterator[str]:
    """A short kernel root of this test (a unix socket path under it must fit in 108 bytes)."""
    path = f"/tmp/hermes-outage-{os.getpid()}-{os.urandom(3).hex()}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_cell_into_a_backend_outage_says_the_runner_could_not_be_reached(root: str) -> None:
    backend = Outage()
    transport = FileCellTransport(backend, root=root)
    k = KernelHandle(transport, KernelOptions()).start()
    try:
        assert k.execute("x = 1").status == "ok"
        runner = k.runner_pid
        backend.down = True

        r = k.execute("x")

        backend.down = False
        assert r.status == "died" and r.kernel.state_lost, r.summary()
        assert "still alive" not in r.kernel.note, r.kernel.note
        assert "could not be reached" in r.kernel.note, r.kernel.note
    finally:
        backend.down = False
        k.shutdown()
        transport.close()
    wait_until(lambda: not os.path.exists(f"/proc/{runner}"), 10.0, interval=0.2, what="the runner to end")


def test_a_start_into_a_backend_outage_says_what_the_backend_raised_not_a_rule_it_broke(root: str) -> None:
    backend = Outage()
    backend.down = True
    transport = FileCellTransport(backend, root=root)
    try:
        with pytest.raises(KernelStartError) as caught:
            KernelHandle(transport, KernelOptions()).start()
    finally:
        backend.down = False
        transport.close()
    told = str(caught.value)
    assert "ConnectionError: sandbox API: 503 Service Unavailable" in told, told
    assert "must return" not in told and "could not run" in told, told
