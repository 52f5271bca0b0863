"""While pytest's debugger prompt is open, the idle clock of ``hermes_registry`` stands still.

``--pdb``, ``--trace`` and ``breakpoint()`` open pytest's prompt (hook ``pytest_enter_pdb``); ``c``
leaves it (``pytest_leave_pdb``). A user there looks at the kernels the test failed with, and a
``hermes_registry``'s idle reaper reaped them under the prompt once ``--hermes-idle-timeout`` had
passed: ``p hermes_registry.execute(key, "x")`` then ran on a fresh kernel, the state gone. The
fixture's registry reads its idle clock from :class:`PromptClock`, which does not advance from the
prompt's opening until ``c`` or the test's end (a test stepped through to its end with ``n``
leaves no ``pytest_leave_pdb``): a prompt held for an hour costs no idle time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator

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


prompt_clock_key = pytest.StashKey[PromptClock]()


def prompt_clock(config: pytest.Config) -> PromptClock:
    """This run's clock (one for every registry of the run)."""
    return config.stash.setdefault(prompt_clock_key, PromptClock())


def pytest_enter_pdb(config: pytest.Config) -> None:
    prompt_clock(config).enter()


def pytest_leave_pdb(config: pytest.Config) -> None:
    prompt_clock(config).leave()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    yield
    prompt_clock(item.config).leave()  # (once the test has ended, whatever its prompt's end was)
