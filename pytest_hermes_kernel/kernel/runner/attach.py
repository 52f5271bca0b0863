"""The host's attachment to the supervisor: the channel socket, who may use it, what it missed.

* **local** (``serve --fd``): the channel is inherited and authenticated by construction; it is
  also the lease: when it closes, the host is gone and the supervisor ends (``lease_lost``).
* **remote** (``serve --listen``): clients connect to a unix socket and must first send
  ``{"type": "attach", "token": ...}``; a new client replaces the old one (re-attach after a
  transport drop). While nobody is attached, the orphan clock runs.
* Results stay **unacknowledged** until the host acks them or sends a new request; an attach
  names the request ids it still waits for and gets those results again (no result is lost to
  a dropped connection, and none is replayed twice to a host that already has it).
* A host that re-attaches after its stream broke asks for ``resend_tool_calls`` in its attach:
  the running cell's tool calls nobody answered are sent again after the replayed results (the
  supervisor's :class:`~.cells.CellBook` keeps them). A ``filecell`` poll never asks: its
  holders relay every frame, and each poll is an attach.
"""

from __future__ import annotations

import array
import hmac
import os
import selectors
import socket
import time

from .frames import READ_CHUNK, FrameDecoder, FrameError, encode_frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from .frames import Header


#: Connections the listening socket queues (one client at a time, a re-attach may overlap).
LISTEN_BACKLOG = 4


#: The longest path a unix socket address holds (Linux ``sun_path``: 108 bytes with its NUL).
UNIX_PATH_MAX = 107


def unix_call(sock: socket.socket, call: str, path: str) -> None:
    """``sock.bind(path)`` or ``sock.connect(path)`` (``call``), also for a ``path`` too long for a
    unix socket address (a kernel dir under a long ``TMPDIR``): then through its directory's
    ``/proc/self/fd`` entry, held open for the call.

    :raises OSError: as the call does.
    """
    if len(os.fsencode(path)) <= UNIX_PATH_MAX:
        getattr(sock, call)(path)
        return
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        getattr(sock, call)(f"/proc/self/fd/{fd}/{os.path.basename(path)}")
    finally:
        os.close(fd)


def recv_fds(sock: socket.socket, bufsize: int, maxfds: int) -> tuple[bytes, list[int]]:
    """One message of ``sock`` and the fds it carries (``SCM_RIGHTS``): ``socket.recv_fds``,
    which Python 3.8 lacks (the runner runs on 3.8: its kernel server did not answer there).

    :raises OSError: as ``recvmsg`` does.
    """
    size = array.array("i").itemsize
    msg, ancdata, _, _ = sock.recvmsg(bufsize, socket.CMSG_LEN(maxfds * size))
    fds = array.array("i")
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % size])
    return msg, list(fds)


def bind_listener(path: str) -> socket.socket:
    """A unix socket listening at ``path`` (0600; a stale socket file there is replaced)."""
    old = os.umask(0o077)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    unix_call(listener, "bind", path)
    os.umask(old)
    os.chmod(path, 0o600)
    listener.listen(LISTEN_BACKLOG)
    return listener


