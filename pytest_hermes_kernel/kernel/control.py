"""The handle's control calls (``restart``, ``shutdown``, ``keep``), also from a signal handler.

Python runs a signal handler in the main thread between two steps of whatever that thread does.
A script that wires SIGTERM or Ctrl-C to ``shutdown()`` may so call it inside the same thread's
own ``shutdown()`` or ``restart()`` of that kernel, or its wait for a cell: the frame below holds
the kernel's channel (it reads for everyone, and may hold a lock), so the handler can neither
wait for a reply there nor for the frame below to finish. :class:`HeldHere` records what the
thread is doing with the channel; a ``shutdown()`` that finds it held kills the runner from
outside at once (:func:`end_at_once`) and the call below ends with the kernel shut down.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ChannelClosed, ChannelHeldHereError, KernelForkedError, KernelStartError
from .lifecycle import KernelState, Loss
from .results import ExitInfo, KernelInfo

if TYPE_CHECKING:
    from .handle import KernelHandle

__all__ = ["HeldHere", "check_process", "restart", "fresh_turn", "end", "end_at_once", "despite_signals"]

S = KernelState
T = TypeVar("T")

HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals :func:`despite_signals` holds back while it ends a runner (the ones a user or a CI
sends to stop a run)."""


class HeldHere:
    """What each thread is doing with one kernel's channel now (a thread-local mark)."""

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def what(self) -> str | None:
        """What this thread, further up its stack, is doing with the channel (``"restart()"``,
        ...); ``None``: nothing, so a call here may use the channel as usual."""
        return getattr(self._local, "what", None)

    def refuse(self, kernel_id: str, call: str) -> None:
        """Refuse ``call`` when this thread holds the channel already (see :class:`ChannelHeldHereError`).

        :raises ChannelHeldHereError: if it does; nothing was done.
        """
        held = self.what
        if held is None:
            return
        raise ChannelHeldHereError(
            f"kernel {kernel_id}: {call} was called inside this thread's own {held} on the same kernel (from a "
            f"signal handler?); that call holds the kernel's channel, so {call} cannot use it: nothing was done\n"
            f"Hint: call {call} once the {held} has returned (have the handler set a flag), or call interrupt() or "
            "shutdown() from the handler, which are safe there", kernel_id=kernel_id, held_by=held)

    @contextmanager
    def holding(self, what: str) -> Iterator[None]:
        """Mark this thread as using the channel for ``what`` while the block runs (the outermost
        use is the one named)."""
        outer = self.what
        self._local.what = outer or what
        try:
            yield
        finally:
            self._local.what = outer


def check_process(host_pid: int, kernel_id: str | None = None) -> None:
    """Refuse a kernel's use in a forked child of the process it belongs to (B42): the child
    shares the parent's channels, and a start under way in a thread of the parent never ends there.

    :param kernel_id: the kernel; ``None``: a registry's acquire.
    :raises KernelForkedError: if this process is not ``host_pid``.
    """
    if os.getpid() == host_pid:
        return
    what = "this kernel registry" if kernel_id is None else f"kernel {kernel_id}"
    raise KernelForkedError(
        f"{what} belongs to process {host_pid}; this is its forked child {os.getpid()}, which shares the "
        "parent's channels and may not use them. Hint: start a kernel (or a KernelRegistry) of its own in the "
        "child, or use the 'spawn' start method", kernel_id=kernel_id, host_pid=host_pid)


def restart(handle: KernelHandle) -> KernelInfo:
    """:meth:`KernelHandle.restart` (see there)."""
    runtime, queue = handle._runtime, handle._queue
    if handle.stopping:
        raise runtime.shut_error()
    handle._held.refuse(handle.kernel_id, "restart()")  # from a signal handler in this thread's own cell, ...
    with handle._control_lock, handle._held.holding("restart()"):
        if handle.stopping:
            raise runtime.shut_error()
        if handle._life.is_(S.NEW):  # never started: no state to lose, so no reset to report (it said
            handle.start()           # state_lost, and the first cell repeated "restart() was called")
            return handle.info()
        try:
            with queue.restart():  # the cells waiting now are overtaken, never run on the new one
                before = handle._pending_loss
                if handle._life.swap(S.BUSY, S.RESETTING):
                    with suppress(ChannelClosed):  # its runner is gone already (killed from outside): the cell
                        runtime.require_link().kill_worker()  # settles with it, and a new runner starts below
                with queue.lock:  # a running cell settles first; one it cut said the reset (a lost event, once)
                    pending = handle._pending_loss  # (None: a cell reported the loss noted before and cleared it)
                    if pending is None or pending is before or pending.reason != "reset":
                        handle.mark_lost(Loss(reason="reset", note="restart() was called"))  # also if no new worker starts
                    runtime.replace()
                    return handle.info(state_lost=True, reason="reset")
        except ChannelClosed:
            if handle.stopping:  # shut down meanwhile (a signal handler's shutdown() closed the channel)
                raise runtime.shut_error() from None
            raise
        except TimeoutError as exc:  # the channel's wait for a reply, not a kernel error: say what it means
            raise KernelStartError(f"kernel {handle.kernel_id}: restart() got no answer from its runner ({exc}); "
                                   "the old worker may still run (is its host paused or unreachable?)",
                                   kernel_id=handle.kernel_id) from None


