"""SIGTERM ends a run the way Ctrl-C does: through teardown, so nothing of the run is left (B40).

Python's default SIGTERM kills the process on the spot: no fixture teardown, no session end, no
``atexit``. A CI abort (Jenkins, ``timeout``, ``docker stop``) would leave the run's containers,
its run files and its ssh sessions behind (local kernels end by their lease either way). So,
for the run's life, a first SIGTERM raises :class:`KeyboardInterrupt` in the main thread: pytest
reports the run as interrupted and tears down every fixture that was set up (function scope up
to session), and the session end closes the shared transports. A second SIGTERM kills at once
(the default comes back with the first; where pytest is pid 1, which the default does not kill, an
exit with status 143, also for a SIGTERM after pytest's end, while its exit hooks run). A handler someone
else installed is left alone, and
nothing is installed off the main thread.

On the xdist controller the first SIGTERM is passed on to each worker that has not had one
(its own SIGTERM handler still installed, none pending: one sent to the whole process group is not
doubled, which would kill the worker at once). The controller's look and its kill are two steps: a
worker that handles the group's SIGTERM between them gets the forward as a second one, so in a
worker a SIGTERM within :data:`DUPLICATE_S` of its first is taken for the same stop and ignored
(only later does a second one kill: ``tests/unit/test_sigterm_forwarding_race.py``). A worker is otherwise stopped by execnet only, a
SIGINT to itself 5 s later: the run took 7 s to end instead of 2, and a run started with SIGINT
ignored (a background job of a CI script, ``pytest -n 2 &``) had its workers killed after 10 s
with no teardown, its docker container left running.

Once the session finishes (its tests and fixtures are done: only the summary and the closing of the
shared transports are left), a first SIGTERM ends the process at once with exit status 143 instead
(``SystemExit``; the exit hook still closes the transports). A ``KeyboardInterrupt`` there came out
of pytest's end as a traceback of some 50 lines and exit status 1, as if tests had failed.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType
from typing import Any

import pytest

_previous_key = pytest.StashKey[Any]()
_controller: list[pytest.Config] = []  # the xdist controller whose SIGTERM its workers get too
_worker: list[bool] = []  # [True] in an xdist worker: its controller may forward the group's SIGTERM again
_first_at: list[float] = []  # when this process's first SIGTERM came (time.monotonic)
#: Seconds after a worker's first SIGTERM in which another is the same stop arriving twice (the
#: process group's and the controller's forward, which can cross): ignored, not a kill.
DUPLICATE_S = 2.0


def _first_sigterm() -> None:
    """Note this process's first SIGTERM: a second ends it at once (in a worker, once it cannot be
    the forward; the forward may cross the worker's own SIGTERM in its session's end too, as that
    end removes its containers)."""
    _first_at[:] = [time.monotonic()]
    signal.signal(signal.SIGTERM, _on_second_sigterm if _worker else _exit_now if os.getpid() == 1 else signal.SIG_DFL)


def _exit_now(signum: int, frame: FrameType | None) -> None:
    """The second SIGTERM of a pytest that is its pid namespace's pid 1 (a container's command, no
    ``--init``): Linux drops a signal such a pid 1 does not handle, so the default never killed it."""
    os._exit(128 + signal.SIGTERM)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _first_sigterm()
    for config in _controller[:1]:
        _pass_on_to_workers(config)
    raise KeyboardInterrupt("SIGTERM: the run is torn down like after Ctrl-C")


def _on_second_sigterm(signum: int, frame: FrameType | None) -> None:
    if time.monotonic() - _first_at[0] < DUPLICATE_S:
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _pass_on_to_workers(config: pytest.Config) -> None:
    """SIGTERM each live worker that catches SIGTERM and has none pending (see module docstring)."""
    from .crashes import live_worker_pids

    bit = 1 << (signal.SIGTERM - 1)
    for pid in live_worker_pids(config):
        try:
            with open(f"/proc/{pid}/status") as status:
                masks = {k: int(v, 16) for k, _, v in (line.partition(":") for line in status)
                         if k in ("SigCgt", "SigPnd", "ShdPnd")}
            if masks.get("SigCgt", 0) & bit and not (masks.get("SigPnd", 0) | masks.get("ShdPnd", 0)) & bit:
                os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):  # gone meanwhile, or not readable: execnet still stops it
            continue


def _on_sigterm_at_the_end(signum: int, frame: FrameType | None) -> None:
    _first_sigterm()
    raise SystemExit(128 + signal.SIGTERM)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    # only the run that installed it: an in-process pytester run's end swapped the outer run's
    # handler, and a later SIGTERM failed the outer run's test with SystemExit, the run went on
    if _previous_key in session.config.stash and signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, _on_sigterm_at_the_end)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        config.stash[_previous_key] = signal.signal(signal.SIGTERM, _on_sigterm)
        if not hasattr(config, "workerinput"):
            _controller[:] = [config]
        else:
            _worker[:] = [True]


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if _previous_key in config.stash and signal.getsignal(signal.SIGTERM) in (_on_sigterm, _on_second_sigterm,
                                                                                _on_sigterm_at_the_end, _exit_now):
        previous = config.stash[_previous_key] or signal.SIG_DFL  # (pid 1, still exiting: the default drops it)
        signal.signal(signal.SIGTERM, _exit_now if previous == signal.SIG_DFL and os.getpid() == 1 else previous)
    if _controller[:1] == [config]:
        _controller.clear()
