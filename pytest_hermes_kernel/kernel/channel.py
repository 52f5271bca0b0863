"""The host end of a channel: framed messages over a byte stream, replies matched by id.

Any thread may wait for a reply. Whoever waits first reads the stream for everyone (a
leader/follower hand-off), so the common single-threaded ``execute`` pays no thread switch.
Frames whose id nobody expects any more are stale and dropped, never handed to a later request.

A frame may be sent from a signal handler (``KernelHandle.interrupt()`` on SIGINT or SIGTERM, as
``hermes-kernel exec`` does): Python runs the handler in the main thread between two steps of
whatever that thread does, which can be its own send, lock held and frame half written. Such a
send goes out from a thread of its own once the interrupted one is done (:meth:`Channel.send`).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import select
import socket
import threading
import time
import weakref
from typing import Any

from ..errors import ChannelClosed, FrameTooLargeError, ProtocolError
from .contract import ByteStream, note_activity
from .pieces import PIECE_BYTES, frame_out
from .results import MAX_FRAME_BYTES, FrameDecoder, FrameError

Frame = tuple[dict[str, Any], list[bytes]]


_leases: weakref.WeakSet[socket.socket] = weakref.WeakSet()
_fork_hooked = False


def lease(sock: Any) -> Any:
    """Mark ``sock``, a kernel's (or kernel server's, or ssh connection's) lease on this process, as this process's own:
    a forked child closes its copy at the fork (the kernels are not the child's; it cannot use them).
    The child held copies, so a host SIGKILLed beside a live child left its local kernels and kernel
    server running for as long as the child lived. The fork hook is registered at the first use."""
    global _fork_hooked
    if not isinstance(sock, socket.socket):  # (an ssh ProxyCommand's pipe, a test's stand-in)
        return sock
    if not _fork_hooked:
        _fork_hooked = True
        os.register_at_fork(after_in_child=_drop_leases)
    _leases.add(sock)
    return sock


def _drop_leases() -> None:
    """In a forked child: close its copies of the parent's lease sockets (the parent's stay open);
    the socket objects read as closed (``fileno() == -1``), so nothing closes that fd number again."""
    for sock in list(_leases):
        with contextlib.suppress(OSError):
            fd = sock.detach()
            if fd >= 0:
                os.close(fd)
    _leases.clear()


#: Bytes one read asks for while replies are short. A read of 1 MiB was a fresh buffer from the C
#: allocator every time, above its mmap threshold: an ``mmap``, ``mremap`` and ``munmap`` for each
#: reply, three of the eight system calls of a trivial cell's round trip on the host (strace).
READ_BYTES_SHORT = 1 << 16
#: Bytes one read asks for once a read came back full (a long frame streaming in).
READ_BYTES_BULK = 1 << 20


def _text_seen(head: bytes) -> str:
    """What bytes read where a frame was due say when they are text: a message something on the way
    wrote into the stream (docker's ``OCI runtime exec failed: ...`` for an exec in a container that
    had ended read as the frame length 1329809696, the bytes ``OCI ``; a helper's run, 2026-12-07);
    ``""`` when they are not text."""
    text = head.decode("utf-8", "replace")
    if not text or sum(c.isprintable() or c in "\r\n\t" for c in text) < 0.95 * len(text):
        return ""
    return f": the stream carried text, not a frame: {text.strip()!r}"


def next_read_bytes(got: int, asked: int) -> int:
    """The size of the next read, after one of ``asked`` bytes brought ``got``: bulk after a full read."""
    return READ_BYTES_BULK if got >= asked else READ_BYTES_SHORT


class SocketStream:
    """:class:`ByteStream` over a connected socket (a socketpair end for local kernels).

    The socket stays in blocking mode and a ``recv`` timeout is a ``poll`` before reading.
    Switching the socket's timeout per call raced with a send from another thread (an
    ``interrupt()`` while a cell's reader waits): the reader's ``recv`` then ran on a socket
    left non-blocking and failed with EAGAIN, which closed the channel and killed the kernel,
    or ran blocking and overslept the watchdog's deadline.
    """

    #: :meth:`send` may take a long frame in pieces (:meth:`Channel.send`), each sent whole and in order.
    sends_pieces = True

    def __init__(self, sock: socket.socket) -> None:
        self.sock = lease(sock)
        self._read_bytes = READ_BYTES_SHORT
        sock.settimeout(None)
        # A stream dropped unclosed (a handle nobody shut down, whose kernel the leak check ended)
        # ends its lease as its collection would, without the socket's ResourceWarning: pytest turned
        # that into a traceback at its end, exit status 1 under -W error (the kit warns of the leak).
        weakref.finalize(self, sock.close).atexit = False

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self, timeout: float | None) -> bytes:
        """:returns: ``b""`` at EOF, also once the socket was closed under it (a ``shutdown()`` from
            a signal handler closes it from another thread: a bare ``ValueError`` of ``poll``
            on fd -1, or ``EBADF``, reached the caller of ``execute``).
        """
        try:
            if timeout is not None:
                poller = select.poll()
                poller.register(self.sock, select.POLLIN)
                if not poller.poll(min(max(0.0, timeout) * 1000.0, POLL_MAX_MS)):  # milliseconds
                    raise TimeoutError  # (at POLL_MAX_MS too: the caller's loop holds the deadline)
            data = self.sock.recv(self._read_bytes)
            self._read_bytes = next_read_bytes(len(data), self._read_bytes)
            return data
        except (ValueError, OSError):
            if self.sock.fileno() == -1:  # closed by us
                return b""
            raise

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


#: The longest one ``poll`` waits, in milliseconds (a C int: about 24.8 days); a longer timeout is
#: several waits. ``start_timeout=3e6`` (35 days) raised ``OverflowError: timeout is too large``.
POLL_MAX_MS = 2**31 - 1


class Channel:
    """Framed request/reply over a :class:`ByteStream`."""

    def __init__(self, stream: ByteStream, *, name: str = "channel") -> None:
        self.stream = stream
        self.name = name
        self._decoder = FrameDecoder()
        self._send_lock = threading.Lock()
        self._sending = threading.local()  # .now: this thread is in send (set before the lock)
        # reentrant: a shutdown() from a signal handler marks the channel closed while this
        # thread's own wait may hold it (:meth:`mark_closed`)
        self._cond = threading.Condition(threading.RLock())
        self._inbox: dict[Any, collections.deque[Frame]] = {}
        self._reading = False
        self._closed: str | None = None
        self._closed_by_us = False
        self._ids = itertools.count(1)
        self.stale_frames = 0

    # ------------------------------------------------------------------------------ sending
    def next_id(self) -> int:
        return next(self._ids)

    def send(self, header: dict[str, Any]) -> None:
        """Send one frame.

        :raises ChannelClosed: if the stream is closed or broken.
        :raises FrameTooLargeError: if the frame would exceed the frame limit (nothing is sent).
        """
        if self._closed:
            raise ChannelClosed(f"{self.name} is closed: {self._closed}", closed_by_us=self._closed_by_us)
        frame = frame_out(header)
        if frame.size > MAX_FRAME_BYTES:
            raise FrameTooLargeError(f"a {header.get('type')} request of {frame.size} bytes is over the "
                                     f"{MAX_FRAME_BYTES}-byte frame limit; nothing was sent, the kernel is untouched")
        note_activity()
        if getattr(self._sending, "now", False):
            # a signal handler running inside this thread's own send: waiting for the lock would
            # wait for itself, forever (the runaway cell of an ``exec`` ended by SIGTERM ran on);
            # sending here would cut the frame in half. It goes out whole, after that frame.
            threading.Thread(target=self._send_later, args=(frame.joined(),), name=f"{self.name}-send-from-handler",
                             daemon=True).start()
            return
        # a long frame goes in pieces where the stream takes them (its bytes made as they go out:
        # a 60 MB tool value was its text and the whole frame's bytes at once, now its text)
        pieces = (frame.pieces() if frame.size > PIECE_BYTES and getattr(self.stream, "sends_pieces", False)
                  else (frame.joined(),))
        self._sending.now = True  # before the lock: a handler from here on takes the branch above
        sent, whole = 0, False
        try:
            with self._send_lock:
                for piece in pieces:
                    self.stream.send(piece)
                    sent += 1
                whole = True
        except OSError as exc:
            self._mark_closed(f"send failed: {exc}")
            raise ChannelClosed(f"{self.name} broke while sending: {exc}", closed_by_us=False) from None
        finally:
            self._sending.now = False
            if sent and not whole:  # a Ctrl-C between two pieces: the peer holds half a frame, and reads the next
                # frames as its rest (a shutdown() then waited 10 s for a reply and killed the runner from outside)
                self.mark_closed("a frame was cut midway (a Ctrl-C between its pieces): the stream is unusable")

    def _send_later(self, data: bytes) -> None:
        """A frame sent from a signal handler, once the send it interrupted is done (a failure
        closes the channel, as in :meth:`send`; its reader reports that)."""
        try:
            with self._send_lock:
                self.stream.send(data)
        except OSError as exc:
            self._mark_closed(f"send failed: {exc}")

    def expect(self, rid: Any) -> None:
        """Register ``rid`` so that frames carrying it are kept for :meth:`wait`."""
        with self._cond:
            self._inbox.setdefault(rid, collections.deque())

    def forget(self, rid: Any) -> None:
        """Stop expecting ``rid``; later frames with it are stale and dropped."""
        with self._cond:
            self._inbox.pop(rid, None)

    def request(self, header: dict[str, Any], timeout: float | None) -> Frame:
        """Send ``header`` with a fresh id and wait for the frame that answers it."""
        rid = header.setdefault("id", self.next_id())
        self.expect(rid)
        try:
            self.send(header)
            return self.wait(rid, timeout)
        finally:
            self.forget(rid)

    # ------------------------------------------------------------------------------ receiving
    def wait(self, rid: Any, timeout: float | None) -> Frame:
        """Return the next frame for ``rid``.

        :param timeout: seconds; ``None`` waits until the frame comes or the channel closes.
        :raises TimeoutError: if nothing for ``rid`` arrived in time.
        :raises ChannelClosed: if the stream ended first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cond:
                while True:
                    box = self._inbox.get(rid)
                    if box:
                        return box.popleft()
                    if self._closed:
                        raise ChannelClosed(f"{self.name} closed: {self._closed}",
                                            closed_by_us=self._closed_by_us)
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise TimeoutError(f"no reply for {rid!r} on {self.name} within {timeout} s")
                    if not self._reading:
                        self._reading = True
                        break
                    self._cond.wait(remaining)
            self._read_some(remaining)

    def _read_some(self, timeout: float | None) -> None:
        frames: list[Frame] = []
        error = None
        try:
            frames = self._read_frames(timeout)
        except TimeoutError:
            pass
        except (OSError, ChannelClosed, ProtocolError) as exc:
            error = str(exc) or type(exc).__name__
        finally:  # also after a KeyboardInterrupt in the read: else every later wait timed out unread
            with self._cond:
                self._reading = False
                for frame in frames:
                    self._route(frame)
                if error is not None and not self._closed:
                    self._closed = error
                self._cond.notify_all()

    def unfinished_frame(self) -> str:
        """What an unfinished frame from the runner the channel holds says, for a timeout's note
        (``""``: none): bytes of its stream lost on the way leave one waiting for bytes that never come."""
        held = self._decoder.partial()
        if held is None:
            return ""
        have, announced = held
        of = f"of the {announced} bytes " if announced is not None else ""
        return (f"the channel holds {have} {of}of an unfinished frame from the runner: bytes of its stream were "
                "lost or cut on the way (the transport's stream or relay), or the runner hung mid-frame")

    def _read_frames(self, timeout: float | None) -> list[Frame]:
        frames = self._decode_all()
        if frames:
            return frames
        data = self.stream.recv(timeout)
        if not data:
            raise ChannelClosed("end of stream (the kernel runner or its relay is gone)")
        note_activity()  # a cell's frames: it may be starting processes
        self._decoder.feed(data)
        return self._decode_all()

    def _decode_all(self) -> list[Frame]:
        frames = []
        try:
            while (frame := self._decoder.next_frame()) is not None:
                frames.append(frame)
        except FrameError as exc:
            raise ProtocolError(f"bad frame from the kernel runner: {exc}{_text_seen(self._decoder.peek(300))}") from None
        return frames

    def _route(self, frame: Frame) -> None:
        header = frame[0]
        key = header.get("cell") if header.get("type") == "tool_call" else header.get("id")
        if key is None:
            key = header.get("type")
        box = self._inbox.get(key)
        if box is None:
            self.stale_frames += 1
            return
        box.append(frame)

    # ------------------------------------------------------------------------------ closing
    @property
    def closed(self) -> str | None:
        return self._closed

    def _mark_closed(self, why: str) -> None:
        with self._cond:
            if not self._closed:
                self._closed = why
            self._cond.notify_all()

    def mark_closed(self, why: str) -> None:
        """Mark the channel closed by us, its stream untouched: every wait and send from now on
        gets :class:`ChannelClosed` (``closed_by_us=True``). For a ``shutdown()`` from a signal
        handler, whose thread may be inside the stream (a lock held): :meth:`close` it later
        from another thread."""
        with self._cond:
            if not self._closed:
                self._closed = why
                self._closed_by_us = True
            self._cond.notify_all()

    def close(self, why: str = "closed by the host") -> None:
        """Close the stream; waiters get :class:`ChannelClosed` with ``closed_by_us=True``."""
        self.mark_closed(why)
        try:
            self.stream.close()
        except OSError:
            pass