@contextmanager
def fresh_turn(handle: KernelHandle) -> Iterator[None]:
    """A turn on the kernel taken in line with the cells (the ones ahead run to their end, none is
    cut), whose worker is replaced as it begins: ``execute`` inside it (it re-enters the turn) runs
    on the fresh worker before any cell sent meanwhile (``registry.execute(reset=True)``: as a
    ``restart()`` and then the cell, it cut other threads' running cells, and let theirs run between).

    :raises KernelShutdownError: if the handle was shut down.
    :raises KernelStartError: if the fresh worker does not start.
    """
    queue = handle._queue
    with queue.turn(queue.ticket(handle.generation)):
        if handle.stopping:
            raise handle._runtime.shut_error()
        if not handle.cells_run:  # fresh: looked at in its turn (looked at before, a first cell of another
            yield  # thread then running was not counted yet, and the reset cell saw its variables)
            return
        with handle._held.holding("restart()"):
            handle.mark_lost(Loss(reason="reset", note="restart() was called"))  # also if no new worker starts
            handle._runtime.replace()
        yield


def end(handle: KernelHandle, how: Callable[[], ExitInfo], what: str) -> ExitInfo:
    """End the kernel ``how`` says (stop it, keep it), once; a later call gets the first one's
    :class:`ExitInfo` (``already-exited`` while it runs in another thread).

    :param what: the call, for a nested one's notes (``"shutdown()"``, ``"keep()"``).
    """
    with handle._control_lock, handle._held.holding(what):
        if not handle._life.begin_closing():
            return handle.exit_info or ExitInfo(step="already-exited")
        try:
            info = how()
        finally:
            handle._life.end_closing()
    return _ended(handle, info)


def end_at_once(handle: KernelHandle, held: str) -> ExitInfo:
    """``shutdown()`` inside this thread's own ``held`` (a signal handler landed there): no lock the
    frame below may hold is waited for and nothing goes over its channel; the runner is killed
    from outside now (:meth:`~.runtime.KernelRuntime.end_at_once`), also when a shutdown below
    has begun to end it politely.

    :returns: step ``sigkill`` (``confirmed`` when the runner was seen gone); the first end's
        :class:`ExitInfo` if the kernel had ended already.
    """
    if handle._life.is_(S.CLOSED):
        return handle.exit_info or ExitInfo(step="already-exited")
    handle._life.begin_closing()  # (False: a shutdown below has begun it)
    info = handle._runtime.end_at_once(held)
    handle._life.end_closing()
    return _ended(handle, info)


def _ended(handle: KernelHandle, info: ExitInfo) -> ExitInfo:
    """Record how the kernel ended, once (a nested shutdown may end it before the call below),
    and tell the listeners."""
    if handle.exit_info is None:
        handle.exit_info = info
        handle._emit("shutdown", info)
    return handle.exit_info


