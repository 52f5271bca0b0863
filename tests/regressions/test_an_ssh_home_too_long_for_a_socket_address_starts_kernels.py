"""Seen: an ssh login user whose home is a long path (``/home/`` and 60 more characters: a
kernel's socket, ``<home>/.hermes-kernels/<32 hex>/sock``, is then over the 107 bytes a unix
socket address holds) got no kernel on either path: "the ssh kernel runner ended during start,
before its hello: ... closed: end of stream (the kernel runner or its relay is gone)", naming
neither the path nor the cause. The runner bound its socket through its dir's ``/proc/self/fd``
entry (as a local kernel's under a long ``TMPDIR``), but the relay (spawn path) and the kernel
server's attach (server path) connected to the plain path, which ``connect`` refuses. Now they
connect the way the runner binds, and such a home runs kernels as any other."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.faults.faulty_transport import FaultyTransport
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import container_output, transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")

LONG_HOME = "/home/" + "h" * 60


@pytest.fixture(params=[True, False], ids=["server", "spawn"])
def long_home_ssh(request: pytest.FixtureRequest) -> Iterator[tuple[SshTransport, object, str]]:
    """An ssh transport whose login user's home is :data:`LONG_HOME` (its sshd container its own),
    with the docker client and container id to look inside."""
    server = request.param
    with transport_of_its_own("ssh", server=server) as first:
        assert isinstance(first, SshTransport)
        first.connection()  # the sshd container up; the home moves before the transport below connects
        client, cid = first.sshd.docker, first.sshd_container_id
        q = shlex.quote(LONG_HOME)
        container_output(client, cid, ["sh", "-c", f"mkdir -p {q} && cp -a /home/hermes/.ssh {q}/ && chown hermes {q}"
                                       f" && chmod 0700 {q} && usermod -d {q} hermes"])
        second = make_transport("ssh", run_id=first.run_id, server=server)
        assert isinstance(second, SshTransport)
        try:
            yield second, client, cid
        finally:
            second.close()


def test_a_kernel_starts_and_runs_cells_under_a_home_too_long_for_a_socket_address(long_home_ssh) -> None:
    inner, client, cid = long_home_ssh
    transport = FaultyTransport(inner)  # its channel is dropped below: a re-attach is a new relay
    with start_kernel(transport, start_timeout=60) as kernel:
        assert not kernel.launched.note, kernel.launched.note  # on the server path: forked, not a fallback spawn
        r = kernel.execute("import os; os.getcwd()", timeout=30)
        assert r.status == "ok", r
        cwd = r.value.strip("'")
        assert cwd.startswith(f"{LONG_HOME}/.hermes-kernels/"), r.value
        assert len(f"{cwd}/sock".encode()) > 107  # the case: the socket's path is too long for an address
        assert kernel.execute("x = 6 * 7", timeout=30).status == "ok"
        transport.drop("reset", launched=kernel.launched)
        r = kernel.execute("x", timeout=30)
        assert (r.status, r.value, r.kernel.state_lost) == ("ok", "42", False), r.summary()
    left = container_output(client, cid, ["sh", "-c", f"ls -A {shlex.quote(LONG_HOME)}/.hermes-kernels"])
    assert cwd.rsplit("/", 1)[1] not in left, left  # its kernel dir removed with it
