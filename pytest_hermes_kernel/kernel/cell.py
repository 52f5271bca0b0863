"""One cell in flight: send it, wait for its result, and meanwhile keep the channel alive, serve
the cell's tool calls, climb the watchdog's ladder and re-attach a broken stream.

:class:`CellRun` is the cell-path half of :class:`~.handle.KernelHandle`: the handle brings up a
runner and a worker, makes a :class:`CellRun`, and judges the :class:`~.outcome.CellOutcome`
it returns. Other threads reach the running cell through the handle: ``interrupt()`` uses
:attr:`CellRun.rid`, ``cancel()`` and ``budget_paused()`` use :attr:`CellRun.budget`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError, FrameTooLargeError, ToolCallRefused
from .channel import Channel, ChannelClosed
from .lifecycle import Loss
from .link import RunnerLink
from .options import MAX_SECONDS, KernelOptions, is_seconds
from .outcome import CellOutcome, RunnerReply, blobs_of
from .results import MAX_FRAME_BYTES, FrameTooDeep, Reason
from .rpc import CellAuthority, ToolTable, describe_tool_error
from .watchdog import Action, CellBudget

__all__ = ["CellRun", "check_cell_args", "refuse_in_tool", "running_tool_of", "MAX_REATTACHES_PER_CELL"]

#: Re-attaches one cell may make: a stream that drops again after each of them (a flapping link)
#: then ends the cell ``transport_lost``, its note saying how many there were, instead of
#: re-attaching forever where the cell has no budget.
MAX_REATTACHES_PER_CELL = 10
#: Seconds an interrupted (or killed) cell's result waits for its tool calls still running on the host.
TOOLS_AFTER_CUT_S = 0.5


#: What sending a tool's result raises for a value no frame can carry: ``TypeError`` (a set, bytes),
#: ``ValueError`` (an int over 4300 digits, a list that holds itself; :class:`FrameTooLargeError`
#: and :class:`FrameTooDeep` are ones) and ``RecursionError`` (nested deeper than ``json`` can go). Each is the cell's ``ToolError``.
_UNSENDABLE = (TypeError, ValueError, RecursionError)


class _ToolThread(threading.local):
    kernel: object | None = None
    """The handle whose tool this thread is running."""
    waiting: tuple[object, ...] = ()
    """The handles whose running cells wait for this thread: :attr:`kernel` and, before it, each
    kernel whose tool ran the cell that called this one (a tool running cells on other kernels)."""


_in_tool = _ToolThread()


def running_tool_of(handle: object) -> bool:
    """Whether this thread is running a tool for ``handle`` (a cell there would wait for itself)."""
    return _in_tool.kernel is handle


def refuse_in_tool(handle: object, kernel_id: str, what: str, why: str) -> None:
    """:raises ConfigError: if this thread runs a tool for ``handle``, or for a cell that a tool of
        ``handle``'s running cell ran on another kernel: that cell holds the kernel and waits for
        this tool, so the tool cannot ``what`` it (``why``)."""
    if running_tool_of(handle):
        raise ConfigError(f"a tool cannot {what} kernel {kernel_id}: the cell that called the tool holds it ({why})")
    if any(k is handle for k in _in_tool.waiting):
        raise ConfigError(f"a tool cannot {what} kernel {kernel_id}: its running cell waits for this tool, through "
                          f"a tool of it that ran a cell on another kernel ({why})")


class CellRun:
    """One cell on one runner (see module docstring).

    :param link: the runner; its channel is current for this cell and replaced on re-attach.
    :param options: the kernel's options (watchdog, keepalive, reconnect, tool-call cap).
    :param tools: the tool table this cell may call.
    :param code: the cell's source.
    :param budget_s: seconds of budget; ``None`` is no limit.
    :param kernel: the kernel this cell runs on (marks tool threads: a tool cannot run a cell there).
    :param stopping: returns true once the kernel is shutting down (no re-attach then).
    :param resetting: returns true once ``restart()`` has begun (see :meth:`_join_tools`).
    :param secrets: redacted from tool calls' ``args`` (the kernel's, found once at its start).
    :param cancel: the caller's cancel switch for this cell (see :class:`~.watchdog.CellBudget`).
    :param emit: ``emit(event, payload)`` reports the cell's events to the kernel's listeners:
        ``running`` once, on the cell's thread, when the runner says the cell has started in the
        worker (asked for only with ``options.report_running``).
    """

    def __init__(self, link: RunnerLink, options: KernelOptions, tools: ToolTable, *, code: str,
                 budget_s: float | None, kernel: object, stopping: Callable[[], bool],
                 cancel: threading.Event | None = None, emit: Callable[[str, Any], None] | None = None,
                 resetting: Callable[[], bool] = lambda: False, secrets: tuple[str, ...] = ()) -> None:
        self.link = link
        self.options = options
        self.kernel, self.callers = kernel, _in_tool.waiting  # callers: kernels whose cells wait for this one
        self.stopping, self.resetting = stopping, resetting
        self.rid = link.channel.next_id()
        self.budget = CellBudget(budget_s, options.watchdog, switch=cancel)
        self.authority = CellAuthority(self.rid, tools, options.max_tool_calls, secrets=secrets)
        self.request = {"type": "execute", "id": self.rid, "code": code, "tools": self.authority.table.names()}
        if options.report_running:
            self.request["report_running"] = True
        self._emit = emit
        self._started = False  # the runner said the cell has started in the worker
        self._stage: Action | None = None
        self._reconnected = False
        self._tool_threads: list[threading.Thread] = []
        # tool call ids this cell has started (running or answered): a re-attach gets the runner's
        # unanswered calls again, and a call id runs once (read and written on the cell's thread)
        self._tool_calls_started: set[Any] = set()
        # tool call id -> the tool_result sent for it: sent again after a re-attach (a reply on a
        # stream that drops is lost, and the worker waits for it); the worker ignores a second one
        self._tool_replies: dict[Any, dict[str, Any]] = {}
        self._tool_replies_lock = threading.Lock()
        # interrupts asked for this cell (interrupt(), the watchdog's rung), numbered in each frame:
        # one sent into a stream that broke or went silent may be lost, so the last is sent again
        # after a re-attach unless the runner's hello says it got it (it applies a number once)
        self._interrupts = 0
        self._interrupt_lock = threading.RLock()  # the count and the send on the link's channel of now
        # (reentrant: an interrupt() from a signal handler may land inside _interrupt_again)
        # the stream broke: interrupts are counted only, and sent once re-attached, after the tool
        # results lost with the stream (one sent first would cut the call those results answer)
        self._reattaching = False

    def run(self) -> CellOutcome:
        """Send the cell and wait until it ends; a broken stream is re-attached or reported.

        :returns: the outcome; never raises for a lost channel (that is an outcome too).
        """
        channel = self.link.channel
        channel.expect(self.rid)
        try:
            channel.send(self.request)
            outcome = self._await_result()
        except ChannelClosed as exc:
            outcome = self._on_channel_lost(exc)
        finally:
            self.authority.retire()
            channel.forget(self.rid)
            if self.link.channel is not channel:  # a re-attached channel expected it too
                self.link.channel.forget(self.rid)
        return outcome

    def interrupt(self) -> None:
        """Ask the runner to interrupt this cell (SIGINT); on a stream that broke or went silent,
        again once re-attached (:meth:`_interrupt_again`)."""
        with self._interrupt_lock:
            self._interrupts += 1
            if self._reattaching:  # the cell's thread sends it (_interrupt_again)
                return
            try:
                self.link.channel.send(self._interrupt_frame())
            except ChannelClosed:  # the cell's thread re-attaches (or reports the loss)
                pass

    def _interrupt_frame(self) -> dict[str, Any]:
        return {"type": "interrupt", "id": self.rid, "n": self._interrupts}

    def _interrupt_again(self, hello: dict[str, Any]) -> None:
        """After a re-attach to the running cell: the last interrupt again if the runner did not get it
        (once what was lost before it has been sent again: from now on :meth:`interrupt` sends)."""
        with self._interrupt_lock:
            self._reattaching = False
            got = hello.get("interrupts")
            if self._interrupts and not (isinstance(got, int) and got >= self._interrupts):
                self.link.channel.send(self._interrupt_frame())

    def _outcome(self, header: dict[str, Any] | None, blobs: list[bytes], **host: Any) -> CellOutcome:
        reply = None if header is None else RunnerReply.from_header(header)
        four = (blobs[0], blobs[1], blobs[2], blobs[3]) if len(blobs) == 4 else blobs_of(blobs)
        return CellOutcome(reply=reply, blobs=four, budget_s=self.budget.timeout, stage=self._stage, reconnected=self._reconnected,
                           cancelled=self.budget.cancelled, interrupt_sent=self._interrupts > 0, **host)

    # ------------------------------------------------------------------------------ waiting
    def _await_result(self) -> CellOutcome:
        """Wait for the result frame, serving tool calls and the ladder; join the tool calls."""
        channel = self.link.channel
        last_heard = time.monotonic()
        pings = 0
        while True:
            try:
                header, blobs = channel.wait(self.rid, self.budget.next_wait())
            except TimeoutError:
                action = self.budget.due()
                if action is not None:
                    outcome = self._escalate(action, time.monotonic() - last_heard, bool(pings))
                    if outcome is not None:
                        return outcome
                if self.link.transport.reattachable:
                    pings, last_heard = self._keepalive(channel, pings, last_heard)
                continue
            last_heard, pings = time.monotonic(), 0
            kind = header.get("type")
            if kind == "tool_call":
                self._start_tool_call_once(header)
            elif kind == "running":
                self._running()
            elif kind == "error":  # refused, not run: a cell of another client runs (a kept kernel)
                self._join_tools()
                return self._outcome({"status": "error", "ename": "RunnerError", "evalue": "the kernel runner "
                                      f"refused the cell, which did not run: {header.get('error')}"}, blobs)
            elif kind != "pong":
                self._join_tools(header.get("status") not in ("ok", "error"))
                return self._outcome(header, blobs)

    def _running(self) -> None:
        """The cell has started in the worker: emit ``running``, once per cell."""
        if self._emit is not None and not self._started:
            self._started = True
            self._emit("running", None)

    def _keepalive(self, channel: Channel, pings: int, last_heard: float) -> tuple[int, float]:
        """Ping a silent re-attachable channel; declare it lost after ``keepalive_missed`` pings."""
        o = self.options
        silent = time.monotonic() - last_heard
        if silent < o.keepalive_interval * (pings + 1):
            return pings, last_heard
        if pings >= o.keepalive_missed:
            channel.close(f"no reply to {pings} keepalives in {silent:.1f} s")
            raise ChannelClosed(f"peer silent for {silent:.1f} s (keepalive every "
                                f"{o.keepalive_interval} s, {o.keepalive_missed} missed)", closed_by_us=False)
        channel.send({"type": "ping", "id": self.rid})
        return pings + 1, last_heard

    # ------------------------------------------------------------------------------ tools
    def _start_tool_call_once(self, header: dict[str, Any]) -> None:
        """Start the tool of ``header`` unless its call id has started already: the runner sends
        its unanswered calls again after a re-attach; one still running answers when it ends, and
        an answered one's result is sent again (:meth:`_send_tool_replies_again`)."""
        call_id = header.get("id")
        if call_id in self._tool_calls_started:
            return
        self._tool_calls_started.add(call_id)
        self._tool_threads.append(self._start_tool_call(header))

    def _start_tool_call(self, header: dict[str, Any]) -> threading.Thread:
        """Run a tool in its own thread, so the cell's thread keeps watching the channel and the
        ladder: ``cancel()``, ``interrupt()``, a kill or a shutdown still work while a tool blocks.
        The budget is paused while the tool runs (the seed watchdog's pause flag)."""
        self.budget.pause()
        thread = threading.Thread(target=self._serve_tool_call, args=(header,),
                                  name=f"hermes-tool-{header.get('name')}", daemon=True)
        thread.start()
        return thread

    def _join_tools(self, cut_short: bool = False) -> None:
        """A cell's result waits for the tool calls it made (so ``tool_calls`` is complete), until
        they end or the cell is cancelled; for :data:`TOOLS_AFTER_CUT_S` at most a cell ``cut_short``
        (interrupted, killed, exited: a hung tool held its result for ever) or one stopped now by
        ``interrupt()``, ``restart()`` or ``shutdown()`` (a thread's call hung: none reached the cell
        the worker had ended, and ``execute()`` and ``restart()`` waited for ever)."""
        deadline = time.monotonic() + TOOLS_AFTER_CUT_S if cut_short else None
        for thread in self._tool_threads:
            while thread.is_alive() and not self.budget.cancelled:
                if deadline is None and (self._interrupts or self.stopping() or self.resetting()):
                    deadline = time.monotonic() + TOOLS_AFTER_CUT_S
                if deadline is not None and time.monotonic() >= deadline:
                    return
                thread.join(0.1 if deadline is None else min(0.1, max(0.0, deadline - time.monotonic())))

    def _serve_tool_call(self, header: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"type": "tool_result", "id": header.get("id")}
        _in_tool.kernel, _in_tool.waiting = self.kernel, (*self.callers, self.kernel)
        try:
            try:
                reply["value"] = self.authority.dispatch(header.get("cell"), str(header.get("name")),
                                                         dict(header.get("args") or {}))
                reply["ok"] = True
            except ToolCallRefused as exc:
                reply.update(ok=False, error=str(exc))
            except BaseException as exc:  # noqa: BLE001 - a failing tool is the cell's error, not ours;
                # KeyboardInterrupt or SystemExit too: in this thread they are the tool's own raise
                # (no signal lands here), and unanswered, the cell would wait for its budget
                reply.update(ok=False, error=describe_tool_error(exc, self.authority.secrets))
        finally:
            _in_tool.kernel, _in_tool.waiting = None, ()
            self.budget.resume()
        try:
            try:
                channel = self._keep_tool_reply(reply)
                channel.send(reply)
            except _UNSENDABLE as exc:
                what = "does not fit in a frame" if isinstance(exc, (FrameTooLargeError, FrameTooDeep)) else "is not JSON"
                reply = {"type": "tool_result", "id": header.get("id"), "ok": False,
                         "error": f"tool {header.get('name')!r} returned a value that {what}: {exc}"}
                self._keep_tool_reply(reply).send(reply)
        except ChannelClosed:
            pass  # the cell ended (killed, shut down), or the stream dropped: a re-attach sends it again

    def _keep_tool_reply(self, reply: dict[str, Any]) -> Channel:
        """Keep ``reply`` for a re-attach to send again; the channel to send it on now (the link's
        current one: a re-attach that completed while the tool ran replaced the channel the call
        came on). Kept first, read second: a re-attach either finds it kept or has installed the
        channel it goes out on."""
        with self._tool_replies_lock:
            self._tool_replies[reply.get("id")] = reply
        return self.link.channel

    def _send_tool_replies_again(self) -> None:
        """After a re-attach: every tool result of this cell again (one sent as the stream dropped
        is lost; the worker ignores one it already has)."""
        with self._tool_replies_lock:
            replies = list(self._tool_replies.values())
        for reply in replies:
            try:
                self.link.channel.send(reply)
            except _UNSENDABLE:
                pass  # a value that cannot be sent: its tool's thread sends the error in its place

    # ------------------------------------------------------------------------------ watchdog
    def _escalate(self, action: Action, quiet_s: float, pinged: bool) -> CellOutcome | None:
        """One rung of the ladder; the outcome when it ends here (``quiet_s``: silent_s, see CellOutcome)."""
        channel = self.link.channel
        self._stage = action
        if action == "interrupt":
            self.interrupt()  # numbered like interrupt()'s: sent again after a re-attach if lost
            return None
        if action == "kill":  # "cell": the runner kills only while this cell still runs
            channel.send({"type": "kill_worker", "id": channel.next_id(), "cell": self.rid})
            return None
        return self._outcome(None, [], abandoned=True, silent_s=quiet_s if pinged or self.link.transport.frozen(
            self.link.launched) else None, kill_confirmed=self.link.kill())  # frozen (stopped): first; then kill it

    # ------------------------------------------------------------------------------ re-attach
    def _on_channel_lost(self, exc: ChannelClosed) -> CellOutcome:
        """The stream broke mid-cell: re-attach where the transport can, else report the loss.

        After a re-attach the request is sent again when the runner neither ran it nor is
        running it (the stream broke before the request arrived, e.g. it was dropped while idle).
        A stream that drops again in the same cell is re-attached again, up to :data:`MAX_REATTACHES_PER_CELL` times.
        A channel lost for good ends the ladder: its outcome carries the loss, not a rung.
        """
        link, o = self.link, self.options
        reattachable = link.transport.reattachable
        reattaches = 0
        while reattachable and not self.stopping() and reattaches < MAX_REATTACHES_PER_CELL:
            with self._interrupt_lock:
                self._reattaching = True
            hello = link.reattach((self.rid,), timeout=o.reconnect_timeout, hello_timeout=o.start_timeout,
                                  stopping=self.stopping)
            if hello is None:
                break
            reattaches += 1
            self._reconnected = True
            try:
                if hello.get("running") == self.rid:
                    self._send_tool_replies_again()
                    if self.options.report_running:
                        self._running()  # its running frame may have been lost with the stream
                    self._interrupt_again(hello)
                elif self.rid not in hello.get("replayed", ()):
                    link.channel.send(self.request)
                    self._interrupt_again({})  # one asked for while the request was lost goes after it
                else:  # its result is replayed: no interrupt is due
                    self._interrupt_again({"interrupts": self._interrupts})
                return self._await_result()
            except ChannelClosed as again:  # dropped again in the same cell: re-attach again
                exc = again
        self._stage = None
        gone = reattachable and not link.kept and not self.stopping() and link.seen_gone()
        ended = "" if link.kept or self.stopping() or reattachable and not gone else link.ended_how()
        alive = not ended and not gone and link.alive()
        # a runner given up on is killed, a gone one's session too (its worker ran the cell on, reparented): no cell
        # runs on behind a "died"; a shutdown ends its own; one keep() let go of runs on (killed, none was left)
        killed = link.kill() if not link.kept and (not reattachable or gone or (alive and not self.stopping())) else False
        unreached = not (alive or killed or link.seen_gone())  # not alive() may be "cannot tell" too
        reason: Reason = "reset" if self.stopping() else "transport_lost" if reattachable else "died"
        note = (f"channel lost: {exc}{link.stray}{link.refused}{link.unanswered * unreached}" + (f" (after {reattaches} re-attaches in this cell)" if reattaches else "")
                + _runner_words(ended, alive, unreached, killed, self.stopping(), link.kept))
        return self._outcome(None, [], channel_lost=Loss(reason=reason, note=note))