def despite_signals(step: Callable[[], T]) -> T:
    """Run ``step``, the end of a runner that a Ctrl-C cut short, to its own end however many
    more signals come: a second Ctrl-C (or a handler's ``SystemExit``) during the kill would
    otherwise cut the kill itself short, and leave the runner owned by no one.

    Python runs signal handlers in the main thread only, between two steps of it. There, while
    ``step`` runs, the Python-level handlers of SIGINT, SIGTERM and SIGHUP (those that are
    Python functions, such as the default ``KeyboardInterrupt`` one) are swapped for one that
    only notes the signal; once ``step`` is done they are put back, then each noted signal's own
    handler is called once. A signal whose handler raises while they are swapped in or put back
    cuts neither short (:func:`_each`): its exception goes on once ``step`` has run and the
    noted signals' handlers were called. From the moment ``step`` is done the noting handler
    hands every signal to the one it replaced, so none is swallowed; a noting handler left in
    place (a signal between two bytecodes of the put-back, or a program that saved the handler
    during ``step`` and puts it back later) puts its handler back at its next signal, and a
    later call sees through it (:func:`_stood_for`): noting handlers never stack up. In any
    other thread ``step`` just runs.

    :returns: what ``step`` returned.
    :raises: what ``step`` raised, else the first exception a signal's handler raised (one
        that landed in the swap or the put-back first, then the noted ones).
    """
    if threading.current_thread() is not threading.main_thread():
        return step()
    noted: list[int] = []
    held: dict[int, Any] = {}
    done: list[bool] = []

    def note(signum: int, frame: object) -> None:
        if done:  # step is done: this is the handler's own signal now (we are putting it back)
            try:
                if signal.getsignal(signum) is note:  # left in place: put its handler back
                    signal.signal(signum, held[signum])
            finally:  # also if another signal's handler raised first, inside that signal.signal
                held[signum](signum, frame)
        else:
            noted.append(signum)

    note.hermes_stands_for = (held, done)  # type: ignore[attr-defined]  # for a later call: see _stood_for
    cut: list[BaseException] = []  # what handlers of signals landing in the swap or the put-back raised
    try:
        _each(HELD_SIGNALS, lambda signum: _swap_in(signum, note, held), cut)
        result = step()
    finally:
        done.append(True)
        _each(list(held), lambda signum: signal.signal(signum, held[signum]), cut)
        raised = cut + [exc for signum in dict.fromkeys(noted) if (exc := _call(held[signum], signum)) is not None]
        if raised and sys.exc_info()[1] is None:  # step returned: what a handler raised comes out now
            raise raised[0]
    return result


def _swap_in(signum: int, note: Callable[[int, object], None], held: dict[int, Any]) -> None:
    """Hold ``signum``'s handler in ``held`` and put ``note`` in its place (if it is a Python
    function); done already, nothing is done again."""
    handler = signal.getsignal(signum)
    if handler is note:
        return
    handler = _stood_for(handler, signum)
    if callable(handler):
        held[signum] = handler
        signal.signal(signum, note)


def _each(signums: Sequence[int], do: Callable[[int], object], cut: list[BaseException]) -> None:
    """``do(signum)`` for each of ``signums``, to the last, however many signal handlers raise
    meanwhile: each one's exception is added to ``cut`` (it goes on once the step has run) and the
    call it cut short is made again. CPython's ``signal.signal`` runs a pending signal's handler
    before it changes anything, so one that raises there leaves the handler unchanged: a swap
    that stopped there left the step open to the next Ctrl-C, a put-back left the signals noted
    during the step unhandled. A call that fails :data:`_EACH_TRIES` times in a row fails for
    another reason than a signal (each try would need a new one): it is given up, its error
    handed on the same way, instead of tried forever."""
    todo, tries = list(signums), 0
    while todo:
        try:
            do(todo[0])
        except BaseException as exc:  # noqa: BLE001 - a signal's, handed on after the step
            cut.append(exc)
            tries += 1
            if tries < _EACH_TRIES:
                continue
        todo.pop(0)
        tries = 0


#: How many times in a row :func:`_each` tries one call before it gives it up.
_EACH_TRIES = 50


def _stood_for(handler: Any, signum: int) -> Any:
    """The handler a noting one of an earlier, finished :func:`despite_signals` stood for, left in
    place when its put-back was cut short (through any number of such); ``handler`` itself
    otherwise, also a noting one whose step still runs (a call inside that step). Held instead of
    it, the chain of noting handlers cannot grow (it did: 17 deep after a 1.5 s hail of signals)."""
    while True:
        held, done = getattr(handler, "hermes_stands_for", (None, None))
        if not done or signum not in held:
            return handler
        handler = held[signum]


def _call(handler: Callable[[int, object], object], signum: int) -> BaseException | None:
    """Run a noted signal's ``handler``; what it raised (``None``: nothing)."""
    try:
        handler(signum, None)
    except BaseException as exc:  # noqa: BLE001 - handed to the caller, after every handler ran
        return exc
    return None
