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
* ``os.fork()`` in a cell: the child never touches the channel and never returns to the loop.
* ``hermes_tools`` (a module in ``sys.modules``) calls host tools under the running cell's
  authority; a call after its cell settled is refused.
"""

from __future__ import annotations

import ast
import atexit
import builtins
import os
import select
import signal
import socket
import sys
import threading
import time
import traceback
import types

from .bounds import DEFAULT_TEXT_CAP, bound_inline, bound_value, describe_error, describe_exit, safe_repr, too_large
from .environ import become_worker, restore_stdio
from .frames import MAX_FRAME_BYTES, READ_CHUNK, FrameDecoder, encode_frame, send_all
from .kick import install_kick_handler

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from .frames import Header

    T = TypeVar("T")


#: Exit status of a worker whose own start failed (EX_SOFTWARE).
START_FAILED = 70
_RETIRED = "No active cell: the cell this call belonged to has settled, so its tool authority is retired."
_WORKER: Worker | None = None
#: While a cell's main thread waits for a tool's result, how often (seconds) it looks for a SIGINT
#: that arrived meanwhile (the wait itself must not be cut: see :meth:`Worker.on_sigint`).
INTERRUPT_POLL_S = 0.02


class ToolError(Exception):
    """A tool call was refused or failed (raised inside the cell by ``hermes_tools``)."""


class Worker:
    """Runs cells and tool calls over the socket to the supervisor (see module docstring).

    :param sock: the worker's end of the private socketpair.
    :param config: the runner config (``cwd`` is used by :func:`worker_main`).
    """

    def __init__(self, sock: socket.socket, config: dict[str, Any]) -> None:
        self.sock = sock
        self.decoder = FrameDecoder()
        self.pid = os.getpid()
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.execution_count = 0
        self.cell_id: Any = None
        self.in_cell = False
        self.tools: list[str] = []
        self.config = config
        self.text_cap = int(config.get("max_output_bytes", DEFAULT_TEXT_CAP))
        # One reader at a time: the main loop and threads waiting on tool results share the
        # socket, so whoever waits reads for everyone and routes each frame to its box (a
        # thread of an earlier cell must never swallow the next cell's "execute").
        self.send_lock = threading.Lock()
        self.cond = threading.Condition()
        self.reading = False
        self.eof = False
        self.commands: list[Header] = []  # execute / exit, for the main loop
        self.replies: dict[str, Header | None] = {}  # tool call id -> tool_result (None while pending)
        self.calls = 0
        self._main = threading.get_ident()  # signal handlers run in this thread only
        self._io = 0  # > 0 while the main thread reads or writes frames
        self._interrupt_pending = False

    def on_sigint(self, signum: int, frame: Any) -> None:
        """SIGINT handler: interrupt the cell; outside a cell the runner's own code must not break.

        Inside the main thread's frame I/O the interrupt is deferred to the end of that step
        (:meth:`_leave_io`): raised there, it could drop bytes already read, cut a frame in half,
        or skip the hand-over of the reading (and the next ``execute`` would wait forever).
        """
        if not self.in_cell:
            # a late one: its cell has ended. The supervisor signals a cell only once the worker
            # said it runs (see run_cell), so no SIGINT is ever meant for a cell not begun yet
            # (one whose handler ran late, after the next request came, interrupted that cell)
            return
        if self._io:
            self._interrupt_pending = True
            return
        raise KeyboardInterrupt

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
                raise KeyboardInterrupt

    def send(self, header: Header) -> None:
        """Send one frame to the supervisor (a process forked by a cell ends here instead).

        :raises ToolError: if a tool call's frame would exceed the frame limit (a result that
            would is sent as a ``ReplyTooLarge`` error instead).
        """
        if os.getpid() != self.pid:  # a forked child of a cell never touches the channel
            os._exit(0)
        data = encode_frame(header)
        if len(data) > MAX_FRAME_BYTES:
            if header.get("type") != "result":
                raise ToolError(f"the tool call is {len(data)} bytes, over the {MAX_FRAME_BYTES}-byte frame limit")
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
        return self._wait(self._take_command)

    def _take_command(self) -> Header | None:
        if not self.commands:
            return None
        return self.commands.pop(0)

    def _wait(self, take: Callable[[], T | None]) -> T:
        while True:
            with self.cond:
                while True:
                    got = take()
                    if got is not None:
                        return got
                    if self.eof:
                        raise EOFError
                    if not self.reading:
                        # shielded before the claim: a SIGINT raised between the claim and the read
                        # (at the lock's release) left ``reading`` set for good, and the next cell's
                        # ``execute`` was never read (the kernel was killed as a timeout)
                        shielded = self._enter_io()
                        self.reading = True
                        break
                    self.cond.wait()
            self._read_once(shielded)

    def _read_once(self, shielded: bool) -> None:
        data = None
        try:
            data = self._recv(shielded)
        except OSError:
            data = b""
        finally:  # also when no data came: hand the reading over
            try:
                with self.cond:
                    self.reading = False
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
        """The next bytes from the socket; ``None`` when a SIGINT came first, in a cell's main thread."""
        if not main:
            return self.sock.recv(READ_CHUNK)
        if not self.in_cell:  # between cells a SIGINT is ignored: nothing to cut
            return self.sock.recv(READ_CHUNK)
        while not self._interrupt_pending:
            if select.select([self.sock], [], [], INTERRUPT_POLL_S)[0]:
                return self.sock.recv(READ_CHUNK)
        return None

    def _route(self, msg: Header) -> None:
        if msg.get("type") != "tool_result":
            self.commands.append(msg)
        elif msg.get("id") in self.replies:
            self.replies[msg["id"]] = msg

    def loop(self) -> None:
        """Say ``ready``, then run cells until ``exit`` or EOF."""
        self.send({"type": "ready", "pid": self.pid})
        while True:
            try:
                msg = self.recv()
            except (EOFError, OSError):
                return
            kind = msg.get("type")
            if kind == "execute":
                self.run_cell(msg)
            elif kind == "exit":
                return

    # ------------------------------------------------------------------------------ cells
    def run_cell(self, msg: Header) -> None:
        """Run one ``execute`` request and send its ``result`` (then exit on ``SystemExit``)."""
        self.execution_count += 1
        restore_stdio()  # an earlier cell may have closed or redirected fd 1/2
        self.cell_id = msg["id"]
        self.tools = list(msg.get("tools", ()))
        started = time.perf_counter()
        reply: Header = {"type": "result", "id": msg["id"], "status": "ok"}
        exiting = None
        self._interrupt_pending = False
        try:
            self.in_cell = True  # (inside the try: a SIGINT right after it is the cell's)
            # the supervisor holds the cell's interrupts until it reads this (see on_sigint); one
            # that lands while it is sent interrupts the cell once it is sent (frame I/O)
            self.send({"type": "running", "id": msg["id"]})
            value = self.exec_source(msg.get("code", ""))
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
            flush_stdio()
        if os.getpid() != self.pid:  # os.fork() in a cell: the child ends here
            os._exit(0)
        for key in ("evalue", "traceback"):
            if key in reply:
                reply[key] = bound_inline(reply[key], self.text_cap)
        reply["execution_count"] = self.execution_count
        reply["duration_s"] = time.perf_counter() - started
        self.send(reply)
        if exiting is not None:
            finalize_and_exit(exiting)

    def exec_source(self, source: str) -> Any:
        """Run ``source`` in the namespace; the value of a last expression statement, or ``None``."""
        tree = ast.parse(source, "<cell>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), self.namespace)
        if last is None:
            return None
        value = eval(compile(last, "<cell>", "eval"), self.namespace)
        if value is not None:
            self.namespace["_"] = value
        return value

    # ---------------------------------------------------------------- tool RPC, worker side
    def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        """Ask the host to run tool ``name`` for the running cell and wait for its result.

        :raises ToolError: if no cell runs, in a process a cell forked, or if the host refused
            or the tool failed.
        """
        if os.getpid() != self.pid:
            raise ToolError("tool calls are not available in a process forked by a cell")
        if self.cell_id is None:
            raise ToolError(_RETIRED)
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
        if not msg.get("ok"):
            raise ToolError(msg.get("error", "tool call failed"))
        return msg.get("value")


def flush_stdio() -> None:
    """Flush the cell's stdout/stderr (the ones it may have replaced and the originals)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # noqa: BLE001 - the cell may have closed or replaced them
            pass


def finalize_and_exit(code: int) -> None:
    """End the worker as a clean interpreter exit would: threads joined, atexit run, stdio flushed."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]  # joins non-daemon threads; the supervisor kills us after its grace
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        pass
    flush_stdio()
    os._exit(code)


def make_tools_module(worker: Worker) -> types.ModuleType:
    """The ``hermes_tools`` module a cell imports: ``call(name, **kw)``, ``available()``, ``<name>(**kw)``."""
    mod = types.ModuleType("hermes_tools", "Tools the host registered; call them like functions.")
    mod.ToolError = ToolError  # type: ignore[attr-defined]

    def call(name: str, /, **kwargs: Any) -> Any:
        """Call the host tool ``name`` with keyword arguments; returns its JSON-able result."""
        return worker.call_tool(name, kwargs)

    def available() -> list[str]:
        """Names of the tools the host offers to the running cell."""
        return list(worker.tools)

    def __getattr__(name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda **kwargs: worker.call_tool(name, kwargs)

    mod.call, mod.available, mod.__getattr__ = call, available, __getattr__  # type: ignore[attr-defined]
    return mod


def _close_channel_in_fork_child() -> None:
    worker = _WORKER
    if worker is not None and os.getpid() != worker.pid:
        try:
            worker.sock.close()
        except OSError:
            pass


def worker_main(sock: socket.socket, out_w: int, err_w: int, config: dict[str, Any]) -> None:
    """Entry point of a freshly forked worker: set it up, run cells, exit. Never returns.

    :param sock: the worker's end of the socketpair to the supervisor.
    :param out_w: write end of the stdout pipe (becomes fd 1).
    :param err_w: write end of the stderr pipe (becomes fd 2).
    :param config: the runner config.
    """
    global _WORKER
    code = 0
    try:
        worker = Worker(sock, config)
        signal.signal(signal.SIGINT, worker.on_sigint)
        become_worker(out_w, err_w, config)
        install_kick_handler()  # the supervisor's kicks after a SIGINT: one taken just before a blocking call counts
        _WORKER = worker
        sys.modules["hermes_tools"] = make_tools_module(worker)
        os.register_at_fork(after_in_child=_close_channel_in_fork_child)
        worker.loop()
    except BaseException:  # noqa: BLE001 - report on the inherited stderr and leave
        code = START_FAILED
        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(code)
