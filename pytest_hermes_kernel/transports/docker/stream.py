"""A :class:`~pytest_hermes_kernel.kernel.channel.ByteStream` over a hijacked ``docker exec`` socket.

With ``tty=False`` the engine multiplexes the exec's stdout and stderr on one connection: each
payload is preceded by an 8-byte header (stream type: 1 stdout, 2 stderr; three zero bytes; u32
big-endian payload length; see the Engine API's "Attach to a container" section). ``recv``
returns stdout payload bytes only; stderr is kept as a short tail for error messages.

A read never hangs on a container that stopped without closing the connection
(docker/docker-py#1269): while the stream is silent, ``container_running`` is polled every
``state_poll_s`` seconds, and a stopped container ends the stream like an EOF.
"""

from __future__ import annotations

import collections
import select
import socket
import time
import weakref
from collections.abc import Callable
from typing import Any

from ...containers.engines import close_exec_socket
from ...kernel.channel import READ_BYTES_SHORT, lease, next_read_bytes

HEADER_BYTES = 8
STDOUT, STDERR = 1, 2
STDERR_TAIL_BYTES = 4096
#: Seconds of silence between container state checks (one ``docker inspect``, a few ms).
STATE_POLL_S = 1.0


class DockerExecStream:
    """Demultiplexing byte stream over an exec's hijacked connection.

    :param hijacked: what ``APIClient.exec_start(..., socket=True)`` returned (a ``SocketIO``
        that keeps the HTTP response alive, or a socket).
    :param container_running: probe called while the stream is silent; ``False`` ends it.
    :param state_poll_s: seconds of silence between probes.
    """

    #: a long frame may come in pieces, each sent whole and in order (``Channel.send``)
    sends_pieces = True

    def __init__(self, hijacked: Any, *, container_running: Callable[[], bool] | None = None,
                 state_poll_s: float = STATE_POLL_S) -> None:
        self._hijacked = hijacked  # holds the HTTP response: dropping it may close the socket
        self.sock: socket.socket = lease(getattr(hijacked, "_sock", hijacked))  # a forked child closes its copy
        self.sock.settimeout(None)
        self._raw = bytearray()
        self._read_bytes = READ_BYTES_SHORT
        self._stderr: collections.deque[bytes] = collections.deque()
        self._stderr_bytes = 0
        self._eof = False
        self._closed = False
        self._probe = container_running
        self._poll_s = state_poll_s
        self._last_heard = self._last_probe = time.monotonic()
        self.ended_because: str | None = None
        self.exec_id = ""  # the exec this stream belongs to (set by whoever started it)
        # Dropped unclosed (a handle nobody shut down): closed as close() does, not left to a garbage
        # collection, where its socket and HTTP response warned (a traceback at pytest's end under -W error).
        weakref.finalize(self, close_exec_socket, hijacked).atexit = False

    # ------------------------------------------------------------------------------ ByteStream
    def send(self, data: bytes) -> None:
        """Write to the exec's stdin.

        :raises OSError: if the connection is closed or broken.
        """
        self.sock.sendall(data)

    def recv(self, timeout: float | None) -> bytes:
        """Next stdout bytes; ``b""`` at EOF (or when the container stopped).

        :param timeout: seconds; ``None`` waits until data or EOF.
        :raises TimeoutError: if no stdout byte arrived within ``timeout``.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            data = self._take_stdout()
            if data:
                return data
            if self._eof or self._closed:
                return b""
            now = time.monotonic()
            left = None if deadline is None else deadline - now
            if left is not None and left <= 0:
                raise TimeoutError
            wait = left if self._probe is None else min(self._poll_s, self._poll_s if left is None else left)
            if not self._wait_readable(wait):
                self._maybe_probe()
                continue
            self._read_once()

    def close(self) -> None:
        """Close the connection (the exec's stdin sees EOF); a blocked ``recv`` returns ``b""``."""
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        close_exec_socket(self._hijacked)  # the socket, and the HTTP response docker-py keeps on it

    # ------------------------------------------------------------------------------ extras
    def shutdown_write(self) -> None:
        """Half-close: the exec's stdin sees EOF, its output still arrives."""
        self.sock.shutdown(socket.SHUT_WR)

    def read_to_end(self, timeout: float) -> bytes:
        """All stdout until EOF.

        :raises TimeoutError: if EOF did not come within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        out = bytearray()
        while True:
            data = self.recv(max(0.0, deadline - time.monotonic()))
            if not data:
                return bytes(out)
            out += data

    def stderr_text(self) -> str:
        """The last few KiB the exec wrote to stderr."""
        return b"".join(self._stderr).decode("utf-8", "replace")

    # ------------------------------------------------------------------------------ internals
    def _wait_readable(self, wait: float | None) -> bool:
        try:
            readable, _, _ = select.select([self.sock], [], [], wait)
        except (OSError, ValueError):  # closed under us
            self._eof = True
            return True
        return bool(readable)

    def _read_once(self) -> None:
        try:
            chunk = self.sock.recv(self._read_bytes)
        except OSError:
            chunk = b""
        self._read_bytes = next_read_bytes(len(chunk), self._read_bytes)
        if not chunk:
            self._eof = True
            self.ended_because = self.ended_because or "end of the exec stream"
            return
        self._raw += chunk
        self._last_heard = time.monotonic()

    def _maybe_probe(self) -> None:
        now = time.monotonic()
        if self._probe is None or now - max(self._last_heard, self._last_probe) < self._poll_s:
            return
        self._last_probe = now
        try:
            running = self._probe()
        except Exception:  # noqa: BLE001 - an engine hiccup is not a stopped container
            running = True
        if not running:
            self._eof = True
            self.ended_because = "container stopped"

    def _take_stdout(self) -> bytes:
        raw = self._raw
        out = bytearray()
        pos = 0
        while len(raw) - pos >= HEADER_BYTES:
            kind = raw[pos]
            size = int.from_bytes(raw[pos + 4 : pos + 8], "big")
            end = pos + HEADER_BYTES + size
            if len(raw) < end:
                break
            if kind == STDERR:
                self._keep_stderr(bytes(raw[pos + HEADER_BYTES : end]))
            else:
                out += raw[pos + HEADER_BYTES : end]
            pos = end
        if pos:
            del raw[:pos]
        return bytes(out)

    def _keep_stderr(self, data: bytes) -> None:
        self._stderr.append(data)
        self._stderr_bytes += len(data)
        while self._stderr_bytes > STDERR_TAIL_BYTES and len(self._stderr) > 1:
            self._stderr_bytes -= len(self._stderr.popleft())
