"""``relay SOCK``: copy stdin to the unix socket ``SOCK`` and the socket to stdout.

The docker and ssh transports' channel is an exec of this relay: its stdin/stdout are the exec
stream, the socket is the supervisor's. It ends when either side ends; a new relay is a
re-attach. It imports nothing but the stdlib (not even the frame codec): it copies bytes.
"""

from __future__ import annotations

import os
import selectors
import socket

#: Bytes asked of one read (the same as :data:`.frames.READ_CHUNK`, without importing it).
READ_CHUNK = 65536


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def relay(path: str) -> None:
    """Copy fd 0 to the unix socket at ``path`` and the socket to fd 1 until either ends.

    :raises OSError: if ``path`` does not accept connections or a side breaks.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sel = selectors.DefaultSelector()
    sel.register(0, selectors.EVENT_READ, "in")
    sel.register(sock, selectors.EVENT_READ, "sock")
    while True:
        for key, _ in sel.select():
            if key.data == "in":
                data = os.read(0, READ_CHUNK)
                if not data:
                    return
                sock.sendall(data)
            else:
                data = sock.recv(READ_CHUNK)
                if not data:
                    return
                _write_all(1, data)
