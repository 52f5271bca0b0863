"""A Ctrl-C that lands while a cell gets in line for its kernel, or leaves the line with the
kernel, leaves the kernel to the next cell (``kernel.queue.CellQueue``).

The line in front of the queue's lock (cells run in the order they came) is kept under a lock of
its own, and a signal's handler runs in the main thread between two steps of it, as each such
block ends. Before: one landing as the cell's place was put in line left that place at the
head for good (every later cell on the kernel waited for ever); one landing as the place was
taken out, or as the count of waiting cells came down, left the kernel's lock held by the
interrupted thread (every other thread's cell waited for ever); one landing as the count went up
left ``queued`` one too high for good (since read off the line, not counted apart: the two
blocks of the count are gone).
"""

from __future__ import annotations

import glob
import inspect
import os
import subprocess
import sys
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from types import FrameType
from typing import Any

import pytest

from pytest_hermes_kernel.contract._probes import call_in_thread
from pytest_hermes_kernel.kernel import queue as queue_module
from pytest_hermes_kernel.kernel.queue import CellQueue, _Place
from tests.support import wait_until

#: The blocks under the line's lock one cell's turn goes through, in order.
BLOCKS = ["get-in-line", "leave-the-line"]


class CtrlCAtTheEnd:
    """A lock whose ``when``-th block in the main thread (1-based) ends with ``KeyboardInterrupt``,
    right after the lock is released: a Ctrl-C whose handler ran just then."""

    def __init__(self, when: int) -> None:
        self._lock, self._blocks, self._when = threading.Lock(), 0, when

    def __enter__(self) -> CtrlCAtTheEnd:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        if threading.current_thread() is threading.main_thread():
            self._blocks += 1
            if self._blocks == self._when:
                raise KeyboardInterrupt


def _take_turn(queue: CellQueue) -> bool | None:
    with queue.turn(queue.ticket(0)) as may_run:
        return may_run


@pytest.mark.parametrize("when", range(1, len(BLOCKS) + 1), ids=BLOCKS)
def test_a_ctrl_c_in_the_line_leaves_the_kernel_to_the_next_cell(when: int) -> None:
    queue = CellQueue()
    queue._count_lock = CtrlCAtTheEnd(when)  # type: ignore[assignment]
    with pytest.raises(KeyboardInterrupt):
        _take_turn(queue)

    other = call_in_thread(_take_turn, queue)
    assert other.result(timeout=10.0) is True, "another thread's cell got the kernel"
    assert queue.waiting == 0, "no cell waits"
    assert _take_turn(queue) is True, "this thread's next cell got the kernel"


def test_a_ctrl_c_as_a_restart_takes_the_lock_to_wake_the_waiters_gives_the_lock_back() -> None:
    """A restart's end takes the queue's lock for a moment to wake the cells sent meanwhile; a
    Ctrl-C whose handler ran just as the lock was taken left it held by the restarting thread:
    every other thread's cell on the kernel waited for ever."""
    queue = CellQueue()
    real = queue._turn.acquire

    def acquire_then_ctrl_c(*args: object, **kwargs: object) -> bool:
        if got := real(*args, **kwargs):
            raise KeyboardInterrupt
        return got

    with pytest.raises(KeyboardInterrupt):
        with queue.restart():
            queue._turn.acquire = acquire_then_ctrl_c  # type: ignore[method-assign]  # only the restart's end takes it
    queue._turn.acquire = real  # type: ignore[method-assign]

    assert call_in_thread(_take_turn, queue).result(timeout=10.0) is True, "another thread's cell got the kernel"


HAIL = """
import importlib.util, os, signal, sys, threading, time
spec = importlib.util.spec_from_file_location("hermes_queue", sys.argv[1])  # stdlib only: any host Python
sys.modules["hermes_queue"] = module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
CellQueue = module.CellQueue

queue = CellQueue()
deadline = time.monotonic() + 1.5

def raising(signum, frame):  # Ctrl-C, until the deadline
    if time.monotonic() < deadline:
        raise KeyboardInterrupt

signal.signal(signal.SIGINT, raising)
go, cells = threading.Event(), [0]

def pelt():  # stops by itself: a main thread that stopped it could be cut short doing so
    go.wait(10)
    while time.monotonic() < deadline:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.0003)

def hail():
    go.set()
    while time.monotonic() < deadline:
        try:
            try:
                with queue.turn(queue.ticket(0)):
                    cells[0] += 1
            except KeyboardInterrupt:
                pass
        except KeyboardInterrupt:
            pass

threading.Thread(target=pelt, daemon=True).start()
while time.monotonic() < deadline:
    try:  # a signal can land between any two steps: in hail's own except clause too, then here
        try:
            hail()
        except KeyboardInterrupt:
            pass
    except KeyboardInterrupt:
        pass
took = []
other = threading.Thread(target=lambda: took.append(queue.turn(queue.ticket(0)).__enter__()), daemon=True)
other.start()
other.join(5)
print(cells[0], "taken" if took else "never-taken", queue.waiting, len(queue._line))
"""