class ClientLink:
    """The one attached client, if any (see module docstring).

    :param sel: the supervisor's selector; the channel is registered as ``"chan"``.
    :param token: the secret an ``attach`` must carry (remote); ``""`` for none.
    """

    def __init__(self, sel: selectors.BaseSelector, token: str) -> None:
        self.sel = sel
        self.token = token
        self.chan: socket.socket | None = None
        self.decoder = FrameDecoder()
        self.authenticated = False
        self.listener: socket.socket | None = None
        self.orphan_since: float | None = None
        self.lease_lost = False
        self.unacked: dict[object, bytes] = {}  # request id -> result frame (replayed on re-attach)

    @property
    def attached(self) -> bool:
        return self.chan is not None

    def listen(self, listener: socket.socket) -> None:
        """Accept clients on ``listener`` (remote mode); the orphan clock starts now."""
        self.listener = listener
        listener.setblocking(False)
        self.orphan_since = time.monotonic()
        self.sel.register(listener, selectors.EVENT_READ, "listen")

    def accept(self) -> None:
        """Take the next connection as the (not yet authenticated) client."""
        try:
            sock, _ = self.listener.accept()  # type: ignore[union-attr]
        except OSError:
            return
        self.attach(sock, authenticated=False)

    def attach(self, sock: socket.socket, authenticated: bool) -> None:
        """Make ``sock`` the channel, dropping the current client first."""
        if self.chan is not None:
            self.drop()
        sock.setblocking(True)  # the channel stays blocking; reads use MSG_DONTWAIT
        self.chan = sock
        self.decoder = FrameDecoder()
        self.authenticated = authenticated
        self.orphan_since = None
        self.sel.register(sock, selectors.EVENT_READ, "chan")

    def drop(self) -> None:
        """Close the channel; locally that means the host is gone (``lease_lost``)."""
        if self.chan is None:
            return
        try:
            self.sel.unregister(self.chan)
        except (KeyError, ValueError):
            pass
        self.chan.close()
        self.chan = None
        self.orphan_since = time.monotonic()
        if self.listener is None:  # local: the channel is the lease; the host is gone
            self.lease_lost = True

    def close_in_child(self) -> None:
        """Close the channel and listener objects in a forked worker (never touching the selector)."""
        for sock in (self.chan, self.listener):
            if sock is not None:
                sock.close()

    def send_frame(self, frame: bytes) -> None:
        """Send ``frame`` to the client, if one is attached; a failed send drops it."""
        if self.chan is None:
            return
        try:
            self.chan.sendall(frame)
        except OSError:
            self.drop()

    def reply(self, header: Header) -> None:
        self.send_frame(encode_frame(header))

    def keep_result(self, request_id: object, frame: bytes) -> None:
        """Send a result frame and keep it until it is acknowledged."""
        self.unacked[request_id] = frame
        self.send_frame(frame)

    def orphan_timeout_left(self, orphan_timeout: float | None) -> float | None:
        """Seconds until the orphan timer fires (``None``: a client is attached or no timer)."""
        if orphan_timeout is None or self.chan is not None:
            return None
        since = self.orphan_since or time.monotonic()
        self.orphan_since = since
        return max(0.0, since + float(orphan_timeout) - time.monotonic())

    def on_readable(self, on_attach: Callable[[list[object], bool], None],
                    on_message: Callable[[Header], None]) -> None:
        """Read what the client sent and hand each message on, until none is left or it is dropped.

        :param on_attach: called once a client authenticates, with the replayable request ids and
            whether it asked for the running cell's unanswered tool calls (``resend_tool_calls``).
        :param on_message: called with every message of an authenticated client.
        """
        try:
            data = self.chan.recv(READ_CHUNK, socket.MSG_DONTWAIT)  # type: ignore[union-attr]
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.drop()
            return
        self.decoder.feed(data)
        while self.chan is not None:
            try:
                frame = self.decoder.next_frame()
            except FrameError as exc:
                self.reply({"type": "error", "error": f"bad frame: {exc}"})
                self.drop()
                return
            if frame is None:
                return
            if self.authenticated:
                on_message(frame[0])
            else:
                self._authenticate(frame[0], on_attach)

    def _authenticate(self, msg: Header, on_attach: Callable[[list[object], bool], None]) -> None:
        ok = msg.get("type") == "attach" and hmac.compare_digest(
            str(msg.get("token", "")).encode(), self.token.encode())
        if not ok:
            self.reply({"type": "error", "error": "attach refused: bad token"})
            self.drop()
            return
        self.authenticated = True
        on_attach([i for i in msg.get("pending", ()) if i in self.unacked], bool(msg.get("resend_tool_calls")))

    def replay(self, request_ids: list[object]) -> None:
        """Send again the kept results of ``request_ids``."""
        for i in request_ids:
            self.send_frame(self.unacked[i])
