"""The worker: the forked interpreter that holds the persistent namespace and runs cells.

Forked from the supervisor (see :mod:`.supervisor`), in its own process group, with stdin on
``/dev/null`` and fd 1/2 on the supervisor's pipes. It talks to the supervisor only, over a
private socketpair, in the frames of :mod:`.frames`: it receives ``execute``/``exit`` and
``tool_result``, and sends ``ready``, ``running`` (if asked), ``result`` and ``tool_call``.

* A cell's last expression is its ``value`` (its ``repr``); ``SystemExit`` ends the worker
  after the result is sent, as a clean interpreter exit would.
* SIGINT raises ``KeyboardInterrupt`` only while a cell runs (its code and the ``repr`` of its
  value); between cells it is a late one and ignored (the supervisor signals a cell only once the
  worker said ``running`` for it, from inside the cell); never while the cell's main thread is inside the runner's own frame reading or
  writing (a tool call): there it waits for the end of that step, so the channel's bytes and
  the reader's bookkeeping stay whole.
* A tool's result and an interrupt sent after it keep their order: the call returns the result
  and ``KeyboardInterrupt`` comes at the cell's next step (one with no result yet ends the call).
* ``os.fork()`` in a cell: the child never touches the channel and never returns to the loop.
* ``hermes_tools`` (a module in ``sys.modules``) calls host tools under the running cell's
  authority; a call after its cell settled is refused.
"""

from __future__ import annotations

import builtins
import os
import select
import signal
import socket
import threading
import time
import types

from .bounds import (
    DEFAULT_TEXT_CAP,
    bound_inline,
    bound_value,
    describe_error,
    describe_exit,
    safe_repr,
    too_large,
)
from .environ import (
    end_forked_child,
    end_of_cell,
    exec_source,
    finalize_and_exit,
    raised_by_cell,
    restore_stdio,
)
from .frames import (
    MAX_FRAME_BYTES,
    READ_CHUNK,
    FrameDecoder,
    encode_frame,
    recv_or_end,
    send_all,
    unread,
)
from .kick import drop_blocked_sigint
from .tools import ToolError, encode_tool_call, install_tools_module

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from .frames import Header

    T = TypeVar("T")


#: Exit status of a worker whose own start failed (EX_SOFTWARE).
START_FAILED = 70
_RETIRED = "No active cell: the cell this call belonged to has settled, so its tool authority is retired."
#: While a cell's main thread waits for a tool's result, how often (seconds) it looks for a SIGINT
#: that arrived meanwhile (the wait itself must not be cut: see :meth:`Worker.on_sigint`).
INTERRUPT_POLL_S = 0.02
#: Seconds between the SIGINTs that carry an interrupt that followed a tool's result past the call.
AFTER_CALL_S = 0.001
_RUNNER_PACKAGE = __name__.rpartition(".")[0] + "."
#: The worker's own references: a cell runs in this interpreter and may patch the modules' (a
#: ``mock.patch("os.getpid").start()`` made the worker take itself for a cell's forked child).
_getpid, _clock = os.getpid, time.perf_counter


