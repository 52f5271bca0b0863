"""Seen: a cell ran into a paused sshd (``died``, ``transport_lost`` after ~9 s of unanswered
keepalives); right after ``docker unpause`` the next cell started a new runner, but the old runner
and its worker ran on, even after ``shutdown()``, until their orphan timer (which would then remove
the kernel dir the new runner lives in: it has the same path). The runner being replaced was killed
only if ``alive()`` said it runs, and on a host known silent ``alive()`` says ``False`` when it
cannot tell; the cleanup after it, which reached the host again, removed the dir of a runner still
running. On the server path the next start could also fall back to a plain spawn with the note
"kernel server unavailable (... File exists ...)": the old dir was still there.

Both start paths: a runner forked by the host's kernel server, and one spawned by its own execs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.detached import ALIVE_SCRIPT
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.fixture(params=[True, False], ids=["server", "spawn"])
def own_sshd(request: pytest.FixtureRequest) -> Iterator[SshTransport]:
    """An ssh transport with an sshd container of its own, to pause (removed when it closes)."""
    transport = make_transport("ssh", run_id=f"test-{uuid.uuid4().hex}", server=request.param)
    assert isinstance(transport, SshTransport)
    yield transport
    transport.close()


def _running(transport: SshTransport, pid: int) -> bool:
    """Whether ``pid`` runs on the ssh host (a zombie does not)."""
    code, _ = transport.run_script(transport.connection(), ALIVE_SCRIPT, str(pid))
    return code == 0


def test_the_runner_replaced_after_the_host_was_silent_is_ended(own_sshd, start):
    k = start(own_sshd)
    first = k.execute("x = 1; import os; os.getpid()")
    assert first.status == "ok", first.summary()
    old_runner, old_worker = k.runner_pid, int(first.value)
    api, cid = own_sshd.sshd.docker.api, own_sshd.sshd_container_id
    api.pause(cid)
    try:
        lost = k.execute("2 + 2", timeout=30)
    finally:
        api.unpause(cid)
    assert lost.status == "died" and lost.kernel.reason == "transport_lost", lost.summary()

    after = k.execute("1 + 1")  # at once: the host answers again

    assert after.status == "ok" and after.value == "2", after.summary()
    assert after.kernel.state_lost and after.kernel.reason == "transport_lost", after.summary()
    assert "kernel server unavailable" not in after.kernel.note, after.kernel.note
    assert k.runner_pid not in (None, old_runner)
    wait_until(lambda: not _running(own_sshd, old_runner) and not _running(own_sshd, old_worker), 5.0, interval=0.2,
               what=f"the replaced runner {old_runner} and its worker {old_worker} to end")

    info = k.shutdown()

    assert info.confirmed, info
    wait_until(lambda: own_sshd.kernel_processes(k.kernel_id) == [], 5.0, interval=0.2, what="the kernel's processes to end")
    assert not _running(own_sshd, old_runner)
