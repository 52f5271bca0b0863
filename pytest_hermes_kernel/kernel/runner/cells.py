"""The supervisor's book of the running cell: its request, its output, how it ended.

One cell at a time. Its output is what the worker's pipes carry between ``begin`` and the
result (output between cells belongs to no cell and is dropped). A worker that dies mid-cell
ends the cell as ``died``, an OOM kill only when the memory cgroup's counter rose during it (read
at the cell's start and at the death, never carried over from an earlier cell); a
cell that raised ``SystemExit`` ends as ``exited`` once the worker has really exited, with the
exit code ``waitpid`` saw.

A cell that lives on while the OOM killer ends another process of its memory cgroup (a
subprocess it ran) carries the count (``oom_kills``): it came back ``ok`` without a word.

The running cell's tool calls stay here until they are answered: a call sent while no host is
attached, or as the stream dropped, is lost on the way; a host that attaches gets the unanswered
ones again (:meth:`CellBook.unanswered`). The cell's end forgets them: its tool authority is
retired then, and a late answer finds no call waiting in the worker.
"""

from __future__ import annotations

import signal
import time

from .bounds import too_large
from .capture import PIPE_BYTES, OutputPipes
from .frames import MAX_FRAME_BYTES, encode_frame
from .procfs import OomCounter
from .worker_process import WorkerProcess

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .frames import Header
    from .worker_process import WorkerExit

#: Keys of an ``execute`` request the worker needs (the rest is the supervisor's).
_FORWARDED = ("type", "id", "code", "tools", "report_running")
#: How a worker's ``result`` may say its cell ended (``died`` is the supervisor's to say, never a worker's).
_WORKER_STATUSES = ("ok", "error", "interrupted", "exited")
_TEXT, _INT = (str, type(None)), (int, type(None))
#: The JSON types each field of a worker's ``result`` that the host reads may have (``bool`` apart
#: from ``int``). A cell can write frames on its worker's channel: one whose ``traceback`` was 5
#: ended the host's ``execute`` in a bare ``TypeError``, one whose ``status`` was 5 came back as that.
_RESULT_TYPES = {"value": _TEXT, "value_tail": (str,), "value_truncated": (bool,), "value_length": _INT,
                 "ename": _TEXT, "evalue": _TEXT, "traceback": _TEXT, "exit_code": _INT,
                 "execution_count": (int,), "duration_s": (int, float), "caught_interrupt": (bool,)}


def bad_result(msg: Header) -> str:
    """What makes the worker's ``result`` ``msg`` one no worker sends (``""``: nothing): an
    unknown status, or a field the host reads with a wrong JSON type."""
    if msg.get("status") not in _WORKER_STATUSES:
        return f"its result's status {msg.get('status')!r} is none of {', '.join(_WORKER_STATUSES)}"
    for key, types in _RESULT_TYPES.items():
        if key in msg and type(msg[key]) not in types:
            return f"its result's {key} is {type(msg[key]).__name__} {str(msg[key])[:40]!r}"
    return ""