class Worker:
    """Runs cells and tool calls over the socket to the supervisor (see module docstring).

    :param sock: the worker's end of the private socketpair.
    :param config: the runner config (a spare's worker takes it later, :meth:`take_config`).
    """

    def __init__(self, sock: socket.socket, config: dict[str, Any]) -> None:
        self.sock, self.decoder = sock, FrameDecoder()
        self.pid = _getpid()
        self.main = types.ModuleType("__main__")  # sys.modules' in a worker: pickle finds a cell's names there
        self.namespace: dict[str, Any] = self.main.__dict__
        self.namespace["__builtins__"] = builtins
        self.execution_count = self.calls = 0
        self.cell_id: Any = None
        self.in_cell = False
        self.tools: list[str] = []
        self.take_config(config)
        # One reader at a time: the main loop and threads waiting on tool results share the
        # socket, so whoever waits reads for everyone and routes each frame to its box (a
        # thread of an earlier cell must never swallow the next cell's "execute").
        self.send_lock = threading.Lock()
        self.cond = threading.Condition()
        self.reading = self.eof = False
        self.commands: list[Header] = []  # execute / exit, for the main loop
        self.replies: dict[str, Header | None] = {}  # tool call id -> tool_result (None while pending)
        self._main = threading.get_ident()  # signal handlers run in this thread only
        self._io = 0  # > 0 while the main thread reads or writes frames
        self._interrupt_pending = self.raised = False
        self._after_call = False  # an interrupt that followed a tool's result: for the cell's next step
        self._chained = False  # SIGINT re-armed by the worker itself (see _interrupt_after_call)
        self._returning = False  # a tool call answered, past its shield, until the next one or cell
        self._looked = False  # a wait read what came before a SIGINT (_recv)
        self._rearm, self._rearmer = threading.Lock(), None  # (see _interrupt_after_call)

    def take_config(self, config: dict[str, Any]) -> None:
        """The kernel's config (a spare's worker is built before it has one)."""
        self.config = config
        self.text_cap = int(config.get("max_output_bytes", DEFAULT_TEXT_CAP))

    def on_sigint(self, signum: int, frame: Any) -> None:
        """SIGINT handler: interrupt the cell; outside a cell the runner's own code must not break.

        Inside the main thread's frame I/O the interrupt is deferred to the end of that step
        (:meth:`_leave_io`): raised there, it could drop bytes already read, cut a frame in half,
        or skip the hand-over of the reading (and the next ``execute`` would wait forever).
        """
        chained, self._chained = self._chained, False
        if not self.in_cell:
            # a late one: its cell has ended. The supervisor signals a cell only once the worker
            # said it runs (see run_cell), so no SIGINT is ever meant for a cell not begun yet
            # (one whose handler ran late, after the next request came, interrupted that cell)
            self._after_call = False
            return
        if self._io:
            self._after_call = False
            self._interrupt_pending = True
            return
        if self._after_call:
            if _in_tool_call(frame):  # still on the way back from the call: it comes again
                return
            self._after_call = False
        elif chained:  # re-armed for an interrupt that call_tool raised itself
            return
        elif self._returning and _in_tool_call(frame, runner=False):  # past the shield, the result is
            self._after_call = True  # the cell's: at its next step, as one that came under the shield
            _interrupt_after_call(self)
            return
        raise _interrupt(self)

    def _enter_io(self) -> bool:
        if threading.get_ident() != self._main:
            return False
        self._io += 1
        return True

    def _leave_io(self) -> None:
        """End a main-thread I/O step; a SIGINT that came meanwhile interrupts the cell now."""
        self._io -= 1
        if not self._io and self._interrupt_pending:
            self._interrupt_pending = False
            if self.in_cell:
                raise _interrupt(self)

    def _leave_call(self, answered: bool) -> None:
        """End a tool call's shield: a SIGINT that came meanwhile interrupts the call if its result had
        not come before it (``answered``), else the cell's next step once the call has returned."""
        self._returning = answered
        self._io -= 1
        if not self._io and self._interrupt_pending:
            self._interrupt_pending = False
            if self.in_cell:
                if not answered:
                    raise _interrupt(self)
                self._after_call = True
                _interrupt_after_call(self)

    def send(self, header: Header) -> None:
        """Send one frame to the supervisor (a process forked by a cell ends here instead).

        :raises ToolError: if a tool call cannot be a frame (:func:`.tools.encode_tool_call`); a
            result over the frame limit is sent as a ``ReplyTooLarge`` error instead.
        """
        if _getpid() != self.pid:  # a forked child of a cell never touches the channel
            os._exit(0)
        data = encode_tool_call(header) if header.get("type") == "tool_call" else encode_frame(header)
        if len(data) > MAX_FRAME_BYTES:
            data = encode_frame(too_large(header, len(data)))
        shielded = self._enter_io()
        try:
            with self.send_lock:
                send_all(self.sock, data)
        finally:
            if shielded:
                self._leave_io()

    def recv(self) -> Header:
        """The next command (``execute``/``exit``) for the main loop.

        :raises EOFError: if the supervisor closed the socket.
        """
        return self._wait(lambda: self.commands.pop(0) if self.commands else None)

    def _wait(self, take: Callable[[], T | None]) -> T | None:
        """What ``take`` finds in the frames read (:raises EOFError: at the socket's end); ``None`` if
        a SIGINT came under the caller's shield (a tool call) and nothing read before it was for it."""
        self._looked = False
        while True:
            with self.cond:
                while True:
                    got = take()
                    if got is not None:
                        return got
                    if self.eof:
                        raise EOFError
                    # (a caller's shield) once what came before it was routed: read by _recv, or by a thread under this lock
                    if self._interrupt_pending and (self._looked or (self.reading and not unread(self.sock))):
                        return None
                    if not self.reading:
                        # shielded before the claim: a SIGINT raised between the claim and the read
                        # (at the lock's release) left ``reading`` set for good, and the next cell's
                        # ``execute`` was never read (the kernel was killed as a timeout)
                        shielded = self._enter_io()
                        self.reading = True
                        break
                    self.cond.wait(INTERRUPT_POLL_S if self._io else None)
            self._read_once(shielded)

    def _read_once(self, shielded: bool) -> None:
        data = None
        try:
            if shielded:
                data = self._recv(True)
            elif not select.select([self.sock], [], [], self.sock.gettimeout())[0]:  # (a thread reads under
                data = b""  # the lock, below: _wait never looks between its read and its routing)
        except OSError as exc:  # the channel's end; but a cell's signal handler's error (its TimeoutError) is the
            if raised_by_cell(exc):  # cell's: read as the end, it ended the worker and the cell said EOFError
                raise
            data = b""
        finally:  # also when no data came: hand the reading over
            try:
                with self.cond:
                    self.reading = False
                    if data is None and not shielded:
                        data = recv_or_end(self.sock)
                    if data:
                        self.decoder.feed(data)
                        while (frame := self.decoder.next_frame()) is not None:
                            self._route(frame[0])
                    elif data is not None:
                        self.eof = True
                    self.cond.notify_all()
            finally:
                if shielded:
                    self._leave_io()

    def _recv(self, main: bool) -> bytes | None:
        """The next bytes from the socket; in a cell's main thread, once a SIGINT came, what is
        readable at once (``None``: nothing)."""
        if not main or not self.in_cell:  # a thread, or between cells (a SIGINT is ignored): nothing to cut
            return self.sock.recv(READ_CHUNK)
        while not self._interrupt_pending:
            if select.select([self.sock], [], [], INTERRUPT_POLL_S)[0]:
                return self.sock.recv(READ_CHUNK)
        # what came before the SIGINT is read first (the supervisor writes a result, then signals)
        self._looked, chunks = True, []
        while unread(self.sock):
            chunks.append(chunk := self.sock.recv(READ_CHUNK))
            if not chunk:
                break
        return b"".join(chunks) if chunks else None

    def _route(self, msg: Header) -> None:
        if msg.get("type") != "tool_result":
            self.commands.append(msg)
        elif msg.get("id") in self.replies:
            self.replies[msg["id"]] = msg

    def loop(self) -> bool:
        """Say ``ready``, then run cells until ``exit`` (``True``) or EOF (``False``)."""
        self.send({"type": "ready", "pid": self.pid})
        while True:
            try:
                msg = self.recv()
            except (EOFError, OSError):
                return False
            kind = msg.get("type")
            if kind == "execute":
                self.run_cell(msg)
            elif kind == "exit":
                return True

    # ------------------------------------------------------------------------------ cells
    def run_cell(self, msg: Header) -> None:
        """Run one ``execute`` request and send its ``result`` (then exit on ``SystemExit``)."""
        with self._rearm:
            self.execution_count += 1
            self._interrupt_pending = self._after_call = self._chained = self._returning = self.raised = False
            drop_blocked_sigint()  # one the main thread blocked (an earlier cell's mask) is no later cell's
        if self._rearmer is not None:  # it ends at its next tick, seeing the new count: not in the cell
            self._rearmer.join(1.0)
            self._rearmer = None
        restore_stdio()  # an earlier cell may have closed or redirected fd 1/2
        install_tools_module(self)  # or deleted hermes_tools from sys.modules (it has no spec to be found by)
        self.cell_id = msg["id"]
        self.tools = list(msg.get("tools", ()))
        started = _clock()
        reply: Header = {"type": "result", "id": msg["id"], "status": "ok"}
        exiting = None
        try:
            self.in_cell = True  # (inside the try: a SIGINT right after it is the cell's)
            # the supervisor holds the cell's interrupts until it reads this (see on_sigint); one
            # that lands while it is sent interrupts the cell once it is sent (frame I/O)
            self.send({"type": "running", "id": msg["id"]})
            value = exec_source(msg.get("code", ""), self.namespace)
            # the value's __repr__ is the cell's code too: an interrupt while it runs ends the cell
            text = None if value is None else safe_repr(value)
            self.in_cell = False
            if text is not None:
                bound_value(reply, text, self.text_cap)
        except SystemExit as exc:
            self.in_cell = False
            exiting = describe_exit(exc, reply)
        except KeyboardInterrupt as exc:
            self.in_cell = False
            describe_error(exc, reply, "interrupted")
        except BaseException as exc:  # noqa: BLE001 - every cell error is reported, never raised
            self.in_cell = False
            describe_error(exc, reply, "error")
        finally:
            self.in_cell = False
            self.cell_id = None
            end_of_cell()
        if _getpid() != self.pid:  # os.fork() in a cell: the child ends here, as an interpreter would
            end_forked_child(reply, exiting)
        for key in ("evalue", "traceback"):
            if key in reply:
                reply[key] = bound_inline(reply[key], self.text_cap)
        reply["caught_interrupt"] = self.raised and reply["status"] == "ok"  # it caught one and went on
        reply["execution_count"] = self.execution_count
        reply["duration_s"] = _clock() - started
        self.send(reply)
        if exiting is not None:
            finalize_and_exit(exiting, self.namespace)

    # ---------------------------------------------------------------- tool RPC, worker side
    def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        """Ask the host to run tool ``name`` for the running cell and wait for its result.

        :raises ToolError: if no cell runs, in a process a cell forked, if ``args`` cannot be sent
            (not JSON, too large or too deep for a frame), or if the host refused or the tool failed.
        """
        self._returning = False
        if _getpid() != self.pid:
            raise ToolError("tool calls are not available in a process forked by a cell")
        if self.cell_id is None:
            raise ToolError(_RETIRED)
        if self._after_call:  # an interrupt followed the last call's result: it ends the cell here,
            self._after_call = False  # before this call goes out
            raise _interrupt(self)
        # the whole call is shielded: an interrupt is judged at its end, against its result
        shielded = self._enter_io()
        msg = None
        try:
            with self.cond:
                self.calls += 1
                call_id = f"{self.pid}-{self.calls}"
                self.replies[call_id] = None
            try:
                self.send({"type": "tool_call", "id": call_id, "cell": self.cell_id, "name": name, "args": args})
                msg = self._wait(lambda: self.replies.get(call_id))
            finally:
                with self.cond:
                    self.replies.pop(call_id, None)
        finally:
            if shielded:
                self._leave_call(msg is not None)
        if not msg or not msg.get("ok"):  # (no msg: never, _leave_call raised)
            raise ToolError((msg or {}).get("error", "tool call failed"))
        return msg.get("value")


