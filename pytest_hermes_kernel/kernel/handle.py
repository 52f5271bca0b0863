"""KernelHandle: one kernel on one transport: start, execute, interrupt, cancel, restart, shutdown.

The handle is the facade, and it is transport-neutral. Its parts:

* its state, a :class:`~.lifecycle.KernelState` moved only along the table in :mod:`.lifecycle`;
* :class:`~.runtime.KernelRuntime`: the runner and worker across generations (bring up, replace, end);
* :class:`~.cell.CellRun`: one cell's wait loop (keepalive, tool calls, watchdog rungs, re-attach),
  ending in a typed :class:`~.outcome.CellOutcome` that :func:`~.outcome.judge` reads.

Every loss of state is a :class:`~.lifecycle.Loss` held here, written by whoever observed it (a
cell that saw its kernel die, the watchdog's reset, ``restart()``, or the registry through
:meth:`KernelHandle.mark_lost`), and reported by the next cell as ``state_lost`` with a reason.
"""

from __future__ import annotations

import functools
import os
import secrets
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import (CellInterrupted, CellTimeoutError, HermesKernelError, KernelAbandoned,
                      KernelDiedError, KernelResetAfterTimeout, KernelResetFailed)
from . import control
from .cell import CellRun, check_cell_args, refuse_in_tool
from .channel import Channel
from .control import check_process
from .holders import current_holder, hold
from .keys import checked_kernel_id
from .lifecycle import KernelState, Lifecycle, Loss
from .options import KernelOptions, check_keep_ttl, checked_options, cwd_resolved
from .outcome import CellOutcome, ControlIntent, build_result, died_unrun, judge, not_run
from .output import clean, error_text, kernel_secrets
from .queue import CellQueue
from .results import CellResult, ExitInfo, KernelInfo
from .rpc import ToolTable
from .runtime import KernelRuntime
from .transfer import download_from, upload_to

if TYPE_CHECKING:
    from .contract import Launched, Transport

__all__ = ["KernelHandle", "KernelOptions", "attach_kept"]

S = KernelState
Listener = Callable[[str, "KernelHandle", Any], None]

_OUTCOME_ERRORS: dict[str, type[CellTimeoutError]] = {"interrupted": CellInterrupted, "reset": KernelResetAfterTimeout,
                                                      "reset_failed": KernelResetFailed, "abandoned": KernelAbandoned}


def _raised_is_told(execute: Callable[..., CellResult]) -> Callable[..., CellResult]:
    """``execute`` that also emits ``raised`` (payload: the error) when it raises instead of returning a
    result, so a failing test's story names that cell too (``raise_on_timeout``'s error carries its result,
    told as ``result``), also one cut from outside (Ctrl-C, pytest-timeout's ``Failed``: it was left out)."""
    @functools.wraps(execute)
    def run(self: KernelHandle, *args: Any, **kwargs: Any) -> CellResult:
        try:
            return execute(self, *args, **kwargs)
        except BaseException as exc:  # not an Exception: what cut the wait from outside
            if not isinstance(exc, Exception) or isinstance(exc, HermesKernelError) and getattr(exc, "result", None) is None:
                self._emit("raised", exc)
            raise
    return run


_KEPT_FROM_A_TOOL = "its answer could not reach the kept kernel, whose cell would wait in the call for ever, refusing every later cell"
"""Why a tool of the running cell cannot :meth:`KernelHandle.keep` its kernel."""


def _refuse_copy(handle: KernelHandle, protocol: object) -> NoReturn:
    """``KernelHandle.__reduce_ex__``: a copy would share the kernel's channel, not its running cell. Raises TypeError."""
    raise TypeError(f"a KernelHandle (kernel {handle.kernel_id}) cannot be pickled or copied: it is the one connection "
                    f"to its kernel, of process {handle.host_pid}. Hint: hand over the code to run (or a KernelKey)")


