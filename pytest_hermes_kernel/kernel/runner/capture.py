"""Bounded output capture: the worker's fd 1 and 2 as the supervisor reads them.

The supervisor drains both pipes as bytes arrive (a cell writing more than a pipe buffer from
GIL-holding C code never blocks) and keeps, per stream, the first 40 % and the last 60 % of the
cap (DESIGN.md section 4: head and tail, with the dropped byte count). Decoding and redaction
happen on the host; what travels are the raw bytes.
"""

from __future__ import annotations

import fcntl
import os
import select

from .frames import READ_CHUNK

#: ``fcntl`` command to resize a pipe (Linux ``F_SETPIPE_SZ``); not in the ``fcntl`` module before 3.10.
F_SETPIPE_SZ = 1031
#: Pipe buffer asked for (1 MiB): fewer wake-ups when a cell floods its output.
PIPE_BYTES = 1 << 20
#: How the runner's own lines on a worker's stderr begin (a worker that cannot start says why).
RUNNER_SAYS = b"hermes-kernel runner: "
#: The exit code of a worker that could not start (``worker.START_FAILED``): only with it is a
#: line that begins :data:`RUNNER_SAYS` the worker's own (a cell's leftover can write one too).
START_FAILED = 70


class BoundedCapture:
    """Keeps the first ``head_cap`` and the last ``tail_cap`` bytes of one stream.

    :param cap: bytes kept in all (head + tail); ``0`` keeps nothing but still counts.
    """

    def __init__(self, cap: int) -> None:
        self.cap = max(0, int(cap))
        self.head_cap = self.cap * 2 // 5
        self.tail_cap = self.cap - self.head_cap
        self.reset()

    def reset(self) -> None:
        """Forget everything captured so far (a new cell begins)."""
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        """Count ``data`` and keep what fits in the head, then the newest bytes in the tail."""
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_cap:
            self.tail += data
            extra = len(self.tail) - self.tail_cap
            if extra > 0:
                del self.tail[:extra]

    def take(self) -> tuple[bytes, bytes, int, int]:
        """Return ``(head, tail, total, dropped)`` (bytes, bytes, byte counts) and start over."""
        head, tail, total = bytes(self.head), bytes(self.tail), self.total
        self.reset()
        return head, tail, total, total - len(head) - len(tail)


def set_nonblocking(fd: int) -> None:
    """Put ``fd`` in non-blocking mode."""
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


class OutputPipes:
    """The two pipes every worker writes its fd 1 and 2 into, and their captures.

    The pipes outlive workers (a restart forks a new worker onto the same write ends), so
    output of a cell's leftover child still arrives, and is dropped while no cell runs: counted
    (``stdout_stray``/``stderr_stray``), so the next cell's result can say so.

    :param cap: bytes kept per stream and cell (see :class:`BoundedCapture`).
    """

    def __init__(self, cap: int) -> None:
        self.out_r, self.out_w = os.pipe()
        self.err_r, self.err_w = os.pipe()
        self.out = BoundedCapture(cap)
        self.err = BoundedCapture(cap)
        self.stray = {self.out_r: 0, self.err_r: 0}  # bytes read while no cell ran, since the last take()
        self.said = b""  # the runner's own last line among them since the worker was forked (:meth:`new_worker`)
        self._poll = select.poll()  # which pipe has bytes, in one call (see drain)
        for fd in (self.out_r, self.err_r):
            self._poll.register(fd, select.POLLIN)
            set_nonblocking(fd)
            try:
                fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass

    @property
    def read_ends(self) -> tuple[int, int]:
        """The supervisor's ends (the worker closes them)."""
        return self.out_r, self.err_r

    @property
    def write_ends(self) -> tuple[int, int]:
        """The worker's ends: they become its fd 1 and 2."""
        return self.out_w, self.err_w

    def reset(self) -> None:
        """Start both captures over (a new cell begins)."""
        self.out.reset()
        self.err.reset()

    def on_readable(self, fd: int, capturing: bool) -> None:
        """Read one chunk from the pipe ``fd``; keep it only while ``capturing`` (a cell runs)."""
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return
        if capturing:
            (self.out if fd == self.out_r else self.err).add(data)
        else:
            self._stray(fd, data)

    def drain(self, capturing: bool, limit: int | None = None) -> None:
        """Read both pipes empty, or ``limit`` bytes of each at most (a writer that never stops
        must not hold a wait that reads between its polls); keep the bytes only while ``capturing``.

        Only a pipe ``poll`` finds readable is read: everything written before this call is found
        (a cell's output, written before its result was sent, is in the pipe by then). Two reads
        that each failed ``EAGAIN``, twice a cell, cost the supervisor more than one ``poll``.
        """
        ready = [fd for fd, _ in self._poll.poll(0)]
        for fd, cap in ((self.out_r, self.out), (self.err_r, self.err)):
            if fd not in ready:
                continue
            left = limit
            while left is None or left > 0:
                try:
                    data = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    break
                if not data:
                    break
                if left is not None:
                    left -= len(data)
                if capturing:
                    cap.add(data)
                else:
                    self._stray(fd, data)

    def new_worker(self) -> None:
        """A worker is forked now: what was said before (by an earlier worker, or a cell's
        leftover) is not its word (it was handed with a later, unrelated death)."""
        self.drain(capturing=False, limit=PIPE_BYTES)  # (a leftover that floods holds no restart)
        self.said = b""

    def last_said(self, exit_code: int | None) -> str:
        """The runner's own last line in the output no cell took (the pipes drained first): why a
        worker that died between cells could not start; ``""`` for none, and for a worker that
        did not exit as a failed start does (a line a cell's leftover wrote, then ended it)."""
        self.drain(capturing=False)
        return self.said.decode("utf-8", "replace") if exit_code == START_FAILED else ""

    def _stray(self, fd: int, data: bytes) -> None:
        """Count ``data`` as output written while no cell ran, but for the runner's own lines (a
        worker that could not start: its line was called a leftover's dropped output too)."""
        at = data.rfind(RUNNER_SAYS)
        own = 0
        if fd == self.err_r and at >= 0:
            self.said = data[at:].split(b"\n")[0][:500]
            own = sum(len(line) + 1 for line in data.split(b"\n")[:-1] if line.startswith(RUNNER_SAYS))
        self.stray[fd] += len(data) - own

    def take(self) -> tuple[dict[str, int], tuple[bytes, bytes, bytes, bytes]]:
        """The result header's byte counts and the four blobs (stdout head, tail, stderr head, tail)."""
        oh, ot, ototal, odropped = self.out.take()
        eh, et, etotal, edropped = self.err.take()
        counts = {"stdout_total": ototal, "stdout_dropped": odropped,
                  "stderr_total": etotal, "stderr_dropped": edropped,
                  "stdout_stray": self.stray[self.out_r], "stderr_stray": self.stray[self.err_r]}
        self.stray = {self.out_r: 0, self.err_r: 0}
        self.said = b""
        return counts, (oh, ot, eh, et)
