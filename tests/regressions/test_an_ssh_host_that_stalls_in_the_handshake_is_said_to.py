"""Seen: an ssh host whose sshd accepts the connection and then says nothing more (it took the TCP
connection and its banner, then stalled: an overloaded or frozen host, a half-dead proxy in front
of it) failed a kernel start after ``connect_timeout`` with "cannot reach ssh host ...:
SSHException: No existing session" and the hint "is the host up and the key accepted?".
paramiko gives up the key exchange at the timeout without saying so, then tries to log in on
the dead session; the key had nothing to do with it.

Now a connect that ran into its timeout says it had no answer within that many seconds, and the
hint is about a host that does not answer. Likewise for one that never sent its banner.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import greeting_port

CONNECT_TIMEOUT_S = 1.0


@pytest.fixture(params=[b"SSH-2.0-OpenSSH_9.2p1\r\n", b""], ids=["after-banner", "no-banner"])
def stalling_sshd(request: pytest.FixtureRequest) -> Iterator[int]:
    """A port that accepts, sends ``request.param`` (a banner, or nothing) and then stays silent."""
    with greeting_port(request.param, hold=True) as port:
        yield port


def test_a_host_that_stalls_is_said_to_give_no_answer(stalling_sshd):
    transport = SshTransport(target=f"hermes@127.0.0.1:{stalling_sshd}", host_key_policy="auto-add",
                             connect_timeout=CONNECT_TIMEOUT_S)
    began = time.monotonic()
    try:
        with pytest.raises(KernelStartError) as caught:
            start_kernel(transport)
    finally:
        transport.close()

    message = str(caught.value)
    assert time.monotonic() - began < 5 * CONNECT_TIMEOUT_S, message
    assert f"no answer within {CONNECT_TIMEOUT_S:g} s" in message, message
    assert "key accepted" not in message, message