def _runner_words(ended: str, alive: bool, unreached: bool, killed: bool, stopping: bool, kept: bool) -> str:
    """The loss note's words for the runner when the host gave up on its channel."""
    if ended:
        return f" (the kernel runner ended: {ended})"
    return _still_alive(killed, stopping, kept) if alive else _UNREACHED if unreached else ""


def _still_alive(killed: bool, stopping: bool, kept: bool) -> str:
    """The loss note's words for a runner still alive when the host gave up on its channel."""
    if kept:
        return " (runner still alive; kept, the cell running on in it)"
    if killed:
        return " (runner still alive; killed)"
    return " (runner still alive; the shutdown ends it)" if stopping else \
        " (runner still alive; the kill was not confirmed: its cell may run on)"


_UNREACHED = (" (the runner could not be reached, so it was not seen gone: its cell may run on until the next cell "
              "or shutdown() reaches it, or its orphan timer ends it)")
"""The loss note's words for a runner the transport could not tell about (a silent ssh host)."""


_HEADER_RESERVE_BYTES = 65536
"""Bytes of a frame kept for an ``execute`` request's other fields (id, tool names)."""
_SOURCE_CHECK_CHARS = (MAX_FRAME_BYTES - _HEADER_RESERVE_BYTES) // 6
"""Sources of up to this many characters fit whatever they hold (JSON-escaped, 6 bytes each at most)."""