class KernelHandle:
    """A kernel: a persistent namespace behind a transport. Cells on one handle are serialized; ``interrupt``,
    ``cancel``, ``restart`` and ``shutdown`` may be called from other threads while a cell runs. In a forked child of its
    process ``start``, ``execute``, ``interrupt``, ``restart``, ``keep``, ``upload`` and ``download`` raise :class:`KernelForkedError`.

    :param transport: where the kernel runs, a :class:`Transport` (its name is a ``TypeError``).
    :param options: how it is started and run (defaults: :class:`KernelOptions`; a dict is a ``TypeError``).
    :param tools: ``{name: callable}`` offered to cells as ``hermes_tools.<name>`` (no dict: a ``TypeError``).
    :param kernel_id: 1-128 letters, digits, ``_`` or ``-`` (else a ``ConfigError``); a fresh uuid4 hex by default.
    :param owner: the key owner this kernel serves (for reports).
    """

    def __init__(self, transport: Transport, options: KernelOptions | None = None, *,
                 tools: ToolTable | Mapping[str, Any] | None = None, kernel_id: str | None = None,
                 owner: str | None = None) -> None:
        self.transport = _checked_transport(transport)
        self.options = cwd_resolved(checked_options(options), getattr(transport, "runs_on_this_host", False))  # once
        self.tools = tools if isinstance(tools, ToolTable) else ToolTable(tools)
        self.kernel_id = checked_kernel_id(kernel_id) if kernel_id is not None else uuid.uuid4().hex
        self.owner = owner
        self.token = secrets.token_urlsafe(24)
        self.host_pid = os.getpid()  # the process this kernel belongs to; a forked child may not use it
        self.cells_run = 0
        self.exit_info: ExitInfo | None = None
        self._life = Lifecycle()
        self._runtime = KernelRuntime(transport, self.options, kernel_id=self.kernel_id, token=self.token,
                                      life=self._life, on_started=lambda launched: self._emit("started", launched))
        self._pending_loss: Loss | None = None  # the loss the next cell must report
        self._cell: CellRun | None = None
        self._queue = CellQueue()
        self._control_lock = threading.RLock()  # reentrant: a signal handler's shutdown() may land in this thread's own
        self._held = control.HeldHere()  # what this thread is doing with the kernel's channel now
        self._secrets = kernel_secrets(self.options.env)  # the host's and the kernel's own
        self._listeners: list[Listener] = []
        self.holder = hold(self, current_holder.get())  # what keeps it beyond its caller's work (.holders)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(event, handle, payload)`` on each event (:data:`~.interface.KernelListener`)."""
        self._listeners.append(listener)

    def _emit(self, event: str, payload: Any) -> None:
        for listener in list(self._listeners):
            with suppress(Exception):  # an observer must never break the kernel
                listener(event, self, payload)

    # ------------------------------------------------------------------------------ looking
    @property
    def state(self) -> KernelState:
        """Where the kernel is in its life now (``BUSY`` while a cell runs)."""
        return self._life.state

    @property
    def stopping(self) -> bool:
        """``shutdown()`` was called: no further cells."""
        return self._life.stopping

    @property
    def alive(self) -> bool:
        """The runner is up and its worker has not died (a cheap check; no round trip)."""
        channel = self._channel
        return self._life.is_(S.IDLE, S.BUSY, S.RESETTING) and channel is not None and not channel.closed

    @property
    def generation(self) -> int:
        """How many times the kernel was replaced (a new worker or runner); state is lost each time."""
        return self._runtime.generation

    restart_count = generation
    """Replacements so far (deaths, resets, ``restart()``): :attr:`generation` by another name."""

    @property
    def worker_pid(self) -> int | None:
        """Pid of the interpreter running cells (inside the container for remote kernels)."""
        return self._runtime.worker_pid

    pid = worker_pid
    """Alias of :attr:`worker_pid`."""

    @property
    def runner_pid(self) -> int | None:
        """Pid of the runner's supervisor where the kernel runs; ``None`` without a runner."""
        return None if (launched := self.launched) is None else launched.pid

    @property
    def launched(self) -> Launched | None:
        """The transport's record of the current runner; ``None`` without a runner."""
        return None if (link := self._runtime.link) is None else link.launched

    @property
    def _channel(self) -> Channel | None:
        return None if (link := self._runtime.link) is None else link.channel

    @property
    def queued(self) -> int:
        """How many cells wait for their turn now (the running cell is not counted)."""
        return self._queue.waiting

    @property
    def _running_rid(self) -> int | None:
        return None if (cell := self._cell) is None else cell.rid

    def info(self, **changes: Any) -> KernelInfo:
        """Facts about the kernel now, with ``changes`` (any :class:`KernelInfo` fields) applied.

        :raises TypeError: if a change names no field of :class:`KernelInfo`.
        """
        runtime = self._runtime
        facts = {"kernel_id": self.kernel_id, "transport": self.transport.name, "generation": runtime.generation,
                 "reused": self.cells_run > 0, "pid": runtime.worker_pid, **changes}
        return KernelInfo(**facts)  # one construction (``dataclasses.replace`` costs as much again, per cell)

    def mark_lost(self, loss: Loss) -> None:
        """Record a loss of state for the next cell to report (``state_lost``, ``loss.reason``): for the
        registry starting a key whose last kernel it evicted or reaped; a ``lost`` event, once a loss."""
        if loss is not self._pending_loss:
            self._pending_loss = loss
            self._emit("lost", loss)

    # ------------------------------------------------------------------------------ start
    def start(self) -> KernelHandle:
        """Start the runner and wait for its hello (once; later calls return at once).

        :raises KernelStartError: if it does not answer within ``options.start_timeout``.
        :raises KernelShutdownError: if the handle was shut down.
        """
        check_process(self.host_pid, self.kernel_id)
        if not self._life.is_(S.NEW, S.STARTING) and not self.stopping:  # started: at once, not after the
            return self  # running cell (a tool's upload waited for the cell that waited for the tool: for ever)
        with self._queue.lock:
            if self.stopping:
                raise self._runtime.shut_error()
            if self._life.is_(S.NEW):
                with self._held.holding("start()"):
                    self._runtime.launch()
        return self

    @_raised_is_told
    def execute(self, code: str, *, timeout: float | None = None, raise_on_timeout: bool = False,
                cancel: threading.Event | None = None) -> CellResult:
        """Run ``code`` in the kernel's namespace.

        :param timeout: seconds of budget for this cell (``None``: ``options.timeout``).
        :param cancel: set it from any thread to start this cell's ladder now, like :meth:`cancel`; set before the
            cell is sent (or as it waits its turn: answered at once), it is not sent (``timeout``, state kept).
        :param raise_on_timeout: raise the watchdog outcome's exception instead of returning it.
        :returns: the :class:`CellResult`; a death, exit, lost transport, or a ``restart()`` that
            overtook the cell while it waited (not run: ``died``, ``reason="reset"``) is a result too.
        :raises KernelShutdownError: if the handle was shut down.
        :raises ChannelHeldHereError: if called inside this thread's own use of the kernel (a
            signal handler that landed in a cell's wait, ``restart()``, ...); nothing was sent.
        :raises KernelDiedError: if the kernel died earlier and ``auto_restart`` is off.
        :raises CellTimeoutError: (a subclass) only with ``raise_on_timeout``.
        :raises TypeError: if ``code`` is not a str, or ``cancel`` no event; :raises FrameTooLargeError: if ``code`` is too big.
        :raises ConfigError: for a bad ``timeout`` or ``code`` (:func:`~.cell.check_cell_args`), or from a tool of its cell.
        """
        check_process(self.host_pid, self.kernel_id)
        check_cell_args(code, timeout, cancel)
        refuse_in_tool(self, self.kernel_id, "run a cell on", "it would wait for itself")
        self._held.refuse(self.kernel_id, "execute()")
        budget_s = self.options.timeout if timeout is None else timeout
        ticket = self._queue.ticket(self.generation)
        with self._queue.turn(ticket, cancel) as may_run:  # None: cancelled while it waited
            if self._life.stopping:
                raise self._runtime.shut_error(ticket.generation)
            if not may_run or (cancel is not None and cancel.is_set()):  # never sent
                info = self.info(generation=ticket.generation)
                return _checked(not_run(info, cancelled=may_run is not False), raise_on_timeout)
            with self._held.holding("execute()"):
                result = self._run(code, budget_s, self._prepare(), cancel)
            self.cells_run += 1
        self._emit("result", result)
        return _checked(result, raise_on_timeout)

    def _prepare(self) -> Loss | None:
        """Bring up a runner and a worker for the next cell; return (and clear) the loss it reports."""
        state = self._life.state
        if state is not S.IDLE:  # the usual cell finds its kernel idle
            if state is S.RUNNER_LOST:
                self.mark_lost(self._pending_loss or Loss(reason="died", note="the kernel runner was gone"))
            self._runtime.bring_up(lambda: _may_restart(self, self._pending_loss))
        loss, self._pending_loss = self._pending_loss, None
        return loss

    def _run(self, code: str, budget_s: float | None, loss: Loss | None, cancel: threading.Event | None, fresh: bool = False) -> CellResult:
        if not self._life.advance(S.BUSY):
            raise self._runtime.shut_error()
        try:
            cell = CellRun(self._runtime.require_link(), self.options, self.tools, code=code, budget_s=budget_s,
                           kernel=self, stopping=lambda: self._life.stopping, cancel=cancel, emit=self._emit,
                           resetting=lambda: self._life.state is S.RESETTING, secrets=self._secrets)
            self._cell = cell
            outcome = cell.run()
        except BaseException as exc:  # the wait itself failed: the channel's state is unknown
            self.mark_lost(Loss(reason="died", note=f"the cell's wait failed: {error_text(exc)}"))
            self._life.advance(S.RUNNER_LOST)
            raise
        finally:
            self._cell = None
        state = self._life.state
        intent: ControlIntent = ("restart" if state is S.RESETTING else "keep" if cell.link.kept else
                                 "shutdown" if state is S.CLOSING or state is S.CLOSED else "none")
        reply = outcome.reply
        if reply is not None and reply.worker_pid:
            self._runtime.worker_pid = reply.worker_pid
        if reply is not None and reply.not_run:  # the worker had died between cells; one fresh (started for this
            self._life.advance(S.WORKER_DEAD)  # cell) died before it: a next would too (its cwd gone): died, no loop
            self.mark_lost(lost := Loss.between_cells(reply.exit_code, reply.signal, reply.oom_killed, clean(reply.note, self._secrets)))
            return died_unrun(self.info(**lost.info_fields())) if fresh else self._run(code, budget_s, self._prepare(), cancel, True)
        return _judge(self, outcome, loss, intent, cell)

    # ------------------------------------------------------------------------------ control
    def interrupt(self) -> None:
        """SIGINT the running cell and its children, namespace kept (a cell whose stream is down: once
        re-attached). Safe in a signal handler of the cell's thread (as ``hermes-kernel exec`` does)."""
        check_process(self.host_pid, self.kernel_id)
        if (cell := self._cell) is not None:
            cell.interrupt()

    def cancel(self) -> None:
        """Start the timeout ladder for the running cell now, even while its budget is paused."""
        if (cell := self._cell) is not None:
            cell.budget.cancel()

    @contextmanager
    def budget_paused(self) -> Iterator[None]:
        """Freeze the running cell's budget (e.g. while a human answers a prompt)."""
        with nullcontext() if (cell := self._cell) is None else cell.budget.paused():
            yield

    def restart(self) -> KernelInfo:
        """Kill the worker (and every process it started) and start a fresh one; state is lost.

        The running cell and the cells waiting for their turn (not run) return ``died``, ``reason="reset"``
        on the old generation; cells sent meanwhile wait for it. The old worker dies before the new starts.
        A handle never started is started: nothing was lost (``state_lost=False``), as with :meth:`start`.

        :raises KernelShutdownError: if the handle was shut down.
        :raises ChannelHeldHereError: if called inside this thread's own use of the kernel (a signal
            handler that landed in a cell's wait): that call holds the channel; nothing was done.
        :raises KernelStartError: if the fresh kernel does not start, or the runner did not answer
            the kill or the start in time (its host paused or unreachable: the old worker may run on).
        """
        check_process(self.host_pid, self.kernel_id)
        return control.restart(self)

    def shutdown(self, now: bool = False, why: str = "") -> ExitInfo:
        """End the kernel: request -> SIGTERM -> SIGKILL, each step waiting ``shutdown_grace``.

        Safe in a signal handler: one that lands inside this thread's own use of the kernel's channel (a cell's
        wait, ``start()``, ``restart()``, ``shutdown()``) cannot ask the runner over it, so it kills the runner
        from outside at once (step ``sigkill``) and the call below ends with the kernel shut down.

        :param now: skip the polite steps and SIGKILL the whole tree at once.
        :param why: who ended it and why, said by every later call's ``KernelShutdownError``.
        :returns: the step that ended it, with the worker's exit code or signal. Idempotent; a no-op
            in a forked child of the kernel's process (step ``forked-child``).
        """
        if os.getpid() != self.host_pid:
            return ExitInfo(step="forked-child", confirmed=False, note=f"left alone: it is process {self.host_pid}'s")
        if why and not self._life.stopping:
            self._runtime.shut_by = why
        held = self._held.what
        if held is not None:
            return control.end_at_once(self, held)
        return control.end(self, lambda: self._runtime.stop(now), "shutdown()")

    def keep(self, orphan_timeout: float) -> ExitInfo:
        """Detach, leaving the kernel running without this host for post-mortem (``keepable``
        transports): it ends after ``orphan_timeout`` seconds without a client; the handle is closed.

        :returns: ``ExitInfo(step="kept")``; if the handle had ended, its end's (what ``shutdown()`` returned), not kept.
        :raises ConfigError: if ``orphan_timeout`` is no finite number of seconds > 0, the transport cannot keep one, or
            it is called from a tool of the kernel's running cell.
        :raises TransportLostError: if the runner did not confirm (it was shut down instead), or there was none.
        """
        check_process(self.host_pid, self.kernel_id)
        refuse_in_tool(self, self.kernel_id, "keep", _KEPT_FROM_A_TOOL)
        self._held.refuse(self.kernel_id, "keep()")
        check_keep_ttl(orphan_timeout, self.transport)
        return control.end(self, lambda: self._runtime.keep(orphan_timeout), "keep()")

    close = shutdown
    """Alias of :meth:`shutdown` (the name the handed cases use)."""

    upload = upload_to
    """Copy a local file or tree into the kernel's working dir: :func:`~.transfer.upload_to`."""
    download = download_from
    """Copy a file or tree of the kernel's working dir out: :func:`~.transfer.download_from`."""

    def __enter__(self) -> KernelHandle:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    __reduce_ex__ = _refuse_copy

    def __repr__(self) -> str:
        return (f"<KernelHandle {self.kernel_id[:8]} {self.transport.name} gen={self.generation} "
                f"pid={self.worker_pid} {'alive' if self.alive else 'down'} ({self.state.value})>")


