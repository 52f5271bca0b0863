"""Unit: a long frame on an ssh stream costs no copy of itself per packet.

paramiko's ``Channel.sendall`` sends what one packet takes (32 KiB at most) and slices off the rest,
a copy of all that is left, for each packet: a 60 MB tool value over ssh took 202 s and 5x its size
in host memory (benchmarks/value_memory.py). The fake channel here runs paramiko's own ``sendall``.
"""

from __future__ import annotations

import hashlib
import tracemalloc

import paramiko

from pytest_hermes_kernel.transports.ssh.connection import SshStream

SIZE = 8 * 10**6


class _Chan:
    """An open channel that takes up to one packet per ``send``, with paramiko's ``sendall``."""

    closed = False
    sendall = paramiko.Channel.sendall

    def __init__(self) -> None:
        self.got = hashlib.sha256()  # what the peer got, kept as a digest: its bytes are not the cost

    def send(self, s: bytes) -> int:
        sent = min(len(s), 32768)
        self.got.update(s[:sent])
        return sent


def test_a_long_frame_goes_out_whole_without_a_copy_per_packet():
    chan = _Chan()
    data = bytes(range(256)) * (SIZE // 256)
    stream = SshStream(chan, connection=None)  # type: ignore[arg-type]
    tracemalloc.start()
    try:
        stream.send(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert chan.got.digest() == hashlib.sha256(data).digest()
    assert peak < 0.2 * SIZE, f"sending {SIZE} bytes peaked at {peak / SIZE:.2f}x their size (was 2x: a copy of the rest per packet)"
