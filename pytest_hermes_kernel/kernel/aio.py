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
(``asyncio.gather()``): each call returns to the loop once its thread has its cell in line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .queue import CellQueue, on_placed
from .results import CellResult

if TYPE_CHECKING:
    import asyncio

    from .handle import KernelHandle

__all__ = ["aexecute"]

#: How long :func:`aexecute` waits for its cell's thread to take the cell's place in line (seconds).
PLACE_WAIT_S = 2.0


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
    threading.Thread(target=_run_cell, args=(loop, done, kernel, code, timeout, switch, placed),
                     name=f"hermes-aexecute-{kernel.kernel_id[:8]}", daemon=True).start()
    if isinstance(getattr(kernel, "_queue", None), CellQueue):  # in line before the next aexecute's cell
        placed.wait(PLACE_WAIT_S)  # (its thread's first steps: the loop waits that long at the most)
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


def _run_cell(loop: asyncio.AbstractEventLoop, done: asyncio.Future[CellResult], kernel: KernelHandle,
              code: str, timeout: float | None, switch: threading.Event, placed: threading.Event) -> None:
    """The cell's thread: run it (``placed`` set once it stands in line), hand its result (or error)
    to the loop, end."""
    outcome: CellResult | BaseException
    on_placed.callback = placed.set
    try:
        outcome = kernel.execute(code, timeout=timeout, cancel=switch)
    except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
        outcome = exc
    finally:
        on_placed.callback = None
        placed.set()  # (refused before its place was taken: nothing to wait for)
    try:
        loop.call_soon_threadsafe(_settle, done, outcome)
    except RuntimeError:
        pass  # the loop is closed: nobody awaits this cell any more


def _settle(done: asyncio.Future[CellResult], outcome: CellResult | BaseException) -> None:
    if done.done():
        return
    if isinstance(outcome, BaseException):
        done.set_exception(outcome)
    else:
        done.set_result(outcome)
