"""Seen: a cell ran into a paused sshd (``died``, ``transport_lost`` after ~9 s of unanswered
keepalives); right after ``docker unpause``, leaving ``with start_kernel("ssh")`` logged "kill of
kernel runner 31 over ssh failed: ssh host not answering: no reply to ssh keepalives for 9.0 s"
and left the runner and its kernel dir on the host until its orphan timer. The kill was a probe,
refused at once for the first 3 s of the host's silence although the host answered again.

Both start paths: a runner forked by the host's kernel server, and one spawned by its own execs.
"""

from __future__ import annotations

import shlex
import uuid
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.transports import make_transport
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


def test_shutdown_right_after_the_host_answers_again_ends_the_runner(own_sshd, start):
    k = start(own_sshd)
    assert k.execute("x = 1").status == "ok"
    kdir = k.launched.kernel_dir
    api, cid = own_sshd.sshd.docker.api, own_sshd.sshd_container_id
    api.pause(cid)
    try:
        lost = k.execute("2 + 2", timeout=30)
    finally:
        api.unpause(cid)
    assert lost.status == "died" and lost.kernel.reason == "transport_lost", lost.summary()

    info = k.shutdown()  # at once: the host answers again

    assert info.confirmed, info
    wait_until(lambda: own_sshd.kernel_processes(k.kernel_id) == [], 3.0, what="the kernel's processes to end")
    code, _, _ = own_sshd.connection().run(f"test -e {shlex.quote(kdir)}")
    assert code == 1, f"the kernel dir {kdir} is still there"
