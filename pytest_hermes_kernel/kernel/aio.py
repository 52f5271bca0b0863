"""Running a cell from asyncio: :func:`aexecute`, whose cancellation cancels the cell (B28).

A coroutine that awaits a cell through a thread pool (``asyncio.to_thread(k.execute, ...)``)
leaves the cell running when its task is cancelled: the kernel works on, and the waiting
thread outlives its request. :func:`aexecute` instead runs the cell in a thread of its own and,
when the awaiting task is cancelled, throws the cell's cancel switch: the timeout ladder starts
at once (SIGINT, then SIGKILL and a fresh worker, or abandon), the coroutine waits for the cell
to settle (further cancellations are held until then), hands the settled
:class:`~.results.CellResult` (its ``watchdog`` says which rung ended the cell) to
``on_cancelled``, and then lets the cancellation propagate, as asyncio requires. The thread
ends with its cell, so no listener outlives its request. A loop closed under a task that was
never cancelled (a bare ``loop.close()``) throws the switch too: nobody can await that cell.
Cells of several ``aexecute`` calls on one kernel run in the order the coroutines called it
(``asyncio.gather()``): each call's thread takes its place in the kernel's line only after the
thread of the call before it on that kernel has taken its own, and so does any cell sent after the
call (``execute`` from a thread). The loop never waits for that (it waited up to 2 s for its
thread's first steps, every other task of the loop with it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .queue import CANCEL_LOOK_S, CellQueue, on_placed
from .results import CellResult

if TYPE_CHECKING:
    import asyncio

    from .handle import KernelHandle

__all__ = ["aexecute"]

#: Guards each kernel's ``CellQueue.last_aexecute``, the event set once the cell of the latest
#: ``aexecute`` call on it stands in line (or was refused): the next call's thread, and any cell sent
#: after the call, waits for it. Kept on the line, not per object handed in: a wrapper that is
#: unhashable (a dataclass) raised ``TypeError``, and calls through a wrapper and through its kernel
#: kept no order between them.
_last_placed_lock = threading.Lock()


async def aexecute(kernel: KernelHandle, code: str, *, timeout: float | None = None,
                   on_cancelled: Callable[[CellResult], None] | None = None) -> CellResult:
    """Run ``code`` on ``kernel`` from a coroutine (see module docstring).

    :param timeout: seconds of budget for the cell (``None``: the kernel's ``options.timeout``).
    :param on_cancelled: called with the cancelled cell's final result, before the
        cancellation propagates (not called when the cell raised instead of returning).
    :returns: the cell's :class:`CellResult`.
    :raises asyncio.CancelledError: if the awaiting task was cancelled (after the cell settled).
    :raises KernelShutdownError: if the kernel was shut down (and whatever ``execute`` raises).
    :raises TypeError: if ``kernel`` is no kernel (a registry, a transport's name) or ``on_cancelled``
        cannot be called; nothing was sent.
    """
    import asyncio  # here, not at import: a caller awaiting this has it loaded; others never pay for it

    _check_args(kernel, on_cancelled)
    loop = asyncio.get_running_loop()
    done: asyncio.Future[CellResult] = loop.create_future()
    switch, placed = _LoopSwitch(loop), threading.Event()
    before = _behind(kernel, placed)
    try:
        threading.Thread(target=_run_cell, args=(loop, done, kernel, code, timeout, switch, placed, before),
                         name=f"hermes-aexecute-{kernel.kernel_id[:8]}", daemon=True).start()
    except BaseException:  # (can't start new thread): no cell, and no place for the next call to wait for
        _withdraw(kernel, placed, before)
        raise
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        switch.set()
        result = await _settled(done)
        if result is not None and on_cancelled is not None:
            on_cancelled(result)
        raise


class _LoopSwitch(threading.Event):
    """The cell's cancel switch, also set once the cell's event loop is closed: a cell whose task can
    never be resumed (the loop closed under it, uncancelled) is cancelled, not left to run on."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop

    def is_set(self) -> bool:
        return super().is_set() or self._loop.is_closed()


def _check_args(kernel: object, on_cancelled: object) -> None:
    """:raises TypeError: if ``kernel`` has no ``execute`` and ``kernel_id`` (a registry, a
    transport's name: a bare ``AttributeError`` before), or ``on_cancelled`` cannot be called (its
    ``TypeError`` replaced the first cancellation)."""
    if not (callable(getattr(kernel, "execute", None)) and isinstance(getattr(kernel, "kernel_id", None), str)):
        hint = ("; a registry's kernel: aexecute(registry.get_or_start(key), code)"
                if callable(getattr(kernel, "get_or_start", None)) else "")
        raise TypeError(f"aexecute runs a cell on a KernelHandle, not on {type(kernel).__name__} {kernel!r}{hint}; "
                        "nothing was sent")
    if on_cancelled is not None and not callable(on_cancelled):
        raise TypeError(f"on_cancelled must be a callable taking the cancelled cell's CellResult (or None), got "
                        f"{on_cancelled!r}; nothing was sent")


async def _settled(done: asyncio.Future[CellResult]) -> CellResult | None:
    """Wait for the cell to end, holding further cancellations; its result (``None`` if it raised)."""
    import asyncio

    while not done.done():
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            continue
        except BaseException:  # noqa: BLE001 - the cell's own error; the cancellation is what propagates
            break
    return None if done.exception() is not None else done.result()


def _behind(kernel: object, placed: threading.Event) -> threading.Event | None:
    """The event of the ``aexecute`` call before this one on ``kernel`` (``None``: none waits, or
    ``kernel`` keeps no line of cells); ``placed`` is the one the next call waits for."""
    queue = getattr(kernel, "_queue", None)  # by the line, not the object: a wrapper (FaultingKernel) shares its kernel's
    if not isinstance(queue, CellQueue):
        return None  # (a kernel-like object of a test: no line to keep a place in)
    with _last_placed_lock:
        before, queue.last_aexecute = queue.last_aexecute, placed
    return None if before is None or before.is_set() else before


def _withdraw(kernel: object, placed: threading.Event, before: threading.Event | None) -> None:
    """A call whose thread did not start: the next call waits for the one before it instead (it waited
    for this one's ``placed``, which nothing would set: every later ``aexecute`` on the kernel hung)."""
    queue = getattr(kernel, "_queue", None)
    with _last_placed_lock:
        if isinstance(queue, CellQueue) and queue.last_aexecute is placed:
            queue.last_aexecute = before
            return
    placed.set()  # (a later call waits for it already)


def _run_cell(loop: asyncio.AbstractEventLoop, done: asyncio.Future[CellResult], kernel: KernelHandle,
              code: str, timeout: float | None, switch: threading.Event, placed: threading.Event,
              before: threading.Event | None) -> None:
    """The cell's thread: wait until the cell of the ``aexecute`` call ``before`` it stands in line
    (or this one is cancelled), run its own (``placed`` set once it stands in line), hand its result
    (or error) to the loop, end. Cancelled before ``before`` stood in line, it sets ``placed`` only once
    ``before`` is set (it set it at once and let the next call run ahead of ``before``)."""
    outcome: CellResult | BaseException
    while before is not None and not before.wait(CANCEL_LOOK_S) and not switch.is_set():
        pass  # (cancelled first: execute() answers the set switch at once, the cell never sent)
    cut_short = before is not None and not before.is_set()  # cancelled, or its loop closed, ahead of the call before
    on_placed.callback = None if cut_short else placed.set
    try:
        outcome = kernel.execute(code, timeout=timeout, cancel=switch)
    except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
        outcome = exc
    finally:
        on_placed.callback = None
        if not cut_short:
            placed.set()  # (refused before its place was taken: nothing to wait for)
    try:
        loop.call_soon_threadsafe(_settle, done, outcome)
    except RuntimeError:
        pass  # the loop is closed: nobody awaits this cell any more
    if cut_short:  # the next call waits behind the one before this one (it let the next one past it)
        before.wait()  # type: ignore[union-attr]
        placed.set()


def _settle(done: asyncio.Future[CellResult], outcome: CellResult | BaseException) -> None:
    if done.done():
        return
    if isinstance(outcome, BaseException):
        done.set_exception(outcome)
    else:
        done.set_result(outcome)