def _interrupt(worker: Worker) -> KeyboardInterrupt:
    """The ``KeyboardInterrupt`` to raise in ``worker``'s cell, noted: a cell that catches it says so."""
    worker.raised = True
    return KeyboardInterrupt()


def _in_tool_call(frame: Any, *, runner: bool = True) -> bool:
    """Whether a SIGINT handled in ``frame`` lands on a tool call's way back: in ``hermes_tools``, in
    the runner's own code (``runner``), or in code it calls (a thread's start) with
    :meth:`Worker.call_tool` below."""
    name = "" if frame is None else frame.f_globals.get("__name__", "")
    if frame is None or name == _RUNNER_PACKAGE + "tools" or (runner and name.startswith(_RUNNER_PACKAGE)):
        return True
    while frame is not None and frame.f_code is not Worker.call_tool.__code__:
        frame = frame.f_back
    return frame is not None


def _interrupt_after_call(worker: Worker) -> None:
    """Have a thread SIGINT the main thread every :data:`AFTER_CALL_S` until :meth:`Worker.on_sigint`
    raises it in the cell's own code, past the call (or the cell ends). A SIGINT re-armed in
    the handler itself would run at once, there: CPython runs a tripped handler at its next check."""
    try:
        worker._rearmer = threading.Thread(target=_signal_until_raised, args=(worker, worker.execution_count),
                                           daemon=True, name="hermes-interrupt-after-call")
        worker._rearmer.start()
    except RuntimeError:  # no thread to be had: interrupted in the call rather than not at all
        worker._after_call = False
        raise _interrupt(worker) from None


def _signal_until_raised(worker: Worker, cell: int) -> None:
    """See :func:`_interrupt_after_call` (``cell``: its ``execution_count``)."""
    while True:
        time.sleep(AFTER_CALL_S)
        with worker._rearm:  # run_cell begins the next cell under it: that one never gets this SIGINT
            if not (worker._after_call and worker.execution_count == cell and worker.in_cell):
                return
            if signal.getsignal(signal.SIGINT) == worker.on_sigint:
                worker._chained = True
            else:  # the cell set a handler of its own (or SIG_IGN) since: it gets the interrupt, once
                worker._after_call = False
            signal.pthread_kill(worker._main, signal.SIGINT)