def check_cell_args(code: object, timeout: object, cancel: object = None) -> None:
    """Refuse a cell's arguments before anything runs (a refusal found while sending would end the
    kernel: the channel's state is then unknown).

    :raises TypeError: if ``code`` is not a str, or ``cancel`` has no ``is_set()``.
    :raises ConfigError: if ``code`` holds a lone surrogate (no UTF-8 form: the frame cannot carry
        it, nor could the kernel compile it), or ``timeout`` is not a finite number of seconds > 0
        (or ``None``).
    :raises FrameTooLargeError: if ``code`` would not fit in one frame (nothing is sent).
    """
    if not isinstance(code, str):
        raise TypeError(f"code must be str, not {type(code).__name__}")
    if cancel is not None and not callable(getattr(cancel, "is_set", None)):
        raise TypeError(f"cancel must be a threading.Event (or None), not {type(cancel).__name__}; nothing was sent")
    if not code.isascii():
        try:
            code.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ConfigError(f"the cell's source holds a lone surrogate {code[exc.start]!r} at index {exc.start} "
                              "(it has no UTF-8 form); nothing was sent, the kernel is untouched") from None
    if len(code) > _SOURCE_CHECK_CHARS:  # only a big cell pays for the exact size
        size = len(json.dumps(code, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > MAX_FRAME_BYTES - _HEADER_RESERVE_BYTES:
            raise FrameTooLargeError(f"the cell's source is {size} bytes as sent, over the {MAX_FRAME_BYTES}-byte "
                                     "frame limit; nothing was sent, the kernel is untouched")
    if timeout is not None and not is_seconds(timeout, positive=True):
        raise ConfigError(f"timeout must be a finite number of seconds > 0 (at most {MAX_SECONDS:g}), or None; got {timeout!r}")