class CellBook:
    """The running cell, if any (see module docstring).

    :param pipes: the worker's output pipes and their per-stream captures.
    :param worker: the worker the cells run in (its pid, generation and cgroup counter).
    """

    def __init__(self, pipes: OutputPipes, worker: WorkerProcess) -> None:
        self.pipes = pipes
        self.worker = worker
        self.cell: Header | None = None  # the running execute request
        self.exiting: Header | None = None  # the worker's "exited" result, until the worker has ended
        self.oom_baseline: int | None = None  # the counter at the running cell's start
        self.begun = 0.0  # time.monotonic() at the running cell's start (a death's duration_s)
        self._oom: OomCounter | None = None
        self._tool_calls: dict[Any, Header] = {}  # call id -> the running cell's unanswered tool_call
        self.interrupts = 0  # the highest interrupt number the running cell got (see take_interrupt)
        self.started = False  # the worker said the running cell runs: its interrupts are signals now
        self.held = False  # an interrupt came before that: signalled once the worker says it runs
        self.kill_note: str | None = None  # why the runner itself killed the running cell's worker
        worker.drain = lambda: pipes.drain(self.cell is not None, limit=PIPE_BYTES)  # (while it waits for an end)

    @property
    def running_id(self) -> Any:
        """The running cell's request id, or ``None``."""
        return None if self.cell is None else self.cell["id"]

    def sent_again(self, msg: Header, kept: dict[Any, bytes]) -> bool:
        """Whether ``msg`` is an ``execute`` sent ``again`` (a filecell host whose poll's output was
        lost cannot tell whether its client sent the cell) that runs now or whose result is kept
        (``kept``; the attach replays it): the same cell, run once, never refused as a second one."""
        return bool(msg.get("again")) and msg.get("id") is not None and (
            msg.get("id") == self.running_id or msg.get("id") in kept)

    def take_interrupt(self, msg: Header) -> bool:
        """Whether the interrupt ``msg`` is new for the running cell. A host numbers each cell's
        interrupts (``n``: 1, 2, ...) and, not knowing whether one sent into a silent stream
        arrived, sends its last again after a re-attach: one already applied is not applied twice.
        An interrupt without a number always is. One naming another cell (``id``) never is: a
        host thread that took the running cell just before it ended can send its interrupt after
        the next cell's request, and it must not interrupt that one."""
        if self.cell is None or ("id" in msg and msg["id"] != self.running_id):
            return False
        n = msg.get("n")
        if not isinstance(n, int):
            return True
        if n <= self.interrupts:
            return False
        self.interrupts = n
        return True

    def oom_count(self) -> int | None:
        """The worker's memory cgroup's OOM-kill count now (``None``: no counter to read)."""
        if self._oom is None or self._oom.path != self.worker.oom_file:
            if self._oom is not None:
                self._oom.close()
            self._oom = OomCounter(self.worker.oom_file)
        return self._oom.read()

    def close(self) -> None:
        """Close the OOM counter's descriptor (at the supervisor's shutdown)."""
        if self._oom is not None:
            self._oom.close()

    def begin(self, msg: Header) -> Header:
        """Start ``msg`` as the running cell; return the request to forward to the worker."""
        self.pipes.drain(capturing=False)
        self.pipes.reset()
        self.cell = msg
        self.interrupts = 0
        self.started = self.held = False
        self.begun = time.monotonic()
        self.oom_baseline = self.oom_count()
        return {k: v for k, v in msg.items() if k in _FORWARDED}

    def capture(self, fd: int) -> None:
        """Read one chunk of a pipe: the running cell's output, or nobody's."""
        self.pipes.on_readable(fd, capturing=self.cell is not None)

    def keep_tool_call(self, msg: Header) -> bool:
        """Keep the worker's ``tool_call`` ``msg`` until it is answered, if the running cell made it.

        :returns: whether it is the running cell's (else its cell has settled: nobody answers it).
        """
        if self.cell is None or msg.get("cell") != self.running_id:
            return False
        self._tool_calls[msg.get("id")] = msg
        return True

    def answered(self, call_id: Any) -> None:
        """The answer to tool call ``call_id`` goes to the worker: the call is no longer sent again."""
        self._tool_calls.pop(call_id, None)

    def unanswered(self) -> list[Header]:
        """The running cell's tool calls nobody answered yet, in the order the worker made them."""
        return list(self._tool_calls.values())

    def died(self, info: WorkerExit) -> Header:
        """The running cell's outcome now that its worker ended with ``info``."""
        code, sig = info
        outcome: Header = {"type": "result", "id": self.running_id, "status": "died", "exit_code": code,
                           "signal": sig, "duration_s": time.monotonic() - self.begun}  # (no reply told it)
        pending = self.exiting
        if pending is not None and pending.get("status") == "exited":
            outcome = dict(pending, exit_code=code, signal=sig)
        else:
            before, after = self.oom_baseline, self.oom_count()
            outcome["oom_killed"] = bool(sig == signal.SIGKILL and before is not None
                                         and after is not None and after > before)
            outcome["oom_counter"] = after
            if self.kill_note:  # (its SIGKILL was the runner's: no OOM killer, no kill from outside)
                outcome["note"] = self.kill_note
            elif said := self.pipes.last_said(code):  # it could not start (its cwd removed), said so before the cell
                outcome["note"] = said
        self.exiting, self.kill_note = None, None
        return outcome

    def settle(self, outcome: Header) -> tuple[Any, bytes]:
        """End the running cell with ``outcome``: its request id and the result frame.

        The pipes are drained into the captures first: everything the cell wrote before its
        result is in the result. Its unanswered tool calls are forgotten.
        """
        self.pipes.drain(capturing=self.cell is not None)
        counts, blobs = self.pipes.take()
        if outcome.get("status") != "died" and self.oom_baseline is not None:  # a child of the cell, not the worker
            now = self.oom_count()
            if now is not None and now > self.oom_baseline:
                counts["oom_kills"] = now - self.oom_baseline
                counts["oom_shared"] = "" if self.worker.counter_is_own() else (self.worker.oom_file or "")
        outcome.update(counts, worker_pid=self.worker.pid, worker_generation=self.worker.generation)
        self.cell = None
        self.started = self.held = False
        self._tool_calls.clear()
        frame = encode_frame(outcome, blobs)
        if len(frame) > MAX_FRAME_BYTES:  # never a kill for a reply's size: say so instead
            frame = encode_frame(dict(too_large(outcome, len(frame)), **counts), blobs)
        return outcome["id"], frame
