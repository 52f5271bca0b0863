"""The ``filecell`` byte stream: a :class:`~pytest_hermes_kernel.kernel.channel.ByteStream` made of
long polls, each one ``execute`` of the kernel runner's client.

The channel writes frames and reads frames as for any transport. Here:

* ``send``: when no poll runs, a poll starts at once and carries the frames in its command
  line (a cell's ``execute`` frame and the wait for its result are one execute). When a poll
  runs (its client is attached and waiting), frames are dropped into the kernel dir (one
  execute) and the waiting client sends them on its connection: the supervisor accepts one
  client at a time, and a second client would push the first out. An ``interrupt`` goes the
  same way, never as a signal to the worker: only the supervisor knows whether the cell it
  names runs yet (a signal overtook an ``execute`` dropped just before it, and the worker
  ignores a SIGINT between cells).
* ``recv`` starts a poll when frames wait to go or a reply is outstanding, and returns what
  the polls brought. The channel waits in slices of 0.1 s; a poll runs on a thread for up to
  ``poll_window_s`` regardless, so slices never cost executes.
* Before a poll's window ends, the next poll starts and takes over (the supervisor drops the
  old client, which relays everything sent to it first). A poll that returns a tool call or a
  cell's ``running`` frame leaves a holder attached (see
  :mod:`pytest_hermes_kernel.kernel.runner.client`) whose spool the next poll relays, so nothing
  the supervisor sends while a cell runs is lost (a poll never asks it for the unanswered tool
  calls it keeps for a re-attach); results are also replayed from the supervisor's
  unacknowledged results.
* Results relayed twice (by a pushed-out client and by the replay) reach the channel once.
"""

from __future__ import annotations

import collections
import errno
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ...kernel.results import FrameDecoder, encode_frame
from ..kernel_dirs import short_of
from .backends import TIMEOUT_EXIT
from .scripts import ClientOutput

_WHOLE_OUTPUT = " (an execute backend must return a command's whole output: no cap, no rewriting)"
#: The hint of a poll that got no thread, its own or its backend call's (``can't start new thread``).
_NO_THREAD = ("this process has run out of processes: threads count; ulimit -u, a pids cgroup: end processes or "
              "threads, or raise the limit")
#: Request type -> the reply type that settles it.
REQUESTS = {"execute": "result", "start_worker": "worker", "kill_worker": "killed", "ping": "pong",
            "shutdown": "bye"}
REPLIES = frozenset(REQUESTS.values()) | {"error"}


class FileCellSite(Protocol):
    """What the stream needs from the transport (one kernel dir on one backend)."""

    def poll(self, frames: bytes, *, wait: list[Any], pending: list[Any], window_s: float,
             pickup_s: float, early: int) -> ClientOutput: ...

    def drop(self, frames: bytes, seq: int) -> None: ...


@dataclass
class _Poll:
    started: float
    deadline: float
    carries_frames: bool
    thread: threading.Thread | None = None


