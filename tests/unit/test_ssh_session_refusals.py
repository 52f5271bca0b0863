"""When sshd refuses a new session channel, the connection waits only if a session of its own
may still be ending (``connection._open_session``).

A refusal just after a close is the server not having freed that session yet: it is retried (the
real sshd cases are in tests/regressions/test_handed_b34_ssh_sessions.py). A refusal on a
connection that holds nothing and released nothing lately cannot be cured by waiting (a server
that allows no sessions, say): it fails at once instead of after ``session_wait``.

paramiko's transport is faked here: when a refusal is retried is the policy under test.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import paramiko
import pytest

from pytest_hermes_kernel.errors import TransportLostError
from pytest_hermes_kernel.transports.ssh.address import SshTarget
from pytest_hermes_kernel.transports.ssh.connection import SshConnection, _open_session


class RefusingTransport:
    """Refuses the first ``refusals`` opens with ``code``, then opens."""

    def __init__(self, refusals: int, code: int = 2) -> None:
        self.refusals, self.code, self.opens = refusals, code, 0

    def open_session(self, timeout: float) -> SimpleNamespace:
        self.opens += 1
        if self.opens <= self.refusals:
            raise paramiko.ChannelException(self.code, "Connect failed")
        return SimpleNamespace(closed=False)


def _connection(transport: RefusingTransport, *, released_ago: float | None) -> SshConnection:
    conn = SshConnection.__new__(SshConnection)  # no network: only the session bookkeeping is used
    conn.target = SshTarget("127.0.0.1", 1, "hermes")
    conn.transport, conn.connect_timeout, conn.max_sessions, conn.session_wait = transport, 1.0, 10, 5.0
    conn._channels = []
    conn._released_at = float("-inf") if released_ago is None else time.monotonic() - released_ago
    return conn


def test_a_refusal_right_after_a_release_is_retried_until_the_session_is_free() -> None:
    transport = RefusingTransport(refusals=3)
    channel = _open_session(_connection(transport, released_ago=0.0), "ssh exec")
    assert (channel.closed, transport.opens) == (False, 4)


def test_a_refusal_on_an_idle_connection_fails_at_once() -> None:
    transport = RefusingTransport(refusals=1)
    started = time.monotonic()
    with pytest.raises(TransportLostError) as caught:
        _open_session(_connection(transport, released_ago=None), "ssh exec")
    assert transport.opens == 1  # not retried; nor waited for: a retry loop waits up to session_wait (5 s)
    assert time.monotonic() - started < 5.0
    assert str(caught.value) == "ssh exec on hermes@127.0.0.1:1 refused: ChannelException(2, 'Connect failed')"


def test_a_refusal_no_wait_can_cure_is_not_retried() -> None:
    transport = RefusingTransport(refusals=1, code=3)  # unknown channel type
    with pytest.raises(TransportLostError, match=r"refused: ChannelException\(3, "):
        _open_session(_connection(transport, released_ago=0.0), "sftp")
    assert transport.opens == 1


def test_a_refusal_past_the_wait_hints_at_max_sessions_not_at_the_key() -> None:
    """Seen at a kernel start (spawn path) on a host whose MaxSessions was below max_sessions:
    the error named the limit, then got the start error's generic "Hint: is the host up and the
    key accepted?" (the refusal's advice was no ``Hint:``): the host was up, the key accepted."""
    from pytest_hermes_kernel.transports.ssh.transport import _unreachable

    conn = _connection(RefusingTransport(refusals=10_000), released_ago=0.0)
    conn.session_wait = 0.2
    with pytest.raises(TransportLostError) as caught:
        _open_session(conn, "sftp")

    message = str(_unreachable(caught.value))
    assert "key accepted" not in message, message
    assert "max_sessions=" in message.split("\nHint: ", 1)[-1], message