def _judge(handle: KernelHandle, outcome: CellOutcome, loss: Loss | None, intent: ControlIntent,
           cell: CellRun) -> CellResult:
    """Settle the state after a cell and build its result (resetting where the ladder killed it)."""
    verdict = judge(outcome, intent)
    watchdog, death = verdict.watchdog, verdict.death
    if death is None:
        handle._life.advance(S.IDLE)
    else:
        handle._life.advance(S.RUNNER_LOST if outcome.runner_gone else S.WORKER_DEAD)
        if outcome.ladder_killed:
            watchdog, note = handle._runtime.reset_after_timeout(
                abandoned=outcome.abandoned, restart=handle.options.watchdog.restart, silent_s=outcome.silent_s)
            death = replace(death, note=f"cancelled: {note}" if outcome.cancelled else note)  # (no budget ran out)
        death = replace(death, note=clean(death.note, handle._secrets))  # (a SystemExit's text is the cell's)
        handle.mark_lost(death)  # the next cell reports it too (it runs on the replacement)
    changes = verdict.info_changes(earlier=loss, death=death, reconnected=outcome.reconnected,
                                   start_note=handle._runtime.take_start_note())
    return build_result(outcome, status=verdict.status, kernel=handle.info(**changes), watchdog=watchdog,
                        tool_calls=cell.authority.snapshot(verdict.status == "died"), secrets=handle._secrets)


