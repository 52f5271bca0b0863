"""While pytest's debugger prompt is open, the idle clock of ``hermes_registry`` stands still.

``--pdb``, ``--trace`` and ``breakpoint()`` open pytest's prompt (hook ``pytest_enter_pdb``); ``c``
leaves it (``pytest_leave_pdb``). A user there looks at the kernels the test failed with, and a
``hermes_registry``'s idle reaper reaped them under the prompt once ``--hermes-idle-timeout`` had
passed: ``p hermes_registry.execute(key, "x")`` then ran on a fresh kernel, the state gone. The
fixture's registry reads its idle clock from :class:`PromptClock`, which does not advance from the
prompt's opening until ``c`` or the test's end (a test stepped through to its end with ``n``
leaves no ``pytest_leave_pdb``): a prompt held for an hour costs no idle time.

Over the same span, Ctrl-C in a cell typed at the prompt (``p hermes_kernel.execute(...)``, also one
stepped over under ``--trace``) interrupts that cell, as in ``hermes-kernel attach``: the cell ends
``error`` (``KeyboardInterrupt``), the namespace kept. It raised ``KeyboardInterrupt`` in
``execute``, which ends the kernel (docs/reference.md): the state the user was looking at was gone
(``state_lost``, "the cell's wait failed"). A second Ctrl-C in the same cell raises, as before.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Generator
from types import FrameType
from typing import Any

import pytest


class PromptClock:
    """Monotonic seconds, not counting the time a debugger prompt of this run was open."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None  # when the open prompt opened
        self._held = 0.0  # seconds spent at prompts that were left

    def __call__(self) -> float:
        with self._lock:
            return (self._clock() if self._since is None else self._since) - self._held

    def enter(self) -> None:
        with self._lock:
            if self._since is None:
                self._since = self._clock()

    def leave(self) -> None:
        with self._lock:
            if self._since is not None:
                self._held += self._clock() - self._since
                self._since = None


class CellInterrupter:
    """The SIGINT handler while the prompt is open (see module docstring)."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous
        self._interrupted: set[int] = set()  # the execute frames a Ctrl-C interrupted (alive while they run)

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        running = _executing(frame)
        if running is None or id(running[0]) in self._interrupted:
            raise KeyboardInterrupt
        self._interrupted.add(id(running[0]))
        running[1].interrupt()


def _executing(frame: FrameType | None) -> tuple[FrameType, Any] | None:
    """The innermost ``KernelHandle.execute`` on the main thread's stack, and its handle."""
    from ..kernel.handle import KernelHandle

    while frame is not None:
        if frame.f_code.co_name == "execute" and isinstance(frame.f_locals.get("self"), KernelHandle):
            return frame, frame.f_locals["self"]
        frame = frame.f_back
    return None


def _interrupt_cells() -> None:
    if threading.current_thread() is threading.main_thread() and not isinstance(signal.getsignal(signal.SIGINT),
                                                                                CellInterrupter):
        signal.signal(signal.SIGINT, CellInterrupter(signal.getsignal(signal.SIGINT)))


def _put_back() -> None:
    """The SIGINT handler from before the prompt, again: in place, or where pdb keeps it to put back
    at its next prompt (its ``continue`` put a handler of its own in place of this one)."""
    if threading.current_thread() is not threading.main_thread():
        return
    ours = signal.getsignal(signal.SIGINT)
    if isinstance(ours, CellInterrupter):
        signal.signal(signal.SIGINT, ours.previous)
    pdb = sys.modules.get("pdb")  # (after every test: never imported for it)
    saved = getattr(getattr(pdb, "Pdb", None), "_previous_sigint_handler", None)
    if isinstance(saved, CellInterrupter):
        pdb.Pdb._previous_sigint_handler = saved.previous  # type: ignore[union-attr]


prompt_clock_key = pytest.StashKey[PromptClock]()


def prompt_clock(config: pytest.Config) -> PromptClock:
    """This run's clock (one for every registry of the run)."""
    return config.stash.setdefault(prompt_clock_key, PromptClock())


def pytest_enter_pdb(config: pytest.Config) -> None:
    prompt_clock(config).enter()
    _interrupt_cells()


def pytest_leave_pdb(config: pytest.Config) -> None:
    prompt_clock(config).leave()
    _put_back()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    yield
    prompt_clock(item.config).leave()  # (once the test has ended, whatever its prompt's end was)
    _put_back()