class FileCellStream:
    """A byte stream over long polls (see module docstring).

    :param site: runs the polls, drops frames, signals the worker.
    :param initial: raw frames the launch brought back (the hello).
    :param poll_window_s: how long one poll may wait for a reply.
    :param handover_s: the next poll starts this long before the current one's window ends.
    :param max_failures: consecutive failed polls before the stream counts as broken.
    :param clock: monotonic clock (a seam for tests).
    """

    def __init__(self, site: FileCellSite, initial: list[bytes], *, poll_window_s: float = 20.0,
                 handover_s: float = 3.0, max_failures: int = 3,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._site = site
        self._window = poll_window_s
        self._handover = min(handover_s, poll_window_s / 2)
        self._max_failures = max_failures
        self._clock = clock
        self._cond = threading.Condition()
        self._outbox: list[bytes] = []
        self._inbox = bytearray()
        self._outstanding: dict[Any, str] = {}
        self._answered = _RecentSet()
        self._seen_tool_calls = _RecentSet()
        self._polls: list[_Poll] = []
        self._hello_sent = False
        self._broken: str | None = None
        self._closed = False
        self._failures = 0
        self._retry_at = 0.0
        self._drop_seq = 0
        self.worker_pid: int | None = None
        self.polls_started = 0
        for raw in initial:
            self._take(raw)

    # ------------------------------------------------------------------------------ ByteStream
    def send(self, data: bytes) -> None:
        """Queue frames for the kernel; see module docstring.

        :raises BrokenPipeError: if the stream is closed or broken.
        """
        drops: list[bytes] = []
        with self._cond:
            seq = self._drop_seq
            if self._closed or self._broken:
                raise BrokenPipeError(self._broken or "filecell stream is closed")
            if self._polls:
                self._drop_seq += 1  # reserved now: a poll started later sends it before its own frames
            for header, raw in _frames(data):
                kind = header.get("type")
                if kind in REQUESTS and header.get("id") is not None:
                    if kind == "execute":  # a new cell settles every earlier one
                        self._outstanding = {k: v for k, v in self._outstanding.items() if v != "execute"}
                    self._outstanding[header["id"]] = kind
                if self._polls:
                    drops.append(raw)
                else:
                    self._outbox.append(raw)
            self._schedule()  # frames go out now, not at the next recv
            self._cond.notify_all()
        if drops:
            self._site.drop(b"".join(drops), seq)

    def recv(self, timeout: float | None) -> bytes:
        """What the polls brought; ``b""`` once the stream is closed.

        :raises ConnectionResetError: once the stream broke (the runner is gone, polls failed),
            saying why (:attr:`broken`): the channel's close reason, so the kernel's death note
            names it.
        :raises TimeoutError: if nothing came within ``timeout`` seconds (polls go on).
        """
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                if self._inbox:
                    data = bytes(self._inbox)
                    self._inbox.clear()
                    return data
                if self._closed:
                    return b""
                if self._broken:
                    raise ConnectionResetError(f"filecell stream broke: {self._broken}")
                self._schedule()
                left = None if deadline is None else deadline - self._clock()
                if left is not None and left <= 0:
                    raise TimeoutError("no frame from the filecell kernel yet")
                self._cond.wait(0.25 if left is None else min(left, 0.25))

    def close(self) -> None:
        """Make every ``recv`` return ``b""``; running polls end with the runner (never waited for)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for running polls to end; True when none is left."""
        end = self._clock() + timeout
        for poll in list(self._polls):
            if poll.thread is not None:
                poll.thread.join(max(0.0, end - self._clock()))
        return not self._polls

    @property
    def broken(self) -> str | None:
        """Why the stream ended (the runner is gone, polls failed), or ``None``."""
        return self._broken

    # ------------------------------------------------------------------------------ polls
    def _schedule(self) -> None:
        """Start a poll if one is due (lock held)."""
        now = self._clock()
        if now < self._retry_at:
            return
        if self._outbox and not self._polls:
            frames = b"".join(self._outbox)
            self._outbox.clear()
            self._start_poll(frames)
        elif self._outstanding and (not self._polls or (
                len(self._polls) == 1 and self._polls[0].deadline - now < self._handover)):
            self._start_poll(b"")

    def _start_poll(self, frames: bytes) -> None:
        now = self._clock()
        poll = _Poll(started=now, deadline=now + self._window, carries_frames=bool(frames))
        wait = list(self._outstanding)
        pending = [k for k, v in self._outstanding.items() if v == "execute"]
        early = self._drop_seq  # drops before this go out first; this seq is the poll's own (big frames)
        self._drop_seq += 1
        poll.thread = threading.Thread(target=self._run_poll, args=(poll, frames, wait, pending, early),
                                       name="hermes-filecell-poll", daemon=True)
        self._polls.append(poll)
        self.polls_started += 1
        try:
            poll.thread.start()
        except RuntimeError as exc:  # "can't start new thread": left in the list, a later join() raised
            self._polls.remove(poll)
            if frames:
                self._outbox.insert(0, frames)  # never sent: the next poll carries them as they are
            self._failed(f"no thread for a poll: {exc} ({_NO_THREAD})")

    def _run_poll(self, poll: _Poll, frames: bytes, wait: list[Any], pending: list[Any], early: int) -> None:
        error: BaseException | None = None
        out = ClientOutput()
        try:
            out = self._site.poll(frames, wait=wait, pending=pending, window_s=self._window,
                                  pickup_s=max(0.0, self._window - self._handover - 1.0), early=early)
        except Exception as exc:  # noqa: BLE001 - any backend failure is judged below
            error = exc
        with self._cond:
            self._polls.remove(poll)
            for raw in out.frames:
                self._take(raw)
            self._judge(out, error, frames, self._clock() - poll.started)
            self._cond.notify_all()

    def _judge(self, out: ClientOutput, error: BaseException | None, frames: bytes, took: float = 0.0) -> None:
        """Decide what a finished poll means for the stream (lock held); ``took``: the poll's seconds."""
        if out.cut == "start":  # the client ran (it may have sent the frames): never sent again
            self._broken = (f"the backend cut the start off a poll's output (it returned {out.chars} characters "
                            "ending in the client's end line, with no begin line): the frames before the cut are "
                            f"lost{_WHOLE_OUTPUT}")
            return
        if out.status in ("done", "tool", "running", "deadline") or (out.status == "eof" and (out.sent or not frames)):
            self._failures = 0
            return
        if out.status == "gone":
            self._broken = ("the kernel runner is gone (nothing listens on its socket): it ended; or the backend "
                            "ended it with the command that started it (background processes must outlive their "
                            "command); or its kernel dir did not last from one execute to the next (every command "
                            "must see the same filesystem and processes)")
            return
        if out.status == "error":
            self._broken = "the kernel runner refused the client (bad token or bad frame)"
            return
        short = short_of(error) if isinstance(error, OSError) and error.errno != errno.ENOSPC else ""
        if isinstance(error, RuntimeError) and "can't start new thread" in str(error):
            error, short = RuntimeError(f"no thread for a poll's backend call: {error}"), _NO_THREAD
        why = (f"{type(error).__name__}: {error}{f' ({short})' if short else ''}" if error else
               f"the client's output stops before its end line after {out.chars} characters: the backend cut it short "
               f"or the client was killed{_WHOLE_OUTPUT}" if out.cut == "end" else
               f"no client output ({' | '.join(out.noise)[-300:]})")
        if (isinstance(error, TimeoutError) or (error is None and out.code == TIMEOUT_EXIT)) and took < self._window:
            why += (f"; the backend ended the poll at a time limit of its own after {took:.1f} s (exit "
                    f"{TIMEOUT_EXIT} or TimeoutError), though it may wait {self._window:g} s for the cell: give "
                    "FileCellTransport a poll_window_s under the backend's command time limit")
        if frames and not out.sent:  # not sent, or the output that says so lost
            if (error is not None or out.cut) and not _resendable(frames):  # it may have run: sending
                self._broken = f"a poll carrying frames failed ({why})"  # again could do it twice
                return
            self._outbox.insert(0, _again(frames))  # the runner knows a cell again, an interrupt by its number
        self._failed(why)

    def _failed(self, why: str) -> None:
        """Count a failed poll (lock held): the stream breaks at the limit, else the next waits a while."""
        self._failures += 1
        if self._failures >= self._max_failures:
            self._broken = f"{self._failures} polls failed in a row; last: {why}"
        else:
            self._retry_at = self._clock() + 0.2 * 2 ** self._failures

    def _take(self, raw: bytes) -> None:
        """Route one frame a poll brought (lock held): drop duplicates and extra hellos."""
        header = _header(raw)
        kind = header.get("type")
        if header.get("worker_pid"):
            self.worker_pid = int(header["worker_pid"])
        if kind == "hello":
            if self._hello_sent:
                return  # every poll's attach is answered by a hello: only the launch's counts
            self._hello_sent = True
        elif kind == "tool_call":
            if header.get("id") in self._seen_tool_calls:
                return
            self._seen_tool_calls.add(header.get("id"))
        elif kind in REPLIES and header.get("id") is not None:
            rid = header["id"]
            if kind == "result" and rid in self._answered:
                return  # replayed to a later poll after a pushed-out one relayed it
            if self._outstanding.pop(rid, None) is not None or kind == "result":
                self._answered.add(rid)
        self._inbox += raw


class _RecentSet:
    """A set that remembers only its last ``size`` members (ids of settled requests)."""

    def __init__(self, size: int = 1024) -> None:
        self._order: collections.deque[Any] = collections.deque()
        self._members: set[Any] = set()
        self._size = size

    def add(self, item: Any) -> None:
        if item in self._members:
            return
        self._members.add(item)
        self._order.append(item)
        if len(self._order) > self._size:
            self._members.discard(self._order.popleft())

    def __contains__(self, item: Any) -> bool:
        return item in self._members


def _header(raw: bytes) -> dict[str, Any]:
    decoder = FrameDecoder()
    decoder.feed(raw)
    frame = decoder.next_frame()
    return frame[0] if frame else {}


#: Requests a runner takes once however often they come: a cell marked ``again`` (the same cell,
#: see :func:`_again`), a tool's result (the worker ignores one it has), an interrupt (numbered per
#: cell), a ping. A restart's ``kill_worker`` sent twice would kill its fresh worker.
_RESENDABLE = frozenset({"execute", "tool_result", "interrupt", "ping"})


def _resendable(data: bytes) -> bool:
    return all(header.get("type") in _RESENDABLE for header, _ in _decoded(data))


def _again(data: bytes) -> bytes:
    """``data`` with each ``execute`` marked ``again``: a runner that has that cell (it runs, or its
    result is kept) takes it for the same cell, never a second one (a poll whose client printed
    nothing, its output lost by the backend, may have sent it)."""
    return b"".join(encode_frame({**header, "again": True} if header.get("type") == "execute" else header, blobs)
                    for header, blobs in _decoded(data))


def _decoded(data: bytes) -> list[tuple[dict[str, Any], tuple[bytes, ...]]]:
    decoder = FrameDecoder()
    decoder.feed(data)
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append((frame[0], tuple(frame[1])))
    return out


def _frames(data: bytes) -> list[tuple[dict[str, Any], bytes]]:
    return [(header, encode_frame(header, blobs)) for header, blobs in _decoded(data)]