def attach_kept(transport: Transport, locator: dict[str, Any], *, kernel_id: str, token: str,
                options: KernelOptions | None = None, env_secrets: Iterable[str] = ()) -> KernelHandle:
    """A handle on a kept kernel (:meth:`KernelHandle.keep`, maybe by another process), found by its
    transport :meth:`~.contract.Transport.locator` and attached with its token; the namespace is
    the one the kernel kept. End it with ``shutdown()``, or leave it kept with ``keep(ttl)``. A
    kept kernel whose worker had ended is a loss the next cell reports (``state_lost``,
    ``reason="died"``), or ``KernelDiedError`` with ``auto_restart=False``. ``env_secrets``: its env's, to redact.

    :raises TransportLostError: if it cannot be reached (gone, expired, or the token is refused).
    """
    handle = KernelHandle(transport, options, kernel_id=kernel_id)
    handle.token, handle._secrets = token, (*handle._secrets, *env_secrets)  # redacted as in the test that kept it
    hello = handle._runtime.adopt(transport.attach_kept(locator), token)
    if hello.get("worker_pid") is None:  # its worker ended while kept: the next cell must say so, not replace it unseen
        code, sig = hello.get("worker_exit") or (None, None)
        how = f"signal {sig}" if sig else f"exit code {code}" if code is not None else "how is not known"
        handle.mark_lost(Loss(reason="died", exit_code=code, signal=sig,
                              note=f"the kept kernel's worker had ended before this attach ({how})"))
    return handle


def _checked(result: CellResult, raise_on_timeout: bool) -> CellResult:
    """``result``; with ``raise_on_timeout``, its watchdog outcome raised as a :class:`CellTimeoutError`."""
    if raise_on_timeout and result.watchdog:
        raise _OUTCOME_ERRORS[result.watchdog](result.summary(), result=result)
    return result


def _checked_transport(transport: Transport) -> Transport:
    """:raises TypeError: if ``transport`` is a transport's name, not a transport."""
    if isinstance(transport, str):
        raise TypeError(f"a KernelHandle runs on a Transport, not on its name {transport!r}: "
                        f"start_kernel({transport!r}) starts one there, or get_transport({transport!r}) gives it")
    return transport


def _may_restart(handle: KernelHandle, loss: Loss | None) -> None:
    """:raises KernelDiedError: if the kernel is gone (``loss``) and ``auto_restart`` is off."""
    if not handle.options.auto_restart and loss is not None:
        raise KernelDiedError(f"kernel {handle.kernel_id} is gone ({loss.reason}); "
                              "auto_restart is off: call restart() to continue on a fresh kernel",
                              info=handle.info(**loss.info_fields()))