def _python_3_10() -> str | None:
    pattern = os.path.join(os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv"), "versions", "3.10.*", "bin", "python")
    return next(iter(sorted(glob.glob(pattern))), None)


#: Host interpreters the hail runs on: this one, and a 3.10 (pyenv's) where there is one: 3.10 runs a
#: signal's handler at more points (as a call returns, as a ``finally`` begins) than 3.11+ do.
HOSTS = [pytest.param(sys.executable, id="this-python"),
         pytest.param(_python_3_10(), id="3.10", marks=pytest.mark.skipif(
             _python_3_10() is None, reason="no Python 3.10 under $PYENV_ROOT/versions (default ~/.pyenv)"))]


@pytest.mark.parametrize("python", HOSTS)
def test_under_a_hail_of_ctrl_c_the_kernel_still_goes_to_the_next_cell(python: str) -> None:
    """For 1.5 s a thread sends SIGINT every 0.3 ms while the main thread takes turns again and
    again (in a process of its own: a signal may land anywhere, pytest's own code included);
    afterwards another thread's cell gets the kernel, no cell counts as waiting and the line is
    empty. Before: the child never ended (6 of 6 runs, as with the first fix of the four blocks
    above alone): a place left by a Ctrl-C at a step inside a block, or on the way into the
    bookkeeping function, stayed in line ahead of every later cell, the main thread's own too."""
    done = subprocess.run([python, "-c", HAIL, queue_module.__file__], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    cells, taken, waiting, line = done.stdout.split()
    assert int(cells) > 100 and (taken, waiting, line) == ("taken", "0", "0"), done.stdout


def test_a_ctrl_c_as_the_wait_returns_with_the_lock_gives_it_back() -> None:
    """Python 3.10 also runs a signal's handler as a call returns: a Ctrl-C landing as the wait for
    the turn came back holding the queue's lock, before the block that releases it, left the lock
    to the interrupted thread for good (the hail above on a 3.10 host: the next cell never got the
    kernel in 3 of 8 runs)."""
    queue = CellQueue()
    real = queue._wait_turn

    def then_ctrl_c(*args: object) -> bool:
        if got := real(*args):  # type: ignore[arg-type]
            raise KeyboardInterrupt
        return got

    queue._wait_turn = then_ctrl_c  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        _take_turn(queue)
    queue._wait_turn = real  # type: ignore[method-assign]

    assert call_in_thread(_take_turn, queue).result(timeout=10.0) is True, "another thread's cell got the kernel"


def test_a_place_whose_wait_ended_without_leaving_the_line_holds_no_one_up() -> None:
    """A place whose cell's wait ended without marking it gone (3.10: a second Ctrl-C landing as
    the first one's ``finally`` began) goes with that wait's frame, not for ever."""
    queue = CellQueue()
    placed, end = threading.Event(), threading.Event()

    def a_wait_still_running() -> None:  # its place is head while this frame runs
        queue._line = (_Place(sys._getframe()),)
        placed.set()
        end.wait(30.0)

    stale = threading.Thread(target=a_wait_still_running, daemon=True)
    stale.start()
    assert placed.wait(10.0)
    other = call_in_thread(_take_turn, queue)
    wait_until(lambda: queue.waiting == 2, 10.0, what="the other cell in line")
    with pytest.raises(FutureTimeout):  # a bounded look: it must wait behind a place whose wait still runs
        other.result(timeout=0.2)
    end.set()  # that wait's frame ended
    assert other.result(timeout=10.0) is True, "the cell behind a stale place got the kernel"
    assert queue.waiting == 0


def _raise_at(mark: int) -> Any:
    """The local trace function that raises ``KeyboardInterrupt`` as line ``mark`` of its frame begins, once."""
    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line" and frame.f_lineno == mark:
            sys.settrace(None)
            frame.f_trace = None
            raise KeyboardInterrupt
        return local
    return local


def _ctrl_c_as_the_finally_of_the_wait_begins(frame: FrameType, event: str, arg: object) -> Any:
    """A trace function that raises ``KeyboardInterrupt`` in ``_wait_turn`` just before its
    ``finally`` marks the place gone: where 3.10 runs a signal's handler as a ``finally`` begins."""
    if frame.f_code is not CellQueue._wait_turn.__code__:
        return None
    lines = inspect.getsourcelines(CellQueue._wait_turn)
    mark = lines[1] + next(i for i, text in enumerate(lines[0]) if "place.gone = True" in text)
    return _raise_at(mark)


def test_a_kept_ctrl_c_from_the_wait_holds_no_one_up() -> None:
    """The ``KeyboardInterrupt`` of a cell cut short as its wait's ``finally`` began is kept (as
    ``sys.last_traceback`` keeps it in an interactive session): its traceback keeps the ended wait's
    frame, and its locals, alive. Another thread's cell still gets the kernel and the cell no
    longer counts as waiting. Before: the place stayed head for as long as the exception was kept
    (the other cell waited 10 s of 10 s; ``queued`` stayed 1), as its liveness was a local of that frame."""
    queue = CellQueue()
    sys.settrace(_ctrl_c_as_the_finally_of_the_wait_begins)
    try:
        with pytest.raises(KeyboardInterrupt) as kept:
            _take_turn(queue)
    finally:
        sys.settrace(None)
    assert kept.value.__traceback__ is not None  # kept, with the wait's frame in it
    assert queue.waiting == 0, "the interrupted cell still counts as waiting"
    assert call_in_thread(_take_turn, queue).result(timeout=10.0) is True, "another thread's cell got the kernel"


def _ctrl_c_as_a_reentered_turn_has_the_lock(frame: FrameType, event: str, arg: object) -> Any:
    """A trace function that raises ``KeyboardInterrupt`` in a re-entered ``_wait_turn`` (its thread
    holds the queue's lock) on the line after the wait for the lock: where a signal's handler runs
    as that call returns, before ``held[0]`` records the hold."""
    if frame.f_code is not CellQueue._wait_turn.__code__ or not frame.f_locals.get("owned"):
        return None
    lines, first = inspect.getsourcelines(CellQueue._wait_turn)
    mark = first + next(i for i, text in enumerate(lines)
                        if text.strip().startswith("held[0] = ") and "False" not in text)
    return _raise_at(mark)


def test_a_ctrl_c_in_a_reentered_turn_leaves_the_lock_to_the_next_cell() -> None:
    """A turn re-entered inside a cell's turn (``start()`` in it, a signal handler's cell) cut by a
    Ctrl-C just as its wait for the lock returned: once the cell's turn ends, another thread's
    cell gets the kernel. Before: the re-entered turn had taken the (re-entrant) lock a second
    time and nothing released that hold: the lock stayed the interrupted thread's, and the other
    thread's cell waited 10 s of 10 s."""
    queue = CellQueue()
    with queue.turn(queue.ticket(0)):
        sys.settrace(_ctrl_c_as_a_reentered_turn_has_the_lock)
        try:
            with pytest.raises(KeyboardInterrupt):
                _take_turn(queue)
        finally:
            sys.settrace(None)
    assert call_in_thread(_take_turn, queue).result(timeout=10.0) is True, "another thread's cell got the kernel"


def test_a_turn_never_lists_every_threads_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sys._current_frames()`` can run the garbage collector while it holds the interpreter's list
    of threads, and a finalizer that needs that list waits for ever: a clean-clone run hung in it
    (``_PyThread_CurrentFrames`` -> ``gc_collect_main`` -> a lock, 3.11), a cell waiting in line
    behind a place whose liveness it was asking. A place asks its own frame instead."""
    def refused() -> None:
        raise AssertionError("sys._current_frames() called: it can deadlock with the garbage collector")

    monkeypatch.setattr(sys, "_current_frames", refused)
    queue = CellQueue()
    with queue.turn(queue.ticket(0)):
        other = call_in_thread(_take_turn, queue)
        wait_until(lambda: queue.waiting == 1, 10.0, what="the other cell in line")
    assert other.result(timeout=10.0) is True and queue.waiting == 0
