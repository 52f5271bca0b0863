"""Seen: the run's sshd container restarted (its host rebooted: ``docker restart``, or stop and
start) between two cells. Docker published its port 22 on a new 127.0.0.1 port (32769, then
32770), and the transport went on dialing the old one for the rest of its life: the next cell
came back ``transport_lost`` after 10 s, the cell after it raised ``KernelStartError`` "its runner
... was not seen gone and could not be ended ... is its host paused or unreachable?" (the runner
had ended with the container), ``shutdown()`` said ``step="unreachable"`` "it may still run",
and every new kernel on the transport failed with "cannot reach ssh host hermes@127.0.0.1:32769:
... Unable to connect to port 32769".

Now each connection dials the port the container publishes now: the kernel's runner is seen gone
with the restart, the next cell runs on a fresh runner (``state_lost``), its shutdown is
confirmed, and new kernels start. Both start paths.
"""

from __future__ import annotations

import socket
import time

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: Seconds the first cell after the restart may take (a dead stream, one re-attach try).
SETTLE_S = 15.0


def _published_port(transport: SshTransport) -> int:
    ports = transport.sshd.docker.api.port(transport.sshd_container_id, 22)
    return int(ports[0]["HostPort"])


def _reboot_on_a_new_port(transport: SshTransport) -> None:
    """Stop the sshd container, hold its old port so docker cannot publish it there again, start it."""
    api, cid = transport.sshd.docker.api, transport.sshd_container_id
    old = _published_port(transport)
    api.stop(cid, timeout=1)
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past our own TIME_WAITs
        holder.bind(("127.0.0.1", old))
        holder.listen()
        api.start(cid)
        assert _published_port(transport) != old
    wait_until(lambda: _answers(transport), 15.0, interval=0.2, what="the restarted sshd to answer")


def _answers(transport: SshTransport) -> bool:
    with socket.create_connection(("127.0.0.1", _published_port(transport)), timeout=2) as sock:
        sock.settimeout(2)
        try:
            return sock.recv(8).startswith(b"SSH-")
        except OSError:
            return False


def test_kernels_on_a_restarted_sshd_container_are_reached_again(own_sshd, start):
    k = start(own_sshd)
    assert k.execute("x = 1").status == "ok"
    _reboot_on_a_new_port(own_sshd)

    began = time.monotonic()
    lost = k.execute("x")
    assert time.monotonic() - began < SETTLE_S, lost.summary()
    assert lost.status == "died" and lost.kernel.state_lost, lost.summary()

    try:
        after = k.execute("'x' in globals()")
    except KernelStartError as exc:
        pytest.fail(f"the next cell was refused after the restart: {exc}")
    assert (after.status, after.value, after.kernel.state_lost) == ("ok", "False", True), after.summary()
    info = k.shutdown()
    assert info.confirmed, info

    with start_kernel(own_sshd) as fresh:
        assert fresh.execute("6 * 7").value == "42"
