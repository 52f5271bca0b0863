"""Seen: the link to a ``target=`` ssh host dropped and the host came back with another host key
(it was reinstalled, or something else answers at its address). Every re-attach was refused with
"the ssh host key of ... changed ... This may be a man-in-the-middle", a permanent refusal, but
the transport passed it on as a passing one: the cell retried the re-attach for its whole
``reconnect_timeout`` (10.04 s) before it ended ``transport_lost``.

Now the refusal stays permanent: the cell ends at once. Both start paths.

Seen too: the cell's note and the next cell's error then said the runner "could not be reached"
("is its host paused or unreachable?", "e.g. after `docker unpause`"): the man-in-the-middle
warning reached only the log, and ``shutdown()``'s "its kill ... was not confirmed" said no more. Now
all three name the changed host key.
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import KernelStartError, TransportLostError
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import container_output, transport_of_its_own, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: The kernel's ``reconnect_timeout``: what the bug's retries took (10 s by default), made long here.
RECONNECT_S = 60.0
#: Seconds the cell may take once the link dropped (one connect, refused for its key): a third of
#: :data:`RECONNECT_S`, the slack a loaded host needs (5 s against the default 10 s failed by load alone).
SETTLE_S = RECONNECT_S / 3
NEW_HOST_KEY = ("rm -f /etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ed25519_key.pub && "
                "ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key && kill -HUP $(pgrep -o -x sshd)")


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_host_key_that_changed_under_a_dropped_link_ends_the_cell_at_once(server):
    with transport_of_its_own("ssh", server=True) as host:  # its sshd container is the target host
        assert isinstance(host, SshTransport)
        _changed_under_a_dropped_link(host, server)


def _changed_under_a_dropped_link(own_sshd: SshTransport, server: bool) -> None:
    own_sshd.connection()
    record = own_sshd.sshd.record
    target = SshTransport(target=f"hermes@127.0.0.1:{record['port']}", key_filename=record["key_file"],
                          host_key_policy="auto-add", server=server)
    try:
        with start_kernel(target, reconnect_timeout=RECONNECT_S) as k:
            assert k.execute("x = 1").status == "ok"
            container_output(own_sshd.sshd.docker, own_sshd.sshd_container_id, ["sh", "-c", NEW_HOST_KEY])
            wait_until(lambda: _offers_a_new_key(own_sshd), 10.0, interval=0.2, what="sshd to offer its new key")
            target.current_connection.transport.close()  # the link drops

            began = time.monotonic()
            lost = k.execute("x")
            took = time.monotonic() - began
            with pytest.raises(KernelStartError) as next_cell:
                k.execute("1")
            ended = k.shutdown()
    finally:
        target.close()

    assert lost.status == "died" and lost.kernel.reason == "transport_lost", lost.summary()
    assert took < SETTLE_S, (took, lost.summary())
    assert "host key" in lost.kernel.note and "man-in-the-middle" in lost.kernel.note, lost.kernel.note
    told = str(next_cell.value)
    assert "host key" in told and "man-in-the-middle" in told and "unpause" not in told, told
    assert not ended.confirmed and "host key" in ended.note, ended


def _offers_a_new_key(transport: SshTransport) -> bool:
    """Whether sshd offers another key than the one ``transport`` (the container's own) pins."""
    try:
        transport._connect().close()
    except TransportLostError as exc:
        return "changed" in str(exc)
    return False
