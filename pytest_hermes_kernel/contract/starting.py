"""Contract: a kernel that dies while it starts fails ``start`` at once, saying how (B32).

The runner's interpreter does not exist where the kernel runs, with a ``start_timeout`` of
120 s: the start error must come within seconds, name the cause from the far side, say how it
ended (the exit status of the process that ran, or, where no process could even start, the OS
error of that exec: a local ``Popen`` of the interpreter itself), and no process of the kernel
may be left, nor a kernel dir the launch wrote a runner file into on this machine (the page's
re-attachable example transport left one in the temp dir at every run: its ``subprocess.run`` of
a missing interpreter raised past its clean-up).
"""

from __future__ import annotations

import os
import re
import time

import pytest

from pytest_hermes_kernel.errors import KernelStartError
from pytest_hermes_kernel.transports.runner_zipapp import runner_dirs_written

#: Seconds a start may take to report a runner that died at once (the case says ~1-2 s; the
#: rest is a loaded 2-core machine and a container exec), against a 120 s start timeout.
FAIL_FAST_S = 8.0
MISSING = "/nonexistent/hermes-b32/python3"
CAUSE = re.compile(r"no such file|not found", re.IGNORECASE)
EXIT_STATUS = re.compile(r"exit (?:code|status)? ?\d+")
#: An exec that failed before any process ran (``FileNotFoundError``): no exit status to give.
EXEC_FAILED = re.compile(r"\[Errno \d+\]")


def test_runner_dying_at_start_fails_fast_with_exit_status_and_stderr(kernel_factory, hermes_transport):
    """The runner cannot start (its interpreter does not exist where the kernel runs: the case's
    "image without the interpreter" / "remote interpreter path that does not exist"). A kernel's
    own ``env`` cannot break its start any more (issue #9 point 7), so the interpreter does.
    The local regression test (tests/regressions/test_handed_b32_die_during_start.py) covers a
    runner that starts and dies, with its exit code and stderr tail."""
    started = time.monotonic()

    with runner_dirs_written() as dirs, pytest.raises(KernelStartError) as info:
        kernel_factory(python=MISSING, start_timeout=120)

    elapsed = time.monotonic() - started
    text = str(info.value)
    assert elapsed < FAIL_FAST_S, f"start took {elapsed:.1f} s to fail: {text}"
    assert MISSING in text and CAUSE.search(text), text  # the cause, from where the kernel runs
    assert EXIT_STATUS.search(text) or EXEC_FAILED.search(text), \
        f"the start error must say how the runner ended: its exit status, or the OS error of an exec that ran nothing: {text}"
    assert hermes_transport.kernel_processes(info.value.kernel_id) == []  # nothing left behind
    _assert_removed(dirs)


#: An interpreter that runs and exits 1 at once, wherever a kernel runs (a POSIX system's ``false``).
EXITS_1 = "/bin/false"
EXIT_1 = re.compile(r"exit (?:code|status)? ?1\b")


def test_runner_exiting_at_start_fails_fast_with_its_exit_status(kernel_factory, hermes_transport):
    """The runner's interpreter runs and exits 1 at once: the start error says so, with that
    status (from ``Transport.exit_status`` where the transport reads it: one that answers 0, or
    nothing, for a runner that failed sends the user after the wrong cause)."""
    started = time.monotonic()

    with runner_dirs_written() as dirs, pytest.raises(KernelStartError) as info:
        kernel_factory(python=EXITS_1, start_timeout=120)

    text = str(info.value)
    assert time.monotonic() - started < FAIL_FAST_S, f"start took {time.monotonic() - started:.1f} s to fail: {text}"
    assert EXIT_1.search(text), f"the start error must give the runner's exit status, 1: {text}"
    assert info.value.facts.get("exit_code") in (None, 1), f"the error's exit_code fact is not the runner's 1: {text}"
    assert hermes_transport.kernel_processes(info.value.kernel_id) == []
    _assert_removed(dirs)


def _assert_removed(dirs: list[str]) -> None:
    left = [d for d in dirs if os.path.lexists(d)]
    assert not left, (f"the failed start left {left} on this machine (a dir it wrote the runner file into with "
                      "write_runner): a launch that raises removes what it made")
