"""Text on the channel where a runner's frame was due is quoted in the error: docker's message for an
exec in a container that had ended (``OCI runtime exec failed: ...``) came through the exec stream,
and the error said only ``bad frame from the kernel runner: frame length 1329809696 outside ...``
(the bytes ``OCI `` read as a length; a helper's run, 2026-12-07)."""

from __future__ import annotations

import socket
import struct

import pytest

from pytest_hermes_kernel.errors import ChannelClosed, ProtocolError
from pytest_hermes_kernel.kernel.channel import Channel, SocketStream

DOCKER_SAYS = b"OCI runtime exec failed: exec failed: cannot exec in a stopped container: unknown\r\n"


def _request_answered_with(answer: bytes) -> str:
    ours, theirs = socket.socketpair()
    channel = Channel(SocketStream(ours), name="test")
    try:
        theirs.sendall(answer)
        with pytest.raises((ProtocolError, ChannelClosed)) as raised:  # (the reader closes the channel)
            channel.request({"type": "ping"}, timeout=5)
        return str(raised.value)
    finally:
        channel.close()
        theirs.close()


def test_the_error_quotes_the_text_that_came_instead_of_a_frame():
    message = _request_answered_with(DOCKER_SAYS)
    assert "bad frame from the kernel runner: frame length 1329809696 outside" in message, message
    assert ("the stream carried text, not a frame: 'OCI runtime exec failed: exec failed: cannot exec in a "
            "stopped container: unknown'") in message, message


def test_bytes_that_are_not_text_are_not_quoted():
    message = _request_answered_with(struct.pack(">I", 2**32 - 1) + bytes(range(200)))
    assert "frame length" in message and "carried text" not in message, message
